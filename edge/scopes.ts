/**
 * Each operation's scope (shared/scopes.ts), stated once where the route is declared: `scoped(scope)`
 * gives both the OpenAPI security requirement and the check, so the document and the Worker cannot
 * disagree. The check reads the cached key (edge/auth.ts): no database read.
 */
import { createMiddleware } from "hono/factory";
import type { Scope } from "../shared/scopes.ts";
import type { AppEnv } from "./env.ts";
import { ApiError } from "./lib/errors.ts";

export function missingScope(scope: Scope): ApiError {
  return new ApiError(403, `This API key lacks the scope ${scope}`, {}, { reason: "missing_scope", scope });
}

export function requireScope(scope: Scope) {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!c.get("auth").scopes.includes(scope)) throw missingScope(scope);
    await next();
  });
}

/** The OpenAPI security requirement naming the scope (for registerPath, whose routes add requireScope themselves). */
export function scopeSecurity(scope: Scope) {
  return [{ bearerAuth: [scope] }];
}

/** For createRoute: the security requirement naming the scope, and its check. */
export function scoped(scope: Scope) {
  return { security: scopeSecurity(scope), middleware: [requireScope(scope)] };
}
