/**
 * Creating a job: its row, admitted under the account's limits inside the INSERT itself, then its lines in work order,
 * a transaction at a time, then the job made visible; or given up (the cron deletes it: cleanup.ts).
 */
import { countJobLinesStatement } from "../../money/usage.ts";
import { sql } from "drizzle-orm";
import { utcDay } from "../../db/rows.ts";
import type { EmailVerificationResult } from "../../../shared/api.ts";
import type { Database } from "../../db/client.ts";
import { rowsAffected } from "../../db/rows.ts";
import { batch, completeIfDone, HOLDS_RUNNING_SLOT, jobWithQueue, type JobRow, type Statement } from "./job-rows.ts";

/** Rows per INSERT when a job is created (one JSON argument each). */
const INSERT_ROWS = 2_500;

/**
 * Lines written per transaction while a job is created: each holds the database's write lock for
 * tens of milliseconds, so lookups' charges get in between (a 100,000-line job in one transaction
 * held it for about a second, and ten at once pushed lookups past their timeout).
 */
export const LINES_PER_TRANSACTION = 5_000;

/** The window of the daily line quota (JOB_MAX_LINES_PER_DAY). */
export const LINE_QUOTA_WINDOW_MS = 24 * 3_600_000;

/** How many of JOB_MAX_RUNNING an account's jobs use (HOLDS_RUNNING_SLOT), as an SQL expression: creation and GET /v1/account read it. */
export const runningJobCount = (accountId: string) => sql`(select count(*) from verification_jobs where account_id = ${accountId} and ${HOLDS_RUNNING_SLOT})`;

/** The lines an account submitted in jobs created after `since`, as an SQL expression: what the daily line quota counts. */
export const linesSubmittedSince = (accountId: string, since: number) =>
  sql`(select coalesce(sum(total), 0) from verification_jobs where account_id = ${accountId} and created_at > ${since})`;

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

export type NewJob = {
  id: string;
  accountId: string;
  smtpTimeout: number;
  callbackUrl: string | null;
  idempotencyKey: string | null;
  requestHash: string;
  total: number;
  retentionSeconds: number;
  /** What the job is called; null: its id. */
  name?: string | null;
  /** A CSV file's kept columns (edge/jobs/kept-columns.ts) and which held the addresses; none for a JSON list. */
  columns?: { names: readonly string[]; emailColumn: number } | null;
  /** Who made it (a key's or member's id): its jobs stop when it goes. Null for the service's own jobs. */
  actor?: string | null;
  /** The lookup job whose verify_emails phase this is: one per lookup job, found by this column, never by a key a customer could send. */
  parentJobId?: string | null;
};
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
    db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, callback_url, idempotency_key, request_hash, created_at, updated_at, creating, retention_seconds, name, columns, email_column, actor, parent_job_id)
      select ${job.id}, ${job.accountId}, 'queued', ${job.total}, ${job.smtpTimeout}, ${job.callbackUrl}, ${job.idempotencyKey}, ${job.requestHash}, ${now}, ${now}, 1, ${job.retentionSeconds},
        ${job.name ?? null}, ${job.columns ? JSON.stringify(job.columns.names) : null}, ${job.columns?.emailColumn ?? null}, ${job.actor ?? null}, ${job.parentJobId ?? null}
      where ${runningJobCount(job.accountId)} < ${limits.maxRunning}
        and ${linesSubmittedSince(job.accountId, since)} + ${job.total} <= ${limits.maxLinesPerDay}
      on conflict do nothing`),
    // The job made before with this Idempotency-Key, or (a verify_emails phase) for this parent: never one for the other.
    db.all<JobRow & { creating: number }>(sql`select ${jobWithQueue(now)}, creating from verification_jobs
      where account_id = ${job.accountId} and id != ${job.id}
        and ${job.parentJobId ? sql`parent_job_id = ${job.parentJobId}` : sql`idempotency_key = ${job.idempotencyKey} and parent_job_id is null`}`),
    db.all<{ running: number; lines: number; oldest: number | null }>(sql`select
        ${runningJobCount(job.accountId)} as running,
        ${linesSubmittedSince(job.accountId, since)} as lines,
        (select min(created_at) from verification_jobs where account_id = ${job.accountId} and created_at > ${since}) as oldest`),
  ]);
  if (rowsAffected(inserted) === 1) return { kind: "started" };
  const earlier = existing[0];
  if (earlier) return { kind: "existing", job: Number(earlier.creating) === 1 ? null : earlier, requestHash: earlier.request_hash };
  const u = usage[0]!;
  if (Number(u.running) >= limits.maxRunning) return { kind: "too_many_running" };
  // Lines leave the window as their jobs turn 24 hours old: the oldest goes first.
  const retryAfterSeconds = Math.max(1, Math.ceil((Number(u.oldest ?? now) + LINE_QUOTA_WINDOW_MS - now) / 1000));
  return { kind: "daily_quota", used: Number(u.lines), retryAfterSeconds };
}

/**
 * Writes a started job's lines (with `fieldsOf(position)`, each line's kept cells: kept-columns.ts), LINES_PER_TRANSACTION per transaction, then makes the job visible
 * (and completes it at once when every line failed the syntax check); returns it. Each insert only
 * runs while the job is still being written, so nothing is added to a job the cron has given up on.
 */
export async function writeJobLines(db: Database, jobId: string, lines: NewLine[], keyId: string | null = null, fieldsOf: ((position: number) => string) | null = null): Promise<JobRow> {
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
        // A CSV file's kept line, read out of the upload as this batch is written (edge/jobs/verification/input.ts).
        fieldsOf ? fieldsOf(start + i) : null,
      ]);
      statements.push(
        db.run(sql`insert into verification_job_items (job_id, position, seq, email, duplicate_of, state, classification, result, reason, checked_at, fields)
          select ${jobId}, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9 from json_each(${JSON.stringify(rows)})
          where (select creating from verification_jobs where id = ${jobId}) = 1`),
      );
    }
    await batch(db, statements);
  }
  const now = Date.now();
  const [finished, , , job] = await db.batch([
    db.run(sql`update verification_jobs set creating = 0, updated_at = ${now} where id = ${jobId} and creating = 1`),
    // The key's usage roll-up counts the lines once the job is visible (changes(): the update just before).
    db.run(countJobLinesStatement(keyId, utcDay(now), sql`select account_id, total from verification_jobs where id = ${jobId}`, sql`changes() = 1`)),
    completeIfDone(db, jobId, now),
    db.all<JobRow>(sql`select ${jobWithQueue(now)} from verification_jobs where id = ${jobId}`),
  ]);
  if (rowsAffected(finished) !== 1 || !job[0]) throw new Error(`job ${jobId} was given up while its lines were written`);
  return job[0];
}
