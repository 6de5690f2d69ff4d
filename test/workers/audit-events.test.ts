/**
 * The audit trail (docs/api.md "Audit trail"): GET /v1/audit-events pages newest first with a cursor,
 * shows no secret, only the account's own events; the cron records keys that expired and deletes
 * events older than AUDIT_RETENTION_SECONDS.
 */
import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuditPage } from "../../shared/keys.ts";
import worker from "../../edge/index.ts";
import { call, db, newAccount } from "./helpers.ts";
import { consoleCall, join } from "./console-session.ts";

afterEach(() => {
  vi.useRealTimers();
});

async function page(token: string, query = "") {
  const res = await call(`/v1/audit-events${query}`, { token });
  expect(res.status, await res.clone().text()).toBe(200);
  return AuditPage.strict().parse(await res.json());
}

const post = (token: string, path: string, body?: unknown) =>
  call(path, { token, method: "POST", ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }) });

describe("GET /v1/audit-events", () => {
  it("lists who created, rolled and revoked which key, newest first, with request ids and no secret", async () => {
    const owner = await newAccount(1);
    const createdRes = await post(owner.token, "/v1/keys", { name: "ci", scopes: ["jobs:read"] });
    const created = (await createdRes.json()) as { id: string; token: string; prefix: string };
    const rolledRes = await post(owner.token, `/v1/keys/${created.id}/roll`, { overlap_seconds: 0 });
    const rolled = (await rolledRes.json()) as { id: string; token: string; prefix: string };
    const revokedRes = await call(`/v1/keys/${rolled.id}`, { token: owner.token, method: "DELETE" });
    expect(revokedRes.status).toBe(200);

    const { events, next_cursor } = await page(owner.token);
    expect(next_cursor).toBeNull();
    expect(events.map((e) => [e.action, e.actor, e.target, e.request_id])).toEqual([
      ["key.revoked", owner.keyId, rolled.id, revokedRes.headers.get("x-request-id")],
      ["key.rolled", owner.keyId, created.id, rolledRes.headers.get("x-request-id")],
      ["key.created", owner.keyId, created.id, createdRes.headers.get("x-request-id")],
      ["key.created", "operator", owner.keyId, null],
    ]);
    expect(events[1]!.details).toMatchObject({ new_key_id: rolled.id, new_prefix: rolled.prefix, overlap_seconds: 0 });
    const text = JSON.stringify(events);
    expect(text).not.toContain(created.token);
    expect(text).not.toContain(rolled.token);
    // Another account's trail is its own.
    const stranger = await newAccount(0);
    expect((await page(stranger.token)).events.map((e) => e.target)).toEqual([stranger.keyId]);
  });

  it("pages with a cursor until there is no more; a bad cursor or limit is 400 naming it", async () => {
    const owner = await newAccount(1);
    for (let i = 0; i < 4; i++) expect((await post(owner.token, "/v1/keys", { name: `k${i}`, scopes: ["audit:read"] })).status).toBe(201);
    const first = await page(owner.token, "?limit=2");
    const second = await page(owner.token, `?limit=2&cursor=${first.next_cursor}`);
    const third = await page(owner.token, `?limit=2&cursor=${second.next_cursor}`);
    expect([first.events.length, second.events.length, third.events.length, third.next_cursor]).toEqual([2, 2, 1, null]);
    const ids = [...first.events, ...second.events, ...third.events].map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(new Set(ids).size).toBe(5);
    for (const [query, name] of [["?cursor=nonsense", "cursor"], ["?limit=0", "limit"], ["?limit=501", "limit"], ["?limit=x", "limit"]] as const) {
      const res = await call(`/v1/audit-events${query}`, { token: owner.token });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain(`parameter ${name}`);
    }
  });
});

describe("people by name", () => {
  it("names each event's actor and target (a key, a member, a member since removed), and narrows the trail to an actor or a target", async () => {
    const owner = await newAccount(1);
    const admin = await join(owner.accountId, "admin", "Ada Admin");
    const dev = await join(owner.accountId, "developer", "Dmitri Dev");
    // The admin, by console session, makes a key; then removes the developer.
    const made = await consoleCall("/v1/keys", { cookie: admin.cookie, json: { name: "CRM sync", scopes: ["jobs:read"] } });
    expect(made.status).toBe(201);
    const key = (await made.json()) as { id: string };
    expect((await consoleCall(`/v1/members/${dev.memberId}`, { cookie: admin.cookie, method: "DELETE" })).status).toBe(200);

    const { events } = await page(owner.token);
    const byAction = (action: string) => events.find((e) => e.action === action)!;
    expect(byAction("key.created")).toMatchObject({ actor: admin.memberId, actor_name: "Ada Admin", target: key.id, target_name: "CRM sync" });
    // Removed, yet named: by their own events, which the trail keeps.
    expect(byAction("member.removed")).toMatchObject({ actor: admin.memberId, actor_name: "Ada Admin", target: dev.memberId, target_name: "Dmitri Dev" });
    expect(events.find((e) => e.action === "session.signed_in" && e.actor === dev.memberId)).toMatchObject({ actor_name: "Dmitri Dev", target_name: null });
    // The operator's key has no name; operator is nobody's.
    expect(events.find((e) => e.actor === "operator" && e.action === "key.created")).toMatchObject({ actor_name: null, target: owner.keyId, target_name: null });

    const byAdmin = await page(owner.token, `?actor=${admin.memberId}`);
    expect(byAdmin.events.length).toBeGreaterThan(0);
    expect(new Set(byAdmin.events.map((e) => e.actor))).toEqual(new Set([admin.memberId]));
    expect(byAdmin.events.map((e) => e.action)).toContain("member.removed");
    const onKey = await page(owner.token, `?target=${key.id}`);
    expect(onKey.events.map((e) => [e.action, e.actor_name])).toEqual([["key.created", "Ada Admin"]]);
    for (const [query, error] of [
      ["?actor=a%20b", "Invalid parameter actor: not a key or member id, operator or system"],
      ["?target=x;y", "Invalid parameter target: not an id"],
    ] as const) {
      const res = await call(`/v1/audit-events${query}`, { token: owner.token });
      expect([res.status, await res.json()]).toEqual([400, { error }]);
    }
  });
});

describe("the cron", () => {
  it("records each key that expired once (actor system), and deletes events past AUDIT_RETENTION_SECONDS", async () => {
    const owner = await newAccount(1);
    const start = Date.now();
    const res = await post(owner.token, "/v1/keys", { name: "short", scopes: ["jobs:read"], expires_at: new Date(start + 60_000).toISOString() });
    const key = (await res.json()) as { id: string };
    await db.run(sql`insert into audit_events (account_id, action, actor, target, created_at) values (${owner.accountId}, 'key.created', 'operator', 'key_ancient', ${start - 366 * 86_400_000})`);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(start + 61_000);
    await worker.scheduled(createScheduledController(), env as never);
    await worker.scheduled(createScheduledController(), env as never);
    const { events } = await page(owner.token);
    expect(events.map((e) => [e.action, e.actor, e.target])).toEqual([
      ["key.expired", "system", key.id],
      ["key.created", owner.keyId, key.id],
      ["key.created", "operator", owner.keyId],
    ]);
    expect(events[0]!.details).toEqual({ expired_at: new Date(start + 60_000).toISOString() });
  });
});
