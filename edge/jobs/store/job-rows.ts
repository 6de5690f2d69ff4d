/**
 * Job rows (verification_jobs) as the statements of edge/jobs/store/ read them: JobRow, the JSON a client sees, finding
 * and cancelling a job, completing it once, and the SQL pieces the other store modules share (JOB_COLUMNS, the
 * account-active and running-slot guards). The job tables are the source of truth: a queue message only says where to
 * look, and every write that matters is guarded by the state it expects, so a message delivered twice, a consumer that
 * dies halfway or a restarted stack can never lose an answer or write one twice. The guards that must agree with each
 * other live together: what is due and what is claimable in lines.ts and scheduling.ts, what holds a slot here.
 */
import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { VERIFICATION_REASONS } from "../../../shared/api.ts";
import type { VerificationJob } from "../../../shared/jobs.ts";
import type { Database } from "../../db/client.ts";
import { iso, rowsAffected, type RawRow } from "../../db/rows.ts";
import type { verificationJobs } from "../../db/schema.ts";
import { actorGoneReason, actorLive } from "../../identity/store/keys.ts";

/** JOB_RETENTION_SECONDS' default: what a job created before retention_seconds existed (null) keeps its results for. */
export const DEFAULT_JOB_RETENTION_SECONDS = 2_592_000;
/** results_state: 0 results held; 1 expired, lines being deleted (the cron); 2 every line deleted. */
export const RESULTS_STATE = { held: 0, deleting: 1, deleted: 2 } as const;
/** retention_seconds = 0 and no callback: results are kept this long after the job ended. */
export const ZERO_RETENTION_GRACE_MS = 3_600_000;

export type Statement = BatchItem<"sqlite">;
export const batch = (db: Database, statements: Statement[]) => db.batch(statements as [Statement, ...Statement[]]) as Promise<unknown[]>;

/** A job as the statements below select it (JOB_COLUMNS): the schema's row, in SQL's names. */
export type JobRow = RawRow<Omit<typeof verificationJobs.$inferSelect, "idempotencyKey" | "startedAt" | "callbackNextAt" | "callbackLastError" | "creating" | "lastClaimAt">> &
  /** Where the job stands in the scheduling (docs/jobs.md "Scheduling"), when the read asked for it. */
  Partial<{
    lines_in_progress: number;
    accounts_sharing: number;
    /** Parked lines by the receiver family they wait on, a JSON object; and when the last of them is due again. */
    waiting_on: string | null;
    waiting_until: number | null;
    started_at: number | null;
  }>;

/** A job's answered lines by reason: every reason of the vocabulary (0 included), and any other the stored counts hold. */
function reasonSummary(stored: string): Record<string, number> {
  let counts: Record<string, unknown> = {};
  try {
    counts = JSON.parse(stored) as Record<string, unknown>;
  } catch {
    // The triggers write this column; an unreadable one counts as empty rather than failing the read.
  }
  const out: Record<string, number> = Object.fromEntries(VERIFICATION_REASONS.map((r) => [r, 0]));
  for (const [reason, n] of Object.entries(counts)) out[reason] = Number(n) || 0;
  return out;
}

/** Parked lines by family, from the stored JSON object (an unreadable one counts as none). */
function waitingOn(stored: string | null | undefined): Record<string, number> {
  let counts: Record<string, unknown> = {};
  try {
    counts = stored ? (JSON.parse(stored) as Record<string, unknown>) : {};
  } catch {
    // Written by the same read's json_group_object; unreadable only if that changes.
  }
  return Object.fromEntries(Object.entries(counts).map(([family, n]) => [family, Number(n) || 0]));
}

/**
 * When an unfinished job should be done, roughly: its lines not parked at the rate it has answered
 * lines so far, and its parked lines not before the last of them is due again. Null while there is
 * nothing to go by (no line answered yet, and some not parked).
 */
