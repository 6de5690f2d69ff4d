/**
 * Who is calling (docs/api.md "Authentication"): an API key (Bearer), or, without an Authorization
 * header, a member's session cookie (edge/identity/sessions.ts). Either gives one Caller with the account and
 * the scopes (a session's from its member's role), so every check after this one treats both alike.
 *
 * Bearer authentication. Every failure is a 401 `{"error":"Unauthorized"}`;
 * one for a key the caller holds that was revoked or has expired says which in `reason` (the caller
 * holds the token, so this tells nobody anything new), an unknown token or a disabled account says nothing.
 *
 * Each isolate caches answers: a known key (its account, scopes, expiry, daily credit cap and whether
 * it was revoked) for up to KNOWN_KEY_TTL_MS, so a key revoked elsewhere (another isolate, the admin
 * CLI) or a disabled account stops working within that time; a revocation through this isolate
 * (DELETE /v1/keys/{id}) drops its entry at once. Expiry is checked against the clock on every request,
 * so an expired key is refused from the moment it expires. An unknown token hash is cached for
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
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import ipaddr from "ipaddr.js";
import { ERROR_MESSAGES } from "../../shared/api.ts";
import { decodeScopes, type Scope } from "../../shared/scopes.ts";
import { requestDatabase } from "../db/client.ts";
import type { Caller, CreditCap } from "../caller.ts";
import { decodeCreditCaps, findKeyByTokenHash } from "./store/keys.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { TtlCache } from "../../shared/ttl-cache.ts";
import { hashToken, looksLikeToken } from "./tokens.ts";
import { activityDue, flushDueActivity, noteKeyUse } from "./key-activity.ts";
import { FAILED_AUTHENTICATION_LIMIT, rateLimited, withinLimit } from "../rate-limits.ts";
import { validateSession, crossSiteRefusal, readSessionToken } from "./sessions.ts";

type KnownKey = {
  keyId: string;
  accountId: string;
  scopes: readonly Scope[];
  expiresAt: number | null;
  dailyCreditCap: number | null;
  creditCaps: readonly CreditCap[];
  revokedAt: number | null;
  accountActive: boolean;
};

export const KNOWN_KEY_TTL_MS = 60_000;
export const UNKNOWN_TOKEN_TTL_MS = 30_000;
/** How long a token that succeeded still earns a lookup from a blocked client. */
export const RECENTLY_VALID_TTL_MS = 3_600_000;
/** While a client is blocked, one lookup of a token never seen per this interval, per isolate. */
export const BLOCKED_LOOKUP_INTERVAL_MS = 1_000;
const CACHE_MAX_ENTRIES = 10_000;
// Apart, so that junk tokens can never push known keys out.
// The clock is read through Date at each call, so tests can move it (vi.setSystemTime).
const clock = () => Date.now();
const knownKeys = new TtlCache<string, KnownKey>(CACHE_MAX_ENTRIES, clock);
const recentlyValid = new TtlCache<string, true>(CACHE_MAX_ENTRIES, clock);
const unknownTokens = new TtlCache<string, true>(CACHE_MAX_ENTRIES, clock);
const blockedClients = new TtlCache<string, true>(CACHE_MAX_ENTRIES, clock);
const blockedLookups = new TtlCache<string, true>(CACHE_MAX_ENTRIES, clock);

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

export function unauthorized(reason?: "key_revoked" | "key_expired"): ApiError {
  if (!reason) return new ApiError(401, ERROR_MESSAGES.unauthorized, { "WWW-Authenticate": "Bearer" });
  const description = reason === "key_revoked" ? "The API key was revoked" : "The API key has expired";
  // RFC 6750 section 3: the same reason for software that reads the header.
  return new ApiError(401, ERROR_MESSAGES.unauthorized, { "WWW-Authenticate": `Bearer error="invalid_token", error_description="${description}"` }, { reason });
}

/** Forgets a key this isolate knows, so its revocation applies here at once (other isolates: within KNOWN_KEY_TTL_MS). */
export function forgetKey(tokenHash: string): void {
  knownKeys.delete(tokenHash);
  recentlyValid.delete(tokenHash);
}

/** Why a key found is refused now, or null when it may be used. */
function refusal(key: KnownKey, now: number): ApiError | null {
  if (!key.accountActive) return unauthorized();
  if (key.revokedAt !== null) return unauthorized("key_revoked");
  if (key.expiresAt !== null && key.expiresAt <= now) return unauthorized("key_expired");
  return null;
}

/** The token from `Authorization: Bearer <token>`; the scheme word is case-insensitive. */
export function bearerToken(header: string | undefined): string | null {
  if (!header || header.length > 512) return null;
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1] ?? null;
}

