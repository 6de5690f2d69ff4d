/**
 * Members and sessions as the console makes them: an invite (made as the admin CLI makes it), its
 * options, a passkey from the software authenticator, the accept that sets the session cookie; and
 * requests with that cookie from the console's origin, http://localhost:8787 (the cookie is named
 * `session` there; see edge/identity/sessions.ts).
 */
import { createInvite } from "../../edge/identity/store/invites.ts";
import type { Role } from "../../shared/roles.ts";
import { SoftwareAuthenticator } from "../fixtures/software-authenticator.ts";
import { db, send } from "./helpers.ts";

export const CONSOLE_ORIGIN = "http://localhost:8787";

type ConsoleInit = RequestInit & { cookie?: string | null; origin?: string | null; json?: unknown };

let clientAddress: string | null = null;
/** Makes console calls come from `address` (CF-Connecting-IP), for a file whose sign-ins would pass the per-address limit in one. */
export function consoleCallsFrom(address: string | null): void {
  clientAddress = address;
}

/** A request to the Worker at the console's origin, with the session cookie and, unless told otherwise, Origin. */
export function consoleCall(path: string, init: ConsoleInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const origin = init.origin === undefined ? CONSOLE_ORIGIN : init.origin;
  if (origin !== null) headers.set("Origin", origin);
  if (init.cookie) headers.set("Cookie", `session=${init.cookie}`);
  if (clientAddress !== null && !headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", clientAddress);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set("content-type", "application/json");
    body = JSON.stringify(init.json);
  }
  return send(new Request(`${CONSOLE_ORIGIN}${path}`, { method: init.method ?? (body === undefined ? "GET" : "POST"), headers, body, redirect: init.redirect ?? "follow" }));
}

/** The session secret a response's Set-Cookie carries (null: none set; "" : cleared). */
export function sessionCookieOf(res: Response): string | null {
  for (const line of res.headers.getSetCookie()) {
    const match = /^session=([^;]*)/.exec(line);
    if (match) return match[1]!;
  }
  return null;
}

export type Joined = { cookie: string; memberId: string; authenticator: SoftwareAuthenticator };

/** An invite link's token, made as the admin CLI makes one. */
export async function inviteToken(accountId: string, role: Role, createdBy = "operator"): Promise<string> {
  const invite = await createInvite(db, { accountId, role, createdBy, origin: CONSOLE_ORIGIN });
  return new URL(invite!.url).hash.slice(1);
}

/** A new member of `accountId` with `role`, joined through an invite with a fresh passkey, and their session. */
export async function join(accountId: string, role: Role, name = "Ada Lovelace", authenticator = new SoftwareAuthenticator()): Promise<Joined> {
  const token = await inviteToken(accountId, role);
  const options = (await (await consoleCall("/v1/auth/invites/options", { json: { token } })).json()) as Parameters<SoftwareAuthenticator["create"]>[0];
  const credential = await authenticator.create(options, CONSOLE_ORIGIN);
  const res = await consoleCall("/v1/auth/invites/accept", { json: { token, name, credential } });
  if (res.status !== 201) throw new Error(`accept: ${res.status} ${await res.text()}`);
  const { member } = (await res.json()) as { member: { id: string } };
  return { cookie: sessionCookieOf(res)!, memberId: member.id, authenticator };
}

/** Signs in with the authenticator's newest passkey: the response (and its cookie, if any). */
export async function signIn(authenticator: SoftwareAuthenticator): Promise<{ res: Response; cookie: string | null }> {
  const options = (await (await consoleCall("/v1/auth/sign-in/options", { method: "POST" })).json()) as Parameters<SoftwareAuthenticator["get"]>[0];
  const credential = await authenticator.get(options, CONSOLE_ORIGIN);
  const res = await consoleCall("/v1/auth/sign-in", { json: { credential } });
  return { res, cookie: sessionCookieOf(res) };
}
