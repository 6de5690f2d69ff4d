/**
 * A probe's notice that a receiver's answers are not trusted (edge/jobs/verification/untrusted.ts, probe/policy/untrusted.ts;
 * issue 26 item 5), inside workerd with the real database and the Worker's own queue handler: the `valid`
 * lines of an unfinished job at the named domain, answered in the notice's span, go back for a recheck
 * after the hour, the job's counts follow and it runs again until they are answered; other domains' lines
 * stay, and so do answers older than the probe's window, whatever span the notice claims. The probe is the stand-in (test/fixtures/probe-fixture.ts): an `untrust` address makes it send
 * the notice after its answers, over the same wire contract the probe uses.
 */
import { afterEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { VerificationJob } from "../../shared/jobs.ts";
import { NOTICE_CLOCK_SKEW_MS, UNTRUSTED_RECHECK_DELAY_MS, untrustedSpan } from "../../edge/jobs/verification/untrusted.ts";
import { UNTRUSTED_NOTICE_WINDOW_MS } from "../../shared/probe-contract.ts";
import { call, cancelUnfinishedJobs, db, newAccount } from "./helpers.ts";
import { deliverTurn, queuedJob, recordingQueue } from "./job-turns.ts";

afterEach(cancelUnfinishedJobs);

const lines = async (job: string) =>
  await db.all<{ position: number; state: string; classification: string | null; recheck_at: number | null }>(sql`
    select position, state, classification, recheck_at from verification_job_items where job_id = ${job} order by position`);
const getJob = async (token: string, id: string) => VerificationJob.strict().parse(await (await call(`/v1/email_verification_jobs/${id}`, { token })).json());

describe("a receiver's answers no longer trusted", () => {
  it("sends the valid lines at its domain back for a recheck after the hour, takes them out of the job's counts, and leaves other domains' lines", async () => {
    const { token, accountId } = await newAccount(0);
    // A domain no other job test uses (the notice reaches every unfinished job), served by the stand-in probe.
    const gw = "unknown.test";
    // A held line keeps job A unfinished after its first turn; the duplicate follows its original.
    const a = await queuedJob(accountId, [`ana@${gw}`, `bo@${gw}`, `cy@xn--bcher-kva.test`, `held1@${gw}`, `ana@${gw}`]);
    const { sent, queue } = recordingQueue();
    const bindings = { JOBS_QUEUE: queue };
    await deliverTurn(a, bindings);
    expect((await lines(a)).map((l) => l.state)).toEqual(["done", "done", "done", "waiting", "done"]);
    expect(await getJob(token, a)).toMatchObject({ status: "running", processed: 4, summary: expect.objectContaining({ classification: { valid: 4, risky: 0, invalid: 0 } }) });

    // Another account's job reaches the same receiver; the probe's answer ends with the notice.
    const other = await newAccount(0);
    const b = await queuedJob(other.accountId, [`untrust@${gw}`]);
    sent.length = 0;
    const before = Date.now();
    await deliverTurn(b, bindings);

    const after = await lines(a);
    expect(after.map((l) => [l.state, l.classification])).toEqual([
      ["recheck", null],
      ["recheck", null],
      ["done", "valid"],
      ["waiting", null],
      ["pending", null],
    ]);
    expect(after[0]!.recheck_at).toBeGreaterThanOrEqual(before + UNTRUSTED_RECHECK_DELAY_MS);
    expect(await getJob(token, a)).toMatchObject({ status: "running", processed: 1, summary: expect.objectContaining({ classification: { valid: 1, risky: 0, invalid: 0 } }) });
    // A turn for job A at the recheck, not before.
    expect(sent.filter((m) => m.body.kind === "verification" && m.body.type === "turn" && m.body.job === a)).toEqual([{ body: { kind: "verification", type: "turn", job: a }, delaySeconds: UNTRUSTED_RECHECK_DELAY_MS / 1000 }]);

    // The hour passes: the recheck is asked and answered (here the stand-in accepts; the real probe answers catch-all meanwhile).
    await db.run(sql`update verification_job_items set recheck_at = ${Date.now() - 1} where job_id = ${a} and state = 'recheck'`);
    await deliverTurn(a, bindings);
    expect((await lines(a)).map((l) => l.state)).toEqual(["done", "done", "done", "waiting", "done"]);
    expect(await getJob(token, a)).toMatchObject({ processed: 4, summary: expect.objectContaining({ classification: { valid: 4, risky: 0, invalid: 0 } }) });
  });

  it("takes back only the answers of the probe's window (two hours), though the notice claims every answer since 0", async () => {
    const { token, accountId } = await newAccount(0);
    const gw = "unknown.test";
    const a = await queuedJob(accountId, [`earlier@${gw}`, `lately@${gw}`, `held2@${gw}`]);
    const { queue } = recordingQueue();
    const bindings = { JOBS_QUEUE: queue };
    await deliverTurn(a, bindings);
    // The first answer was written three hours ago, before the window; the second within it.
    await db.run(sql`update verification_job_items set checked_at = ${Date.now() - 3 * 3_600_000} where job_id = ${a} and position = 0`);

    const other = await newAccount(0);
    await deliverTurn(await queuedJob(other.accountId, [`untrust@${gw}`]), bindings);
    expect((await lines(a)).map((l) => [l.state, l.classification])).toEqual([
      ["done", "valid"],
      ["recheck", null],
      ["waiting", null],
    ]);
    expect(await getJob(token, a)).toMatchObject({ status: "running", processed: 1, summary: expect.objectContaining({ classification: { valid: 1, risky: 0, invalid: 0 } }) });
  });

  it("bounds a notice's span by the probe's window and the clock: since no older than two hours, until no later than now and a minute", () => {
    // The window the probe keeps notices for (shared/probe-contract.ts, read by both sides): two hours, as docs/probe.md says.
    expect(UNTRUSTED_NOTICE_WINDOW_MS).toBe(2 * 3_600_000);
    const now = Date.parse("2026-11-27T12:00:00Z");
    const hour = 3_600_000;
    // What the probe sends: a span of up to an hour, ending when it noticed, repeated for two hours.
    expect(untrustedSpan({ domains: ["x.test"], since_ms: now - 2 * hour, until_ms: now - hour }, now)).toEqual({ sinceMs: now - 2 * hour, untilMs: now - hour });
    // Since 0: the window before its until, and never before the window before now.
    expect(untrustedSpan({ domains: ["x.test"], since_ms: 0, until_ms: now }, now)).toEqual({ sinceMs: now - 2 * hour, untilMs: now });
    expect(untrustedSpan({ domains: ["x.test"], since_ms: 0, until_ms: now - 5 * hour }, now)).toEqual({ sinceMs: now - 2 * hour, untilMs: now - 5 * hour });
    // An until past the skew is taken as now and the skew; within it, as it is.
    expect(untrustedSpan({ domains: ["x.test"], since_ms: 0, until_ms: now + 10 * hour }, now)).toEqual({ sinceMs: now + NOTICE_CLOCK_SKEW_MS - 2 * hour, untilMs: now + NOTICE_CLOCK_SKEW_MS });
    expect(untrustedSpan({ domains: ["x.test"], since_ms: now - hour, until_ms: now + 1_000 }, now)).toEqual({ sinceMs: now - hour, untilMs: now + 1_000 });
  });
});
