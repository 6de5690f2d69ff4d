/**
 * Lookup job rows (lookup_jobs) as the lookup jobs' statements read them: the row, the JSON a client sees, finding,
 * listing and cancelling a job, and completing it once. The tables are the source of truth: a queue message only says
 * where to look, and every write that matters is guarded by the state it expects.
 */
import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { PEOPLE_INCLUDES } from "../../../shared/api.ts";
import { LOOKUP_JOB_MESSAGES, LOOKUP_JOBS_PATH, type LookupJob } from "../../../shared/lookup-jobs.ts";
import type { Database } from "../../db/client.ts";
import { iso, rowsAffected, type RawRow } from "../../db/rows.ts";
import type { lookupJobs } from "../../db/schema.ts";
import { actorGoneReason, actorLive } from "../../identity/store/keys.ts";
import { ACCOUNT_ACTIVE, DEFAULT_JOB_RETENTION_SECONDS, resultsDeleteAt } from "./job-rows.ts";

// The envelope's pieces, the same for both kinds' tables.
export { ACCOUNT_ACTIVE, batch, type Statement } from "./job-rows.ts";

export type LookupJobRow = RawRow<Omit<typeof lookupJobs.$inferSelect, "idempotencyKey" | "callbackNextAt" | "callbackLastError" | "turnBudget" | "creating">> & {
  /** verify_emails: the addresses answered from a stored verification, when the read asked for it. */
  stored_verdicts?: number;
};

export const LOOKUP_JOB_COLUMNS = sql.raw(
  "id, account_id, actor, credit_caps, cost, max_credits, status, pause_reason, paused_at, cancel_reason, total, found, not_found, invalid, refused, erased, credits_charged, format, columns, email_details, profile, verify_emails, min_confidence, verify_state, verification_job_id, find_emails, find_state, callback_url, callback_state, callback_attempts, request_hash, created_at, started_at, completed_at, last_turn_at, updated_at, retention_seconds, results_state",
);

const WITH_VERDICTS = sql`${LOOKUP_JOB_COLUMNS}, (select count(*) from lookup_job_verdicts v where v.job_id = lookup_jobs.id and v.source = 'stored') as stored_verdicts`;

/** Lines answered for good. */
export const processedOf = (row: Pick<LookupJobRow, "found" | "not_found" | "invalid" | "erased">) => Number(row.found) + Number(row.not_found) + Number(row.invalid) + Number(row.erased);

/** The identifier columns as the job stored them ({identifier: header or field}). */
export const columnsOf = (row: Pick<LookupJobRow, "columns">) => (JSON.parse(row.columns) as { header: string[] | null; columns: Record<string, string> });

export const isEnded = (row: Pick<LookupJobRow, "status">) => row.status === "completed" || row.status === "cancelled";

export function lookupJobJson(row: LookupJobRow, verifyMaxAgeSeconds: number): LookupJob {
  const verifying = Number(row.verify_emails) === 1;
  const paused = row.status === "paused" && row.pause_reason !== null;
  return {
    id: row.id,
    status: row.status,
    pause: paused
      ? {
          reason: row.pause_reason as "insufficient_credits" | "daily_credit_cap",
          message: row.pause_reason === "daily_credit_cap" ? LOOKUP_JOB_MESSAGES.pausedForCap : LOOKUP_JOB_MESSAGES.pausedForCredits,
          since: iso(Number(row.paused_at ?? row.updated_at)),
        }
      : null,
    cancel_reason: row.status === "cancelled" ? ((row.cancel_reason as LookupJob["cancel_reason"]) ?? null) : null,
    created_at: iso(Number(row.created_at)),
    completed_at: iso(row.completed_at === null ? null : Number(row.completed_at)),
    total: Number(row.total),
    processed: processedOf(row),
    counts: { found: Number(row.found), not_found: Number(row.not_found), invalid: Number(row.invalid), refused: Number(row.refused), erased: Number(row.erased) },
    credits: { cost_per_line: Number(row.cost), max: Number(row.max_credits), charged: Number(row.credits_charged) },
    input: { format: row.format, columns: columnsOf(row).columns },
    include: PEOPLE_INCLUDES.filter((name) => Number(name === "profile" ? row.profile : row.email_details) === 1),
    verify_emails: verifying,
    min_confidence: row.min_confidence === null ? null : Number(row.min_confidence),
    verification: verifying
      ? {
          state: row.verify_state === "done" ? "done" : row.verify_state === "verifying" ? "verifying" : "pending",
          job_id: row.verification_job_id || null,
          stored_verdicts_used: Number(row.stored_verdicts ?? 0),
          max_age_seconds: verifyMaxAgeSeconds,
        }
      : null,
    find_emails: Number(row.find_emails) === 1,
    finder: Number(row.find_emails) === 1 ? { state: row.find_state === "done" ? "done" : row.find_state === "finding" ? "finding" : "pending" } : null,
    results_url: `${LOOKUP_JOBS_PATH}/${row.id}/results`,
    retention_seconds: row.retention_seconds === null ? DEFAULT_JOB_RETENTION_SECONDS : Number(row.retention_seconds),
    results_expired: Number(row.results_state) > 0,
    // The verification jobs' rule, applied to this row (paused counts as not ended).
    results_delete_at: iso(resultsDeleteAt(row)),
  };
}

