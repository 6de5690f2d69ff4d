/**
 * Console sessions (docs/api.md "Sessions"): idle and absolute lifetime with a fake clock (Date only),
 * sign-out and sign out everywhere, the cache's lifetime for a session ended elsewhere, CSRF refusal of
 * cross-site requests made with the cookie, and the round trips a session costs on the lookup path.
 */
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../edge/index.ts";
import { ENDED_INVITE_KEPT_MS } from "../../edge/identity/store/invites.ts";
import { SESSION_CACHE_TTL_MS } from "../../edge/identity/sessions.ts";
import { INVITE_LIFETIME_MS } from "../../shared/members.ts";
import { consoleCall, inviteToken, join, sessionCookieOf, signIn } from "./console-session.ts";
import { callWith, databaseRequestsServed, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

// The settings' defaults (edge/env.ts): SESSION_IDLE_SECONDS 12 h, SESSION_MAX_SECONDS 7 days.
const IDLE_MS = 43_200_000;
const MAX_MS = 604_800_000;

afterEach(() => {
  vi.useRealTimers();
});

function clockAt(ms: number) {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(ms);
}

const account = (cookie: string) => consoleCall("/v1/account", { cookie });
const reasonOf = async (res: Response) => [res.status, ((await res.json()) as { reason?: string }).reason];

describe("lifetime", () => {
  it("ends once unused for SESSION_IDLE_SECONDS: 401 session_expired", async () => {
    const { accountId } = await newAccount(0);
    const start = Date.now();
    const { cookie } = await join(accountId, "viewer");
    clockAt(start + IDLE_MS - 60_000);
    expect((await account(cookie)).status).toBe(200);
    // That use was looked up (the cache had ended), so it moved last_seen_at: another idle period from now.
    clockAt(start + 2 * IDLE_MS - 120_000);
    expect((await account(cookie)).status).toBe(200);
    clockAt(start + 3 * IDLE_MS);
    expect(await reasonOf(await account(cookie))).toEqual([401, "session_expired"]);
  });

  it("ends SESSION_MAX_SECONDS after sign-in however much it is used", async () => {
    const { accountId } = await newAccount(0);
    const start = Date.now();
    const { cookie } = await join(accountId, "viewer");
    for (let t = start + IDLE_MS / 2; t < start + MAX_MS; t += IDLE_MS / 2) {
      clockAt(t);
      expect((await account(cookie)).status, `at +${(t - start) / 3_600_000} h`).toBe(200);
    }
    // The session was made a moment after start.
    clockAt(start + MAX_MS + 5_000);
    expect(await reasonOf(await account(cookie))).toEqual([401, "session_expired"]);
  });

  it("an unknown or malformed cookie is 401, and no cookie at all is 401", async () => {
    expect((await account(`cvs_${"A".repeat(43)}`)).status).toBe(401);
    expect((await account("junk")).status).toBe(401);
    expect((await consoleCall("/v1/account")).status).toBe(401);
  });
});

describe("the cron", () => {
  it("deletes ended sessions, expired challenges, and invites a week past their expiry", async () => {
    const { accountId } = await newAccount(0);
    const start = Date.now();
    const idle = await join(accountId, "viewer");
    const live = await join(accountId, "viewer");
    await consoleCall("/v1/auth/sign-in/options", { method: "POST" });
    await inviteToken(accountId, "viewer");
    const count = async (q: ReturnType<typeof sql>) => Number((await db.all<{ n: number }>(q))[0]!.n);
    clockAt(start + IDLE_MS - 60_000);
    expect((await account(live.cookie)).status).toBe(200);
    clockAt(start + IDLE_MS + 60_000);
    await worker.scheduled(createScheduledController(), env as never);
    expect(await count(sql`select count(*) as n from sessions where member_id = ${idle.memberId}`)).toBe(0);
    expect(await count(sql`select count(*) as n from sessions where member_id = ${live.memberId}`)).toBe(1);
    expect(await count(sql`select count(*) as n from webauthn_challenges where expires_at <= ${start + IDLE_MS}`)).toBe(0);
    expect(await count(sql`select count(*) as n from invites where account_id = ${accountId} and used_at is null`)).toBe(1);
    clockAt(start + INVITE_LIFETIME_MS + ENDED_INVITE_KEPT_MS + 60_000);
    await worker.scheduled(createScheduledController(), env as never);
    expect(await count(sql`select count(*) as n from invites where account_id = ${accountId}`)).toBe(0);
  });
});

describe("signing out", () => {
  it("sign-out ends this session at once, clears the cookie, is recorded, and is 204 again without one", async () => {
    const { accountId } = await newAccount(0);
    const { cookie, memberId } = await join(accountId, "viewer");
    expect((await account(cookie)).status).toBe(200);
    const res = await consoleCall("/v1/auth/sign-out", { method: "POST", cookie });
    expect(res.status).toBe(204);
    expect(sessionCookieOf(res)).toBe("");
    expect((await account(cookie)).status).toBe(401);
    expect((await consoleCall("/v1/auth/sign-out", { method: "POST", cookie })).status).toBe(204);
    const events = await db.all<{ action: string; actor: string }>(sql`select action, actor from audit_events where account_id = ${accountId} and action = 'session.signed_out'`);
    expect(events).toEqual([{ action: "session.signed_out", actor: memberId }]);
  });

  it("sign out everywhere ends every session of the member, and a key cannot call it", async () => {
    const { accountId, token } = await newAccount(0);
    const joined = await join(accountId, "viewer");
    const other = await signIn(joined.authenticator);
    const colleague = await join(accountId, "viewer", "Grace");
    expect((await consoleCall("/v1/auth/sign-out-everywhere", { method: "POST", cookie: joined.cookie })).status).toBe(204);
    expect((await account(joined.cookie)).status).toBe(401);
    expect((await account(other.cookie!)).status).toBe(401);
    expect((await account(colleague.cookie)).status).toBe(200);
    const [n] = await db.all<{ n: number }>(sql`select count(*) as n from sessions where member_id = ${joined.memberId}`);
    expect(Number(n!.n)).toBe(0);
    const byKey = await consoleCall("/v1/auth/sign-out-everywhere", { method: "POST", headers: { authorization: `Bearer ${token}` } });
    expect(await reasonOf(byKey)).toEqual([403, "session_required"]);
  });

  it(`a session ended elsewhere (another isolate, the database) is refused once this isolate's cache entry ends: within ${SESSION_CACHE_TTL_MS / 1000} s`, async () => {
    const { accountId } = await newAccount(0);
    const { cookie, memberId } = await join(accountId, "viewer");
    expect((await account(cookie)).status).toBe(200);
    const start = Date.now();
    await db.run(sql`delete from sessions where member_id = ${memberId}`);
    clockAt(start + SESSION_CACHE_TTL_MS - 1_000);
    expect((await account(cookie)).status).toBe(200);
    clockAt(start + SESSION_CACHE_TTL_MS + 1);
    expect((await account(cookie)).status).toBe(401);
  });
});

describe("cross-site requests with the cookie (CSRF)", () => {
  it("a cross-site POST is refused with 403 cross_site_request and writes nothing; same-origin passes", async () => {
    const { accountId } = await newAccount(0);
    const { cookie } = await join(accountId, "admin");
    const body = { name: "from evil", scopes: ["account:read"] };
    const refusals = [
      await consoleCall("/v1/keys", { cookie, json: body, origin: "https://evil.example" }),
      await consoleCall("/v1/keys", { cookie, json: body, origin: "null" }),
      await consoleCall("/v1/keys", { cookie, json: body, origin: null, headers: { "sec-fetch-site": "cross-site" } }),
      // Neither header: not a browser request made by the console, so not one a cookie may authenticate.
      await consoleCall("/v1/keys", { cookie, json: body, origin: null }),
      await consoleCall("/v1/keys", { cookie, json: body, origin: "http://localhost:8787.evil.example" }),
    ];
    for (const res of refusals) {
      expect([res.status, await res.json()]).toEqual([
        403,
        { error: "Cross-site request refused: a request made with the session cookie must come from the console's origin", reason: "cross_site_request" },
      ]);
    }
    const [n] = await db.all<{ n: number }>(sql`select count(*) as n from api_keys where account_id = ${accountId} and name = 'from evil'`);
    expect(Number(n!.n)).toBe(0);
    expect((await consoleCall("/v1/keys", { cookie, json: { ...body, name: "mine" } })).status).toBe(201);
    expect((await consoleCall("/v1/keys", { cookie, json: { ...body, name: "mine too" }, origin: null, headers: { "sec-fetch-site": "same-origin" } })).status).toBe(201);
    // Reading is not refused: a cross-site GET cannot read the answer, and SameSite=Strict keeps the cookie off it anyway.
    expect((await consoleCall("/v1/keys", { cookie, origin: "https://evil.example" })).status).toBe(200);
  });

  it("a bearer request is not subject to the check", async () => {
    const { token } = await newAccount(0);
    const res = await consoleCall("/v1/keys", { headers: { authorization: `Bearer ${token}` }, json: { name: "ci", scopes: ["account:read"] }, origin: "https://elsewhere.example" });
    expect(res.status).toBe(201);
  });
});

describe("round trips (docs/api.md \"Hot path\"), counted at the database", () => {
  const counted = { DATABASE_URL: inject("countedDatabaseUrl") };
  const requestsServed = () => databaseRequestsServed(counted.DATABASE_URL);

  it("a lookup with a session costs one more round trip when the session is cold, and one in all when warm", async () => {
    const { accountId } = await newAccount(5);
    const { cookie } = await join(accountId, "developer");
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["s@example.org"] });
    // Over https at another host the cookie is __Host-session.
    const lookup = async () => {
      const before = await requestsServed();
      const res = await callWith(counted, `/v1/people?profnet_id=${ids.profnet_id}`, { headers: { cookie: `__Host-session=${cookie}` } });
      return [res.status, (await requestsServed()) - before];
    };
    expect(await lookup()).toEqual([200, 2]);
    expect(await lookup()).toEqual([200, 1]);
    expect(await lookup()).toEqual([200, 1]);
  });
});
