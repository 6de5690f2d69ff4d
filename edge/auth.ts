/**
 * Bearer authentication (README "Authentication"). Every failure is the same 401 so a caller learns
 * nothing about which check failed.
 *
 * Each isolate caches answers: a known key->account for up to KNOWN_KEY_TTL_MS (so a revoked key or a
 * disabled account stops working within that time), and an unknown token hash for
 * UNKNOWN_TOKEN_TTL_MS, so repeating a junk token costs no database read. Failed authentications
 * are limited per client address (README "Rate limits"): once an address is over the limit, its
 * requests get 429 without a database read until the period ends, unless their key is already
 * known to this isolate. A blocked address gets the same 429 for an unknown token as for a valid
 * key that is not cached, so the 429 says nothing about whether a token exists.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { ERROR_MESSAGES } from "../shared/api.ts";
import { requestDatabase } from "./db/client.ts";
import { accounts, apiKeys } from "./db/schema.ts";
import type { AppEnv } from "./env.ts";
import { ApiError } from "./lib/errors.ts";
import { IsolateCache } from "./lib/isolate-cache.ts";
import { hashToken, looksLikeToken } from "./lib/tokens.ts";
import { FAILED_AUTHENTICATION_LIMIT, rateLimited, withinLimit } from "./rate-limits.ts";

export type AuthenticatedKey = { keyId: string; accountId: string };

export const KNOWN_KEY_TTL_MS = 60_000;
export const UNKNOWN_TOKEN_TTL_MS = 30_000;
const CACHE_MAX_ENTRIES = 10_000;
// Apart, so that junk tokens can never push known keys out.
const knownKeys = new IsolateCache<string, AuthenticatedKey>(CACHE_MAX_ENTRIES);
const unknownTokens = new IsolateCache<string, true>(CACHE_MAX_ENTRIES);
const blockedAddresses = new IsolateCache<string, true>(CACHE_MAX_ENTRIES);

/**
 * Cloudflare sets CF-Connecting-IP on every request from the internet (and `wrangler dev` on every
 * local one). Requests without it (another Worker calling through a service binding) share one bucket.
 */
export const NO_CLIENT_ADDRESS = "no-client-address";

export function unauthorized(): ApiError {
  return new ApiError(401, ERROR_MESSAGES.unauthorized, { "WWW-Authenticate": "Bearer" });
}

/** The token from `Authorization: Bearer <token>`; the scheme word is case-insensitive. */
export function bearerToken(header: string | undefined): string | null {
  if (!header || header.length > 512) return null;
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1] ?? null;
}

async function findKey(c: Context<AppEnv>, tokenHash: string): Promise<AuthenticatedKey | undefined> {
  const [row] = await requestDatabase(c)
    .select({ keyId: apiKeys.id, accountId: apiKeys.accountId })
    .from(apiKeys)
    .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
    .where(and(eq(apiKeys.tokenHash, tokenHash), isNull(apiKeys.revokedAt), eq(accounts.status, "active")))
    .limit(1);
  return row;
}

export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const token = bearerToken(c.req.header("authorization"));
  const tokenHash = token && looksLikeToken(token) ? await hashToken(token) : null;
  const known = tokenHash === null ? undefined : knownKeys.get(tokenHash);
  if (known) {
    c.set("auth", known);
    return next();
  }

  const address = c.req.header("cf-connecting-ip") ?? NO_CLIENT_ADDRESS;
  if (blockedAddresses.get(address)) throw rateLimited("failed_authentication", FAILED_AUTHENTICATION_LIMIT);

  if (tokenHash !== null && !unknownTokens.get(tokenHash)) {
    const found = await findKey(c, tokenHash);
    if (found) {
      knownKeys.set(tokenHash, found, KNOWN_KEY_TTL_MS);
      c.set("auth", found);
      return next();
    }
    unknownTokens.set(tokenHash, true, UNKNOWN_TOKEN_TTL_MS);
  }

  if (!(await withinLimit(c, FAILED_AUTHENTICATION_LIMIT, address))) {
    blockedAddresses.set(address, true, FAILED_AUTHENTICATION_LIMIT.periodSeconds * 1000);
    throw rateLimited("failed_authentication", FAILED_AUTHENTICATION_LIMIT);
  }
  throw unauthorized();
});
