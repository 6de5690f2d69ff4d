/**
 * Who is signed in to the console: the API's GET /v1/me with the request's session cookie. What the
 * member may do comes from shared/roles.ts, the table the API checks a session against, so a control
 * is shown exactly when the API would allow its operation.
 */
import type { Context, Hono } from "hono";
import type { z } from "@hono/zod-openapi";
import type { Me as MeSchema } from "../../shared/members.ts";
import { ROLE_SCOPES } from "../../shared/roles.ts";
import type { Scope } from "../../shared/scopes.ts";
import type { AppEnv } from "../env.ts";
import { apiCaller, type CallApi } from "./api.ts";
import { ErrorNote, page } from "./layout.tsx";

export type { Member } from "../../shared/members.ts";
/** GET /v1/me's answer, as shared/members.ts declares it for the API. */
export type Me = z.infer<typeof MeSchema>;
export type SignedIn = Me & { can(scope: Scope): boolean };

/**
 * The signed-in member, or the answer for a request that has none: the sign-in page for no session
 * (401), else a page saying what the API said and when to try again (429 with Retry-After, 503), never
 * a sign-in page for a member who is signed in but asked too often.
 */
export async function signedIn(c: Context<AppEnv>, api: CallApi): Promise<SignedIn | Response> {
  const answer = await api<Me>("GET", "/v1/me");
  if (answer.status === 401) return toSignIn(c);
  if (!answer.ok) {
    const wait = answer.retryAfter ? ` Try again in ${answer.retryAfter} seconds.` : " Try again in a moment.";
    c.status(answer.status as 429);
    if (answer.retryAfter) c.header("Retry-After", answer.retryAfter);
    return page(c, { title: "Not now" }, <ErrorNote message={`${answer.error?.error ?? "The service did not answer"}.${wait}`} />);
  }
  const scopes = ROLE_SCOPES[answer.data.member.role];
  return { ...answer.data, can: (scope) => scopes.includes(scope) };
}

/** Where a request without a session goes: the sign-in page, which comes back here afterwards. */
export function toSignIn(c: Context<AppEnv>) {
  const back = new URL(c.req.url);
  return c.redirect(`/console/sign-in?next=${encodeURIComponent(back.pathname + back.search)}`, 303);
}

/**
 * A console page or form for a signed-in member: the handler gets the API caller and the member, and
 * never runs without one (the sign-in page, or the API's refusal, is answered instead).
 */
export function asMember<P extends string>(app: Hono<AppEnv>, handler: (c: Context<AppEnv, P>, api: CallApi, me: SignedIn) => Promise<Response> | Response) {
  return async (c: Context<AppEnv, P>): Promise<Response> => {
    const api = apiCaller(app, c);
    const me = await signedIn(c, api);
    if (me instanceof Response) return me;
    return handler(c, api, me);
  };
}
