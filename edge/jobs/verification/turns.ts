/**
 * The verification kind's turns (docs/jobs.md "How a job runs"): a delivery's turn messages are claimed in fair order
 * (edge/jobs/fair-share.ts) under one lease, each job's lines are checked together (one probe batch for all of them),
 * and answers are written as they come, a batch at a time, so a job's results can be read while it runs and a consumer
 * that dies loses at most its last unwritten batch, which the cron then gives to another. What is not done goes back
 * on the queue as turns, when line-policy says; a job that ended is the engine's (edge/jobs/ended.ts).
 */
import type { Database } from "../../db/client.ts";
import { answerWriter } from "./answer-writer.ts";
import { checkLines } from "./check-lines.ts";
import { parkedDelaySeconds, requeueDelaySeconds } from "./line-policy.ts";
import { FairShare } from "../fair-share.ts";
import { describeError, writeLog } from "../../log.ts";
import { probeTenant } from "../../verification/probe-ranking.ts";
import { UNTRUSTED_RECHECK_DELAY_MS } from "./untrusted.ts";
import type { JobRow } from "../store/job-rows.ts";
import { lessonsFor, recordLessons } from "../store/receiver-lessons.ts";
import { claimTurns, newLease, renewClaims, takeBackRefusals, untrustValids, writeAnswers, type ClaimedLine, type Lease } from "../store/lines.ts";
import { bulkCandidates } from "../store/scheduling.ts";
import type { EngineDeps } from "../deps.ts";
import { jobEnded } from "../ended.ts";
import { settle, type DeliveredMessage } from "../messages.ts";
import { enqueueTurns, LINES_PER_TURN } from "../queue.ts";

const TURN = LINES_PER_TURN.verification;

/**
 * How long claimed lines are held without a sign of life; the consumer renews the lease of the lines
 * it still works on every third of it. A consumer that dies (a crash, a stopped stack) lets its lines
 * go within this time, and the next message or the cron gives them to another.
 */
export const CLAIM_LEASE_MS = 30_000;

/** What one delivery's turns claimed of one job, and the messages that paid for it (none: taken for an idle account). */
type JobWork = { job: JobRow; lines: ClaimedLine[]; messages: DeliveredMessage[] };

/**
 * Claims a delivery's turns, one per message, planned in fair order (edge/jobs/fair-share.ts) and
 * claimed in one transaction under one lease; returns the work by job, and the messages whose turn
 * found nothing to claim.
 */
async function claimWork(deps: EngineDeps, messages: DeliveredMessage[], lease: Lease): Promise<{ work: Map<string, JobWork>; idle: DeliveredMessage[] }> {
  const share = new FairShare(await bulkCandidates(deps.db));
  const planned: { message: DeliveredMessage | null; job: string; max: number }[] = [];
  const idle: DeliveredMessage[] = [];
  for (const message of messages) {
    const turn = share.take(TURN);
    if (turn) planned.push({ message, job: turn.job, max: turn.lines });
    else idle.push(message);
  }
  const work = await claimPlanned(deps, planned, lease, idle);
  logTurns(share, messages.length, work, false);
  return { work, idle };
}

/**
 * Turns for accounts whose lines nobody holds (an account that got work while this delivery runs:
 * where deliveries come one at a time, its own messages wait behind this one). One turn each, taken
 * by this delivery, so its lines reach the probe, whose queues then share each mail server with it,
 * at once and not when the lines ahead are done. Their messages, when they come, find less to claim.
 */
async function claimForIdleAccounts(deps: EngineDeps, lease: Lease): Promise<JobWork[]> {
  const share = new FairShare(await bulkCandidates(deps.db));
  const planned: { message: null; job: string; max: number }[] = [];
  for (let turn = share.take(TURN, { onlyIdle: true }); turn; turn = share.take(TURN, { onlyIdle: true })) {
    planned.push({ message: null, job: turn.job, max: turn.lines });
  }
  if (planned.length === 0) return [];
  const work = await claimPlanned(deps, planned, lease, []);
  logTurns(share, 0, work, true);
  return [...work.values()];
}

async function claimPlanned(deps: EngineDeps, planned: { message: DeliveredMessage | null; job: string; max: number }[], lease: Lease, idle: DeliveredMessage[]): Promise<Map<string, JobWork>> {
  const claimed = await claimTurns(deps.db, planned, lease);
  const work = new Map<string, JobWork>();
  for (const [i, turn] of planned.entries()) {
    const job = claimed.jobs.get(turn.job);
    const lines = claimed.lines[i]!;
    if (!job || lines.length === 0) {
      if (turn.message) idle.push(turn.message);
      continue;
    }
    const entry = work.get(turn.job) ?? { job, lines: [], messages: [] };
    entry.lines.push(...lines);
    if (turn.message) entry.messages.push(turn.message);
    work.set(turn.job, entry);
  }
  return work;
}

function logTurns(share: FairShare, turns: number, work: Map<string, JobWork>, forIdleAccounts: boolean): void {
  if (work.size === 0) return;
  writeLog("info", {
    event: "job_turns",
    turns,
    for_idle_accounts: forIdleAccounts,
    claimed: [...work.values()].map((w) => ({ job_id: w.job.id, account_id: w.job.account_id, lines: w.lines.length })),
    accounts_waiting: share.waiting,
    lines_in_hand: share.shares(),
  });
}

