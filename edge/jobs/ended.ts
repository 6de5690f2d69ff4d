/**
 * What follows a job's end, for every kind (docs/jobs.md "Callbacks", docs/lookup-jobs.md "Verified addresses"): its
 * callback goes on the queue when it has one to send, and a child job (a lookup job's verify_emails phase,
 * verification_jobs.parent_job_id) wakes its parent, whose phase then finishes at once: nothing polls a running child.
 * (The cron is the safety net for a wake that was lost: edge/jobs/cron.ts hands back a phase whose child has ended.)
 */
import type { JobKind } from "../../shared/jobs.ts";
import { enqueueCallback, enqueueJobMessage, enqueueTurns, type JobQueues } from "./queue.ts";

/** The parts of an ended job's row this reads (both kinds' rows have them; only a verification job has a parent). */
export type EndedJob = { id: string; callback_state: string; parent_job_id?: string | null };

export async function jobEnded(queues: JobQueues, kind: JobKind, job: EndedJob): Promise<void> {
  if (job.callback_state === "pending") await enqueueCallback(queues, kind, job.id, 0);
  if (kind === "verification" && job.parent_job_id) await enqueueJobMessage(queues, { kind: "lookup", type: "phase", job: job.parent_job_id });
}

/**
 * A job just made (its create finished): turns for its waiting lines, or, when none waits (every line answered at
 * creation), what follows its end.
 */
export async function jobCreated(queues: JobQueues, kind: JobKind, job: EndedJob, waitingLines: number): Promise<void> {
  if (waitingLines > 0) await enqueueTurns(queues, kind, job.id, waitingLines);
  else await jobEnded(queues, kind, job);
}