async function findKey(c: Context<AppEnv>, tokenHash: string): Promise<KnownKey | undefined> {
  const row = await findKeyByTokenHash(requestDatabase(c), tokenHash);
  if (!row) return undefined;
  return { ...row, scopes: decodeScopes(row.scopes), creditCaps: decodeCreditCaps(row.creditCaps) };
}

function authenticated(key: KnownKey): Caller {
  return {
    kind: "key",
    keyId: key.keyId,
    memberId: null,
    sessionId: null,
    role: null,
    actor: key.keyId,
    accountId: key.accountId,
    scopes: key.scopes,
    expiresAt: key.expiresAt,
    dailyCreditCap: key.dailyCreditCap,
    creditCaps: key.creditCaps,
  };
}

/**
 * Lets the request through as `key`, noting the key's use; once it is answered, writes the isolate's
 * due key activity if the request wrote none itself (after the answer: never a round trip on it).
 */
async function proceed(c: Context<AppEnv>, key: KnownKey, next: () => Promise<void>): Promise<void> {
  c.set("auth", authenticated(key));
  noteKeyUse(key.keyId, key.accountId, Date.now());
  await next();
  if (activityDue(Date.now())) {
    const flush = flushDueActivity(requestDatabase(c), Date.now());
    try {
      c.executionCtx.waitUntil(flush);
    } catch {
      await flush; // no execution context (app.request in a test): write before answering
    }
  }
}

export const requireCaller = createMiddleware<AppEnv>(async (c, next) => {
  const authorization = c.req.header("authorization");
  const sessionToken = authorization === undefined ? readSessionToken(c) : null;
  if (sessionToken !== null) return sessionCaller(c, sessionToken, next);
  const token = bearerToken(authorization);
  const tokenHash = token && looksLikeToken(token) ? await hashToken(token) : null;
  const known = tokenHash === null ? undefined : knownKeys.get(tokenHash);
  let refused: ApiError | null = null;
  if (known) {
    refused = refusal(known, Date.now());
    if (!refused) return proceed(c, known, next);
  }

  const client = clientBucket(c.req.header("cf-connecting-ip") ?? NO_CLIENT_ADDRESS);
  const blocked = blockedClients.get(client) === true;
  const lookUp =
    !known && tokenHash !== null && !unknownTokens.get(tokenHash) && (!blocked || recentlyValid.get(tokenHash) === true || takeBlockedLookup(client));
  if (lookUp) {
    const found = await findKey(c, tokenHash);
    if (found) {
      // Refused keys are cached too, so repeating a revoked token costs no database read.
      knownKeys.set(tokenHash, found, KNOWN_KEY_TTL_MS);
      refused = refusal(found, Date.now());
      if (!refused) {
        // Renewed on every lookup that succeeds, so a key in use never ages out of either cache.
        recentlyValid.set(tokenHash, true, RECENTLY_VALID_TTL_MS);
        return proceed(c, found, next);
      }
    } else {
      unknownTokens.set(tokenHash, true, UNKNOWN_TOKEN_TTL_MS);
    }
  }
  throw await failedAuthentication(c, client, blocked, refused ?? unauthorized());
});

/** A failed authentication counted against its client: the refusal, or 429 once the client is over the limit. */
async function failedAuthentication(c: Context<AppEnv>, client: string, blocked: boolean, refused: ApiError): Promise<ApiError> {
  if (blocked) return rateLimited("failed_authentication", FAILED_AUTHENTICATION_LIMIT);
  if (!(await withinLimit(c, FAILED_AUTHENTICATION_LIMIT, client))) {
    blockedClients.set(client, true, FAILED_AUTHENTICATION_LIMIT.periodSeconds * 1000);
    return rateLimited("failed_authentication", FAILED_AUTHENTICATION_LIMIT);
  }
  return refused;
}

/**
 * A request with the session cookie (and no Authorization header): refused as cross-site before anything
 * is looked up; a blocked client's session is looked up only if this isolate already knows it.
 */
async function sessionCaller(c: Context<AppEnv>, token: string, next: () => Promise<void>): Promise<void> {
  const crossSite = crossSiteRefusal(c);
  if (crossSite) throw crossSite;
  const client = clientBucket(c.req.header("cf-connecting-ip") ?? NO_CLIENT_ADDRESS);
  const blocked = blockedClients.get(client) === true;
  const outcome = await validateSession(c, token, () => !blocked);
  if (outcome !== null && !(outcome instanceof ApiError)) {
    c.set("auth", outcome);
    return next();
  }
  throw await failedAuthentication(c, client, blocked, outcome ?? unauthorized());
}

/** Whether a blocked client's trickle has a lookup left now (one per BLOCKED_LOOKUP_INTERVAL_MS); takes it. */
function takeBlockedLookup(client: string): boolean {
  if (blockedLookups.get(client)) return false;
  blockedLookups.set(client, true, BLOCKED_LOOKUP_INTERVAL_MS);
  return true;
}
