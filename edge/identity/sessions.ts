/**
 * A session's whole life, in Lucia's shape (docs/api.md "Sessions"): create (createSession, opened by the store at
 * sign-in or join), validate and refresh (validateSession: one round trip that also moves last_seen_at), end
 * (endSession), end all (endAllSessions), prove presence again (STEP_UP_MAX_AGE_MS, recentlyVerified), clean up
 * (cleanUpSignInData, the cron's). The SQL is edge/identity/store/sessions.ts's.
 *
 * Console sessions: a member who signed in with a passkey holds an opaque
 * secret in an HttpOnly, Secure, SameSite=Strict cookie named `__Host-session` (plain `session`,
 * without Secure, only over http to a loopback host: `npm start` and tests). The database holds its
 * hash, its member, when it was last seen and when it ends.
 *
 * A session ends SESSION_IDLE_SECONDS after it was last seen, SESSION_MAX_SECONDS after sign-in
 * (absolute), at sign-out, at "sign out everywhere" and with its member. Each isolate caches a
 * session it found for SESSION_CACHE_TTL_MS: the lookup that fills the cache also moves last_seen_at
 * forward, in the same single round trip, so a session in use costs one database round trip per
 * SESSION_CACHE_TTL_MS per isolate and none on the other requests. A sign-out, a removal or a role
 * change made through this isolate applies here at once; on other isolates within SESSION_CACHE_TTL_MS.
 *
 * Requests authenticated by the cookie with an unsafe method must come from the console's own origin
 * (Sec-Fetch-Site: same-origin, or an Origin the console is served from), as hono/csrf checks, else
 * 403 cross_site_request. Unlike hono/csrf this holds for every content type, JSON included: the
 * cookie is the only credential, so no request that carries it may be forged. And whatever the method, a
 * request the browser says another site started (Sec-Fetch-Site: same-site or cross-site: an <img>, a link,
 * a form on a sibling subdomain, which SameSite=Strict lets the cookie ride with) is refused the same way
 * (fetch metadata's resource isolation): a GET of /v1/people spends credits and discloses a person.
 */
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { sql } from "drizzle-orm";
import { ERROR_MESSAGES } from "../../shared/api.ts";
import { isRole, ROLE_SCOPES, type Role } from "../../shared/roles.ts";
import { TtlCache } from "../../shared/ttl-cache.ts";
import type { Caller } from "../caller.ts";
import { requestDatabase, type Database } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { deleteExpiredChallengesStatement } from "./store/challenges.ts";
import { deleteEndedInvitesStatement } from "./store/invites.ts";
import { deleteEndedSessionsStatements, endMemberSessions, endSessionStatements, findSessionStatements, verifiedSince } from "./store/sessions.ts";
import { generateSecret, hashToken, looksLikeSecret, newId } from "./tokens.ts";

export const SESSION_CACHE_TTL_MS = 30_000;
const UNKNOWN_SESSION_TTL_MS = 30_000;
const CACHE_MAX_ENTRIES = 10_000;

type KnownSession = {
  sessionId: string;
  memberId: string;
  accountId: string;
  role: Role;
  lastSeenAt: number;
  expiresAt: number;
  accountActive: boolean;
  /** When this isolate looked it up: a change to its member after then makes it stale. */
  foundAt: number;
};

const clock = () => Date.now();
const knownSessions = new TtlCache<string, KnownSession>(CACHE_MAX_ENTRIES, clock);
const unknownSessions = new TtlCache<string, true>(CACHE_MAX_ENTRIES, clock);
/** Members changed through this isolate (removed, role changed, signed out everywhere), and when. */
const changedMembers = new TtlCache<string, number>(CACHE_MAX_ENTRIES, clock);

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** `session` over plain http to a loopback host (a browser drops a Secure cookie there); `__Host-session` everywhere else. */
export function sessionCookieName(url: URL): "session" | "__Host-session" {
  return url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname) ? "session" : "__Host-session";
}

