/**
 * Jobs in the database, the source of truth: a queue message only says where to look. Every write
 * that matters is guarded by the state it expects (a line is claimed only when it is claimable,
 * answered only when it is not done yet, a job completed only once), so a message delivered twice, a
 * consumer that dies halfway or a restarted stack can never lose an answer or write one twice.
 * Over 400 lines on purpose: every statement on the job tables is here, so each guard can be read
 * beside the others it must agree with (what is due, what is claimable, what holds a slot).
 */
import { sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { utcDay } from "../key-activity.ts";
import { VERIFICATION_REASONS, type EmailVerificationResult } from "../../shared/api.ts";
import type { VerificationJob } from "../../shared/jobs.ts";
import type { Database } from "../db/client.ts";
import { rowsAffected } from "../db/rows.ts";
import type { LineHistory } from "./line-policy.ts";
import type { verificationJobs } from "../db/schema.ts";
import { CHUNK_SIZE } from "./queue.ts";

/** Rows per INSERT when a job is created (one JSON argument each). */
const INSERT_ROWS = 2_500;
/**
 * Lines written per transaction while a job is created: each holds the database's write lock for
 * tens of milliseconds, so lookups' charges get in between (a 100,000-line job in one transaction
 * held it for about a second, and ten at once pushed lookups past their timeout).
 */
export const LINES_PER_TRANSACTION = 5_000;
/** JOB_RETENTION_SECONDS' default: what a job created before retention_seconds existed (null) keeps its results for. */
export const DEFAULT_JOB_RETENTION_SECONDS = 2_592_000;
/** results_expired: 0 results held; 1 expired, lines being deleted (the cron); 2 every line deleted. */
export const RESULTS_EXPIRED = { held: 0, deleting: 1, deleted: 2 } as const;

/** A job still being written after this long was abandoned by a create that died; the cron deletes it. */
export const ABANDONED_CREATE_MS = 10 * 60_000;
/** The window of the daily line quota (JOB_MAX_LINES_PER_DAY). */
export const LINE_QUOTA_WINDOW_MS = 24 * 3_600_000;

type Statement = BatchItem<"sqlite">;
const batch = (db: Database, statements: Statement[]) => db.batch(statements as [Statement, ...Statement[]]) as Promise<unknown[]>;

/** A column name as SQL spells it: Drizzle's camelCase keys map to the snake_case columns raw queries return. */
type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}` ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}` : S;
type RawRow<T> = { [K in keyof T as SnakeCase<K & string>]: T[K] };

/** A job as the statements below select it (JOB_COLUMNS): the schema's row, in SQL's names. */
export type JobRow = RawRow<Omit<typeof verificationJobs.$inferSelect, "idempotencyKey" | "startedAt" | "callbackNextAt" | "callbackLastError" | "writing" | "lastClaimAt">> &
  /** Where the job stands in the scheduling (docs/jobs.md "Scheduling"), when the read asked for it. */
  Partial<{
    lines_in_progress: number;
    accounts_sharing: number;
    /** Parked lines by the receiver family they wait on, a JSON object; and when the last of them is due again. */
    waiting_on: string | null;
    waiting_until: number | null;
    started_at: number | null;
  }>;

/**
 * A new job line: either already answered (it failed the syntax check) or to be checked; `domain`
 * (A-label form; "" for an answered line) orders the work (`workOrder`).
 */
export type NewLine = { email: string; domain: string; duplicateOf: number | null; done: EmailVerificationResult | null };

/**
 * Each line's place in the work order (its `seq`): grouped by domain, the domains in the order they
 * first appear in the list, input order within a domain. The lines a consumer claims together are
 * then whole domains or long slices of one, and a domain's lines reach its probe in one batch, where
 * one warm session carries them; and since the first line's domain goes first, results in input order
 * become readable from the start while the job runs.
 */
