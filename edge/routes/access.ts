/**
 * What each route declares beside its schemas, in its createRoute (docs/api.md "API summary"): who may call it (a
 * scope, for a key or a member's session; or a member's session only), which rate-limit families it counts against,
 * and how large a body it takes. `access()` gives the OpenAPI security requirement and the middleware, in the order
 * every route answers in: 401 (or 429 for an address with too many failed authentications), 429 for the key's
 * families, 403 for the scope, 413 for the body, then the route's own checks (400 and after). So the rule for a route
 * is read where the route is, and no list of paths elsewhere can disagree with it.
 */
import type { MiddlewareHandler } from "hono";
import type { Scope } from "../../shared/scopes.ts";
import { limitRequestBody } from "../body-limit.ts";
import type { AppEnv } from "../env.ts";
import { requireCaller } from "../identity/authenticate.ts";
import { requireScope, requireSession, scopeSecurity } from "../identity/scopes.ts";
import { enforceRateLimit, type RateLimitFamily } from "../rate-limits.ts";

/** A JSON body a route reads whole (keys, members, invites, passkeys): small; a passkey's attestation fits easily. */
export const SMALL_BODY_MAX_BYTES = 64 * 1024;

export type Access = {
  /**
   * The operation's scope, for a key or a session (and `also`, scopes it needs besides: an operation that sends what
   * another scope reads needs that one too); or "session": the signed-in member only (a key gets 403 session_required).
   */
  who: { scope: Scope; also?: readonly Scope[] } | "session";
  /** The rate-limit families the request counts against, in order (the first over its limit answers 429). */
  limits: readonly RateLimitFamily[];
  /** The largest body it reads (413 past it), or a middleware of its own for a body with its own rule. */
  body?: number | MiddlewareHandler<AppEnv>;
};

/** For createRoute (`...access({...})`), or registerPath and app.on for a route the document only describes. */
export function access(a: Access): { security: Record<string, string[]>[]; middleware: MiddlewareHandler<AppEnv>[] } {
  const body = a.body === undefined ? [] : [typeof a.body === "number" ? limitRequestBody(a.body) : a.body];
  return {
    security: a.who === "session" ? [{ sessionCookie: [] }] : scopeSecurity(a.who.scope, a.who.also),
    middleware: [requireCaller, ...a.limits.map(enforceRateLimit), ...(a.who === "session" ? [requireSession] : [a.who.scope, ...(a.who.also ?? [])].map(requireScope)), ...body],
  };
}
