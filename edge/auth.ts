/**
 * Bearer authentication (docs/api.md "Authentication"). Every failure is the same 401 so a caller learns
 * nothing about which check failed.
 *
 * Each isolate caches answers: a known key->account for up to KNOWN_KEY_TTL_MS (so a revoked key or a
 * disabled account stops working within that time), and an unknown token hash for
 * UNKNOWN_TOKEN_TTL_MS, so repeating a junk token costs no database read. Failed authentications
 * are limited per client (docs/api.md "Rate limits"): an IPv4 address, or an IPv6 /64, the block one
 * subscriber gets. Once a client is over the limit, its requests get 429 without a database read
 * until the period ends, with two exceptions that keep real keys behind the same NAT working: a
 * token this isolate saw succeed within RECENTLY_VALID_TTL_MS is looked up (and renewed) as usual,
 * and one lookup per BLOCKED_LOOKUP_INTERVAL_MS per blocked client goes through for a token never
 * seen, so a real key gets in within seconds while junk costs at most that trickle. A blocked client
 * gets the same 429 for an unknown token as for a valid key that does not get a lookup, so the 429
 * says nothing about whether a token exists.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import ipaddr from "ipaddr.js";
import { ERROR_MESSAGES } from "../shared/api.ts";
import { requestDatabase } from "./db/client.ts";
import { accounts, apiKeys } from "./db/schema.ts";
import type { AppEnv } from "./env.ts";
import { ApiError } from "./lib/errors.ts";
import { TtlCache } from "../shared/ttl-cache.ts";
import { hashToken, looksLikeToken } from "./lib/tokens.ts";
import { FAILED_AUTHENTICATION_LIMIT, rateLimited, withinLimit } from "./rate-limits.ts";

export type AuthenticatedKey = { keyId: string; accountId: string };

export const KNOWN_KEY_TTL_MS = 60_000;
export const UNKNOWN_TOKEN_TTL_MS = 30_000;
/** How long a token that succeeded still earns a lookup from a blocked client. */
export const RECENTLY_VALID_TTL_MS = 3_600_000;
/** While a client is blocked, one lookup of a token never seen per this interval, per isolate. */
export const BLOCKED_LOOKUP_INTERVAL_MS = 1_000;
const CACHE_MAX_ENTRIES = 10_000;
// Apart, so that junk tokens can never push known keys out.
const knownKeys = new TtlCache<string, AuthenticatedKey>(CACHE_MAX_ENTRIES);
const recentlyValid = new TtlCache<string, true>(CACHE_MAX_ENTRIES);
const unknownTokens = new TtlCache<string, true>(CACHE_MAX_ENTRIES);
const blockedClients = new TtlCache<string, true>(CACHE_MAX_ENTRIES);
const blockedLookups = new TtlCache<string, true>(CACHE_MAX_ENTRIES);

/**
 * Cloudflare sets CF-Connecting-IP on every request from the internet (and `wrangler dev` on every
 * local one). Requests without it (another Worker calling through a service binding) share one bucket.
 */
export const NO_CLIENT_ADDRESS = "no-client-address";

/**
 * The bucket failed authentications are counted in: an IPv4 address as it is; an IPv6 address by
 * its /64, since one subscriber gets a whole /64 and could otherwise take a fresh bucket per request;
 * an IPv4-mapped IPv6 address as the IPv4 address it carries.
 */
export function clientBucket(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (parsed.kind() === "ipv4") return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

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

  const client = clientBucket(c.req.header("cf-connecting-ip") ?? NO_CLIENT_ADDRESS);
  const blocked = blockedClients.get(client) === true;
  const lookUp = tokenHash !== null && !unknownTokens.get(tokenHash) && (!blocked || recentlyValid.get(tokenHash) === true || takeBlockedLookup(client));
  if (lookUp) {
    const found = await findKey(c, tokenHash);
    if (found) {
      // Renewed on every lookup that succeeds, so a key in use never ages out of either cache.
      knownKeys.set(tokenHash, found, KNOWN_KEY_TTL_MS);
      recentlyValid.set(tokenHash, true, RECENTLY_VALID_TTL_MS);
      c.set("auth", found);
      return next();
    }
    unknownTokens.set(tokenHash, true, UNKNOWN_TOKEN_TTL_MS);
  }
  if (blocked) throw rateLimited("failed_authentication", FAILED_AUTHENTICATION_LIMIT);

  if (!(await withinLimit(c, FAILED_AUTHENTICATION_LIMIT, client))) {
    blockedClients.set(client, true, FAILED_AUTHENTICATION_LIMIT.periodSeconds * 1000);
    throw rateLimited("failed_authentication", FAILED_AUTHENTICATION_LIMIT);
  }
  throw unauthorized();
});

/** Whether a blocked client's trickle has a lookup left now (one per BLOCKED_LOOKUP_INTERVAL_MS); takes it. */
function takeBlockedLookup(client: string): boolean {
  if (blockedLookups.get(client)) return false;
  blockedLookups.set(client, true, BLOCKED_LOOKUP_INTERVAL_MS);
  return true;
}
