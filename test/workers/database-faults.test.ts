/**
 * A database that hangs, resets connections, answers errors or is not there: every request that
 * needs it gets a bounded wait and a 503 with Retry-After, never a hang or a 500; the next request
 * after it recovers works; a verification whose key is cached needs no database at all (docs/api.md
 * "Errors"); a job whose answers cannot be written stops its probe batch and is retried; and the cron's tasks fail
 * each on its own.
 */
import { createExecutionContext, createMessageBatch, createScheduledController, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, inject, it, vi } from "vitest";
import worker from "../../edge/index.ts";
import type { JobMessage } from "../../shared/jobs.ts";
import type { FixtureBatch } from "../fixtures/probe-fixture.ts";
import { cancelUnfinishedJobs, callWith, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const proxyUrl = inject("faultyDatabaseUrl");
const viaProxy = { DATABASE_URL: proxyUrl, DATABASE_TIMEOUT_MS: "300" };

async function setProxyMode(mode: "pass" | "hang" | "reset" | "error") {
  const res = await fetch(`${proxyUrl}/__proxy`, { method: "PUT", body: JSON.stringify({ mode }) });
  expect(res.status).toBe(204);
}

async function expect503(res: Response) {
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toBe("5");
  expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  expect(await res.json()).toEqual({ error: "Service temporarily unavailable" });
}

let token: string;
let ids: ReturnType<typeof uniqueIds>;
beforeEach(async () => {
  token = (await newAccount(10)).token;
  ids = uniqueIds();
  await insertPerson({ profnet_id: ids.profnet_id, emails: ["a@example.org"] });
});
afterEach(() => setProxyMode("pass"));

describe.each(["hang", "reset", "error"] as const)("a database that fails by %s", (mode) => {
  it("gives a key that is not cached 503, not a hang or a 500", async () => {
    await setProxyMode(mode);
    await expect503(await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
  });

  it("gives a lookup with a cached key 503, and the next request after it recovers works", async () => {
    expect((await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token })).status).toBe(200);
    await setProxyMode(mode);
    await expect503(await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
    await setProxyMode("pass");
    const again = await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token });
    expect(again.status).toBe(200);
    expect(again.headers.get("x-credits-remaining")).toBe("8");
  });
});

it("a database where nothing listens: 503", async () => {
  await expect503(await callWith({ DATABASE_URL: inject("refusedDatabaseUrl") }, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
});

it("a verification whose key is cached keeps working while the database is down", async () => {
  expect((await callWith(viaProxy, "/v1/email_verifications?email_address=ana%40ok.test", { token })).status).toBe(200);
  await setProxyMode("hang");
  const res = await callWith(viaProxy, "/v1/email_verifications?email_address=ana%40ok.test", { token });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { classification: string }).classification).toBe("valid");
});

it("logs the failure by name, code and cause, without SQL, parameters, the token or the identifier", async () => {
  const errors = vi.spyOn(console, "error");
  try {
    await setProxyMode("error");
    await expect503(await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
    const lines = errors.mock.calls.map((args) => String(args[0]));
    const line = lines.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => entry.event === "database_unavailable");
    expect(line).toMatchObject({ level: "error", request_id: expect.any(String) });
    const chain = line!.error as { name: string; code?: string }[];
    expect(chain.map((e) => e.name)).toContain("DatabaseUnavailableError");
    expect(chain.some((e) => e.code !== undefined)).toBe(true);
    for (const text of lines) {
      for (const secret of [token, String(ids.profnet_id), "select", "params"]) expect(text).not.toContain(secret);
    }
  } finally {
    errors.mockRestore();
  }
});

describe("a job whose answers cannot be written (the database fails mid-batch)", () => {
  it("stops reading the probe's stream and cancels it, counts no probe failure, and retries the message; the lines are answered later", async () => {
    const { accountId } = await newAccount(0);
    const id = `job_test${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    const emails = Array.from({ length: 30 }, (_, i) => `writer${i}-${id}@ok.test`);
    await db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash) values (${id}, ${accountId}, 'queued', ${emails.length}, 5, 'test')`);
    await db.run(sql`insert into verification_job_items (job_id, position, seq, email, state) select ${id}, key, key, value, 'pending' from json_each(${JSON.stringify(emails)})`);
    const lineStates = () =>
      db.all<{ state: string; probe_failures: number }>(sql`select state, probe_failures from verification_job_items where job_id = ${id} order by position`);
    // The fixture probe answers one line every 100 ms; the consumer reaches the database through the proxy.
    const bindings = { ...viaProxy, PROBE_URL: inject("probeFixtureUrl") };
    const deliver = (to: number) => {
      const batch = createMessageBatch<JobMessage>("verification-jobs-dev", [{ id: `m-${to}`, timestamp: new Date(), attempts: 1, body: { kind: "verification", type: "turn", job: id } }]);
      const ctx = createExecutionContext();
      return worker.queue(batch as MessageBatch<unknown>, { ...env, ...bindings } as never).then(() => getQueueResult(batch, ctx));
    };

    const delivered = deliver(30);
    // Once the lines are claimed, the database fails: the first write of answers (after a second) fails.
    while ((await lineStates()).some((l) => l.state !== "claimed")) await new Promise((r) => setTimeout(r, 20));
    await setProxyMode("error");
    const result = await delivered;
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages).toEqual([{ msgId: "m-30" }]);
    const batches = (await (await fetch(`${inject("probeFixtureUrl")}/__batches`)).json()) as FixtureBatch[];
    const ours = batches.find((b) => b.emails.includes(emails[0]!))!;
    expect(ours).toMatchObject({ cancelled: true });
    expect(ours.sent).toBeLessThan(emails.length);
    // Not the probe's failure: the lines keep their probe budget (and stay claimed until their lease runs out).
    expect((await lineStates()).every((l) => l.state === "claimed" && Number(l.probe_failures) === 0)).toBe(true);

    await setProxyMode("pass");
    await db.run(sql`update verification_job_items set lease_until = 0 where job_id = ${id}`);
    expect((await deliver(200)).explicitAcks).toEqual(["m-200"]);
    expect((await lineStates()).every((l) => l.state === "done" && Number(l.probe_failures) === 0)).toBe(true);
  });
});

describe("the cron, its database failing", () => {
  it("runs every task on its own: each logs its own failure, in order, and the cron itself does not throw", async () => {
    await setProxyMode("error");
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      await worker.scheduled(createScheduledController(), { ...env, ...viaProxy } as never);
      const events = errors.mock.calls.map(([line]) => (JSON.parse(String(line)) as { event: string }).event);
      expect(events).toEqual(["jobs_cron_failed", "people_data_cron_failed", "audit_cron_failed", "sign_in_cron_failed", "batch_answers_cron_failed", "people_events_cron_failed"]);
    } finally {
      errors.mockRestore();
    }
  });
});