export function workOrder(lines: readonly NewLine[]): number[] {
  const firstSeen = new Map<string, number>();
  lines.forEach((line, i) => {
    if (!firstSeen.has(line.domain)) firstSeen.set(line.domain, i);
  });
  const group = lines.map((line) => firstSeen.get(line.domain)!);
  const order = lines.map((_, i) => i).sort((a, b) => group[a]! - group[b]! || a - b);
  const seq = new Array<number>(lines.length);
  order.forEach((position, rank) => (seq[position] = rank));
  return seq;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

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

export function jobJson(row: JobRow): VerificationJob {
  const counts = { valid: Number(row.valid_count), risky: Number(row.risky_count), invalid: Number(row.invalid_count) };
  return {
    id: row.id,
    status: row.status,
    created_at: iso(row.created_at)!,
    completed_at: iso(row.completed_at),
    total: Number(row.total),
    processed: Number(row.processed),
    counts,
    summary: { classification: counts, reason: reasonSummary(row.reason_counts) },
    queue: queueState(row),
    smtp_timeout: Number(row.smtp_timeout),
    results_url: `/v1/email_verification_jobs/${row.id}/results`,
    retention_seconds: row.retention_seconds === null ? DEFAULT_JOB_RETENTION_SECONDS : Number(row.retention_seconds),
    results_expired: Number(row.results_expired) > 0,
  };
}

const JOB_COLUMNS = sql.raw(
  "id, account_id, status, total, processed, valid_count, risky_count, invalid_count, reason_counts, smtp_timeout, callback_url, callback_state, callback_attempts, request_hash, created_at, completed_at, updated_at, retention_seconds, results_expired",
);

/** A job as its account sees it: one still being written does not exist yet. */
/** JOB_COLUMNS and where the job stands in the scheduling (JobRow's lines_in_progress, accounts_sharing), for reads that answer with the job. */
const jobWithQueue = (now: number) => sql`${JOB_COLUMNS},
  (select count(*) from verification_job_items i where i.job_id = verification_jobs.id and i.duplicate_of is null and i.state = 'claimed' and i.lease_until > ${now}) as lines_in_progress,
  (select count(distinct o.account_id) from verification_jobs o where o.status in ('queued', 'running') and o.writing = 0
    and o.account_id in (select id from accounts where status = 'active')) as accounts_sharing,
  (select json_group_object(family, lines) from (select coalesce(i.waiting_on, 'unknown') as family, count(*) as lines from verification_job_items i
    where i.job_id = verification_jobs.id and i.duplicate_of is null and i.state = 'waiting' group by 1)) as waiting_on,
  (select max(i.wait_until) from verification_job_items i where i.job_id = verification_jobs.id and i.duplicate_of is null and i.state = 'waiting') as waiting_until,
  started_at`;

export function findJobQuery(db: Database, accountId: string, id: string) {
  return db.all<JobRow>(sql`select ${jobWithQueue(Date.now())} from verification_jobs where id = ${id} and account_id = ${accountId} and writing = 0`);
}

export async function findJob(db: Database, accountId: string, id: string): Promise<JobRow | null> {
  return (await findJobQuery(db, accountId, id))[0] ?? null;
}

export async function jobById(db: Database, id: string): Promise<JobRow | null> {
  return (await db.all<JobRow>(sql`select ${JOB_COLUMNS} from verification_jobs where id = ${id} and writing = 0`))[0] ?? null;
}

/**
 * "This job holds one of its account's JOB_MAX_RUNNING slots", for statements on verification_jobs:
 * queued or running, unless every line it has left is parked on a receiver's budget (docs/jobs.md
 * "Waiting on a receiver"): such a job only waits, and must not keep its account from starting another.
 */
export const HOLDS_RUNNING_SLOT = sql.raw(`status in ('queued', 'running') and not (
    exists (select 1 from verification_job_items w where w.job_id = verification_jobs.id and w.duplicate_of is null and w.state = 'waiting')
    and not exists (select 1 from verification_job_items w where w.job_id = verification_jobs.id and w.duplicate_of is null and w.state in ('pending', 'claimed', 'recheck')))`);

export type NewJob = { id: string; accountId: string; smtpTimeout: number; callbackUrl: string | null; idempotencyKey: string | null; requestHash: string; total: number; retentionSeconds: number };
export type JobLimits = { maxRunning: number; maxLinesPerDay: number };

export type StartedJob =
  | { kind: "started" }
  /** The Idempotency-Key was used before: its job (finished writing), or null while it is still being written. */
  | { kind: "existing"; job: JobRow | null; requestHash: string }
  | { kind: "too_many_running" }
  | { kind: "daily_quota"; used: number; retryAfterSeconds: number };

/**
 * Starts a job: its row, written only if the account is under both limits, decided inside the
 * INSERT itself so that creates racing each other cannot all pass (the database runs one write at a
 * time); JOB_MAX_RUNNING counts jobs queued, running or still being written (HOLDS_RUNNING_SLOT: not
 * those whose lines only wait on a receiver), and the daily quota
 * every line submitted in the last 24 hours, whatever became of its job (cancelled, or invalid
 * throughout). The same round trip reads what the answer needs when the row was not written.
 */
export async function startJob(db: Database, job: NewJob, limits: JobLimits): Promise<StartedJob> {
  const now = Date.now();
  const since = now - LINE_QUOTA_WINDOW_MS;
  const [inserted, existing, usage] = await db.batch([
    db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, callback_url, idempotency_key, request_hash, created_at, updated_at, writing, retention_seconds)
      select ${job.id}, ${job.accountId}, 'queued', ${job.total}, ${job.smtpTimeout}, ${job.callbackUrl}, ${job.idempotencyKey}, ${job.requestHash}, ${now}, ${now}, 1, ${job.retentionSeconds}
      where (select count(*) from verification_jobs where account_id = ${job.accountId} and ${HOLDS_RUNNING_SLOT}) < ${limits.maxRunning}
        and (select coalesce(sum(total), 0) from verification_jobs where account_id = ${job.accountId} and created_at > ${since}) + ${job.total} <= ${limits.maxLinesPerDay}
      on conflict do nothing`),
    db.all<JobRow & { writing: number }>(sql`select ${jobWithQueue(now)}, writing from verification_jobs
      where account_id = ${job.accountId} and idempotency_key = ${job.idempotencyKey} and id != ${job.id}`),
    db.all<{ running: number; lines: number; oldest: number | null }>(sql`select
        (select count(*) from verification_jobs where account_id = ${job.accountId} and ${HOLDS_RUNNING_SLOT}) as running,
        (select coalesce(sum(total), 0) from verification_jobs where account_id = ${job.accountId} and created_at > ${since}) as lines,
        (select min(created_at) from verification_jobs where account_id = ${job.accountId} and created_at > ${since}) as oldest`),
  ]);
  if (rowsAffected(inserted) === 1) return { kind: "started" };
  const earlier = existing[0];
  if (earlier) return { kind: "existing", job: Number(earlier.writing) === 1 ? null : earlier, requestHash: earlier.request_hash };
  const u = usage[0]!;
  if (Number(u.running) >= limits.maxRunning) return { kind: "too_many_running" };
  // Lines leave the window as their jobs turn 24 hours old: the oldest goes first.
  const retryAfterSeconds = Math.max(1, Math.ceil((Number(u.oldest ?? now) + LINE_QUOTA_WINDOW_MS - now) / 1000));
  return { kind: "daily_quota", used: Number(u.lines), retryAfterSeconds };
}

/**
 * Writes a started job's lines, LINES_PER_TRANSACTION per transaction, then makes the job visible
 * (and completes it at once when every line failed the syntax check); returns it. Each insert only
 * runs while the job is still being written, so nothing is added to a job the cron has given up on.
 */
export async function writeJobLines(db: Database, jobId: string, lines: NewLine[], keyId: string | null = null): Promise<JobRow> {
  const seq = workOrder(lines);
  const checkedAt = Date.now();
  for (let from = 0; from < lines.length; from += LINES_PER_TRANSACTION) {
    const statements: Statement[] = [];
    for (let start = from; start < Math.min(lines.length, from + LINES_PER_TRANSACTION); start += INSERT_ROWS) {
      const end = Math.min(start + INSERT_ROWS, from + LINES_PER_TRANSACTION, lines.length);
      const rows = lines.slice(start, end).map((line, i) => [
        start + i,
        seq[start + i],
        line.email,
        line.duplicateOf,
        line.done ? "done" : "pending",
        line.done?.classification ?? null,
        line.done ? JSON.stringify(line.done) : null,
        line.done?.reason ?? null,
        line.done ? checkedAt : null,
      ]);
      statements.push(
        db.run(sql`insert into verification_job_items (job_id, position, seq, email, duplicate_of, state, classification, result, reason, checked_at)
          select ${jobId}, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8 from json_each(${JSON.stringify(rows)})
          where (select writing from verification_jobs where id = ${jobId}) = 1`),
      );
    }
    await batch(db, statements);
  }
  const now = Date.now();
  const [finished, , , job] = await db.batch([
    db.run(sql`update verification_jobs set writing = 0, updated_at = ${now} where id = ${jobId} and writing = 1`),
    // The key's usage roll-up counts the lines once the job is visible (changes(): the update just before).
    db.run(sql`insert into usage_daily (account_id, key_id, day, job_lines)
      select account_id, ${keyId}, ${utcDay(now)}, total from verification_jobs where id = ${jobId} and ${keyId} is not null and changes() = 1
      on conflict (account_id, day, key_id) do update set job_lines = job_lines + excluded.job_lines`),
    completeIfDone(db, jobId, now),
    db.all<JobRow>(sql`select ${jobWithQueue(now)} from verification_jobs where id = ${jobId}`),
  ]);
  if (rowsAffected(finished) !== 1 || !job[0]) throw new Error(`job ${jobId} was given up while its lines were written`);
  return job[0];
}

/**
 * A create whose lines could not all be written: its job leaves both limits (cancelled, dated at
 * the epoch, so neither JOB_MAX_RUNNING nor the daily quota counts it), frees its Idempotency-Key
 * for the client's retry, and is the cron's to delete.
 */
export async function giveUpCreate(db: Database, jobId: string): Promise<void> {
  await db.run(sql`update verification_jobs set status = 'cancelled', created_at = 0, idempotency_key = null where id = ${jobId} and writing = 1`);
}

/**
 * The cron's cleanup of creates that died half way: jobs still being written after
 * ABANDONED_CREATE_MS lose up to `maxLines` lines per call, a job its row once none is left.
 * Returns the jobs deleted whole.
 */
export async function deleteAbandonedJobs(db: Database, maxLines = LINES_PER_TRANSACTION): Promise<number> {
  const abandoned = await db.all<{ id: string }>(sql`select id from verification_jobs where writing = 1 and created_at < ${Date.now() - ABANDONED_CREATE_MS} limit 10`);
  let deleted = 0;
  for (const { id } of abandoned) {
    if (rowsAffected(await deleteFirstLines(db, id, maxLines)) > 0) continue;
    const [row] = await db.batch([db.run(sql`delete from verification_jobs where id = ${id} and writing = 1
      and not exists (select 1 from verification_job_items where job_id = ${id})`)]);
    deleted += rowsAffected(row);
  }
  return deleted;
}

/** Deletes a job's first `limit` lines (by position; one statement): expired results, an abandoned create. */
export function deleteFirstLines(db: Database, jobId: string, limit: number) {
  return db.run(sql`delete from verification_job_items where job_id = ${jobId}
    and position in (select position from verification_job_items where job_id = ${jobId} order by position limit ${limit})`);
}

/** Completes the job if every line is done, once (whoever gets there first); returns it when this statement did. */
function completeIfDone(db: Database, jobId: string, now: number) {
  return db.all<JobRow>(sql`update verification_jobs set status = 'completed', completed_at = ${now}, updated_at = ${now},
      callback_state = case when callback_url is null then 'none' else 'pending' end, callback_next_at = ${now}
    where id = ${jobId} and status in ('queued', 'running') and processed >= total and writing = 0
    returning ${JOB_COLUMNS}`);
}

/**
 * Cancels a job that has not finished (its callback, if it has a URL, is then due); returns the job
 * as it is now (null: no such job) and whether this call cancelled it.
 */
export async function cancelJob(db: Database, accountId: string, id: string): Promise<{ job: JobRow; cancelled: boolean } | null> {
  const now = Date.now();
  const [update, rows] = await db.batch([
    db.run(sql`update verification_jobs set status = 'cancelled', completed_at = ${now}, updated_at = ${now},
        callback_state = case when callback_url is null then 'none' else 'pending' end, callback_next_at = ${now}
      where id = ${id} and account_id = ${accountId} and status in ('queued', 'running') and writing = 0`),
    findJobQuery(db, accountId, id),
  ]);
  const job = rows[0];
  return job ? { job, cancelled: rowsAffected(update) === 1 } : null;
}

export type ResultRow = { position: number; email: string; state: string; result: string | null; checked_at: number | null };

/** Lines from `from` on, in input order (a duplicate carries its own copy of the answer). */
export function resultRowsQuery(db: Database, jobId: string, from: number, limit: number) {
  return db.all<ResultRow>(sql`
    select position, email, state, result, checked_at from verification_job_items
    where job_id = ${jobId} and position >= ${from} order by position limit ${limit}`);
}

/** What a results read may be narrowed to: classifications and reasons, each a list (empty: any). */
export type ResultFilter = { classifications: readonly string[]; reasons: readonly string[] };

const filterSql = (f: ResultFilter) =>
  sql.join(
    [
      f.classifications.length ? sql`and classification in (select value from json_each(${JSON.stringify(f.classifications)}))` : sql``,
      f.reasons.length ? sql`and reason in (select value from json_each(${JSON.stringify(f.reasons)}))` : sql``,
    ],
    sql` `,
  );

/**
 * Answered lines only, from `from` on, by the done index, narrowed by `filter`: a cancelled job's
 * unchecked lines, and the lines a filter leaves out, cost an index step each to pass over.
 */
export function doneRowsQuery(db: Database, jobId: string, from: number, limit: number, filter: ResultFilter = { classifications: [], reasons: [] }) {
  return db.all<ResultRow>(sql`
    select position, email, state, result, checked_at from verification_job_items indexed by verification_job_items_done_idx
    where job_id = ${jobId} and state = 'done' and position >= ${from} ${filterSql(filter)} order by position limit ${limit}`);
}

/** The first line from `from` on that is not answered yet (a running job's results stop there). */
export function firstUnansweredQuery(db: Database, jobId: string, from: number) {
  return db.all<{ position: number }>(sql`
    select position from verification_job_items where job_id = ${jobId} and position >= ${from} and state != 'done' order by position limit 1`);
}

/**
 * "This job's account is active", for statements on verification_jobs: a disabled account's jobs
 * claim nothing and its callbacks wait, and the cron leaves both alone until it is enabled again.
 */
const ACCOUNT_ACTIVE = sql.raw("account_id in (select id from accounts where status = 'active')");

/**
 * The lines that are due: pending, a recheck or a parked line whose time has come, or a claim whose
 * lease ran out (its consumer died).
 */
const dueLine = (now: number, alias = "") =>
  sql.raw(
    `(${alias}state = 'pending' or (${alias}state = 'recheck' and ${alias}recheck_at <= ${Number(now)}) or (${alias}state = 'waiting' and ${alias}wait_until <= ${Number(now)}) or (${alias}state = 'claimed' and ${alias}lease_until <= ${Number(now)}))`,
  );

/**
 * A job with bulk work, as the scheduler weighs it (edge/jobs/fair-share.ts): how many lines are due
 * (counted up to MAX_DUE_COUNTED), how many lines consumers hold for it now, and when it was last served.
 */
export type BulkCandidate = { job: string; account: string; due: number; inHand: number; lastClaimAt: number | null; createdAt: number };

/** Due lines are counted up to this: more than one delivery (10 turns of CHUNK_SIZE) can take. */
export const MAX_DUE_COUNTED = 10 * CHUNK_SIZE;

/**
 * Every unfinished job of an active account, with its due lines and the lines held for it. Each
 * count reads the work index of one job and one state, never the job's done lines, and stops at
 * MAX_DUE_COUNTED.
 */
export async function bulkCandidates(db: Database, now = Date.now()): Promise<BulkCandidate[]> {
  const due = (state: string, extra: string) =>
    sql.raw(`(select count(*) from (select 1 from verification_job_items i where i.job_id = j.id and i.duplicate_of is null and i.state = '${state}'${extra} limit ${MAX_DUE_COUNTED}))`);
  const rows = await db.all<{ id: string; account_id: string; last_claim_at: number | null; created_at: number; in_hand: number; pending: number; rechecks: number; parked: number; expired: number }>(sql`
    select j.id, j.account_id, j.last_claim_at, j.created_at,
      (select count(*) from verification_job_items i where i.job_id = j.id and i.duplicate_of is null and i.state = 'claimed' and i.lease_until > ${now}) as in_hand,
      ${due("pending", "")} as pending,
      ${due("recheck", ` and i.recheck_at <= ${Number(now)}`)} as rechecks,
      ${due("waiting", ` and i.wait_until <= ${Number(now)}`)} as parked,
      ${due("claimed", ` and i.lease_until <= ${Number(now)}`)} as expired
    from verification_jobs j
    where j.status in ('queued', 'running') and j.writing = 0 and ${ACCOUNT_ACTIVE}`);
  return rows.map((r) => ({
    job: String(r.id),
    account: String(r.account_id),
    due: Math.min(MAX_DUE_COUNTED, Number(r.pending) + Number(r.rechecks) + Number(r.parked) + Number(r.expired)),
    inHand: Number(r.in_hand),
    lastClaimAt: r.last_claim_at === null ? null : Number(r.last_claim_at),
    createdAt: Number(r.created_at),
  }));
}

/** A line this consumer holds: its address and its history (edge/jobs/line-policy.ts decides with it). */
export type ClaimedLine = LineHistory & { position: number; email: string };

/** Who holds a claim and for how long: a fresh token per consumer run, checked by every renewal and write. */
export type Lease = { token: string; ms: number };

export const newLease = (ms: number): Lease => ({ token: crypto.randomUUID(), ms });

type ClaimedRow = { position: number; email: string; recheck_at: number | null; claims: number; probe_failures: number; waiting_since: number | null };

const claimedLine = (r: ClaimedRow): ClaimedLine => ({
  position: Number(r.position),
  email: String(r.email),
  rechecking: r.recheck_at !== null,
  claims: Number(r.claims),
  probeFailures: Number(r.probe_failures),
  waitingSince: r.waiting_since === null ? null : Number(r.waiting_since),
});

/**
 * The statements of one turn of a job (docs/jobs.md "Scheduling"): up to `max` of its due lines
 * claimed under `lease`, in work order: first lines that came back (rechecks and parked lines whose
 * time has come, claims whose consumer died), then pending ones. Nothing is claimed for a job that is cancelled,
 * finished or of a disabled account. The job becomes running on its first claim, and its turn is dated.
 */
function turnStatements(db: Database, jobId: string, lease: Lease, max: number, now: number): [Statement, Statement, Statement] {
  const claim = sql`set state = 'claimed', lease_token = ${lease.token}, lease_until = ${now + lease.ms}, claims = claims + 1`;
  const claimable = sql`job_id = ${jobId} and duplicate_of is null
    and (select status from verification_jobs where id = ${jobId}) = 'running'
    and (select a.status from verification_jobs j join accounts a on a.id = j.account_id where j.id = ${jobId}) = 'active'`;
  const returning = sql.raw("returning position, email, recheck_at, claims, probe_failures, waiting_since");
  return [
    db.run(sql`update verification_jobs set status = 'running', started_at = coalesce(started_at, ${now}),
        updated_at = case when status = 'queued' then ${now} else updated_at end, last_claim_at = ${now}
      where id = ${jobId} and status in ('queued', 'running') and writing = 0 and ${ACCOUNT_ACTIVE}`),
    db.all<ClaimedRow>(sql`update verification_job_items ${claim}
      where rowid in (select rowid from verification_job_items where ${claimable} and state in ('recheck', 'waiting', 'claimed')
        and case state when 'recheck' then recheck_at <= ${now} when 'waiting' then wait_until <= ${now} else lease_until <= ${now} end
        order by seq limit ${max}) ${returning}`),
    // What the lines that came back left of this turn, from the pending lines in work order:
    // changes() is the count of the statement before, on the same connection in the same transaction.
    db.all<ClaimedRow>(sql`update verification_job_items ${claim}
      where rowid in (select rowid from verification_job_items where ${claimable} and state = 'pending'
        order by seq limit max(0, ${max} - changes())) ${returning}`),
  ];
}

/**
 * Claims a delivery's turns in one transaction, each up to `max` lines of its job, in the order
 * given (edge/jobs/fair-share.ts plans them); returns each turn's lines, and the jobs as they are now.
 */
export async function claimTurns(db: Database, turns: readonly { job: string; max: number }[], lease: Lease): Promise<{ lines: ClaimedLine[][]; jobs: Map<string, JobRow> }> {
  if (turns.length === 0) return { lines: [], jobs: new Map() };
  const now = Date.now();
  const jobIds = [...new Set(turns.map((t) => t.job))];
  const statements: Statement[] = turns.flatMap((t) => turnStatements(db, t.job, lease, t.max, now));
  statements.push(db.all<JobRow>(sql`select ${JOB_COLUMNS} from verification_jobs where id in (select value from json_each(${JSON.stringify(jobIds)}))`));
  const results = await batch(db, statements);
  const lines = turns.map((_, i) => [...(results[i * 3 + 1] as ClaimedRow[]), ...(results[i * 3 + 2] as ClaimedRow[])].map(claimedLine));
  const jobs = new Map((results.at(-1) as JobRow[]).map((j) => [String(j.id), j]));
  return { lines, jobs };
}

/** One turn of one job (claimTurns for a single turn). */
export async function claimTurn(db: Database, jobId: string, lease: Lease, max: number): Promise<{ job: JobRow | null; lines: ClaimedLine[] }> {
  const { lines, jobs } = await claimTurns(db, [{ job: jobId, max }], lease);
  return { job: jobs.get(jobId) ?? null, lines: lines[0]! };
}

/**
 * Extends the lease of lines this consumer still holds and has not had written yet; returns how
 * many it still held (fewer than asked: another consumer took some over after the lease ran out).
 */
export async function renewClaims(db: Database, jobId: string, positions: number[], lease: Lease): Promise<number> {
  if (positions.length === 0) return 0;
  const result = await db.run(sql`update verification_job_items set lease_until = ${Date.now() + lease.ms}
    where job_id = ${jobId} and state = 'claimed' and lease_token = ${lease.token} and position in (select value from json_each(${JSON.stringify(positions)}))`);
  return rowsAffected(result);
}

export type LineAnswer =
  | { position: number; kind: "done"; result: EmailVerificationResult }
  | { position: number; kind: "recheck"; result: EmailVerificationResult; recheckAt: number }
  /** The probe could not be asked: back to pending, one more probe failure. */
  | { position: number; kind: "release" }
  /** Not asked yet (its mail server was busy with the lines ahead of it): back to pending, this claim not counted. */
  | { position: number; kind: "defer" }
  /**
   * Not asked: the receiver's budget holds it until `until` (docs/jobs.md "Waiting on a receiver"):
   * parked till then, this claim not counted; `waitingOn` is the receiver family, shown on the job.
   */
  | { position: number; kind: "park"; until: number; waitingOn: string | null };

/**
 * Writes answers (and the duplicates' copies) in one batch, each only while this lease still holds
 * its line: a consumer whose lease ran out and was taken over writes nothing over the new holder's
 * claim. The counters move only through the triggers. Then completes the job when every line is
 * done, once; returns the job when this call completed it.
 *
 * One statement per line, each found by its key (and its duplicates by their index): SQLite plans a
 * join of a whole batch against a JSON array by reading every line of the job for each answer, which
 * on a 100,000-line job took 38 s for 200 answers; these take about 30 ms per 1,000.
 */
export async function writeAnswers(db: Database, jobId: string, lease: Lease, answers: LineAnswer[]): Promise<JobRow | null> {
  const now = Date.now();
  const statements: Statement[] = [];
  for (const a of answers) {
    const held = sql`job_id = ${jobId} and position = ${a.position} and state = 'claimed' and lease_token = ${lease.token}`;
    if (a.kind === "park") {
      statements.push(
        db.run(sql`update verification_job_items set state = 'waiting', wait_until = ${a.until}, waiting_on = ${a.waitingOn}, waiting_since = coalesce(waiting_since, ${now}),
          lease_until = null, lease_token = null, claims = max(0, claims - 1) where ${held}`),
      );
      continue;
    }
    if (a.kind === "release" || a.kind === "defer") {
      const counted = a.kind === "defer" ? sql`claims = max(0, claims - 1)` : sql`probe_failures = probe_failures + 1`;
      statements.push(db.run(sql`update verification_job_items set state = 'pending', lease_until = null, lease_token = null, ${counted} where ${held}`));
      continue;
    }
    const json = JSON.stringify(a.result);
    if (a.kind === "recheck") {
      statements.push(db.run(sql`update verification_job_items set state = 'recheck', recheck_at = ${a.recheckAt}, lease_until = null, lease_token = null, result = ${json} where ${held}`));
      continue;
    }
    const answered = sql`state = 'done', lease_until = null, classification = ${a.result.classification}, reason = ${a.result.reason}, checked_at = ${now}, result = ${json}`;
    statements.push(
      // The token stays on a done line: it is how its duplicates below know that this lease wrote it.
      db.run(sql`update verification_job_items set ${answered} where ${held}`),
      db.run(sql`update verification_job_items set ${answered}
        where job_id = ${jobId} and duplicate_of = ${a.position} and state != 'done'
          and exists (select 1 from verification_job_items where job_id = ${jobId} and position = ${a.position} and state = 'done' and lease_token = ${lease.token})`),
    );
  }
  statements.push(completeIfDone(db, jobId, now));
  const completed = (await batch(db, statements)).at(-1) as JobRow[];
  return completed[0] ?? null;
}

/** Records a callback attempt: delivered, failed for good, or to be tried again at `nextAt`. */
export async function recordCallback(db: Database, jobId: string, outcome: { delivered: true } | { delivered: false; error: string; nextAt: number | null }): Promise<void> {
  if (outcome.delivered) {
    await db.run(sql`update verification_jobs set callback_state = 'delivered', callback_attempts = callback_attempts + 1, callback_next_at = null, callback_last_error = null where id = ${jobId}`);
    return;
  }
  await db.run(sql`update verification_jobs set callback_attempts = callback_attempts + 1, callback_last_error = ${outcome.error.slice(0, 200)},
      callback_state = ${outcome.nextAt === null ? "failed" : "pending"}, callback_next_at = ${outcome.nextAt}
    where id = ${jobId} and callback_state = 'pending'`);
}

/** What a callback needs of its account: whether it is active, and its stored (sealed) webhook secret. */
export async function callbackAccount(db: Database, accountId: string): Promise<{ active: boolean; storedSecret: string | null } | null> {
  const [row] = await db.all<{ status: string; webhook_secret: string | null }>(sql`select status, webhook_secret from accounts where id = ${accountId}`);
  return row ? { active: row.status === "active", storedSecret: row.webhook_secret } : null;
}

/** Stalled jobs the cron requeues per run, the longest stalled first. */
export const STALLED_JOBS_PER_RUN = 20;
/** Turns the cron sends per stalled job and run, at most: CHUNK_SIZE lines each. */
export const TURNS_PER_STALLED_JOB = 500;
/** Callbacks the cron requeues per run, the longest waiting first. */
export const DUE_CALLBACKS_PER_RUN = 1_000;

/**
 * What the cron requeues: turns for the due lines of stalled unfinished jobs that have some (one per CHUNK_SIZE),
 * and callbacks whose time has come. A bounded number of each per run, oldest first; exactly those
 * are marked as requeued (not again before another stall period has passed), in the same
 * transaction that reads them, so nothing is marked that was not sent and what is left over comes
 * first in the next run.
 */
export async function stalledWork(db: Database, stalledBefore: number): Promise<{ turns: { job: string; turns: number }[]; callbacks: { job: string; attempt: number }[] }> {
  const now = Date.now();
  // Only jobs with due lines: one whose lines all wait on a receiver (parked) has nothing to send and
  // must not take the places of jobs that do.
  const stalledJobs = sql`select id from verification_jobs
    where status in ('queued', 'running') and writing = 0 and updated_at < ${stalledBefore} and ${ACCOUNT_ACTIVE}
      and exists (select 1 from verification_job_items i where i.job_id = verification_jobs.id and i.duplicate_of is null and ${dueLine(now, "i.")})
    order by updated_at, id limit ${sql.raw(String(STALLED_JOBS_PER_RUN))}`;
  const dueCallbacks = sql`select id from verification_jobs
    where status in ('completed', 'cancelled') and callback_state = 'pending' and callback_next_at < ${stalledBefore} and ${ACCOUNT_ACTIVE}
    order by callback_next_at, id limit ${sql.raw(String(DUE_CALLBACKS_PER_RUN))}`;
  const [due, callbacks] = await db.batch([
    db.all<{ job_id: string; lines: number }>(sql`
      select job_id, count(*) as lines from verification_job_items
      where job_id in (${stalledJobs}) and duplicate_of is null and ${dueLine(now)}
      group by job_id order by job_id`),
    db.all<{ id: string; callback_attempts: number }>(sql`select id, callback_attempts from verification_jobs where id in (${dueCallbacks})`),
    db.run(sql`update verification_jobs set updated_at = ${now} where id in (${stalledJobs})`),
    db.run(sql`update verification_jobs set callback_next_at = ${now} where id in (${dueCallbacks})`),
  ]);
  return {
    turns: due.map((d) => ({ job: String(d.job_id), turns: Math.min(TURNS_PER_STALLED_JOB, Math.ceil(Number(d.lines) / CHUNK_SIZE)) })),
    callbacks: callbacks.map((c) => ({ job: String(c.id), attempt: Number(c.callback_attempts) })),
  };
}
