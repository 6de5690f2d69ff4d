/**
 * Fair shares between accounts inside workerd (docs/jobs.md "Scheduling"): queue messages are turns
 * that go to whichever account's job is next, wherever the message came from. Two ways in: turns
 * handed to the Worker's queue handler directly (no probe configured, so each line is answered at
 * once and only the claims are measured), and the real local queue with the real probe behind the
 * test zone's mail servers.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { VerificationJob, type JobMessage } from "../../shared/jobs.ts";
import worker from "../../edge/index.ts";
import { claimTurn, newLease } from "../../edge/jobs/store/lines.ts";
import { LINES_PER_TURN } from "../../edge/jobs/queue.ts";
import { call, cancelUnfinishedJobs, db, newAccount } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";

/** A job written straight into the database, queued, its lines pending in input order and no message on the queue. */
async function queuedJob(accountId: string, lines: number, tag: string): Promise<string> {
  const id = `job_test${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  await db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash) values (${id}, ${accountId}, 'queued', ${lines}, 5, 'test')`);
  await db.run(sql`insert into verification_job_items (job_id, position, seq, email, state)
    with recursive line(n) as (select 0 union all select n + 1 from line where n < ${lines - 1})
    select ${id}, n, n, 'user' || n || '-' || ${tag} || '@ok.test', 'pending' from line`);
  return id;
}

/**
 * Hands turn messages to the Worker's queue handler, as the queue delivers them, with no probe configured. The delivery
 * looks for accounts nobody serves only once a minute here, so each count below is the delivery's own turns' however
 * slow the machine (its default, every second, is the last test's).
 */
async function deliverTurns(job: string, turns: number) {
  const messages: JobMessage[] = Array.from({ length: turns }, () => ({ kind: "verification", type: "turn", job }));
  const batch = createMessageBatch<JobMessage>(
    "verification-jobs-dev",
    messages.map((body, i) => ({ id: `turn-${Date.now()}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, { ...env, PROBE_URL: "", JOB_IDLE_CHECK_MS: "60000" } as never);
  return getQueueResult(batch, ctx);
}

const answered = async (id: string) => Number((await db.all<{ processed: number }>(sql`select processed from verification_jobs where id = ${id}`))[0]!.processed);

describe("turns shared between accounts", () => {
  it("two accounts: the small job's lines are claimed in the next turns, though every message was sent for the big job", async () => {
    const a = await newAccount(0);
    const b = await newAccount(0);
    const big = await queuedJob(a.accountId, 2_000, "big");
    const small = await queuedJob(b.accountId, 300, "small");
    // Four turns, all of them the big job's messages (as they sit ahead of the small job's on the queue).
    const result = await deliverTurns(big, 4);
    expect(result.explicitAcks).toHaveLength(4);
    expect(await answered(small)).toBe(300);
    expect(await answered(big)).toBe(2 * LINES_PER_TURN.verification);
  });

  it("three accounts get equal shares, and a job with nothing due takes no turn", async () => {
    const [a, b, c] = [await newAccount(0), await newAccount(0), await newAccount(0)];
    const jobs = [await queuedJob(a.accountId, 1_000, "a"), await queuedJob(b.accountId, 1_000, "b"), await queuedJob(c.accountId, 1_000, "c")];
    await deliverTurns(jobs[0]!, 6);
    expect(await Promise.all(jobs.map(answered))).toEqual([400, 400, 400]);
    // Drain them; once every line is answered, a turn finds nothing and is acknowledged idle.
    await deliverTurns(jobs[0]!, 12);
    expect(await Promise.all(jobs.map(answered))).toEqual([1_000, 1_000, 1_000]);
    expect((await deliverTurns(jobs[0]!, 1)).explicitAcks).toHaveLength(1);
  });

  it("splitting a list into ten jobs buys nothing: the account's share is counted in lines", async () => {
    const a = await newAccount(0);
    const b = await newAccount(0);
    const split = [];
    for (let i = 0; i < 10; i++) split.push(await queuedJob(a.accountId, 100, `split${i}`));
    const whole = await queuedJob(b.accountId, 1_000, "whole");
    await deliverTurns(whole, 6);
    const splitAnswered = (await Promise.all(split.map(answered))).reduce((x, y) => x + y, 0);
    const wholeAnswered = await answered(whole);
    expect(splitAnswered + wholeAnswered).toBe(800);
    expect(Math.abs(splitAnswered - wholeAnswered)).toBeLessThanOrEqual(LINES_PER_TURN.verification);
  });
});

describe("what the job record shows of the scheduling", () => {
  it("lines waiting, lines in a consumer's hands, and how many accounts share the turns", async () => {
    const a = await newAccount(0);
    const b = await newAccount(0);
    const big = await queuedJob(a.accountId, 2_000, "big");
    await queuedJob(b.accountId, 300, "small");
    const queue = async () => VerificationJob.parse(await (await call(`${PATH}/${big}`, { token: a.token })).json()).queue;
    expect(await queue()).toEqual({ lines_waiting: 2_000, lines_in_progress: 0, accounts_sharing: 2, waiting_on: {}, estimated_completion_at: null });
    await claimTurn(db, big, newLease(30_000), LINES_PER_TURN.verification);
    expect(await queue()).toEqual({ lines_waiting: 1_800, lines_in_progress: LINES_PER_TURN.verification, accounts_sharing: 2, waiting_on: {}, estimated_completion_at: null });
    await call(`${PATH}/${big}`, { method: "DELETE", token: a.token });
    expect(await queue()).toEqual({ lines_waiting: 0, lines_in_progress: 0, accounts_sharing: 0, waiting_on: {}, estimated_completion_at: null });
  });
});

describe("the real queue and the real probe", () => {
  async function create(token: string, emails: string[]): Promise<string> {
    const res = await call(PATH, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: emails }) });
    expect(res.status, await res.clone().text()).toBe(202);
    return VerificationJob.parse(await res.json()).id;
  }
  const job = async (token: string, id: string) => VerificationJob.parse(await (await call(`${PATH}/${id}`, { token })).json());

  it("small jobs of two other accounts, created while a big one runs, complete long before it", { timeout: 60_000 }, async () => {
    const [a, b, c] = [await newAccount(0), await newAccount(0), await newAccount(0)];
    const big = await create(a.token, Array.from({ length: 1_200 }, (_, i) => `user${i}-big@ok.test`));
    // The big job's first delivery (all six of its turns) is under way when the small ones arrive.
    while ((await job(a.token, big)).status === "queued") await new Promise((r) => setTimeout(r, 100));
    const small = [await create(b.token, Array.from({ length: 150 }, (_, i) => `user${i}-b@ok.test`)), await create(c.token, Array.from({ length: 150 }, (_, i) => `user${i}-c@ok.test`))];
    const tokens = [b.token, c.token];
    const bigAtSmallDone: number[] = [];
    for (const [i, id] of small.entries()) {
      for (;;) {
        const j = await job(tokens[i]!, id);
        if (j.status === "completed") break;
        await new Promise((r) => setTimeout(r, 250));
      }
      bigAtSmallDone.push((await job(a.token, big)).processed);
    }
    // Their messages wait behind the delivery that holds all of the big job's lines (the local queue
    // delivers one batch at a time); that delivery claims a turn for each account nobody serves
    // (IDLE_ACCOUNT_CHECK_MS), and the probe shares the mail server between all three from there.
    for (const processed of bigAtSmallDone) expect(processed).toBeLessThan(1_000);
    for (;;) {
      if ((await job(a.token, big)).status === "completed") break;
      await new Promise((r) => setTimeout(r, 200));
    }
  });
});