export function estimatedCompletion(row: JobRow, parked: number, now = Date.now()): number | null {
  const remaining = Math.max(0, Number(row.total) - Number(row.processed));
  const active = Math.max(0, remaining - parked);
  const parkedUntil = parked > 0 && row.waiting_until != null ? Number(row.waiting_until) : now;
  if (active === 0) return Math.max(now, parkedUntil);
  const started = row.started_at == null ? null : Number(row.started_at);
  const processed = Number(row.processed);
  if (started === null || processed === 0 || now <= started) return null;
  return Math.max(Math.round(now + (active * (now - started)) / processed), parkedUntil);
}

/**
 * Lines not answered yet, split into waiting for a turn and in a consumer's hands; how many accounts
 * share the turns; the lines parked on a receiver's budget by family; and when the job should be done.
 */
function queueState(row: JobRow): VerificationJob["queue"] {
  const unfinished = row.status === "queued" || row.status === "running";
  const inProgress = unfinished ? Number(row.lines_in_progress ?? 0) : 0;
  const parked = unfinished ? waitingOn(row.waiting_on) : {};
  const estimate = unfinished ? estimatedCompletion(row, Object.values(parked).reduce((a, b) => a + b, 0)) : null;
  return {
    lines_waiting: unfinished ? Math.max(0, Number(row.total) - Number(row.processed) - inProgress) : 0,
    lines_in_progress: inProgress,
    accounts_sharing: unfinished ? Number(row.accounts_sharing ?? 0) : 0,
    waiting_on: parked,
    estimated_completion_at: iso(estimate),
  };
}

/**
 * When an ended job's results are deleted, by the rule the cron applies (retention.ts `applyJobRetention`, docs/jobs.md
 * "Retention"): retention_seconds after the job ended; with 0, an hour after without a callback, and at once when its
 * callback was delivered or given up (so not known while it is pending). Null while the job runs, and once they are
 * deleted or being deleted. A time in the past: the cron's next run deletes them.
 */
export function resultsDeleteAt(row: Pick<JobRow, "completed_at" | "results_state" | "retention_seconds" | "callback_state"> & { status: string }): number | null {
  if ((row.status !== "completed" && row.status !== "cancelled") || row.completed_at === null || Number(row.results_state) !== RESULTS_STATE.held) return null;
  const ended = Number(row.completed_at);
  const retention = row.retention_seconds === null ? DEFAULT_JOB_RETENTION_SECONDS : Number(row.retention_seconds);
  if (retention > 0) return ended + retention * 1000;
  if (row.callback_state === "none") return ended + ZERO_RETENTION_GRACE_MS;
  return row.callback_state === "pending" ? null : ended;
}

/** The names of a job's kept columns (edge/jobs/kept-columns.ts), from the stored JSON array; none for a JSON list. */
export function keptColumnsOf(row: Pick<JobRow, "columns">): string[] {
  if (row.columns === null || row.columns === undefined) return [];
  const names = JSON.parse(row.columns) as unknown;
  return Array.isArray(names) ? names.map(String) : [];
}

/** What the job is called: its name, or its id when it was given none (and for jobs made before names). */
export const jobName = (row: Pick<JobRow, "id" | "name">): string => row.name ?? row.id;

export function jobJson(row: JobRow): VerificationJob {
  const counts = { valid: Number(row.valid_count), risky: Number(row.risky_count), invalid: Number(row.invalid_count) };
  const columns = keptColumnsOf(row);
  return {
    id: row.id,
    name: jobName(row),
    columns,
    email_column: row.email_column === null ? null : (columns[Number(row.email_column)] ?? null),
    status: row.status,
    cancel_reason: row.status === "cancelled" ? ((row.cancel_reason as VerificationJob["cancel_reason"]) ?? null) : null,
    created_at: iso(row.created_at),
    completed_at: iso(row.completed_at),
    total: Number(row.total),
    processed: Number(row.processed),
    counts,
    summary: { classification: counts, reason: reasonSummary(row.reason_counts) },
    queue: queueState(row),
    smtp_timeout: Number(row.smtp_timeout),
    results_url: `/v1/email_verification_jobs/${row.id}/results`,
    retention_seconds: row.retention_seconds === null ? DEFAULT_JOB_RETENTION_SECONDS : Number(row.retention_seconds),
    results_expired: Number(row.results_state) > 0,
    results_delete_at: iso(resultsDeleteAt(row)),
  };
}

