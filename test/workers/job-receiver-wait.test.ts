/**
 * Job lines that wait on a receiver's budget (docs/jobs.md "Waiting on a receiver"), inside workerd
 * with the real database and the Worker's own queue handler: a line the probe hands back with
 * `retry_after_ms` is parked until then at no claim, the job says what waits on which receiver and
 * when it should be done, a job whose lines only wait holds no running slot, and a line that waited
 * JOB_RECEIVER_WAIT_MAX_SECONDS is answered risky, receiver_budget_spent, so the job ends; lines at
 * receivers that are not probed (outlook-consumer, yahoo) never reach the probe. The probe
 * is the stand-in (test/fixtures/probe-fixture.ts): it holds every `held*` address as the real
 * probe's budgets do and records each batch, which is how claims are counted.
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { EmailVerificationResult } from "../../shared/api.ts";
import { WARNINGS } from "../../shared/email/verdict.ts";
import { VerificationJob } from "../../shared/jobs.ts";
import { startJob } from "../../edge/jobs/store/job-creation.ts";
import { stalledWork } from "../../edge/jobs/store/scheduling.ts";
import { HELD_RETRY_AFTER_MS, type FixtureBatch } from "../fixtures/probe-fixture.ts";
import { call, cancelUnfinishedJobs, db, newAccount } from "./helpers.ts";
import { deliverTurn, queuedJob, recordingQueue } from "./job-turns.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";

const getJob = async (token: string, id: string) => VerificationJob.strict().parse(await (await call(`${PATH}/${id}`, { token })).json());
const line = async (job: string, position: number) =>
  (await db.all<{ state: string; claims: number; wait_until: number | null; waiting_on: string | null; waiting_since: number | null; result: string | null }>(sql`
    select state, claims, wait_until, waiting_on, waiting_since, result from verification_job_items where job_id = ${job} and position = ${position}`))[0]!;
const batchesWith = async (email: string) => ((await (await fetch(`${inject("probeFixtureUrl")}/__batches`)).json()) as FixtureBatch[]).filter((b) => b.emails.includes(email)).length;

describe("a line held by a receiver's budget", () => {
  it("is parked until its relief at no claim, shows on the job, is claimed no more often than its relief allows, and is answered receiver_budget_spent once it has waited the longest wait", async () => {
    const { token, accountId } = await newAccount(0);
    const held = `held${crypto.randomUUID().slice(0, 8)}@ok.test`;
    const id = await queuedJob(accountId, [held, "ana@ok.test"]);
    const { sent, queue } = recordingQueue();
    // The longest wait: a little over two reliefs.
    const bindings = { JOBS_QUEUE: queue, JOB_RECEIVER_WAIT_MAX_SECONDS: String(Math.ceil((2.5 * HELD_RETRY_AFTER_MS) / 1000)) };
    const maxWaitMs = Number(bindings.JOB_RECEIVER_WAIT_MAX_SECONDS) * 1000;

    const started = Date.now();
    await deliverTurn(id, bindings);
    const parked = await line(id, 0);
    expect(parked).toMatchObject({ state: "waiting", waiting_on: "google", claims: 0 });
    expect(Number(parked.wait_until)).toBeGreaterThanOrEqual(started + HELD_RETRY_AFTER_MS);
    expect((await line(id, 1)).state).toBe("done");
    // Its turn goes back on the queue at the relief, not at once.
    expect(sent).toEqual([{ body: { kind: "verification", type: "turn", job: id }, delaySeconds: Math.ceil(HELD_RETRY_AFTER_MS / 1000) }]);

    const job = await getJob(token, id);
    expect(job).toMatchObject({ status: "running", processed: 1, queue: { waiting_on: { google: 1 }, lines_waiting: 1, lines_in_progress: 0 } });
    expect(Date.parse(job.queue.estimated_completion_at!)).toBe(Number(parked.wait_until));

    // Turns keep coming (as a busy queue would bring them); the line is claimed only at its reliefs.
    while ((await getJob(token, id)).status !== "completed") {
      expect(Date.now() - started, "the job ends within the longest wait").toBeLessThan(maxWaitMs + 5_000);
      await deliverTurn(id, bindings);
      await new Promise((r) => setTimeout(r, 100));
    }
    const elapsed = Date.now() - started;
    const asked = await batchesWith(held);
    expect(asked).toBeGreaterThanOrEqual(2);
    expect(asked).toBeLessThanOrEqual(1 + Math.floor(elapsed / HELD_RETRY_AFTER_MS));

    const answered = await line(id, 0);
    expect(answered.state).toBe("done");
    const result = EmailVerificationResult.parse(JSON.parse(answered.result!));
    expect(result).toMatchObject({ classification: "risky", reason: "receiver_budget_spent", warnings: [WARNINGS.receiverBudgetSpent] });
    expect(result.details).toMatchObject({ smtp_outcome: "budget_spent", receiver_family: "self-hosted" });
    expect(Date.parse(result.details!.smtp_retry_at!)).toBeGreaterThan(Number(answered.waiting_since) + maxWaitMs - HELD_RETRY_AFTER_MS);
    const done = await getJob(token, id);
    expect(done).toMatchObject({ status: "completed", queue: { waiting_on: {}, estimated_completion_at: null } });
    expect(done.summary.reason).toMatchObject({ receiver_budget_spent: 1, deliverable: 1 });
  });

  it("one claimed after the longest wait (its turn came late) is answered at once, without asking the probe", async () => {
    const { token, accountId } = await newAccount(0);
    const held = `held${crypto.randomUUID().slice(0, 8)}@ok.test`;
    const id = await queuedJob(accountId, [held]);
    const longAgo = Date.now() - 2 * 86_400_000;
    await db.run(sql`update verification_job_items set state = 'waiting', waiting_on = 'google', waiting_since = ${longAgo}, wait_until = ${Date.now() - 1} where job_id = ${id}`);
    await deliverTurn(id, { JOBS_QUEUE: recordingQueue().queue });
    expect(await batchesWith(held)).toBe(0);
    expect(await getJob(token, id)).toMatchObject({ status: "completed", summary: { reason: { receiver_budget_spent: 1 } } });
  });
});

describe("a job whose lines only wait", () => {
  it("holds no running slot, and the cron passes it over until a line is due, then sends its turn", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["held-a@ok.test", "held-b@ok.test"]);
    const limits = { maxRunning: 1, maxLinesPerDay: 1_000 };
    const another = (n: number) => ({ id: `job_slot${n}${crypto.randomUUID().replace(/-/g, "").slice(0, 10)}`, accountId, smtpTimeout: 5, callbackUrl: null, idempotencyKey: null, requestHash: "h", total: 1, retentionSeconds: 60 });
    // Pending lines: the job holds the account's one slot.
    expect(await startJob(db, another(1), limits)).toEqual({ kind: "too_many_running" });
    const until = Date.now() + 60_000;
    await db.run(sql`update verification_job_items set state = 'waiting', waiting_on = 'google', waiting_since = ${Date.now()}, wait_until = ${until} where job_id = ${id}`);
    // Only waiting: the account's slot is free, and /v1/account counts it so.
    const account = await (await call("/v1/account", { token })).json();
    expect((account as { jobs: { running: number } }).jobs.running).toBe(0);
    expect(await startJob(db, another(2), limits)).toEqual({ kind: "started" });
    await db.run(sql`update verification_jobs set creating = 0, status = 'cancelled' where account_id = ${accountId} and id != ${id}`);

    // Stalled, but nothing due: no turn. Due: one.
    await db.run(sql`update verification_jobs set updated_at = 0 where id = ${id}`);
    expect((await stalledWork(db, Date.now())).filter((t) => t.job === id)).toEqual([]);
    // Not marked as requeued either: a job that only waits takes none of the places of the stalled jobs per run.
    expect((await db.all<{ updated_at: number }>(sql`select updated_at from verification_jobs where id = ${id}`))[0]!.updated_at).toBe(0);
    await db.run(sql`update verification_job_items set wait_until = ${Date.now() - 1} where job_id = ${id} and position = 0`);
    expect((await stalledWork(db, Date.now())).filter((t) => t.job === id)).toEqual([{ job: id, turns: 1 }]);
  });
});

describe("a job's lines at receivers that are not probed", () => {
  it("are answered without a probe call, as single checks are", async () => {
    const { token, accountId } = await newAccount(0);
    const tag = crypto.randomUUID().slice(0, 8);
    const emails = [`ana${tag}@hotmail-hosted.test`, `bob${tag}@yahoo-hosted.test`, `cy${tag}@ok.test`];
    const id = await queuedJob(accountId, emails);
    await deliverTurn(id, { JOBS_QUEUE: recordingQueue().queue });
    const job = await getJob(token, id);
    expect(job).toMatchObject({ status: "completed", summary: { reason: { provider_forbids_probing: 1, catch_all: 1, deliverable: 1 } } });
    const results = await Promise.all([0, 1].map(async (p) => EmailVerificationResult.parse(JSON.parse((await line(id, p)).result!))));
    expect(results.map((r) => [r.reason, r.details!.smtp_outcome, r.details!.receiver_family])).toEqual([
      ["provider_forbids_probing", "not_probed", "outlook-consumer"],
      ["catch_all", "not_probed", "yahoo"],
    ]);
    // Only the self-hosted address reached the probe.
    expect([await batchesWith(emails[0]!), await batchesWith(emails[1]!), await batchesWith(emails[2]!)]).toEqual([0, 0, 1]);
  });
});
