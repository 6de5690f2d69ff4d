/**
 * Retention of bulk jobs (docs/jobs.md "Retention"): a job's lines and results are deleted
 * JOB_RETENTION_SECONDS after it ended (or what it asked for, retention_seconds; 0: once its callback was
 * delivered, or an hour after it ended without one), and at once on DELETE ?purge=true. The job's
 * `results_delete_at` says when, by the same rule (job-rows.ts `resultsDeleteAt`: keep the two together). The job
 * record stays, with its counts and summary, and `results_expired`; its results endpoints answer 410.
 * Idempotency-Keys are forgotten after 24 hours.
 *
 * Every deletion is a bounded statement on its own (no write lock across a network round trip, none
 * held long): a job is marked expired first (reads answer 410 from then on), then its lines go
 * LINES_PER_DELETE at a time, from the cron, until none is left.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { deleteInBatches, rowsAffected } from "../../db/rows.ts";
import { jobById, RESULTS_STATE, ZERO_RETENTION_GRACE_MS, type JobRow } from "./job-rows.ts";
import { deleteFirstLines } from "./lines.ts";

/** Lines per delete statement. */
export const LINES_PER_DELETE = 5_000;
/** Lines the cron deletes per run, at most. */
export const LINES_DELETED_PER_RUN = 50_000;
/** Jobs marked expired per cron run, at most. */
const JOBS_EXPIRED_PER_RUN = 500;
/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000;

/** Deletes up to `max` of an expired job's lines, LINES_PER_DELETE per statement; marks it deleted once none is left. Returns the lines deleted. */
async function deleteLines(db: Database, jobId: string, max: number): Promise<number> {
  const { deleted, exhausted } = await deleteInBatches((limit) => deleteFirstLines(db, jobId, limit), LINES_PER_DELETE, max);
  if (exhausted) await db.run(sql`update verification_jobs set results_state = ${RESULTS_STATE.deleted} where id = ${jobId} and results_state = ${RESULTS_STATE.deleting}`);
  return deleted;
}

/** Marks an ended job's results expired now, whatever its retention (reads answer 410 from then on); the cron deletes its lines. */
export async function expireResults(db: Database, jobId: string): Promise<void> {
  await db.run(sql`update verification_jobs set results_state = ${RESULTS_STATE.deleting}
    where id = ${jobId} and results_state = ${RESULTS_STATE.held} and status in ('completed', 'cancelled')`);
}

/**
 * DELETE ?purge=true on an ended job (a running one is cancelled first, by the route): marks its results expired and
 * deletes the first LINES_PER_DELETE lines now; the cron deletes the rest. Returns the job as it is after.
 */
export async function purgeResults(db: Database, job: JobRow): Promise<JobRow | null> {
  await expireResults(db, job.id);
  await deleteLines(db, job.id, LINES_PER_DELETE);
  return jobById(db, job.id);
}

export type RetentionReport = { jobs_expired: number; job_lines_deleted: number; idempotency_keys_forgotten: number };

/** The cron's part: jobs whose retention ran out are marked, expired jobs lose their lines (bounded), old Idempotency-Keys are forgotten. */
export async function applyJobRetention(db: Database, defaultRetentionSeconds: number, now = Date.now()): Promise<RetentionReport> {
  const retention = sql`coalesce(retention_seconds, ${defaultRetentionSeconds})`;
  const expired = await db.run(sql`update verification_jobs set results_state = ${RESULTS_STATE.deleting}
    where id in (select id from verification_jobs
      where results_state = ${RESULTS_STATE.held} and status in ('completed', 'cancelled') and creating = 0 and (
        (${retention} > 0 and completed_at + ${retention} * 1000 <= ${now})
        or (${retention} = 0 and (callback_state in ('delivered', 'failed') or (callback_state = 'none' and completed_at + ${ZERO_RETENTION_GRACE_MS} <= ${now}))))
      limit ${JOBS_EXPIRED_PER_RUN})`);

  let linesDeleted = 0;
  const deleting = await db.all<{ id: string }>(sql`select id from verification_jobs where results_state = ${RESULTS_STATE.deleting} order by completed_at limit 20`);
  for (const { id } of deleting) {
    if (linesDeleted >= LINES_DELETED_PER_RUN) break;
    linesDeleted += await deleteLines(db, id, LINES_DELETED_PER_RUN - linesDeleted);
  }

  const forgotten = await db.run(sql`update verification_jobs set idempotency_key = null
    where id in (select id from verification_jobs where idempotency_key is not null and created_at <= ${now - IDEMPOTENCY_KEY_TTL_MS} limit 1000)`);
  return { jobs_expired: rowsAffected(expired), job_lines_deleted: linesDeleted, idempotency_keys_forgotten: rowsAffected(forgotten) };
}
