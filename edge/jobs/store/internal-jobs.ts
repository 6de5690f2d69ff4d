/**
 * Jobs the service runs for itself on an internal account (edge/internal-accounts.ts): the personal-data cron's
 * re-verification of stored addresses (edge/personal-data-cron.ts) reads their answers back once they have ended and
 * then hands them to retention; an erasure (scripts/admin/people-erase.ts) takes the erased addresses out of the ones
 * whose answers are not written back yet. The statements take the account, so nothing here knows which one it is.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import type { RawRow } from "../../db/rows.ts";
import type { verificationJobItems } from "../../db/schema.ts";
import { RESULTS_STATE } from "./job-rows.ts";

/** Whether the account has a job queued, running or still being created. */
export async function hasUnfinishedJob(db: Database, accountId: string): Promise<boolean> {
  const [running] = await db.all<{ n: number }>(sql`select count(*) as n from verification_jobs
    where account_id = ${accountId} and (status in ('queued', 'running') or creating = 1)`);
  return Number(running?.n ?? 0) > 0;
}

/** The account's ended jobs whose results are still held (not handed to retention yet), the longest ended first. */
export async function endedJobsWithResults(db: Database, accountId: string, limit: number): Promise<string[]> {
  const rows = await db.all<{ id: string }>(sql`select id from verification_jobs
    where account_id = ${accountId} and status in ('completed', 'cancelled') and results_state = ${RESULTS_STATE.held} and creating = 0
    order by completed_at limit ${limit}`);
  return rows.map((r) => String(r.id));
}

type LineRow = RawRow<typeof verificationJobItems.$inferSelect>;
/** An answered line as the cron writes it back: its answer, classification and time are set once it is done. */
export type AnsweredLine = Pick<LineRow, "position" | "email" | "reason"> & { [K in "result" | "classification" | "checked_at"]: NonNullable<LineRow[K]> };

/** A job's answered lines from position `from` on, in input order, `limit` at most. */
export function answeredLines(db: Database, jobId: string, from: number, limit: number): Promise<AnsweredLine[]> {
  return db.all<AnsweredLine>(sql`select position, email, result, reason, classification, checked_at from verification_job_items
    where job_id = ${jobId} and state = 'done' and position >= ${from} order by position limit ${limit}`);
}

/** Deletes the account's jobs whose lines retention has deleted: an internal job leaves nothing behind. */
export async function deleteJobsWithResultsDeleted(db: Database, accountId: string): Promise<void> {
  await db.run(sql`delete from verification_jobs where account_id = ${accountId} and results_state = ${RESULTS_STATE.deleted}`);
}

/**
 * The statements that take `addresses` (in any letter case) out of the jobs `which` selects (an SQL condition on
 * verification_jobs) whose answers are not written back yet (results held), for the caller's write batch. The counters
 * stay the triggers': a line that leaves `done` leaves `processed`, its classification's count and its reason's
 * (migration 0016), as a taken-back answer does, and only then is it deleted. `total` is the job's line count, written
 * at creation and by no trigger (a delete must not move the counts: retention deletes lines and keeps them), so it goes
 * down here by the lines deleted. A job left with nothing to do is complete (these jobs have no callback). A job still
 * being created keeps its counts: its lines are still being written.
 */
function removeAddressesFrom(which: SQL, addresses: readonly string[], now: number): SQL[] {
  const openJobs = sql`select id from verification_jobs where (${which}) and results_state = ${RESULTS_STATE.held}`;
  const counted = sql`select id from verification_jobs where (${which}) and results_state = ${RESULTS_STATE.held} and creating = 0`;
  const erased = sql`lower(email) in (select lower(value) from json_each(${JSON.stringify(addresses)}))`;
  return [
    sql`update verification_jobs set total = total - (select count(*) from verification_job_items i where i.job_id = verification_jobs.id and ${erased})
      where id in (${counted})`,
    sql`update verification_job_items set state = 'pending' where job_id in (${counted}) and state = 'done' and ${erased}`,
    sql`delete from verification_job_items where job_id in (${openJobs}) and ${erased}`,
    sql`update verification_jobs set status = 'completed', completed_at = ${now}, updated_at = ${now}
      where id in (${counted}) and status in ('queued', 'running') and processed >= total`,
  ];
}

/** An erasure's statements for the account's own jobs (the personal-data cron's refresh jobs): removeAddressesFrom. */
export const removeAddressesFromOpenJobs = (accountId: string, addresses: readonly string[], now = Date.now()): SQL[] =>
  removeAddressesFrom(sql`account_id = ${accountId}`, addresses, now);

/**
 * An erasure's statements for every account's lookup-job verify_emails phases (verification jobs with a parent_job_id):
 * the erased addresses leave them at once, so they are neither listed, downloadable nor written back when the phase ends.
 */
export const removeAddressesFromPhaseJobs = (addresses: readonly string[], now = Date.now()): SQL[] =>
  removeAddressesFrom(sql`parent_job_id is not null`, addresses, now);
