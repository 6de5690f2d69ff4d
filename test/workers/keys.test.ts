/**
 * Keys as a resource (docs/api.md "Keys and scopes"): create, list, roll, revoke; expiry, roll
 * overlap and the daily credit cap with a fake clock (Date only); the auth cache's lifetime for a
 * revocation made elsewhere.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { ApiKey, ApiKeyWithToken, MAX_LIVE_KEYS } from "../../shared/keys.ts";
import { SCOPES } from "../../shared/scopes.ts";
import { KNOWN_KEY_TTL_MS } from "../../edge/identity/authenticate.ts";
import { createApiKey } from "../../scripts/admin/accounts.ts";
import { call, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

afterEach(() => {
  vi.useRealTimers();
});

const json = (body: unknown) => ({ headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function createKey(token: string, body: unknown) {
  return call("/v1/keys", { token, method: "POST", ...json(body) });
}

async function created(token: string, body: unknown) {
  const res = await createKey(token, body);
  expect(res.status, await res.clone().text()).toBe(201);
  return ApiKeyWithToken.strict().parse(await res.json());
}

async function auditActions(accountId: string) {
  return db.all<{ action: string; actor: string; target: string; details: string }>(
    sql`select action, actor, target, details from audit_events where account_id = ${accountId} order by id`,
  );
}

/** Moves the Worker's clock (Date only: timers and I/O are untouched). */
function clockAt(ms: number) {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(ms);
}

