/**
 * Retention of lookup jobs (docs/lookup-jobs.md "Retention"), the verification jobs' rule applied to these tables: an
 * ended job's lines (the customer's rows and the people found) and verdicts are deleted retention_seconds after it ended
 * (0: once its callback was delivered, or an hour after without one), and at once on DELETE ?purge=true; the job record
 * stays with its counts. Idempotency-Keys are forgotten after 24 hours; creates that died half way are deleted; batch
 * answers kept for their keys go after 24 hours. Every deletion is a bounded statement of its own.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { deleteInBatches, rowsAffected } from "../../db/rows.ts";
import { RESULTS_STATE, ZERO_RETENTION_GRACE_MS } from "../../jobs/store/job-rows.ts";
import { deleteExpiredBatches } from "./batches.ts";
import { lookupJobById, type LookupJobRow } from "./job-rows.ts";

const LINES_PER_DELETE = 5_000;
const LINES_DELETED_PER_RUN = 50_000;
const JOBS_EXPIRED_PER_RUN = 500;
/** A job still being written after this long was left by a create that died. */
const ABANDONED_CREATE_MS = 10 * 60_000;
const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000;

async function deleteLines(db: Database, jobId: string, max: number): Promise<number> {
  const { deleted, exhausted } = await deleteInBatches(
    (limit) => db.run(sql`delete from lookup_job_lines where job_id = ${jobId} and position in (select position from lookup_job_lines where job_id = ${jobId} order by position limit ${limit})`),
    LINES_PER_DELETE,
    max,
  );
  if (exhausted) {
    await db.batch([
      db.run(sql`delete from lookup_job_verdicts where job_id = ${jobId}`),
      db.run(sql`update lookup_jobs set results_state = ${RESULTS_STATE.deleted} where id = ${jobId} and results_state = ${RESULTS_STATE.deleting}`),
    ]);
  }
  return deleted;
}

/** DELETE ?purge=true on an ended job: its results expire now (reads answer 410), the first lines go at once and the rest with the cron. */
export async function purgeLookupResults(db: Database, job: LookupJobRow): Promise<LookupJobRow | null> {
  await db.run(sql`update lookup_jobs set results_state = ${RESULTS_STATE.deleting} where id = ${job.id} and results_state = ${RESULTS_STATE.held} and status in ('completed', 'cancelled')`);
  await deleteLines(db, job.id, LINES_PER_DELETE);
  return lookupJobById(db, job.id);
}

export type LookupRetentionReport = { lookup_jobs_expired: number; lookup_lines_deleted: number; lookup_keys_forgotten: number; lookup_creates_abandoned: number; lookup_batches_deleted: number };

export async function applyLookupRetention(db: Database, defaultRetentionSeconds: number, now = Date.now()): Promise<LookupRetentionReport> {
  const retention = sql`coalesce(retention_seconds, ${defaultRetentionSeconds})`;
  const expired = await db.run(sql`update lookup_jobs set results_state = ${RESULTS_STATE.deleting}
    where id in (select id from lookup_jobs
      where results_state = ${RESULTS_STATE.held} and status in ('completed', 'cancelled') and creating = 0 and (
        (${retention} > 0 and completed_at + ${retention} * 1000 <= ${now})
        or (${retention} = 0 and (callback_state in ('delivered', 'failed') or (callback_state = 'none' and completed_at + ${ZERO_RETENTION_GRACE_MS} <= ${now}))))
      limit ${JOBS_EXPIRED_PER_RUN})`);
  let linesDeleted = 0;
  const deleting = await db.all<{ id: string }>(sql`select id from lookup_jobs where results_state = ${RESULTS_STATE.deleting} order by completed_at limit 20`);
  for (const { id } of deleting) {
    if (linesDeleted >= LINES_DELETED_PER_RUN) break;
    linesDeleted += await deleteLines(db, id, LINES_DELETED_PER_RUN - linesDeleted);
  }
  // Creates that died half way: their lines first, a bounded number, then the row.
  let abandoned = 0;
  for (const { id } of await db.all<{ id: string }>(sql`select id from lookup_jobs where creating = 1 and (created_at < ${now - ABANDONED_CREATE_MS} or status = 'cancelled') limit 10`)) {
    linesDeleted += await deleteLines(db, id, LINES_PER_DELETE);
    const [gone] = await db.batch([db.run(sql`delete from lookup_jobs where id = ${id} and creating = 1 and not exists (select 1 from lookup_job_lines where job_id = ${id})`)]);
    abandoned += rowsAffected(gone);
  }
  const forgotten = await db.run(sql`update lookup_jobs set idempotency_key = null
    where id in (select id from lookup_jobs where idempotency_key is not null and created_at <= ${now - IDEMPOTENCY_KEY_TTL_MS} limit 1000)`);
  return {
    lookup_jobs_expired: rowsAffected(expired),
    lookup_lines_deleted: linesDeleted,
    lookup_keys_forgotten: rowsAffected(forgotten),
    lookup_creates_abandoned: abandoned,
    lookup_batches_deleted: await deleteExpiredBatches(db, now),
  };
}
