/**
 * The life of the personal data we hold (docs/operations.md "Personal data"), the cron's part:
 *
 * - Stored email addresses are verified again by our own engine, through the same path as bulk jobs
 *   (DoH, the probe's batch endpoint, warm sessions, the same pacing and fair shares): the addresses due
 *   (never checked, or last checked EMAIL_MAX_AGE_SECONDS ago), oldest first, EMAIL_REFRESH_BATCH at a time, go
 *   into an internal job of the account REFRESH_ACCOUNT_ID, one such job at a time; when it has ended,
 *   its answers are written to every person that has the address, and the job is deleted.
 * - An address whose mailbox was not found (reason mailbox_not_found) on two checks at least
 *   EMAIL_RECHECK_SECONDS apart becomes undeliverable: kept with its verdict, never returned by a lookup,
 *   until a check finds the mailbox (reason deliverable or mailbox_full). No other answer removes one:
 *   catch-all, greylisting, blocks and every other inconclusive answer are recorded and tried again
 *   (the statement that applies these rules: `writeStoredEmailAnswers`, edge/people/store.ts).
 * - A customer's hard bounce moves its address to the front (edge/people/feedback-store.ts), and a mailbox_not_found
 *   that follows it makes the address undeliverable at once: our check agrees with the report.
 * - Stored addresses get their name in bounce feedback (FEEDBACK_HASH_KEY), a bounded number per run, so that reports
 *   find them; reports older than FEEDBACK_RETENTION_SECONDS are deleted.
 * - Access-log rows, erasure notices and merge candidates older than ACCESS_LOG_RETENTION_SECONDS are deleted; the email
 *   finder's charged finds after FIND_REPEAT_DAYS and its checks after FINDER_CHECK_DAYS (30 days each).
 */
import { sql } from "drizzle-orm";
import { sqliteLower } from "../shared/sqlite-lower.ts";
import type { Database } from "./db/client.ts";
import { REFRESH_ACCOUNT_ID } from "./identity/internal-accounts.ts";
import { answeredLines, deleteJobsWithResultsDeleted, endedJobsWithResults, hasUnfinishedJob } from "./jobs/store/internal-jobs.ts";
import { internalVerdict, startInternalJob } from "./jobs/child.ts";
import { expireResults } from "./jobs/store/envelope.ts";
import type { JobQueues } from "./jobs/queue.ts";
import {
  ANSWERS_PER_WRITE,
  claimAddressesQuery,
  deleteOldAccessLog,
  deleteOldErasureNotices,
  deleteOldMergeCandidates,
  dueAddresses,
  writeStoredEmailAnswers,
  type StoredEmailRules,
} from "./people/store.ts";
import { deleteOldFeedback, keyStoredAddresses, nameStoredAddresses } from "./people/feedback-store.ts";
import { deleteOldFinderState } from "./people/finder-store.ts";
import { FIND_REPEAT_DAYS, FINDER_CHECK_DAYS } from "./finder/find.ts";
import { addressHasher } from "../shared/people/address-hash.ts";

const DAY_MS = 86_400_000;

export { REFRESH_ACCOUNT_ID };
/** An address put in a refresh job is not due again for this long, unless the job's answer says otherwise. */
export const REFRESH_CLAIM_MS = 24 * 3_600_000;
/** Ended refresh jobs whose answers are written per cron run. */
const REFRESH_JOBS_APPLIED_PER_RUN = 3;

export type PersonalDataConfig = StoredEmailRules & {
  /** Addresses per refresh job (0: no re-verification). */
  refreshBatch: number;
  accessLogRetentionSeconds: number;
  jobRetentionSeconds: number;
  /** FEEDBACK_HASH_KEY: without it no address is named, and reports find none. */
  feedbackHashKey: string | undefined;
  feedbackRetentionSeconds: number;
};

