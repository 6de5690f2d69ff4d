/**
 * The lookup kind's messages (docs/lookup-jobs.md "How a job runs"). A turn message is a turn for whichever account's
 * job is next (edge/jobs/fair-share.ts, the verification jobs' rule: accounts in turn, an account's jobs in turn), one
 * transaction each (store/lookup-lines.ts). A turn that pauses its job sends a resume check, which looks at the balance
 * every RESUME_CHECK_SECONDS; a job whose lines are all answered moves to its verify_emails phase (a child verification
 * job, edge/jobs/child.ts, whose end wakes this job: edge/jobs/ended.ts) or completes; a job that ended is the engine's
 * (its callback).
 */
import type { EngineDeps } from "../deps.ts";
import { jobEnded } from "../ended.ts";
import { FairShare } from "../fair-share.ts";
import { settle, type DeliveredMessage } from "../messages.ts";
import { enqueueJobMessage, enqueueTurns, LINES_PER_TURN } from "../queue.ts";
import { lookupJobById, type LookupJobRow } from "../store/lookup-rows.ts";
import { resumeIfCovered, runTurn } from "../store/lookup-lines.ts";
import { lookupCandidates } from "../store/lookup-scheduling.ts";
import { stepFinds } from "./find-emails.ts";
import { stepVerification } from "./verify-emails.ts";

/** How long a paused job waits between two looks at the balance: it resumes within this of credits being added. */
export const RESUME_CHECK_SECONDS = 30;

const TURN = LINES_PER_TURN.lookup;

/** Whether a job whose lines are all answered has a phase to run: its finder's (find_emails), then its verification's. */
const phaseDue = (job: LookupJobRow) =>
  (Number(job.find_emails) === 1 && job.find_state !== "done") || (Number(job.verify_emails) === 1 && job.verify_state === null);

/** After a turn or a resume: what its job needs next (a resume check, its find_emails or verification phase, the end's follow-up). */
async function followUp(deps: EngineDeps, job: LookupJobRow | null, ended: boolean): Promise<void> {
  if (!job) return;
  if (job.status === "paused") await enqueueJobMessage(deps.queues, { kind: "lookup", type: "resume", job: job.id }, RESUME_CHECK_SECONDS);
  else if (ended) await jobEnded(deps.queues, "lookup", job);
  else if (job.status === "running" && phaseDue(job) && Number(job.found) + Number(job.not_found) + Number(job.invalid) + Number(job.erased) >= Number(job.total)) {
    await enqueueJobMessage(deps.queues, { kind: "lookup", type: "phase", job: job.id });
  }
}

/** A delivery's lookup turns: planned in fair order, each one transaction, one after the other. */
export async function runLookupTurns(deps: EngineDeps, messages: DeliveredMessage[]): Promise<void> {
  let share: FairShare;
  try {
    share = new FairShare(await lookupCandidates(deps.db));
  } catch (error) {
    return settle(messages, null, () => Promise.reject(error), "lookup_job_message_failed");
  }
  for (const message of messages) {
    const turn = share.take(TURN);
    if (!turn) {
      message.ack();
      continue;
    }
    await settle(
      [message],
      turn.job,
      async () => {
        const job = await lookupJobById(deps.db, turn.job);
        if (!job) return;
        const now = Date.now();
        const done = await runTurn(deps.db, job, crypto.randomUUID(), TURN, now, now - deps.verifyMaxAgeSeconds * 1000);
        await followUp(deps, done.job, done.completed);
      },
      "lookup_job_message_failed",
    );
  }
}

/** A paused job's look at the balance: running again (its refused lines as turns), still paused (another look later), or cancelled. */
export async function resumeLookupJob(deps: EngineDeps, jobId: string): Promise<void> {
  const job = await lookupJobById(deps.db, jobId);
  if (!job || job.status !== "paused") return;
  const after = await resumeIfCovered(deps.db, job, Date.now(), deps.maxPauseMs);
  if (after.cancelled) return followUp(deps, after.job, true);
  // Resumed with lines waiting: their turns; with none (paused in its find_emails phase), the phase again.
  if (after.job?.status === "running" && after.pending > 0) return enqueueTurns(deps.queues, "lookup", jobId, after.pending);
  await followUp(deps, after.job, false);
}

/**
 * A job's phases once its lines are answered: first find_emails (a bounded step per message, then the phase sent again,
 * a paused job's resume check, or, once done, on to the verification or the job's end), then the verify_emails phase,
 * looked at: started when due (its child verification job made and its turns sent), finished
 * once the child has ended (this message is then the child's wake-up, or the cron's hand-back); a look while the child
 * runs does nothing, and nothing looks again until it ends.
 */
export async function lookupJobPhase(deps: EngineDeps, jobId: string): Promise<void> {
  const found = await lookupJobById(deps.db, jobId);
  if (!found) return;
  const finding = await stepFinds(deps, found);
  if (finding.kind === "more") return enqueueJobMessage(deps.queues, { kind: "lookup", type: "phase", job: jobId }, finding.wait ? 3 : undefined);
  if (finding.kind === "paused") return followUp(deps, await lookupJobById(deps.db, jobId), false);
  if (finding.kind === "done" && finding.completed) return followUp(deps, await lookupJobById(deps.db, jobId), true);
  for (let step = 0; step < 2; step++) {
    const job = await lookupJobById(deps.db, jobId);
    if (!job) return;
    const result = await stepVerification(deps, job);
    if (result.kind === "finished") return followUp(deps, await lookupJobById(deps.db, jobId), result.completed);
    // A phase with nothing left to verify (started done, or its child ended at creation): finished now, not on a wake.
    if (result.kind === "started" && !result.verifying) {
      if (result.completed) return followUp(deps, await lookupJobById(deps.db, jobId), true);
      continue;
    }
    return;
  }
}