export const JOB_COLUMNS = sql.raw(
  "id, account_id, status, total, processed, valid_count, risky_count, invalid_count, reason_counts, smtp_timeout, callback_url, callback_state, callback_attempts, request_hash, created_at, completed_at, updated_at, retention_seconds, results_state, name, columns, email_column, parent_job_id, actor, cancel_reason",
);

/** A job as its account sees it: one still being written does not exist yet. */
/** JOB_COLUMNS and where the job stands in the scheduling (JobRow's lines_in_progress, accounts_sharing), for reads that answer with the job. */
export const jobWithQueue = (now: number) => sql`${JOB_COLUMNS},
  (select count(*) from verification_job_items i where i.job_id = verification_jobs.id and i.duplicate_of is null and i.state = 'claimed' and i.lease_until > ${now}) as lines_in_progress,
  (select count(distinct o.account_id) from verification_jobs o where o.status in ('queued', 'running') and o.creating = 0
    and o.account_id in (select id from accounts where status = 'active')) as accounts_sharing,
  (select json_group_object(family, lines) from (select coalesce(i.waiting_on, 'unknown') as family, count(*) as lines from verification_job_items i
    where i.job_id = verification_jobs.id and i.duplicate_of is null and i.state = 'waiting' group by 1)) as waiting_on,
  (select max(i.wait_until) from verification_job_items i where i.job_id = verification_jobs.id and i.duplicate_of is null and i.state = 'waiting') as waiting_until,
  started_at`;

export function findJobQuery(db: Database, accountId: string, id: string) {
  return db.all<JobRow>(sql`select ${jobWithQueue(Date.now())} from verification_jobs where id = ${id} and account_id = ${accountId} and creating = 0`);
}

export async function findJob(db: Database, accountId: string, id: string): Promise<JobRow | null> {
  return (await findJobQuery(db, accountId, id))[0] ?? null;
}

export async function jobById(db: Database, id: string): Promise<JobRow | null> {
  return (await db.all<JobRow>(sql`select ${JOB_COLUMNS} from verification_jobs where id = ${id} and creating = 0`))[0] ?? null;
}

/**
 * A page of an account's jobs (GET /v1/email_verification_jobs), newest first by (created_at, id): `limit` of them,
 * after the job `before` (one of this account's, found in the same statement), and whether older ones follow; with
 * `nameContains`, only jobs whose name holds it (SQLite's like: ASCII letters compared without case). One read by the
 * (account_id, created_at) index: no figure that counts a job's lines (those are findJob's).
 */