/** Writes the answers of refresh jobs that have ended, then lets retention delete them (the job row goes once its lines have). */
async function applyEndedRefreshJobs(db: Database, config: PersonalDataConfig): Promise<{ jobs: number; addresses: number; rows: number }> {
  const ended = await endedJobsWithResults(db, REFRESH_ACCOUNT_ID, REFRESH_JOBS_APPLIED_PER_RUN);
  let addresses = 0;
  let rows = 0;
  for (const id of ended) {
    for (let from = 0; ; ) {
      const lines = await answeredLines(db, id, from, ANSWERS_PER_WRITE);
      if (lines.length === 0) break;
      const answers = lines.map(internalVerdict);
      rows += await writeStoredEmailAnswers(db, answers, config);
      addresses += answers.length;
      from = Number(lines.at(-1)!.position) + 1;
    }
    await expireResults(db, "verification", id);
  }
  // Refresh jobs whose lines retention has deleted leave nothing behind.
  await deleteJobsWithResultsDeleted(db, REFRESH_ACCOUNT_ID);
  return { jobs: ended.length, addresses, rows };
}

/** When no refresh job is running: the addresses due, oldest first, claimed for REFRESH_CLAIM_MS and put in a new one. */
async function startRefreshJob(db: Database, queues: JobQueues, config: PersonalDataConfig, now: number): Promise<{ job: string | null; addresses: number }> {
  if (await hasUnfinishedJob(db, REFRESH_ACCOUNT_ID)) return { job: null, addresses: 0 };
  // Twice the batch of rows by the next_check_at index: one address may be stored for several people.
  const due = await dueAddresses(db, now, config.refreshBatch * 2);
  const addresses = new Map<string, string>();
  for (const email of due) {
    const key = sqliteLower(email);
    if (!addresses.has(key)) addresses.set(key, email);
    if (addresses.size >= config.refreshBatch) break;
  }
  if (addresses.size === 0) return { job: null, addresses: 0 };
  const emails = [...addresses.values()];
  await db.batch([
    db.run(sql`insert into accounts (id, name) values (${REFRESH_ACCOUNT_ID}, 'Stored email re-verification (internal)') on conflict do nothing`),
    claimAddressesQuery(db, emails, now + REFRESH_CLAIM_MS),
  ]);
  const started = await startInternalJob(db, queues, { accountId: REFRESH_ACCOUNT_ID, parentJobId: null, actor: null, emails, retentionSeconds: config.jobRetentionSeconds, requestHash: "" });
  if (started.id === null) return { job: null, addresses: 0 };
  return { job: started.id, addresses: emails.length };
}

export type PersonalDataReport = {
  refresh_jobs_applied: number;
  refresh_answers_written: number;
  refresh_job_started: string | null;
  refresh_addresses_queued: number;
  access_log_deleted: number;
  erasure_notices_deleted: number;
  addresses_keyed: number;
  addresses_named: number;
  feedback_deleted: number;
  merge_candidates_deleted: number;
  finder_state_deleted: number;
};

/** The cron's part for personal data: answers of ended refresh jobs written, the next refresh job started, old log rows deleted. */
export async function runPersonalDataCron(db: Database, queues: JobQueues, config: PersonalDataConfig, now = Date.now()): Promise<PersonalDataReport> {
  const applied = await applyEndedRefreshJobs(db, config);
  const started = config.refreshBatch > 0 ? await startRefreshJob(db, queues, config, now) : { job: null, addresses: 0 };
  const before = now - config.accessLogRetentionSeconds * 1000;
  return {
    refresh_jobs_applied: applied.jobs,
    refresh_answers_written: applied.rows,
    refresh_job_started: started.job,
    refresh_addresses_queued: started.addresses,
    access_log_deleted: await deleteOldAccessLog(db, before),
    erasure_notices_deleted: await deleteOldErasureNotices(db, before),
    addresses_keyed: await keyStoredAddresses(db),
    addresses_named: config.feedbackHashKey ? await nameStoredAddresses(db, await addressHasher(config.feedbackHashKey)) : 0,
    feedback_deleted: await deleteOldFeedback(db, now - config.feedbackRetentionSeconds * 1000),
    merge_candidates_deleted: await deleteOldMergeCandidates(db, before),
    finder_state_deleted: await deleteOldFinderState(db, now - FIND_REPEAT_DAYS * DAY_MS, now - FINDER_CHECK_DAYS * DAY_MS),
  };
}
