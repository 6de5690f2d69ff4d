/**
 * Retention of bulk jobs inside workerd (docs/jobs.md "Retention"): expired jobs lose exactly their lines and
 * results, keep their counts and answer 410; retention_seconds, DELETE ?purge=true, Idempotency-Keys forgotten;
 * results_delete_at says when, as the cron decides it.
 */
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { VerificationJob } from "../../shared/jobs.ts";
import { applyRetention } from "../../edge/jobs/store/envelope.ts";
import { call, cancelUnfinishedJobs, db, newAccount } from "./helpers.ts";
import { queuedJob } from "./job-turns.ts";

afterEach(cancelUnfinishedJobs);

describe("retention of bulk jobs", () => {
  const PATH = "/v1/email_verification_jobs";
  async function waitCompleted(token: string, id: string) {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const now = VerificationJob.strict().parse(await (await call(`${PATH}/${id}`, { token })).json());
      if (now.status === "completed") return now;
      if (Date.now() > deadline) throw new Error("job did not complete");
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  async function finishedJob(token: string, body: Record<string, unknown>) {
    const res = await call(PATH, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).toBe(202);
    return waitCompleted(token, VerificationJob.strict().parse(await res.json()).id);
  }
  const lines = (id: string) => db.all(sql`select position from verification_job_items where job_id = ${id}`);

  it("deletes exactly the expired jobs' lines; the job keeps its counts and says results_expired, its results are 410", async () => {
    const { token } = await newAccount(0);
    const kept = await finishedJob(token, { email_addresses: ["ana@ok.test", "not-an-address"] });
    const short = await finishedJob(token, { email_addresses: ["ana@ok.test", "nobody@ok.test", "x"], retention_seconds: 60 });
    expect([kept.retention_seconds, kept.results_expired, short.retention_seconds]).toEqual([2_592_000, false, 60]);
    // 61 s later by the cron's clock: only the short one has run out.
    const report = await applyRetention(db, "verification", 2_592_000, Date.now() + 61_000);
    expect(report.jobs_expired).toBeGreaterThanOrEqual(1);
    expect(await lines(short.id)).toEqual([]);
    expect((await lines(kept.id)).length).toBe(2);
    const after = VerificationJob.strict().parse(await (await call(`${PATH}/${short.id}`, { token })).json());
    expect(after).toMatchObject({ status: "completed", processed: 3, counts: short.counts, summary: short.summary, results_expired: true });
    for (const query of ["", "?format=csv", "?classification=valid"]) {
      const res = await call(`${PATH}/${short.id}/results${query}`, { token });
      expect([res.status, await res.json()]).toEqual([410, { error: "Job results have expired" }]);
    }
    expect((await call(`${PATH}/${kept.id}/results`, { token })).status).toBe(200);
  });

  it("retention_seconds 0 without a callback keeps results one hour; DELETE ?purge=true deletes them at once; bad values are 400", async () => {
    const { token } = await newAccount(0);
    const zero = await finishedJob(token, { email_addresses: ["ana@ok.test"], retention_seconds: 0 });
    await applyRetention(db, "verification", 2_592_000, Date.now() + 30 * 60_000);
    expect((await lines(zero.id)).length).toBe(1);
    await applyRetention(db, "verification", 2_592_000, Date.now() + 61 * 60_000);
    expect(await lines(zero.id)).toEqual([]);

    const purged = await finishedJob(token, { email_addresses: ["ana@ok.test", "nobody@ok.test"] });
    const res = await call(`${PATH}/${purged.id}?purge=true`, { method: "DELETE", token });
    expect(res.status).toBe(200);
    expect(VerificationJob.strict().parse(await res.json())).toMatchObject({ status: "completed", results_expired: true, processed: 2 });
    expect(await lines(purged.id)).toEqual([]);
    expect((await call(`${PATH}/${purged.id}/results`, { token })).status).toBe(410);

    const badPurge = await call(`${PATH}/${purged.id}?purge=yes`, { method: "DELETE", token });
    expect([badPurge.status, await badPurge.json()]).toEqual([400, { error: "purge must be true or false" }]);
    for (const retention of [-1, 2_592_001, "soon", 1.5]) {
      const bad = await call(PATH, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: ["a@ok.test"], retention_seconds: retention }) });
      expect([bad.status, ((await bad.json()) as { error: string }).error]).toEqual([400, "retention_seconds must be an integer between 0 and 2592000"]);
    }
  });

  it("results_delete_at is when the cron deletes the results, to the millisecond; null while the job runs, while a callback is out, once deleted", async () => {
    const { token, accountId } = await newAccount(0);
    const read = async (id: string) => VerificationJob.strict().parse(await (await call(`${PATH}/${id}`, { token })).json());
    const short = await finishedJob(token, { email_addresses: ["ana@ok.test"], retention_seconds: 60 });
    const at = Date.parse(short.completed_at!) + 60_000;
    expect(short.results_delete_at).toBe(new Date(at).toISOString());
    await applyRetention(db, "verification", 2_592_000, at - 1);
    expect((await lines(short.id)).length).toBe(1);
    await applyRetention(db, "verification", 2_592_000, at);
    expect(await lines(short.id)).toEqual([]);
    expect(await read(short.id)).toMatchObject({ results_expired: true, results_delete_at: null });

    // retention_seconds 0: an hour after the end without a callback; with one, not known while it is out, at once when
    // it was delivered or given up (and the cron then deletes them).
    const zero = await finishedJob(token, { email_addresses: ["ana@ok.test"], retention_seconds: 0 });
    const ended = Date.parse(zero.completed_at!);
    expect(zero.results_delete_at).toBe(new Date(ended + 3_600_000).toISOString());
    for (const [state, expected] of [["pending", null], ["failed", zero.completed_at], ["delivered", zero.completed_at]] as const) {
      await db.run(sql`update verification_jobs set callback_url = 'https://hooks.example/jobs', callback_state = ${state} where id = ${zero.id}`);
      expect([state, (await read(zero.id)).results_delete_at]).toEqual([state, expected]);
    }
    await applyRetention(db, "verification", 2_592_000, ended);
    expect(await lines(zero.id)).toEqual([]);

    // A job that runs has no date yet; one from before retention_seconds existed (null) keeps JOB_RETENTION_SECONDS' default.
    const running = await queuedJob(accountId, ["ana@ok.test"]);
    expect(await read(running)).toMatchObject({ status: "queued", results_delete_at: null });
    await db.run(sql`update verification_jobs set status = 'cancelled', completed_at = ${ended} where id = ${running}`);
    expect((await read(running)).results_delete_at).toBe(new Date(ended + 2_592_000_000).toISOString());
  });

  it("forgets an Idempotency-Key after 24 hours", async () => {
    const { token } = await newAccount(0);
    const headers = { "content-type": "application/json", "idempotency-key": `k-${crypto.randomUUID()}` };
    const body = JSON.stringify({ email_addresses: ["ana@ok.test"] });
    const first = (await (await call(PATH, { method: "POST", token, headers, body })).json()) as { id: string };
    expect(((await (await call(PATH, { method: "POST", token, headers, body })).json()) as { id: string }).id).toBe(first.id);
    await applyRetention(db, "verification", 2_592_000, Date.now() + 24 * 3_600_000 + 1_000);
    const second = (await (await call(PATH, { method: "POST", token, headers, body })).json()) as { id: string };
    expect(second.id).not.toBe(first.id);
    // Let its queue message be consumed before the file ends: a message still on the local queue when the
    // test runtime moves to the next file leaves that file waiting forever (vitest-pool-workers).
    await waitCompleted(token, second.id);
  });
});