export async function listJobs(db: Database, accountId: string, before: string | undefined, limit: number, nameContains?: string): Promise<{ jobs: JobRow[]; more: boolean }> {
  const cursor = before === undefined ? sql`` : sql`and (created_at, id) < (select created_at, id from verification_jobs where id = ${before} and account_id = ${accountId})`;
  // A job without a name is called by its id (jobName): searched the same way. like's own wildcards are escaped.
  const named = nameContains === undefined ? sql`` : sql`and coalesce(name, id) like ${`%${nameContains.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`} escape '\\'`;
  // A lookup job's verify_emails phase (parent_job_id) is that job's, not one of the account's lists: never listed.
  const rows = await db.all<JobRow>(sql`select ${JOB_COLUMNS}, started_at from verification_jobs
    where account_id = ${accountId} and creating = 0 and parent_job_id is null ${cursor} ${named} order by created_at desc, id desc limit ${limit + 1}`);
  return { jobs: rows.slice(0, limit), more: rows.length > limit };
}

/**
 * "This job holds one of its account's JOB_MAX_RUNNING slots", for statements on verification_jobs:
 * queued or running, unless every line it has left is parked on a receiver's budget (docs/jobs.md
 * "Waiting on a receiver"): such a job only waits, and must not keep its account from starting another.
 */
export const HOLDS_RUNNING_SLOT = sql.raw(`status in ('queued', 'running') and not (
    exists (select 1 from verification_job_items w where w.job_id = verification_jobs.id and w.duplicate_of is null and w.state = 'waiting')
    and not exists (select 1 from verification_job_items w where w.job_id = verification_jobs.id and w.duplicate_of is null and w.state in ('pending', 'claimed', 'recheck')))`);

/**
 * "This job's account is active", for statements on verification_jobs: a disabled account's jobs
 * claim nothing and its callbacks wait, and the cron leaves both alone until it is enabled again.
 */
export const ACCOUNT_ACTIVE = sql.raw("account_id in (select id from accounts where status = 'active')");

/** Completes the job if every line is done, once (whoever gets there first); returns it when this statement did. */
export function completeIfDone(db: Database, jobId: string, now: number) {
  return db.all<JobRow>(sql`update verification_jobs set status = 'completed', completed_at = ${now}, updated_at = ${now},
      callback_state = case when callback_url is null then 'none' else 'pending' end, callback_next_at = ${now}
    where id = ${jobId} and status in ('queued', 'running') and processed >= total and creating = 0
    returning ${JOB_COLUMNS}`);
}

/** Why a job was cancelled (verification_jobs.cancel_reason): a value, or an SQL expression of it. */
export type JobCancelReason = NonNullable<VerificationJob["cancel_reason"]>;

/**
 * The statement that cancels the unfinished jobs `where` selects (an SQL condition on verification_jobs), saying why
 * (its callback, if it has a URL, is then due), for a caller's batch: DELETE, a key's revocation, its expiry, a member's
 * removal, a lookup job cancelled in its verify_emails phase.
 */
export const cancelJobsWhere = (where: SQL, reason: JobCancelReason | SQL, now: number): SQL =>
  sql`update verification_jobs set status = 'cancelled', cancel_reason = ${reason}, completed_at = ${now}, updated_at = ${now},
      callback_state = case when callback_url is null then 'none' else 'pending' end, callback_next_at = ${now}
    where (${where}) and status in ('queued', 'running') and creating = 0`;

/**
 * The statements that cancel the account's (or, with null, every account's) unfinished jobs whose maker can no longer
 * act (identity's actorLive), saying why: for a revocation's or a removal's own batch, and the cron for expiries. The
 * service's own jobs (no actor) and a lookup job's verify_emails phase (its lookup job's) are not a maker's.
 */
export const stopVerificationJobsOfGoneMakers = (accountId: string | null, now: number): SQL[] => [
  cancelJobsWhere(
    sql`${accountId === null ? sql`true` : sql`account_id = ${accountId}`} and actor is not null and not ${actorLive(sql.raw("verification_jobs.actor"), now)}`,
    actorGoneReason(sql.raw("verification_jobs.actor")),
    now,
  ),
];

/** The statement that cancels the verify_emails phases of the lookup jobs `parentIds` selects (an SQL select of ids). */
export const cancelPhasesOf = (parentIds: SQL, now: number): SQL => cancelJobsWhere(sql`parent_job_id in (${parentIds})`, "lookup_job_cancelled", now);

/**
 * Cancels a job that has not finished (its callback, if it has a URL, is then due); returns the job
 * as it is now (null: no such job) and whether this call cancelled it.
 */
export async function cancelJob(db: Database, accountId: string, id: string, reason: JobCancelReason = "requested"): Promise<{ job: JobRow; cancelled: boolean } | null> {
  const now = Date.now();
  const [update, rows] = await db.batch([
    db.run(cancelJobsWhere(sql`id = ${id} and account_id = ${accountId}`, reason, now)),
    findJobQuery(db, accountId, id),
  ]);
  const job = rows[0];
  return job ? { job, cancelled: rowsAffected(update) === 1 } : null;
}
