/**
 * What an API key may do (docs/api.md "Keys and scopes"): one scope per operation, named after the
 * resource and whether the operation reads it or changes it. The OpenAPI document states each
 * operation's scope; the Worker checks it from the cached key, so it costs no database read.
 */
import { z } from "@hono/zod-openapi";

export const SCOPES = [
  "people:read",
  "verifications:write",
  "jobs:write",
  "jobs:read",
  "account:read",
  "keys:write",
  "members:write",
  "audit:read",
  "feedback:write",
  "events:write",
] as const;

export type Scope = (typeof SCOPES)[number];

export const ScopeName = z.enum(SCOPES).openapi({ description: "A scope (docs/api.md \"Keys and scopes\")", example: "people:read" });

/**
 * What a scope is worth besides itself: events:write decides where people's data is sent, so it reads as much as
 * people:read (its routes need both, and only a holder of people:read may grant it: edge/identity/authority.ts).
 */
export const SCOPE_REACH: Partial<Record<Scope, readonly Scope[]>> = { "events:write": ["people:read"] };

/** The scopes `scopes` are worth: themselves and their reach (SCOPE_REACH). */
export const scopeReach = (scopes: readonly Scope[]): Scope[] => [...new Set(scopes.flatMap((s) => [s, ...(SCOPE_REACH[s] ?? [])]))];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** The stored form: a JSON array of scope names, in SCOPES order, each once. */
export function encodeScopes(scopes: readonly Scope[]): string {
  return JSON.stringify(SCOPES.filter((s) => scopes.includes(s)));
}

/** The stored form read back; a name this release does not know (a rollback) is dropped, never honoured. */
export function decodeScopes(stored: string): Scope[] {
  const parsed: unknown = JSON.parse(stored);
  return Array.isArray(parsed) ? parsed.filter((s): s is Scope => typeof s === "string" && isScope(s)) : [];
}

/**
 * What keys made before scopes existed hold: every scope there was when scopes came (1.7.0), the stored column's
 * default since then. A scope added later is not among them: no key gains authority it was never given.
 */
export const SCOPES_BEFORE_1_10_STORED = encodeScopes(["people:read", "verifications:write", "jobs:write", "jobs:read", "account:read", "keys:write", "members:write", "audit:read"]);
