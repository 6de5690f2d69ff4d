/**
 * What every job has, whatever its kind (edge/jobs/kinds.ts), as statements written once over each kind's tables: its
 * callback's attempts recorded and the due ones found for the cron, a create that could not finish given up and, once
 * abandoned, deleted, its results expired and deleted (retention, purge), its Idempotency-Key forgotten after 24 hours.
 * The rules are the verification jobs' (docs/jobs.md "Retention", "Callbacks"); a lookup job follows the same ones
 * (docs/lookup-jobs.md). Every deletion is a bounded statement of its own: no write lock held across a round trip or long.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { deleteInBatches, rowsAffected } from "../../db/rows.ts";
import type { JobKind } from "../../../shared/jobs.ts";
import { ACCOUNT_ACTIVE, RESULTS_STATE, ZERO_RETENTION_GRACE_MS } from "./job-rows.ts";

type KindTables = {
  jobs: string;
  lines: string;
  /** Tables of a job's results besides its lines (by job_id), deleted with them. */
  alsoResults: readonly string[];
};

/** Each kind's tables. */
export const KIND_TABLES: Record<JobKind, KindTables> = {
  verification: { jobs: "verification_jobs", lines: "verification_job_items", alsoResults: [] },
  lookup: { jobs: "lookup_jobs", lines: "lookup_job_lines", alsoResults: ["lookup_job_verdicts"] },
};

const jobsOf = (kind: JobKind) => sql.identifier(KIND_TABLES[kind].jobs);
const linesOf = (kind: JobKind) => sql.identifier(KIND_TABLES[kind].lines);


/** Lines per delete statement. */
export const LINES_PER_DELETE = 5_000;
/** Lines the cron deletes per run and kind, at most. */
export const LINES_DELETED_PER_RUN = 50_000;
/** Jobs marked expired per cron run and kind, at most. */
const JOBS_EXPIRED_PER_RUN = 500;
/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000;
/** A job still being written after this long was abandoned by a create that died; the cron deletes it. */
export const ABANDONED_CREATE_MS = 10 * 60_000;
/** Callbacks the cron requeues per run and kind, the longest waiting first. */
export const DUE_CALLBACKS_PER_RUN = 1_000;

/** A callback attempt's outcome as recorded: delivered, failed for good, or to be tried again at `nextAt`. */
export type CallbackOutcome = { delivered: true } | { delivered: false; error: string; nextAt: number | null };

export async function recordCallback(db: Database, kind: JobKind, jobId: string, outcome: CallbackOutcome): Promise<void> {
  const jobs = jobsOf(kind);
  if (outcome.delivered) {
    await db.run(sql`update ${jobs} set callback_state = 'delivered', callback_attempts = callback_attempts + 1, callback_next_at = null, callback_last_error = null where id = ${jobId}`);
    return;
  }
  await db.run(sql`update ${jobs} set callback_attempts = callback_attempts + 1, callback_last_error = ${outcome.error.slice(0, 200)},
      callback_state = ${outcome.nextAt === null ? "failed" : "pending"}, callback_next_at = ${outcome.nextAt}
    where id = ${jobId} and callback_state = 'pending'`);
}

/**
 * The callbacks of ended jobs whose time has come (their message may be lost), the longest waiting first, at most
 * DUE_CALLBACKS_PER_RUN, marked as sent (callback_next_at now) in the same transaction that reads them.
 */
export async function dueCallbacks(db: Database, kind: JobKind, dueBefore: number, now = Date.now()): Promise<{ job: string; attempt: number }[]> {
  const jobs = jobsOf(kind);
  const due = sql`select id from ${jobs} where status in ('completed', 'cancelled') and callback_state = 'pending' and callback_next_at < ${dueBefore} and ${ACCOUNT_ACTIVE}
    order by callback_next_at, id limit ${DUE_CALLBACKS_PER_RUN}`;
  const [rows] = await db.batch([
    db.all<{ id: string; callback_attempts: number }>(sql`select id, callback_attempts from ${jobs} where id in (${due})`),
    db.run(sql`update ${jobs} set callback_next_at = ${now} where id in (${due})`),
  ]);
  return rows.map((r) => ({ job: String(r.id), attempt: Number(r.callback_attempts) }));
}

/**
 * A create whose lines could not all be written: its job leaves every limit (cancelled, dated at the epoch, so nothing
 * counts it), frees its Idempotency-Key for the client's retry, and is the cron's to delete (deleteAbandonedCreates).
 */
export async function giveUpCreate(db: Database, kind: JobKind, jobId: string): Promise<void> {
  await db.run(sql`update ${jobsOf(kind)} set status = 'cancelled', created_at = 0, idempotency_key = null where id = ${jobId} and creating = 1`);
}

/** The statement that deletes up to `limit` of a job's first lines. */
const deleteFirstLines = (db: Database, kind: JobKind, jobId: string, limit: number) => {
  const lines = linesOf(kind);
  return db.run(sql`delete from ${lines} where job_id = ${jobId} and position in (select position from ${lines} where job_id = ${jobId} order by position limit ${limit})`);
};