export function readSessionToken(c: Context<AppEnv>): string | null {
  const value = getCookie(c, sessionCookieName(new URL(c.req.url)));
  return value === undefined || value === "" ? null : value;
}

export function setSessionCookie(c: Context<AppEnv>, token: string, maxAgeSeconds: number): void {
  const name = sessionCookieName(new URL(c.req.url));
  const secure = name === "__Host-session";
  // The name carries the __Host- prefix itself (hono's `prefix` option would add a second one); hono checks its rules: Secure, Path=/, no Domain.
  setCookie(c, name, token, { httpOnly: true, secure, sameSite: "Strict", path: "/", maxAge: maxAgeSeconds });
}

export function clearSessionCookie(c: Context<AppEnv>): void {
  setSessionCookie(c, "", 0);
}

/** The origins the console is served from: WEBAUTHN_ORIGINS, or the one this request came to. */
export function consoleOrigins(c: Context<AppEnv>): string[] {
  const configured = c.get("config").WEBAUTHN_ORIGINS;
  return configured.length > 0 ? configured : [new URL(c.req.url).origin];
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** What a browser says another site (a sibling subdomain counts) started: never for a request with the session cookie. */
const OTHER_SITES = new Set(["same-site", "cross-site"]);

/** Why a cookie-authenticated request is refused as cross-site, or null when it comes from the console's origin. */
export function crossSiteRefusal(c: Context<AppEnv>): ApiError | null {
  const site = c.req.header("sec-fetch-site");
  if (site !== undefined && OTHER_SITES.has(site)) return crossSiteRequest();
  if (SAFE_METHODS.has(c.req.method)) return null;
  if (site === "same-origin") return null;
  const origin = c.req.header("origin");
  if (origin !== undefined && (origin === new URL(c.req.url).origin || consoleOrigins(c).includes(origin))) return null;
  return crossSiteRequest();
}

function crossSiteRequest(): ApiError {
  return new ApiError(403, "Cross-site request refused: a request made with the session cookie must come from the console's origin", {}, { reason: "cross_site_request" });
}

export function sessionExpired(): ApiError {
  return new ApiError(401, ERROR_MESSAGES.unauthorized, {}, { reason: "session_expired" });
}

/** Forgets a session this isolate knows (sign-out), so it is refused here at once. */
export function forgetSession(tokenHash: string): void {
  knownSessions.delete(tokenHash);
}

/** Makes this isolate look every session of `memberId` up again (removed, role changed, signed out everywhere). */
export function forgetMember(memberId: string): void {
  changedMembers.set(memberId, Date.now(), SESSION_CACHE_TTL_MS);
}

function callerOf(s: KnownSession): Caller {
  return {
    kind: "session",
    keyId: null,
    memberId: s.memberId,
    sessionId: s.sessionId,
    role: s.role,
    actor: s.memberId,
    accountId: s.accountId,
    scopes: ROLE_SCOPES[s.role],
    expiresAt: null,
    dailyCreditCap: null,
    creditCaps: [],
  };
}

function usable(s: KnownSession, now: number, idleMs: number): boolean {
  return s.accountActive && s.expiresAt > now && s.lastSeenAt > now - idleMs;
}

/**
 * The caller a session token stands for; an ApiError (401) for an unknown or ended one; null when the
 * token was never looked up because `mayLookUp` said no (a client blocked for failed authentications).
 */
export async function validateSession(c: Context<AppEnv>, token: string, mayLookUp: () => boolean): Promise<Caller | ApiError | null> {
  if (!looksLikeSecret("cvs_", token)) return new ApiError(401, ERROR_MESSAGES.unauthorized);
  const tokenHash = await hashToken(token);
  const now = Date.now();
  const idleMs = c.get("config").SESSION_IDLE_SECONDS * 1000;
  const known = knownSessions.get(tokenHash);
  const changedAt = known ? changedMembers.get(known.memberId) : undefined;
  if (known && (changedAt === undefined || changedAt < known.foundAt)) {
    if (usable(known, now, idleMs)) return callerOf(known);
    return known.accountActive ? sessionExpired() : new ApiError(401, ERROR_MESSAGES.unauthorized);
  }
  if (unknownSessions.get(tokenHash)) return new ApiError(401, ERROR_MESSAGES.unauthorized);
  if (!mayLookUp()) return null;

  const db = requestDatabase(c);
  // One round trip: the touch only moves a live session's last_seen_at, and the read sees the result.
  const [, rows] = await db.batch(findSessionStatements(db, tokenHash, now, idleMs));
  const row = rows[0];
  if (!row || !isRole(row.role)) {
    unknownSessions.set(tokenHash, true, UNKNOWN_SESSION_TTL_MS);
    return new ApiError(401, ERROR_MESSAGES.unauthorized);
  }
  const found: KnownSession = {
    sessionId: row.id,
    memberId: row.member_id,
    accountId: row.account_id,
    role: row.role,
    lastSeenAt: Number(row.last_seen_at),
    expiresAt: Number(row.expires_at),
    accountActive: row.status === "active",
    foundAt: now,
  };
  knownSessions.set(tokenHash, found, SESSION_CACHE_TTL_MS);
  if (usable(found, now, idleMs)) return callerOf(found);
  return found.accountActive ? sessionExpired() : new ApiError(401, ERROR_MESSAGES.unauthorized);
}

/** A new session's secret (for the cookie), the hash the database keeps, and its id: what sign-in and join open. */
export async function createSession(): Promise<{ token: string; tokenHash: string; sessionId: string }> {
  const token = generateSecret("cvs_");
  return { token, tokenHash: await hashToken(token), sessionId: newId("ses") };
}

/** Ends the session with this token hash, if any (sign-out), here at once: the member and session it belonged to. */
export async function endSession(db: Database, tokenHash: string, requestId: string | null, now: number): Promise<{ member_id: string; id: string } | null> {
  forgetSession(tokenHash);
  const [, , ended] = await db.batch(endSessionStatements(db, sql`token_hash = ${tokenHash}`, requestId, now));
  return ended[0] ?? null;
}

/** Ends every session of a member ("sign out everywhere"), here at once and within SESSION_CACHE_TTL_MS elsewhere: how many ended. */
export async function endAllSessions(db: Database, e: { accountId: string; memberId: string; requestId: string | null; now: number }): Promise<number> {
  forgetMember(e.memberId);
  return endMemberSessions(db, e);
}

/** How recent a session's proof of presence (sign-in or step-up) must be to add a passkey. */
export const STEP_UP_MAX_AGE_MS = 5 * 60_000;

/** Whether the session proved presence within STEP_UP_MAX_AGE_MS. */
export function recentlyVerified(db: Database, sessionId: string, now: number): Promise<boolean> {
  return verifiedSince(db, sessionId, now - STEP_UP_MAX_AGE_MS);
}

/** A console note outlives no page load by more than this (edge/identity/session-notes.ts). */
export const NOTE_LIFETIME_MS = 10 * 60_000;

/**
 * For the cron: deletes ended sessions and their notes, notes older than NOTE_LIFETIME_MS, expired WebAuthn challenges,
 * and invites a week past their expiry, in one batch.
 */
export async function cleanUpSignInData(
  db: Database,
  now: number,
  sessionIdleMs: number,
): Promise<{ sessions_deleted: number; notes_deleted: number; challenges_deleted: number; invites_deleted: number }> {
  const [notes, sessions, challenges, invites] = await db.batch([
    ...deleteEndedSessionsStatements(db, now, sessionIdleMs, now - NOTE_LIFETIME_MS),
    deleteExpiredChallengesStatement(db, now),
    deleteEndedInvitesStatement(db, now),
  ]);
  return { sessions_deleted: sessions.rowsAffected, notes_deleted: notes.rowsAffected, challenges_deleted: challenges.rowsAffected, invites_deleted: invites.rowsAffected };
}