export function findLookupJobQuery(db: Database, accountId: string, id: string) {
  return db.all<LookupJobRow>(sql`select ${WITH_VERDICTS} from lookup_jobs where id = ${id} and account_id = ${accountId} and creating = 0`);
}

export async function findLookupJob(db: Database, accountId: string, id: string): Promise<LookupJobRow | null> {
  return (await findLookupJobQuery(db, accountId, id))[0] ?? null;
}

export async function lookupJobById(db: Database, id: string): Promise<LookupJobRow | null> {
  return (await db.all<LookupJobRow>(sql`select ${WITH_VERDICTS} from lookup_jobs where id = ${id} and creating = 0`))[0] ?? null;
}

/** A page of the account's lookup jobs, newest first, after the job `before`; and whether older ones follow. */
export async function listLookupJobs(db: Database, accountId: string, before: string | undefined, limit: number): Promise<{ jobs: LookupJobRow[]; more: boolean }> {
  const cursor = before === undefined ? sql`` : sql`and (created_at, id) < (select created_at, id from lookup_jobs where id = ${before} and account_id = ${accountId})`;
  const rows = await db.all<LookupJobRow>(sql`select ${LOOKUP_JOB_COLUMNS} from lookup_jobs
    where account_id = ${accountId} and creating = 0 ${cursor} order by created_at desc, id desc limit ${limit + 1}`);
  return { jobs: rows.slice(0, limit), more: rows.length > limit };
}


/** What a job's end sets: its time, and its callback due when it has a URL. */
const ENDED = (now: number) => sql`completed_at = ${now}, updated_at = ${now}, callback_state = case when callback_url is null then 'none' else 'pending' end, callback_next_at = ${now}`;

/**
 * Completes the job once every line is answered for good (and, with verify_emails and find_emails, their phases are done), whoever
 * gets there first; returns it when this statement did.
 */
export function completeIfDone(db: Database, jobId: string, now: number) {
  return db.all<{ id: string; callback_state: string }>(sql`update lookup_jobs set status = 'completed', ${ENDED(now)}
    where id = ${jobId} and status in ('queued', 'running') and creating = 0 and found + not_found + invalid + erased >= total
      and (verify_emails = 0 or verify_state = 'done') and (find_emails = 0 or find_state = 'done')
    returning id, callback_state`);
}

/** Why a job was cancelled (lookup_jobs.cancel_reason, the job's cancel_reason): an SQL expression or a value. */
export type CancelReason = NonNullable<LookupJob["cancel_reason"]>;

/** The SQL that cancels the unfinished jobs `where` selects, saying why (its callback then due): for a caller's batch. */
export const cancelJobsSql = (where: SQL, reason: CancelReason | SQL, now: number): SQL =>
  sql`update lookup_jobs set status = 'cancelled', pause_reason = null, cancel_reason = ${reason}, ${ENDED(now)}
    where (${where}) and status in ('queued', 'running', 'paused') and creating = 0`;

/** The statement that cancels an unfinished job (cancelJobsSql); for cancelLookupJob, the pause limit and a turn whose maker is gone. */
export function cancelStatement(db: Database, where: SQL, reason: CancelReason | SQL, now: number) {
  return db.run(cancelJobsSql(where, reason, now));
}

/**
 * The statements that cancel the account's (or, with null, every account's) unfinished lookup jobs whose maker can no
 * longer act (a key revoked, expired and not rolled, a member removed: identity's actorLive), saying why, and then the
 * verify_emails phases of the jobs so cancelled (`cancelPhases`, the verification jobs' statement for their ids).
 */
export function stopLookupJobsOfGoneMakers(accountId: string | null, now: number, cancelPhases: (parentIds: SQL) => SQL): SQL[] {
  const account = accountId === null ? sql`true` : sql`account_id = ${accountId}`;
  return [
    cancelJobsSql(sql`${account} and not ${actorLive(sql.raw("lookup_jobs.actor"), now)}`, actorGoneReason(sql.raw("lookup_jobs.actor")), now),
    // The jobs the statement before cancelled (their end is this `now`) that were in their verify_emails phase.
    cancelPhases(sql`select id from lookup_jobs where ${account} and status = 'cancelled' and completed_at = ${now} and verify_state = 'verifying'`),
  ];
}

/** Cancels a job that has not ended; returns it as it is now (null: no such job) and whether this call cancelled it. */
export async function cancelLookupJob(db: Database, accountId: string, id: string): Promise<{ job: LookupJobRow; cancelled: boolean } | null> {
  const now = Date.now();
  const [update, rows] = await db.batch([cancelStatement(db, sql`id = ${id} and account_id = ${accountId}`, "requested", now), findLookupJobQuery(db, accountId, id)]);
  const job = rows[0];
  return job ? { job, cancelled: rowsAffected(update) === 1 } : null;
}
