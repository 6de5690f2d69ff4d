/**
 * Who is signed in to the console: the API's GET /v1/me with the request's session cookie. What the
 * member may do comes from shared/roles.ts, the table the API checks a session against, so a control
 * is shown exactly when the API would allow its operation.
 */
import type { Context } from "hono";
import { ROLE_SCOPES, type Role } from "../../shared/roles.ts";
import type { Scope } from "../../shared/scopes.ts";
import type { AppEnv } from "../env.ts";
import type { CallApi } from "./api.ts";

export type Member = { id: string; name: string; role: Role; created_at: string; last_sign_in_at: string | null };
export type Passkey = { id: string; name: string; created_at: string; last_used_at: string | null };
export type Me = { member: Member; account_id: string; passkeys: Passkey[] };
export type SignedIn = Me & { can(scope: Scope): boolean };

export async function whoIsSignedIn(api: CallApi): Promise<SignedIn | null> {
  const answer = await api<Me>("GET", "/v1/me");
  if (!answer.ok) return null;
  const scopes = ROLE_SCOPES[answer.data.member.role] ?? [];
  return { ...answer.data, can: (scope) => scopes.includes(scope) };
}

/** Where a request without a session goes: the sign-in page, which comes back here afterwards. */
export function toSignIn(c: Context<AppEnv>) {
  const back = new URL(c.req.url);
  return c.redirect(`/console/sign-in?next=${encodeURIComponent(back.pathname + back.search)}`, 303);
}