describe("POST /v1/keys", () => {
  it("creates a named, scoped key whose secret is shown once, stored hashed, usable at once, and audited", async () => {
    const owner = await newAccount(5);
    const key = await created(owner.token, { name: "CRM sync", scopes: ["people:read", "account:read"], daily_credit_cap: 3 });
    expect(key).toMatchObject({
      name: "CRM sync",
      scopes: ["people:read", "account:read"],
      created_by: owner.keyId,
      last_used_at: null,
      expires_at: null,
      revoked_at: null,
      daily_credit_cap: 3,
      status: "active",
      replaced_by: null,
    });
    expect(key.token).toMatch(/^cv_[A-Za-z0-9_-]{43}$/);
    expect(key.prefix).toBe(key.token.slice(0, 10));
    const [stored] = await db.all<{ token_hash: string }>(sql`select token_hash from api_keys where id = ${key.id}`);
    expect(stored!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    const everything = JSON.stringify(await db.all(sql`select * from api_keys where id = ${key.id}`)) + JSON.stringify(await auditActions(owner.accountId));
    expect(everything).not.toContain(key.token);
    expect((await call("/v1/account", { token: key.token })).status).toBe(200);
    // The list never shows a secret.
    const list = (await (await call("/v1/keys", { token: owner.token })).json()) as { keys: unknown[] };
    for (const k of list.keys) ApiKey.strict().parse(k);
    expect(list.keys.map((k) => (k as ApiKey).id)).toEqual(expect.arrayContaining([owner.keyId, key.id]));
    // The owner's own key was made by the operator (the admin CLI), and audited as such.
    const [first, event] = await auditActions(owner.accountId);
    expect(first).toMatchObject({ action: "key.created", actor: "operator", target: owner.keyId });
    expect(event).toMatchObject({ action: "key.created", actor: owner.keyId, target: key.id });
    expect(JSON.parse(event!.details)).toEqual({ name: "CRM sync", prefix: key.prefix, scopes: ["people:read", "account:read"], expires_at: null, daily_credit_cap: 3 });
  });

  it.each([
    [{}, "name"],
    [{ name: "  ", scopes: ["people:read"] }, "name"],
    [{ name: "x".repeat(101), scopes: ["people:read"] }, "name"],
    [{ name: "a" }, "scopes"],
    [{ name: "a", scopes: [] }, "scopes"],
    [{ name: "a", scopes: ["people:write"] }, "scopes.0"],
    [{ name: "a", scopes: ["people:read", "people:read"] }, "scopes"],
    [{ name: "a", scopes: ["people:read"], expires_at: "tomorrow" }, "expires_at"],
    [{ name: "a", scopes: ["people:read"], expires_at: "2001-01-01T00:00:00Z" }, "expires_at"],
    [{ name: "a", scopes: ["people:read"], expires_at: "2999-01-01T00:00:00Z" }, "expires_at"],
    [{ name: "a", scopes: ["people:read"], daily_credit_cap: 0 }, "daily_credit_cap"],
    [{ name: "a", scopes: ["people:read"], daily_credit_cap: 1.5 }, "daily_credit_cap"],
    [{ name: "a", scopes: ["people:read"], token: "cv_mine" }, "token"],
  ])("answers 400 naming the field for %j", async (body, field) => {
    const owner = await newAccount(1);
    const res = await createKey(owner.token, body);
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: string };
    expect(error).toContain(field === "token" ? '"token"' : `parameter ${field}`);
    expect(await db.all(sql`select id from api_keys where account_id = ${owner.accountId}`)).toHaveLength(1);
  });

  it("answers 400 for a body that is not JSON, and writes nothing", async () => {
    const owner = await newAccount(1);
    const res = await call("/v1/keys", { token: owner.token, method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect(res.status).toBe(400);
    expect((await auditActions(owner.accountId)).map((e) => e.actor)).toEqual(["operator"]);
  });

  it("never makes a key stronger than the one asking: scopes (403 naming it), cap and expiry (400)", async () => {
    const owner = await newAccount(1);
    const limited = await created(owner.token, { name: "limited", scopes: ["keys:write", "people:read"], daily_credit_cap: 5, expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    const wider = await createKey(limited.token, { name: "w", scopes: ["people:read", "audit:read"], daily_credit_cap: 5, expires_at: new Date(Date.now() + 60_000).toISOString() });
    expect([wider.status, await wider.json()]).toEqual([403, { error: "This API key lacks the scope audit:read", reason: "missing_scope", scope: "audit:read" }]);
    const uncapped = await createKey(limited.token, { name: "u", scopes: ["people:read"], expires_at: new Date(Date.now() + 60_000).toISOString() });
    expect([uncapped.status, ((await uncapped.json()) as { error: string }).error]).toEqual([400, expect.stringContaining("daily_credit_cap")]);
    const longer = await createKey(limited.token, { name: "l", scopes: ["people:read"], daily_credit_cap: 5 });
    expect([longer.status, ((await longer.json()) as { error: string }).error]).toEqual([400, expect.stringContaining("expires_at")]);
    await created(limited.token, { name: "ok", scopes: ["people:read"], daily_credit_cap: 5, expires_at: new Date(Date.now() + 60_000).toISOString() });
  });

  it(`holds at most ${MAX_LIVE_KEYS} live keys per account through the API (409); a revoked one makes room`, async () => {
    const owner = await newAccount(1);
    for (let i = 1; i < MAX_LIVE_KEYS; i++) await created(owner.token, { name: `k${i}`, scopes: ["people:read"] });
    const over = await createKey(owner.token, { name: "over", scopes: ["people:read"] });
    expect([over.status, ((await over.json()) as { error: string }).error]).toEqual([409, `An account holds at most ${MAX_LIVE_KEYS} live keys: revoke one first`]);
    // The operator may give an account more (a load test); they count against the API's bound all the same.
    await createApiKey(db, owner.accountId, { name: "operator's extra" });
    expect((await createKey(owner.token, { name: "still over", scopes: ["people:read"] })).status).toBe(409);
    const [victim] = await db.all<{ id: string }>(sql`select id from api_keys where account_id = ${owner.accountId} and name = 'k1'`);
    const [extra] = await db.all<{ id: string }>(sql`select id from api_keys where account_id = ${owner.accountId} and name = 'operator''s extra'`);
    for (const id of [victim!.id, extra!.id]) expect((await call(`/v1/keys/${id}`, { token: owner.token, method: "DELETE" })).status).toBe(200);
    await created(owner.token, { name: "room", scopes: ["people:read"] });
  });
});

describe("expiry, roll and revocation", () => {
  it("an expiring key works until expires_at, then gets 401 key_expired (from the cache, at once)", async () => {
    const owner = await newAccount(1);
    const start = Date.now();
    const key = await created(owner.token, { name: "temp", scopes: ["account:read"], expires_at: new Date(start + 3_600_000).toISOString() });
    expect((await call("/v1/account", { token: key.token })).status).toBe(200);
    clockAt(start + 3_600_000 + 1);
    const res = await call("/v1/account", { token: key.token });
    expect([res.status, await res.json()]).toEqual([401, { error: "Unauthorized", reason: "key_expired" }]);
    expect(res.headers.get("www-authenticate")).toBe('Bearer error="invalid_token", error_description="The API key has expired"');
  });

  it("a roll makes a new key with the same name, scopes and cap; the old one works for the overlap, then 401 key_expired", async () => {
    const owner = await newAccount(1);
    const old = await created(owner.token, { name: "ci", scopes: ["account:read", "jobs:read"], daily_credit_cap: 7 });
    expect((await call("/v1/account", { token: old.token })).status).toBe(200);
    const start = Date.now();
    const res = await call(`/v1/keys/${old.id}/roll`, { token: owner.token, method: "POST", ...json({ overlap_seconds: 600 }) });
    expect(res.status).toBe(201);
    const fresh = ApiKeyWithToken.strict().parse(await res.json());
    // Scopes are always listed in the order of docs/api.md's table.
    expect(fresh).toMatchObject({ name: "ci", scopes: ["jobs:read", "account:read"], daily_credit_cap: 7, created_by: owner.keyId, status: "active" });
    expect(fresh.token).not.toBe(old.token);
    const listed = ((await (await call("/v1/keys", { token: owner.token })).json()) as { keys: ApiKey[] }).keys.find((k) => k.id === old.id)!;
    expect(listed.replaced_by).toBe(fresh.id);
    expect(Date.parse(listed.expires_at!) - start).toBeGreaterThanOrEqual(599_000);
    expect(Date.parse(listed.expires_at!) - start).toBeLessThanOrEqual(601_000);
    // Both work during the overlap; a rolled key cannot be rolled again.
    expect((await call("/v1/account", { token: old.token })).status).toBe(200);
    expect((await call("/v1/account", { token: fresh.token })).status).toBe(200);
    const again = await call(`/v1/keys/${old.id}/roll`, { token: owner.token, method: "POST" });
    expect([again.status, ((await again.json()) as { error: string }).error]).toEqual([409, "The key was already rolled: roll its replacement"]);
    clockAt(start + 601_000);
    expect((await call("/v1/account", { token: fresh.token })).status).toBe(200);
    const after = await call("/v1/account", { token: old.token });
    expect([after.status, await after.json()]).toEqual([401, { error: "Unauthorized", reason: "key_expired" }]);
    expect((await auditActions(owner.accountId)).map((e) => [e.action, e.actor])).toEqual([
      ["key.created", "operator"],
      ["key.created", owner.keyId],
      ["key.rolled", owner.keyId],
    ]);
  });

  it("a roll's overlap defaults to 24 hours and is at most 7 days (400 naming overlap_seconds)", async () => {
    const owner = await newAccount(1);
    const a = await created(owner.token, { name: "a", scopes: ["account:read"] });
    for (const body of [{ overlap_seconds: 604_801 }, { overlap_seconds: -1 }, { overlap_seconds: "60" }, { overlap: 5 }]) {
      const res = await call(`/v1/keys/${a.id}/roll`, { token: owner.token, method: "POST", ...json(body) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(/overlap/);
    }
    const start = Date.now();
    // No body at all, or an empty one sent as JSON: the defaults.
    expect((await call(`/v1/keys/${a.id}/roll`, { token: owner.token, method: "POST", headers: { "content-type": "application/json" }, body: "" })).status).toBe(201);
    const [row] = await db.all<{ expires_at: number }>(sql`select expires_at from api_keys where id = ${a.id}`);
    expect(Number(row!.expires_at) - start).toBeGreaterThanOrEqual(86_399_000);
    expect(Number(row!.expires_at) - start).toBeLessThanOrEqual(86_401_000);
  });

  it("a key cannot roll a key stronger than itself (it would receive its secret), nor one of another account (404)", async () => {
    const owner = await newAccount(1);
    const roller = await created(owner.token, { name: "roller", scopes: ["keys:write"] });
    const res = await call(`/v1/keys/${owner.keyId}/roll`, { token: roller.token, method: "POST" });
    expect(res.status).toBe(403);
    const stranger = await newAccount(1);
    expect((await call(`/v1/keys/${stranger.keyId}/roll`, { token: owner.token, method: "POST" })).status).toBe(404);
    expect((await call(`/v1/keys/${stranger.keyId}`, { token: owner.token, method: "DELETE" })).status).toBe(404);
    expect((await call(`/v1/account`, { token: stranger.token })).status).toBe(200);
  });

  it("DELETE revokes: 401 key_revoked at once through this isolate; idempotent; audited", async () => {
    const owner = await newAccount(1);
    const key = await created(owner.token, { name: "leaked", scopes: ["account:read"] });
    expect((await call("/v1/account", { token: key.token })).status).toBe(200);
    const res = await call(`/v1/keys/${key.id}`, { token: owner.token, method: "DELETE" });
    const body = ApiKey.strict().parse(await res.json());
    expect([res.status, body.status, body.revoked_at !== null]).toEqual([200, "revoked", true]);
    const refused = await call("/v1/account", { token: key.token });
    expect([refused.status, await refused.json()]).toEqual([401, { error: "Unauthorized", reason: "key_revoked" }]);
    const again = await call(`/v1/keys/${key.id}`, { token: owner.token, method: "DELETE" });
    expect([again.status, ((await again.json()) as ApiKey).revoked_at]).toEqual([200, body.revoked_at]);
    expect((await auditActions(owner.accountId)).map((e) => [e.action, e.target])).toEqual([
      ["key.created", owner.keyId],
      ["key.created", key.id],
      ["key.revoked", key.id],
    ]);
  });

  it(`a key revoked elsewhere (the admin CLI, another isolate) is refused once this isolate's cache entry ends: within ${KNOWN_KEY_TTL_MS / 1000} s`, async () => {
    const owner = await newAccount(1);
    const key = await created(owner.token, { name: "elsewhere", scopes: ["account:read"] });
    const start = Date.now();
    clockAt(start);
    expect((await call("/v1/account", { token: key.token })).status).toBe(200);
    await db.run(sql`update api_keys set revoked_at = ${start} where id = ${key.id}`);
    clockAt(start + KNOWN_KEY_TTL_MS - 1_000);
    expect((await call("/v1/account", { token: key.token })).status).toBe(200);
    clockAt(start + KNOWN_KEY_TTL_MS + 1);
    const res = await call("/v1/account", { token: key.token });
    expect([res.status, await res.json()]).toEqual([401, { error: "Unauthorized", reason: "key_revoked" }]);
  });
});

describe("daily credit cap", () => {
  it("a key past its cap gets 402 daily_credit_cap while the balance lasts for other keys; the next UTC day it works again", async () => {
    const owner = await newAccount(10);
    const capped = await created(owner.token, { name: "capped", scopes: ["people:read"], daily_credit_cap: 2 });
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["cap@example.org"] });
    // Noon UTC of a fixed day, so the test never straddles midnight.
    const day = Date.UTC(2031, 4, 6, 12);
    clockAt(day);
    const look = (token: string, id = ids.profnet_id) => call(`/v1/people?profnet_id=${id}`, { token });
    expect((await look(capped.token)).status).toBe(200);
    expect((await look(capped.token)).status).toBe(200);
    const over = await look(capped.token);
    expect([over.status, await over.json()]).toEqual([402, { error: "Daily credit cap reached for this key", reason: "daily_credit_cap" }]);
    expect([over.headers.get("x-credits-charged"), over.headers.get("x-credits-remaining")]).toEqual(["0", "8"]);
    // 402 wins over 404 for the cap as for the balance.
    expect((await look(capped.token, uniqueIds().profnet_id)).status).toBe(402);
    expect((await look(owner.token)).status).toBe(200);
    clockAt(day + 86_400_000);
    expect((await look(capped.token)).status).toBe(200);
    const [spent] = await db.all<{ n: number }>(sql`select coalesce(sum(-delta), 0) as n from credit_ledger where key_id = ${capped.id}`);
    expect(Number(spent!.n)).toBe(3);
  });

  it("concurrent lookups never take a key past its cap", async () => {
    const owner = await newAccount(50);
    const capped = await created(owner.token, { name: "racing", scopes: ["people:read"], daily_credit_cap: 5 });
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["race@example.org"] });
    const answers = await Promise.all(Array.from({ length: 12 }, () => call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: capped.token })));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(5);
    expect(answers.filter((r) => r.status === 402)).toHaveLength(7);
  });
});