/** Deletes up to `max` of an expired job's lines, LINES_PER_DELETE per statement; marks it deleted once none is left (its other results with it). */
async function deleteResultLines(db: Database, kind: JobKind, jobId: string, max: number): Promise<number> {
  const { deleted, exhausted } = await deleteInBatches((limit) => deleteFirstLines(db, kind, jobId, limit), LINES_PER_DELETE, max);
  if (exhausted) {
    await db.batch([
      ...KIND_TABLES[kind].alsoResults.map((table) => db.run(sql`delete from ${sql.identifier(table)} where job_id = ${jobId}`)),
      db.run(sql`update ${jobsOf(kind)} set results_state = ${RESULTS_STATE.deleted} where id = ${jobId} and results_state = ${RESULTS_STATE.deleting}`),
    ] as unknown as Parameters<Database["batch"]>[0]);
  }
  return deleted;
}

/** Marks an ended job's results expired now, whatever its retention (reads answer 410 from then on); the cron deletes its lines. */
export async function expireResults(db: Database, kind: JobKind, jobId: string): Promise<void> {
  await db.run(sql`update ${jobsOf(kind)} set results_state = ${RESULTS_STATE.deleting}
    where id = ${jobId} and results_state = ${RESULTS_STATE.held} and status in ('completed', 'cancelled')`);
}

/** DELETE ?purge=true on an ended job (a running one is cancelled first): its results expire now, the first lines go at once, the rest with the cron. */
export async function purgeResults(db: Database, kind: JobKind, jobId: string): Promise<void> {
  await expireResults(db, kind, jobId);
  await deleteResultLines(db, kind, jobId, LINES_PER_DELETE);
}

export type EnvelopeReport = { jobs_expired: number; lines_deleted: number; keys_forgotten: number; creates_abandoned: number };

/**
 * The cron's part for one kind: ended jobs whose retention ran out are marked (retention_seconds after the job ended;
 * 0: once its callback was delivered or given up, or an hour after it ended without one: lookup-rows.ts and
 * job-rows.ts resultsDeleteAt say when, by the same rule), expired jobs lose their lines (bounded), creates that died
 * half way are deleted, and Idempotency-Keys older than 24 hours are forgotten.
 */
export async function applyRetention(db: Database, kind: JobKind, defaultRetentionSeconds: number, now = Date.now()): Promise<EnvelopeReport> {
  const jobs = jobsOf(kind);
  const retention = sql`coalesce(retention_seconds, ${defaultRetentionSeconds})`;
  const expired = await db.run(sql`update ${jobs} set results_state = ${RESULTS_STATE.deleting}
    where id in (select id from ${jobs}
      where results_state = ${RESULTS_STATE.held} and status in ('completed', 'cancelled') and creating = 0 and (
        (${retention} > 0 and completed_at + ${retention} * 1000 <= ${now})
        or (${retention} = 0 and (callback_state in ('delivered', 'failed') or (callback_state = 'none' and completed_at + ${ZERO_RETENTION_GRACE_MS} <= ${now}))))
      limit ${JOBS_EXPIRED_PER_RUN})`);
  let linesDeleted = 0;
  const deleting = await db.all<{ id: string }>(sql`select id from ${jobs} where results_state = ${RESULTS_STATE.deleting} order by completed_at limit 20`);
  for (const { id } of deleting) {
    if (linesDeleted >= LINES_DELETED_PER_RUN) break;
    linesDeleted += await deleteResultLines(db, kind, id, LINES_DELETED_PER_RUN - linesDeleted);
  }
  const abandoned = await deleteAbandonedCreates(db, kind, now);
  const forgotten = await db.run(sql`update ${jobs} set idempotency_key = null
    where id in (select id from ${jobs} where idempotency_key is not null and created_at <= ${now - IDEMPOTENCY_KEY_TTL_MS} limit 1000)`);
  return { jobs_expired: rowsAffected(expired), lines_deleted: linesDeleted + abandoned.lines, keys_forgotten: rowsAffected(forgotten), creates_abandoned: abandoned.jobs };
}

/**
 * Creates that died half way (still being written after ABANDONED_CREATE_MS, or given up): their lines first, a
 * bounded number per run, then the row once none is left.
 */
export async function deleteAbandonedCreates(db: Database, kind: JobKind, now = Date.now()): Promise<{ jobs: number; lines: number }> {
  const jobs = jobsOf(kind);
  const abandoned = await db.all<{ id: string }>(sql`select id from ${jobs} where creating = 1 and (created_at < ${now - ABANDONED_CREATE_MS} or status = 'cancelled') limit 10`);
  let deleted = 0;
  let lines = 0;
  for (const { id } of abandoned) {
    const gone = rowsAffected(await deleteFirstLines(db, kind, id, LINES_PER_DELETE));
    lines += gone;
    if (gone > 0) continue;
    const [row] = await db.batch([db.run(sql`delete from ${jobs} where id = ${id} and creating = 1 and not exists (select 1 from ${linesOf(kind)} where job_id = ${id})`)]);
    deleted += rowsAffected(row);
  }
  return { jobs: deleted, lines };
}

/** The SQL "this job is one of the account's, visible, with this id", for a kind's reads by id. */
export const visibleJob = (accountId: string, id: string): SQL => sql`id = ${id} and account_id = ${accountId} and creating = 0`;
