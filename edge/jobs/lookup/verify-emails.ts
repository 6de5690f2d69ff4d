/**
 * verify_emails (docs/lookup-jobs.md "Verified addresses"): once every line of a lookup job is answered, the addresses
 * its answers carry that no verification of ours newer than LOOKUP_VERIFY_MAX_AGE_SECONDS covered (those were taken as
 * they were, turn by turn) go to one bulk verification job of the same account, made and run by the verification jobs'
 * own machinery (its fair share, the probe's lanes for this account, rechecks, receivers' budgets); when it has ended
 * (its end wakes the phase: edge/jobs/ended.ts) its verdicts become the job's, are written back to the stored addresses (as the re-verification cron writes its own),
 * and the lookup job completes. The verification job is the lookup job's child (verification_jobs.parent_job_id), set by
 * this code alone: the phase started twice makes one job, no request can name or make one (a customer's Idempotency-Key
 * is only ever its own jobs'), and only the addresses the lookup job still has found are written back.
 */
import { sqliteLower } from "../../../shared/sqlite-lower.ts";
import type { Database } from "../../db/client.ts";
import { internalVerdict, startInternalJob } from "../child.ts";
import type { JobQueues } from "../queue.ts";
import { answeredLines } from "../store/internal-jobs.ts";
import { cancelJob, jobById } from "../store/job-rows.ts";
import { expireResults } from "../store/envelope.ts";
import { ANSWERS_PER_WRITE, writeStoredEmailAnswers, type StoredEmailRules } from "../../people/store.ts";
import { batch, type LookupJobRow } from "../store/lookup-rows.ts";
import { addressesStillFound, addressesToVerify, claimVerificationStart, finishVerification, verificationStarted, writeVerdictsStatement, type Verdict } from "../store/lookup-verdicts.ts";

export type VerificationDeps = { db: Database; queues: JobQueues; storedEmailRules: StoredEmailRules };

/**
 * What the phase did: started (`verifying`: its child runs, and its end wakes the phase; else it is done, `completed`
 * the job, or its child ended at once and the next look finishes it), still verifying, or finished.
 */
export type PhaseStep = { kind: "not_due" } | { kind: "started"; verifying: boolean; completed: boolean } | { kind: "verifying" } | { kind: "finished"; completed: boolean };

/** Starts the phase when it is due (every line answered, not started yet), once whoever else tries. */
async function start(deps: VerificationDeps, job: LookupJobRow, now: number): Promise<PhaseStep> {
  if (!(await claimVerificationStart(deps.db, job.id, now))) return { kind: "not_due" };
  const emails: string[] = [];
  for (let from: number | null = 0; from !== null; ) {
    const page: { emails: string[]; next: number | null } = await addressesToVerify(deps.db, job.id, from);
    emails.push(...page.emails);
    from = page.next;
  }
  // One line per address as the job's verdicts key it (SQLite's lower(), store/lookup-verdicts.ts): the one address key.
  const unique = [...new Map(emails.map((e) => [sqliteLower(e), e])).values()];
  if (unique.length === 0) {
    await verificationStarted(deps.db, job.id, null, now);
    return { kind: "started", verifying: false, completed: true };
  }
  const child = await startInternalJob(deps.db, deps.queues, { accountId: job.account_id, parentJobId: job.id, actor: job.actor, emails: unique, retentionSeconds: 0, requestHash: job.id });
  if (child.id === null) throw new Error(`the verification job of ${job.id} was refused (${child.reason})`);
  await verificationStarted(deps.db, job.id, child.id, now);
  return { kind: "started", verifying: !child.ended, completed: false };
}

/**
 * The verification job ended: its verdicts become the lookup job's and the stored addresses', then its lines are let go.
 * Only addresses a line of the lookup job still has found are written: one erased meanwhile (whose line now says erased)
 * is not brought back.
 */
async function finish(deps: VerificationDeps, job: LookupJobRow, verificationJobId: string, now: number): Promise<PhaseStep> {
  for (let from = 0; ; ) {
    const answered = await answeredLines(deps.db, verificationJobId, from, ANSWERS_PER_WRITE);
    if (answered.length === 0) break;
    from = Number(answered.at(-1)!.position) + 1;
    const stillFound = await addressesStillFound(deps.db, job.id, answered.map((line) => line.email));
    const lines = answered.filter((line) => stillFound.has(line.email));
    if (lines.length === 0) continue;
    const verdicts: Verdict[] = lines.map(internalVerdict);
    await batch(deps.db, [writeVerdictsStatement(deps.db, job.id, verdicts)]);
    await writeStoredEmailAnswers(deps.db, verdicts.map((v) => ({ ...v, reason: v.reason ?? "no_smtp_check" })), deps.storedEmailRules);
  }
  const completed = await finishVerification(deps.db, job.id, now);
  await expireResults(deps.db, "verification", verificationJobId);
  return { kind: "finished", completed };
}

/** One look at a job's verification phase: start it when due, wait while its verification job runs, finish it once that has ended. */
export async function stepVerification(deps: VerificationDeps, job: LookupJobRow, now = Date.now()): Promise<PhaseStep> {
  if (Number(job.verify_emails) !== 1 || job.status !== "running") return { kind: "not_due" };
  if (job.verify_state === null) return start(deps, job, now);
  if (job.verify_state !== "verifying" || !job.verification_job_id) return { kind: "not_due" };
  const verification = await jobById(deps.db, job.verification_job_id);
  // Still running: its end wakes the phase (edge/jobs/ended.ts); nothing looks before.
  if (verification && (verification.status === "queued" || verification.status === "running")) return { kind: "verifying" };
  return finish(deps, job, job.verification_job_id, now);
}

/** A lookup job cancelled in its verification phase: its verification job is cancelled too, and its lines let go. */
export async function cancelVerification(db: Database, job: Pick<LookupJobRow, "account_id" | "verification_job_id">): Promise<void> {
  if (!job.verification_job_id) return;
  await cancelJob(db, job.account_id, job.verification_job_id, "lookup_job_cancelled");
  await expireResults(db, "verification", job.verification_job_id);
}