describe("last_used_at", () => {
  it("is written on a key's first use and then at most once per five minutes", async () => {
    const owner = await newAccount(5);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["used@example.org"] });
    const key = await created(owner.token, { name: "used", scopes: ["people:read"] });
    const start = Date.UTC(2031, 6, 1, 10);
    clockAt(start);
    expect((await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: key.token })).status).toBe(200);
    const lastUsed = async () => (await db.all<{ t: number | null }>(sql`select last_used_at as t from api_keys where id = ${key.id}`))[0]!.t;
    expect(Number(await lastUsed())).toBe(start);
    clockAt(start + 60_000);
    expect((await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: key.token })).status).toBe(200);
    expect(Number(await lastUsed())).toBe(start);
    clockAt(start + 301_000);
    expect((await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: key.token })).status).toBe(200);
    expect(Number(await lastUsed())).toBe(start + 301_000);
  });
});

it("a key the operator makes without --scopes holds every scope (keys made before 1.7.0: test/node/keys-migration.test.ts)", async () => {
  const { accountId } = await newAccount(1);
  const key = await createApiKey(db, accountId);
  const [row] = await db.all<{ scopes: string }>(sql`select scopes from api_keys where id = ${key.id}`);
  expect(JSON.parse(row!.scopes)).toEqual([...SCOPES]);
});
