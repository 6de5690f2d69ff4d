/**
 * Bearer authentication (README "Authentication"). Every failure is the same 401 so a caller learns nothing
 * about which check failed. A positive key->account answer is cached in the isolate for up to
 * KEY_CACHE_TTL_MS, so a revoked key or disabled account stops working within that time (README).
 */
import { and, eq, isNull } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { ERROR_MESSAGES } from "../shared/api.ts";
import { requestDatabase } from "./db/client.ts";
import { accounts, apiKeys } from "./db/schema.ts";
import type { AppEnv } from "./env.ts";
import { ApiError } from "./lib/errors.ts";
import { hashToken, looksLikeToken } from "./lib/tokens.ts";

export type AuthenticatedKey = { keyId: string; accountId: string };

export const KEY_CACHE_TTL_MS = 60_000;
const KEY_CACHE_MAX_ENTRIES = 10_000;
const keyCache = new Map<string, { key: AuthenticatedKey; expiresAt: number }>();

export function unauthorized(): ApiError {
  return new ApiError(401, ERROR_MESSAGES.unauthorized, { "WWW-Authenticate": "Bearer" });
}

/** The token from `Authorization: Bearer <token>`; the scheme word is case-insensitive. */
export function bearerToken(header: string | undefined): string | null {
  if (!header || header.length > 512) return null;
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1] ?? null;
}

export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const token = bearerToken(c.req.header("authorization"));
  if (!token || !looksLikeToken(token)) throw unauthorized();
  const tokenHash = await hashToken(token);

  const now = Date.now();
  const cached = keyCache.get(tokenHash);
  if (cached && cached.expiresAt > now) {
    c.set("auth", cached.key);
    return next();
  }

  const db = requestDatabase(c);
  const [row] = await db
    .select({ keyId: apiKeys.id, accountId: apiKeys.accountId })
    .from(apiKeys)
    .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
    .where(and(eq(apiKeys.tokenHash, tokenHash), isNull(apiKeys.revokedAt), eq(accounts.status, "active")))
    .limit(1);
  if (!row) throw unauthorized();

  if (keyCache.size >= KEY_CACHE_MAX_ENTRIES) keyCache.clear();
  keyCache.set(tokenHash, { key: row, expiresAt: now + KEY_CACHE_TTL_MS });
  c.set("auth", row);
  return next();
});