async function runLines(deps: EngineDeps, job: JobRow, lines: ClaimedLine[], lease: Lease): Promise<void> {
  const jobId = job.id;
  // Lines stay this consumer's until their answers are written, not merely handed to the writer.
  const held = new Set(lines.map((l) => l.position));
  const writer = answerWriter((answers) => writeAnswers(deps.db, jobId, lease, answers), {
    onWritten: (answers) => answers.forEach((a) => held.delete(a.position)),
  });
  const renewal = setInterval(() => void renewLease(deps.db, jobId, lease, held), CLAIM_LEASE_MS / 3);
  let completed: JobRow | null;
  try {
    const config = {
      dohUrl: deps.dohUrl,
      probeUrls: deps.probeUrls,
      probeSecret: deps.probeSecret,
      smtpTimeoutSeconds: Number(job.smtp_timeout),
      recheckDelaySeconds: deps.recheckDelaySeconds,
      receiverWaitMaxMs: deps.receiverWaitMaxMs,
      tenant: await probeTenant(job.account_id),
      lessonsFor: (keys: string[]) => lessonsFor(deps.db, keys),
    };
    const untrusted = new Map<string, number>();
    const refused = new Map<string, number>();
    await checkLines(lines, config, (a) => writer.add(a), {
      untrusted: async (notice) => {
        for (const [job, n] of await untrustValids(deps.db, notice)) untrusted.set(job, (untrusted.get(job) ?? 0) + n);
      },
      refused: async (notice) => {
        for (const [job, n] of await takeBackRefusals(deps.db, notice)) refused.set(job, (refused.get(job) ?? 0) + n);
      },
      // What receivers taught this probe, kept for the whole fleet (edge/jobs/store/receiver-lessons.ts).
      learned: (rules) => recordLessons(deps.db, rules),
    });
    completed = await writer.finish();
    // Lines a receiver's notice sent back (edge/jobs/verification/untrusted.ts, store/lines.ts), in any job: a turn at their recheck.
    for (const [job, n] of untrusted) await enqueueTurns(deps.queues, "verification", job, n, Math.ceil(UNTRUSTED_RECHECK_DELAY_MS / 1000));
    // Refusals that were a block of our probe, taken back (store/lines.ts takeBackRefusals): a turn now; the probe hands them on.
    for (const [job, n] of refused) await enqueueTurns(deps.queues, "verification", job, n, 0);
  } finally {
    clearInterval(renewal);
  }
  // Lines that are not done go back on the queue as turns, when line-policy says.
  for (const [kind, positions] of [["defer", writer.deferred], ["release", writer.released], ["recheck", writer.rechecks]] as const) {
    if (positions.size > 0) await enqueueTurns(deps.queues, "verification", jobId, positions.size, requeueDelaySeconds(kind, deps.recheckDelaySeconds));
  }
  // Parked lines: a turn at each relief, never before (the cron finds those parked past a message's longest delay).
  const byDelay = new Map<number, number>();
  for (const until of writer.parked.values()) byDelay.set(parkedDelaySeconds(until), (byDelay.get(parkedDelaySeconds(until)) ?? 0) + 1);
  for (const [delay, lines] of byDelay) await enqueueTurns(deps.queues, "verification", jobId, lines, delay);
  if (completed) await jobEnded(deps.queues, "verification", completed);
}

/** Renews the lease on the lines still held; a renewal that fails or finds lines taken over is logged, and the run goes on (its writes check the lease). */
async function renewLease(db: EngineDeps["db"], jobId: string, lease: Lease, held: Set<number>): Promise<void> {
  const positions = [...held];
  try {
    const renewed = await renewClaims(db, jobId, positions, lease);
    // A line answered between the read of `held` and the renewal is no longer claimed: not lost.
    const lost = positions.filter((p) => held.has(p)).length - renewed;
    if (lost > 0) writeLog("warn", { event: "job_lease_lost", job_id: jobId, lines: lost });
  } catch (error) {
    writeLog("warn", { event: "job_lease_renewal_failed", job_id: jobId, lines: positions.length, error: describeError(error) });
  }
}

/** How often a delivery whose lines are being checked looks for accounts whose lines nobody holds (the default of JOB_IDLE_CHECK_MS). */
export const IDLE_ACCOUNT_CHECK_MS = 1_000;

/** A delivery's verification turns: claimed in fair order, each job's lines checked together; a message is acknowledged when its work is written. */
export async function runVerificationTurns(deps: EngineDeps, messages: DeliveredMessage[]): Promise<void> {
  const lease = newLease(CLAIM_LEASE_MS);
  let claimed: Awaited<ReturnType<typeof claimWork>>;
  try {
    claimed = await claimWork(deps, messages, lease);
  } catch (error) {
    // Whatever was claimed before the failure comes back when its lease runs out.
    return settle(messages, null, () => Promise.reject(error));
  }
  for (const m of claimed.idle) m.ack();
  const running = new Set<Promise<void>>();
  const start = (w: JobWork) => {
    const run = settle(w.messages, w.job.id, () => runLines(deps, w.job, w.lines, lease)).finally(() => running.delete(run));
    running.add(run);
  };
  for (const w of claimed.work.values()) start(w);
  // While its lines are checked, the delivery gives accounts that nobody serves a turn.
  while (running.size > 0) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = new Promise<"tick">((resolve) => (timer = setTimeout(() => resolve("tick"), deps.idleAccountCheckMs ?? IDLE_ACCOUNT_CHECK_MS)));
    const first = await Promise.race([Promise.all(running).then(() => "done" as const), tick]);
    clearTimeout(timer);
    if (first === "done") break;
    try {
      for (const w of await claimForIdleAccounts(deps, lease)) start(w);
    } catch (error) {
      // A failed look costs nothing: those accounts' own messages still come.
      writeLog("warn", { event: "job_idle_account_check_failed", error: describeError(error) });
    }
  }
}
