/**
 * Each operation's scope (shared/scopes.ts): a key's own, or a session's from its member's role (shared/roles.ts).
 * A route states it once, where it is declared (edge/routes/access.ts), which gives both the OpenAPI security
 * requirement and the check, so the document and the Worker cannot disagree. The check reads the cached caller
 * (edge/identity/authenticate.ts): no database read.
 */
import { createMiddleware } from "hono/factory";
import type { Scope } from "../../shared/scopes.ts";
import type { Caller } from "../caller.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";

export function missingScope(scope: Scope, caller?: Caller): ApiError {
  const who = caller?.kind === "session" ? `The member's role (${caller.role})` : "This API key";
  return new ApiError(403, `${who} lacks the scope ${scope}`, {}, { reason: "missing_scope", scope });
}

export function sessionRequired(): ApiError {
  return new ApiError(403, "This operation needs a member's session: sign in to the console", {}, { reason: "session_required" });
}

/** For the operations about the signed-in member themselves (/v1/me, sign out everywhere): a key has no member. */
export const requireSession = createMiddleware<AppEnv>(async (c, next) => {
  if (c.get("auth").kind !== "session") throw sessionRequired();
  await next();
});

export function requireScope(scope: Scope) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const caller = c.get("auth");
    if (!caller.scopes.includes(scope)) throw missingScope(scope, caller);
    await next();
  });
}

/** The OpenAPI security requirements naming the scope (and any it needs besides), for a key or a session. */
export function scopeSecurity(scope: Scope, also: readonly Scope[] = []): Record<string, string[]>[] {
  return [{ bearerAuth: [scope, ...also] }, { sessionCookie: [scope, ...also] }];
}
