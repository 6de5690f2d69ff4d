/**
 * The limits on creating jobs (docs/jobs.md "Bulk verification jobs"): JOB_MAX_RUNNING and the daily line
 * quota JOB_MAX_LINES_PER_DAY are decided inside the job's INSERT, so creates racing each other
 * cannot all pass; a large job's lines are written in several transactions while the job stays
 * invisible, and a create that died half way is cleaned up by the cron.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { VerificationJob } from "../../shared/jobs.ts";
import worker from "../../edge/index.ts";
import { ABANDONED_CREATE_MS } from "../../edge/jobs/store/envelope.ts";
import { LINES_PER_TRANSACTION } from "../../edge/jobs/store/job-creation.ts";
import { claimTurn, newLease } from "../../edge/jobs/store/lines.ts";
import { JOB_MESSAGES } from "../../edge/routes/jobs.ts";
import type { Bindings } from "../../edge/env.ts";
import { cancelUnfinishedJobs, call, callWith, db, newAccount } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";

function create(token: string, addresses: string[], bindings: Partial<Bindings> = {}, headers: Record<string, string> = {}) {
  return callWith(bindings, PATH, {
    method: "POST",
    token,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ email_addresses: addresses }),
  });
}

const jobsOf = async (accountId: string) =>
  db.all<{ id: string; status: string; creating: number }>(sql`select id, status, creating from verification_jobs where account_id = ${accountId}`);

async function runCron() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController(), env as never);
  await waitOnExecutionContext(ctx);
}

describe("JOB_MAX_RUNNING", () => {
  it("8 creates at once with the cap at 3: exactly 3 jobs, and 5 answers 429", async () => {
    const { token, accountId } = await newAccount(0);
    // slow.test's DNS answers after 4 s: every job is still running when the last create is decided.
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => create(token, [`a${i}@slow.test`], { JOB_MAX_RUNNING: "3" })));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([202, 202, 202, 429, 429, 429, 429, 429]);
    for (const r of answers.filter((a) => a.status === 429)) expect(await r.json()).toEqual({ error: JOB_MESSAGES.tooManyRunning(3) });
    expect(await jobsOf(accountId)).toHaveLength(3);
    for (const r of answers.filter((a) => a.status === 202)) await call(`${PATH}/${VerificationJob.parse(await r.json()).id}`, { method: "DELETE", token });
  });
});

describe("JOB_MAX_LINES_PER_DAY", () => {
  it("counts every line submitted in 24 hours, cancelled and all-invalid jobs included; past it, 429 naming the setting", async () => {
    const { token } = await newAccount(0);
    const quota = { JOB_MAX_LINES_PER_DAY: "10" };
    const first = await create(token, Array.from({ length: 6 }, (_, i) => `u${i}@slow.test`), quota);
    expect(first.status).toBe(202);
    // Cancelling gives no lines back.
    await call(`${PATH}/${VerificationJob.parse(await first.json()).id}`, { method: "DELETE", token });
    const invalid = await create(token, ["x", "y", "z", "w"], quota);
    expect(invalid.status).toBe(202);
    expect(VerificationJob.parse(await invalid.json()).status).toBe("completed");
    const over = await create(token, ["one@slow.test"], quota);
    expect(over.status).toBe(429);
    expect(await over.json()).toEqual({ error: JOB_MESSAGES.dailyQuota(10, 10) });
    expect(JOB_MESSAGES.dailyQuota(10, 10)).toContain("JOB_MAX_LINES_PER_DAY");
    const retryAfter = Number(over.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(86_000);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
  });

  it("a retried create with its Idempotency-Key still gets its job past the quota", async () => {
    const { token } = await newAccount(0);
    const quota = { JOB_MAX_LINES_PER_DAY: "3" };
    const headers = { "idempotency-key": "retry-1" };
    const first = await create(token, ["a@slow.test", "b@slow.test", "c@slow.test"], quota, headers);
    expect(first.status).toBe(202);
    const again = await create(token, ["a@slow.test", "b@slow.test", "c@slow.test"], quota, headers);
    expect(again.status).toBe(202);
    const job = VerificationJob.parse(await again.json());
    expect(job.id).toBe(VerificationJob.parse(await first.json()).id);
    await call(`${PATH}/${job.id}`, { method: "DELETE", token });
  });
});

describe("writing a large job", () => {
  it(`writes ${(LINES_PER_TRANSACTION * 2 + 1_000).toLocaleString("en")} lines in several transactions, and the job is whole when the 202 comes`, async () => {
    const { token } = await newAccount(0);
    const total = LINES_PER_TRANSACTION * 2 + 1_000;
    const res = await create(token, Array.from({ length: total }, (_, i) => `u${i}@slow.test`));
    expect(res.status).toBe(202);
    const job = VerificationJob.parse(await res.json());
    await call(`${PATH}/${job.id}`, { method: "DELETE", token });
    const [lines] = await db.all<{ n: number; last: number }>(sql`select count(*) as n, max(position) as last from verification_job_items where job_id = ${job.id}`);
    expect(lines).toEqual({ n: total, last: total - 1 });
    const [row] = await db.all<{ creating: number }>(sql`select creating from verification_jobs where id = ${job.id}`);
    expect(row!.creating).toBe(0);
  });

  async function writingJob(accountId: string, createdAt: number, key: string | null = null, requestHash = "test") {
    const id = `job_test${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    await db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash, idempotency_key, created_at, updated_at, creating)
      values (${id}, ${accountId}, 'queued', 3, 5, ${requestHash}, ${key}, ${createdAt}, ${createdAt}, 1)`);
    await db.run(sql`insert into verification_job_items (job_id, position, email, state) values (${id}, 0, 'a@ok.test', 'pending'), (${id}, 1, 'b@ok.test', 'pending')`);
    return id;
  }

  it("a job whose lines are still being written is invisible: no read, no claim, no cancel", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await writingJob(accountId, Date.now());
    expect((await call(`${PATH}/${id}`, { token })).status).toBe(404);
    expect((await call(`${PATH}/${id}`, { method: "DELETE", token })).status).toBe(404);
    expect((await claimTurn(db, id, newLease(30_000), 200)).lines).toEqual([]);
    expect(await jobsOf(accountId)).toEqual([{ id, status: "queued", creating: 1 }]);
  });

  it("a retry with the Idempotency-Key of a job still being written is 409 with Retry-After", async () => {
    const { token, accountId } = await newAccount(0);
    const addresses = ["a@ok.test"];
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify([addresses, 10, null])));
    const hash = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
    await writingJob(accountId, Date.now(), "in-flight", hash);
    const res = await create(token, addresses, {}, { "idempotency-key": "in-flight" });
    expect(res.status).toBe(409);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(await res.json()).toEqual({ error: JOB_MESSAGES.stillCreating });
  });

  it("the cron deletes a create that died half way, once it is older than ABANDONED_CREATE_MS, and nothing newer", async () => {
    const { accountId } = await newAccount(0);
    const dead = await writingJob(accountId, Date.now() - ABANDONED_CREATE_MS - 60_000);
    const young = await writingJob(accountId, Date.now());
    await runCron();
    await runCron();
    expect((await jobsOf(accountId)).map((j) => j.id)).toEqual([young]);
    expect(await db.all(sql`select position from verification_job_items where job_id = ${dead}`)).toEqual([]);
    expect(await db.all(sql`select position from verification_job_items where job_id = ${young}`)).toHaveLength(2);
  });
});
