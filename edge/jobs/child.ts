/**
 * Verification jobs the service makes for itself, written once (docs/lookup-jobs.md "Verified addresses", docs/operations.md
 * "Personal data"): a lookup job's verify_emails phase (the lookup job's child, found by verification_jobs.parent_job_id,
 * never by anything a request can send) and the stored addresses' re-verification. Outside every customer limit, with no
 * callback, run by the verification kind's own machinery (its fair share, the probe's lanes, rechecks, receivers'
 * budgets). A child's end wakes its parent (edge/jobs/ended.ts).
 */
import type { EmailVerificationResult } from "../../shared/api.ts";
import { verificationReason } from "../../shared/email/verdict.ts";
import type { Database } from "../db/client.ts";
import { newId } from "../identity/tokens.ts";
import { DEFAULT_SMTP_TIMEOUT_SECONDS } from "../verification/params.ts";
import { enqueueTurns, type JobQueues } from "./queue.ts";
import { startJob, writeJobLines } from "./store/job-creation.ts";
import { prepareLines } from "./verification/prepare-lines.ts";

export type InternalJob = {
  accountId: string;
  /** The lookup job whose phase this is (one child per parent), or null. */
  parentJobId: string | null;
  /** Whoever made the parent: the child stops with them. */
  actor: string | null;
  emails: readonly string[];
  retentionSeconds: number;
  /** What ties a repeat of this start to the first (the parent's id for a phase). */
  requestHash: string;
};

/** What a start made: a job (running, or ended at once: every line answered by syntax), or the job an earlier start made. */
export type InternalJobStart = { id: string; ended: boolean } | { id: null; reason: string };

const UNBOUNDED = { maxRunning: Number.MAX_SAFE_INTEGER, maxLinesPerDay: Number.MAX_SAFE_INTEGER };

export async function startInternalJob(db: Database, queues: JobQueues, job: InternalJob): Promise<InternalJobStart> {
  const id = newId("job");
  const started = await startJob(
    db,
    { id, accountId: job.accountId, smtpTimeout: DEFAULT_SMTP_TIMEOUT_SECONDS, callbackUrl: null, idempotencyKey: null, parentJobId: job.parentJobId, requestHash: job.requestHash, total: job.emails.length, retentionSeconds: job.retentionSeconds },
    UNBOUNDED,
  );
  if (started.kind === "existing") {
    // An earlier start got this far and died: its job, once its lines are written (else the start is tried again later).
    if (!started.job) throw new Error(`the internal job of ${job.parentJobId ?? job.accountId} is still being written`);
    return { id: started.job.id, ended: started.job.status === "completed" || started.job.status === "cancelled" };
  }
  if (started.kind !== "started") return { id: null, reason: started.kind };
  const written = await writeJobLines(db, id, await prepareLines([...job.emails]), job.actor);
  const ended = written.status === "completed";
  // One that ended at once has no callback, and its maker goes on from the answer (no wake: it is not running).
  if (!ended) await enqueueTurns(queues, "verification", id, job.emails.length);
  return { id, ended };
}

/** An internal job's answered line (store/internal-jobs.ts answeredLines) as the verdict written back to stored addresses: one mapping for every maker. */
export function internalVerdict(line: { email: string; classification: string; reason: string | null; result: string; checked_at: number | string }) {
  const result = JSON.parse(line.result) as EmailVerificationResult;
  return { email: line.email, classification: line.classification, reason: line.reason ?? result.reason ?? verificationReason(result), smtp_outcome: result.details?.smtp_outcome ?? null, checked_at: Number(line.checked_at) };
}
