/**
 * GET /v1/usage (docs/api.md "Usage") from the daily roll-up, and the hot path it must not slow:
 * a verification makes no database round trip before its answer; the key's activity is written after it.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { inject } from "vitest";
import { sql } from "drizzle-orm";
import { UsageReport } from "../../shared/keys.ts";
import { createApiKey } from "../../scripts/admin/accounts.ts";
import app from "../../edge/index.ts";
import { callWith, cancelUnfinishedJobs, call, clientAddress, databaseRequestsServed, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

afterEach(async () => {
  vi.useRealTimers();
  await cancelUnfinishedJobs();
});

function clockAt(ms: number) {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(ms);
}

async function usage(token: string, query: string) {
  const res = await call(`/v1/usage?${query}`, { token });
  expect(res.status, await res.clone().text()).toBe(200);
  return UsageReport.strict().parse(await res.json());
}

const zero = { lookups_charged: 0, lookups_not_found: 0, lookups_refused_credits: 0, verifications: 0, job_lines: 0, credits_spent: 0 };

describe("GET /v1/usage", () => {
  it("counts each kind of use per day and per key, as JSON and CSV", async () => {
    const owner = await newAccount(2);
    const second = await createApiKey(db, owner.accountId, { name: "second" });
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["u@example.org"] });
    const day1 = Date.UTC(2032, 0, 10, 9);
    clockAt(day1);
    expect((await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: owner.token })).status).toBe(200);
    expect((await call(`/v1/people?profnet_id=${uniqueIds().profnet_id}`, { token: owner.token })).status).toBe(404);
    expect((await call(`/v1/people?profnet_id=bad`, { token: owner.token })).status).toBe(400);
    const job = await call("/v1/email_verification_jobs", {
      token: owner.token,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_addresses: ["a@example.org", "not an address", "b@example.org"] }),
    });
    expect(job.status).toBe(202);
    clockAt(day1 + 86_400_000);
    expect((await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: second.token })).status).toBe(200);
    expect((await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: second.token })).status).toBe(402);
    for (let i = 0; i < 2; i++) expect((await call(`/v1/email_verifications?email_address=x`, { token: second.token })).status).toBe(200);
    // Verification counts reach the roll-up within 30 s (after an answer, never before it).
    clockAt(day1 + 86_400_000 + 31_000);
    // (callWith waits for the work the request leaves after its answer, as the runtime would finish it.)
    expect((await callWith({}, `/v1/account`, { token: second.token })).status).toBe(200);

    const byDay = await usage(owner.token, "from=2032-01-09&to=2032-01-12");
    expect(byDay).toEqual({
      from: "2032-01-09",
      to: "2032-01-12",
      group_by: "day",
      rows: [
        { day: "2032-01-10", ...zero, lookups_charged: 1, lookups_not_found: 1, job_lines: 3, credits_spent: 1 },
        { day: "2032-01-11", ...zero, lookups_charged: 1, lookups_refused_credits: 1, verifications: 2, credits_spent: 1 },
      ],
      totals: { lookups_charged: 2, lookups_not_found: 1, lookups_refused_credits: 1, verifications: 2, job_lines: 3, credits_spent: 2 },
    });
    const byKey = await usage(owner.token, "from=2032-01-09&to=2032-01-12&group_by=key");
    expect(byKey.rows).toEqual(
      [
        { key_id: owner.keyId, key_name: null, ...zero, lookups_charged: 1, lookups_not_found: 1, job_lines: 3, credits_spent: 1 },
        { key_id: second.id, key_name: "second", ...zero, lookups_charged: 1, lookups_refused_credits: 1, verifications: 2, credits_spent: 1 },
      ].sort((a, b) => (a.key_id < b.key_id ? -1 : 1)), // SQLite orders by bytes
    );
    // One key's use alone, by day or as its one row.
    const secondByDay = await usage(owner.token, `from=2032-01-09&to=2032-01-12&key_id=${second.id}`);
    expect(secondByDay.rows).toEqual([{ day: "2032-01-11", ...zero, lookups_charged: 1, lookups_refused_credits: 1, verifications: 2, credits_spent: 1 }]);
    expect((await usage(owner.token, `from=2032-01-09&to=2032-01-12&group_by=key&key_id=${second.id}`)).rows.map((r) => r.key_name)).toEqual(["second"]);
    const csvByKey = await (await call(`/v1/usage?from=2032-01-09&to=2032-01-12&group_by=key&key_id=${second.id}&format=csv`, { token: owner.token })).text();
    expect(csvByKey).toBe(`key_id,key_name,lookups_charged,lookups_not_found,lookups_refused_credits,verifications,job_lines,credits_spent\r\n${second.id},second,1,0,1,2,0,1\r\n`);
    const csv = await call("/v1/usage?from=2032-01-09&to=2032-01-12", { token: owner.token, headers: { accept: "text/csv" } });
    expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(await csv.text()).toBe(
      "day,lookups_charged,lookups_not_found,lookups_refused_credits,verifications,job_lines,credits_spent\r\n" +
        "2032-01-10,1,1,0,0,3,1\r\n" +
        "2032-01-11,1,0,1,2,0,1\r\n",
    );
    // The default period is the 30 days up to today (UTC).
    const recent = await usage(owner.token, "");
    expect([recent.from, recent.to]).toEqual(["2031-12-13", "2032-01-11"]);
    // Another account sees none of it.
    const stranger = await newAccount(0);
    expect((await usage(stranger.token, "from=2032-01-09&to=2032-01-12")).rows).toEqual([]);
  });

  it.each([
    ["from=2032-13-01", "Invalid parameter from: must be a date as YYYY-MM-DD"],
    ["from=2032-02-30", "Invalid parameter from: must be a date as YYYY-MM-DD"],
    ["to=yesterday", "Invalid parameter to: must be a date as YYYY-MM-DD"],
    ["from=2032-02-02&to=2032-02-01", "Invalid parameter from: must not be after to"],
    ["from=2030-01-01&to=2032-01-01", "Invalid parameter from: the period may cover at most 366 days"],
    ["group_by=month", "Invalid parameter group_by"],
    ["format=xml", "Invalid parameter format"],
    ["key_id=key%20x", "Invalid parameter key_id: not a key or member id"],
  ])("answers 400 naming the parameter for %s", async (query, message) => {
    const { token } = await newAccount(0);
    const res = await call(`/v1/usage?${query}`, { token });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain(message);
  });
});

describe("the hot path (docs/api.md \"Hot path\"), counted at the database", () => {
  const counted = { DATABASE_URL: inject("countedDatabaseUrl") };
  const served = () => databaseRequestsServed(counted.DATABASE_URL);
  const headers = { "CF-Connecting-IP": clientAddress() };

  /** The round trips a verification costs, its answer and the work it leaves after the answer together. */
  async function verify(token: string, bindings: Record<string, string> = counted) {
    const ctx = createExecutionContext();
    const before = await served();
    const res = await app.fetch(new Request("http://api.test/v1/email_verifications?email_address=x", { headers: { ...headers, authorization: `Bearer ${token}` } }), { ...env, ...bindings }, ctx);
    expect(res.status).toBe(200);
    await waitOnExecutionContext(ctx);
    return (await served()) - before;
  }

  it("a verification with a warm key makes none; its key's verification count is written at most every 30 s", async () => {
    const { token, keyId } = await newAccount(0);
    const start = Date.UTC(2032, 5, 1, 8);
    clockAt(start);
    expect(await verify(token)).toBe(2); // cold: the key's lookup, and its first use written
    expect(await verify(token)).toBe(0);
    expect(await verify(token)).toBe(0);
    clockAt(start + 31_000);
    expect(await verify(token)).toBe(1);
    const [row] = await db.all<{ verifications: number }>(sql`select verifications from usage_daily where key_id = ${keyId} and day = '2032-06-01'`);
    expect(Number(row!.verifications)).toBe(4);
  });

  it("the activity is written after the answer: a database that hangs then does not hold the answer back", async () => {
    const proxyUrl = inject("faultyDatabaseUrl");
    const setProxyMode = async (mode: "pass" | "hang") => expect((await fetch(`${proxyUrl}/__proxy`, { method: "PUT", body: JSON.stringify({ mode }) })).status).toBe(204);
    const viaProxy = { DATABASE_URL: proxyUrl, DATABASE_TIMEOUT_MS: "2000" };
    const { token, keyId } = await newAccount(0);
    const start = Date.UTC(2032, 5, 2, 8);
    clockAt(start);
    await verify(token, viaProxy);
    clockAt(start + 31_000);
    await setProxyMode("hang");
    try {
      const ctx = createExecutionContext();
      let after = false;
      const res = await app.fetch(new Request("http://api.test/v1/email_verifications?email_address=x", { headers: { ...headers, authorization: `Bearer ${token}` } }), { ...env, ...viaProxy }, ctx);
      const leftover = waitOnExecutionContext(ctx).then(() => (after = true));
      expect([res.status, after]).toEqual([200, false]);
      await leftover;
    } finally {
      await setProxyMode("pass");
    }
    // The write that failed is kept and made by the next request that finds it due.
    clockAt(start + 62_000);
    await verify(token, viaProxy);
    const [row] = await db.all<{ verifications: number }>(sql`select verifications from usage_daily where key_id = ${keyId} and day = '2032-06-02'`);
    expect(Number(row!.verifications)).toBe(3);
  });
});
