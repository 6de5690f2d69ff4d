/**
 * verify_emails (docs/lookup-jobs.md "Verified addresses"): once every line of a lookup job is answered, the addresses
 * its answers carry that no verification of ours newer than LOOKUP_VERIFY_MAX_AGE_SECONDS covered (those were taken as
 * they were, turn by turn) go to one bulk verification job of the same account, made and run by the verification jobs'
 * own machinery (its fair share, the probe's lanes for this account, rechecks, receivers' budgets); when it has ended
 * its verdicts become the job's, are written back to the stored addresses (as the re-verification cron writes its own),
 * and the lookup job completes. The verification job is the lookup job's child (verification_jobs.parent_job_id), set by
 * this code alone: the phase started twice makes one job, no request can name or make one (a customer's Idempotency-Key
 * is only ever its own jobs'), and only the addresses the lookup job still has found are written back.
 */
import type { EmailVerificationResult } from "../../shared/api.ts";
import { verificationReason } from "../../shared/email/verdict.ts";
import type { Database } from "../db/client.ts";
import type { JobsQueue } from "../env.ts";
import { newId } from "../identity/tokens.ts";
import { prepareLines } from "../jobs/prepare-lines.ts";
import { enqueueTurns } from "../jobs/queue.ts";
import { answeredLines } from "../jobs/store/internal-jobs.ts";
import { startJob, writeJobLines } from "../jobs/store/job-creation.ts";
import { cancelJob, jobById } from "../jobs/store/job-rows.ts";
import { expireResults } from "../jobs/store/retention.ts";
import { ANSWERS_PER_WRITE, writeStoredEmailAnswers, type StoredEmailRules } from "../people/store.ts";
import { DEFAULT_SMTP_TIMEOUT_SECONDS } from "../verification/params.ts";
import { batch, type LookupJobRow } from "./store/job-rows.ts";
import { addressesStillFound, addressesToVerify, claimVerificationStart, finishVerification, touchJob, verificationStarted, writeVerdictsStatement, type Verdict } from "./store/verification.ts";

export type VerificationDeps = { db: Database; jobsQueue: JobsQueue; storedEmailRules: StoredEmailRules };

/** What the phase did: started (and whether it is done at once), still verifying, or finished (whether it completed the job). */
export type PhaseStep = { kind: "not_due" } | { kind: "started"; verifying: boolean } | { kind: "verifying" } | { kind: "finished"; completed: boolean };

/** Starts the phase when it is due (every line answered, not started yet), once whoever else tries. */
async function start(deps: VerificationDeps, job: LookupJobRow, now: number): Promise<PhaseStep> {
  if (!(await claimVerificationStart(deps.db, job.id, now))) return { kind: "not_due" };
  const emails: string[] = [];
  for (let from: number | null = 0; from !== null; ) {
    const page: { emails: string[]; next: number | null } = await addressesToVerify(deps.db, job.id, from);
    emails.push(...page.emails);
    from = page.next;
  }
  const unique = [...new Map(emails.map((e) => [e.toLowerCase(), e])).values()];
  if (unique.length === 0) {
    await verificationStarted(deps.db, job.id, null, now);
    return { kind: "started", verifying: false };
  }
  const id = newId("job");
  const unbounded = { maxRunning: Number.MAX_SAFE_INTEGER, maxLinesPerDay: Number.MAX_SAFE_INTEGER };
  const started = await startJob(
    deps.db,
    { id, accountId: job.account_id, smtpTimeout: DEFAULT_SMTP_TIMEOUT_SECONDS, callbackUrl: null, idempotencyKey: null, parentJobId: job.id, requestHash: job.id, total: unique.length, retentionSeconds: 0 },
    unbounded,
  );
  let verificationJobId = id;
  if (started.kind === "existing") {
    // An earlier start got this far and died: its job, once its lines are written (else the cron hands the phase back later).
    if (!started.job) throw new Error(`the verification job of ${job.id} is still being written`);
    verificationJobId = started.job.id;
  } else if (started.kind === "started") {
    const written = await writeJobLines(deps.db, id, await prepareLines(unique), job.actor);
    if (written.status !== "completed") await enqueueTurns(deps.jobsQueue, id, unique.length);
  } else {
    throw new Error(`the verification job of ${job.id} was refused (${started.kind})`);
  }
  await verificationStarted(deps.db, job.id, verificationJobId, now);
  return { kind: "started", verifying: true };
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
    const verdicts: Verdict[] = lines.map((line) => {
      const result = JSON.parse(line.result) as EmailVerificationResult;
      return { email: line.email, classification: line.classification, reason: line.reason ?? result.reason ?? verificationReason(result), smtp_outcome: result.details?.smtp_outcome ?? null, checked_at: Number(line.checked_at) };
    });
    await batch(deps.db, [writeVerdictsStatement(deps.db, job.id, verdicts)]);
    await writeStoredEmailAnswers(deps.db, verdicts.map((v) => ({ ...v, reason: v.reason ?? "no_smtp_check" })), deps.storedEmailRules);
  }
  const completed = await finishVerification(deps.db, job.id, now);
  await expireResults(deps.db, verificationJobId);
  return { kind: "finished", completed };
}

/** One look at a job's verification phase: start it when due, wait while its verification job runs, finish it once that has ended. */
export async function stepVerification(deps: VerificationDeps, job: LookupJobRow, now = Date.now()): Promise<PhaseStep> {
  if (Number(job.verify_emails) !== 1 || job.status !== "running") return { kind: "not_due" };
  if (job.verify_state === null) return start(deps, job, now);
  if (job.verify_state !== "verifying" || !job.verification_job_id) return { kind: "not_due" };
  const verification = await jobById(deps.db, job.verification_job_id);
  if (verification && (verification.status === "queued" || verification.status === "running")) {
    await touchJob(deps.db, job.id, now);
    return { kind: "verifying" };
  }
  return finish(deps, job, job.verification_job_id, now);
}

/** A lookup job cancelled in its verification phase: its verification job is cancelled too, and its lines let go. */
export async function cancelVerification(db: Database, job: Pick<LookupJobRow, "account_id" | "verification_job_id">): Promise<void> {
  if (!job.verification_job_id) return;
  await cancelJob(db, job.account_id, job.verification_job_id, "lookup_job_cancelled");
  await expireResults(db, job.verification_job_id);
}
