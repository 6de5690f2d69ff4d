/**
 * Who is calling: an API key or a member's session (edge/identity/authenticate.ts decides), as a type only, so the
 * modules that name it (the bindings' env, sessions, scopes, routes) need not import the middleware.
 */
import type { Role } from "../shared/roles.ts";
import type { Scope } from "../shared/scopes.ts";

/** The caller as every check after authentication needs it, from the cache: no database read. */
export type Caller = {
  kind: "key" | "session";
  /** The calling key; null for a session. */
  keyId: string | null;
  /** The signed-in member, their session and role; null for a key. */
  memberId: string | null;
  sessionId: string | null;
  role: Role | null;
  /** Who acts: the key's id or the member's id. What the audit trail, usage rows and per-caller rate limits name. */
  actor: string;
  accountId: string;
  scopes: readonly Scope[];
  /** ms, or null: never expires (a session's own end is checked in edge/identity/sessions.ts). */
  expiresAt: number | null;
  /** The key's own daily credit cap (null: none; always null for a session). */
  dailyCreditCap: number | null;
  /** Every daily cap the key's charges count against (api_keys.credit_caps): empty for a session or a key nothing caps. */
  creditCaps: readonly CreditCap[];
};

/** A daily credit cap and the budget it counts: a key's own, shared with the keys rolled from it, or a capped maker's. */
export type CreditCap = { budget: string; cap: number };
