/**
 * Creating a lookup job: its row, admitted under the account's limit of unfinished jobs inside the INSERT itself, then
 * its lines a transaction at a time, then the job made visible; or given up (the cron deletes it: retention.ts). Until
 * it is visible no read, turn or cron sees it, so a create that fails half way leaves nothing anyone can see.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { rowsAffected } from "../../db/rows.ts";
import type { PreparedLine } from "../lookup/input.ts";
import { batch, completeIfDone, LOOKUP_JOB_COLUMNS, type LookupJobRow, type Statement } from "./lookup-rows.ts";

/** Rows per INSERT (one JSON argument each). */
const INSERT_ROWS = 2_500;
/** Lines per transaction while a job is created: each holds the write lock for tens of milliseconds, so lookups get in between. */
export const LOOKUP_LINES_PER_TRANSACTION = 5_000;

/** The account's lookup jobs that are not done (queued, running, paused, or being written), as an SQL expression. */
export const unfinishedLookupJobs = (accountId: string) =>
  sql`(select count(*) from lookup_jobs where account_id = ${accountId} and (status in ('queued', 'running', 'paused')))`;

export type NewLookupJob = {
  id: string;
  accountId: string;
  actor: string;
  creditCaps: string;
  cost: number;
  maxCredits: number;
  total: number;
  format: "csv" | "jsonl";
  columns: string;
  emailDetails: boolean;
  /** include=profile. */
  profile: boolean;
  verifyEmails: boolean;
  /** find_emails. */
  findEmails: boolean;
  minConfidence: number | null;
  callbackUrl: string | null;
  idempotencyKey: string | null;
  requestHash: string;
  retentionSeconds: number;
};

export type StartedLookupJob =
  | { kind: "started" }
  /** The Idempotency-Key was used before: its job (once written), or null while it is still being written. */
  | { kind: "existing"; job: LookupJobRow | null; requestHash: string }
  | { kind: "too_many_unfinished" };

/**
 * Starts a job: its row, written (invisible) only if the account has fewer than `maxUnfinished` jobs not done and the
 * Idempotency-Key is new, decided inside the INSERT so that creates racing each other cannot all pass.
 */
export async function startLookupJob(db: Database, job: NewLookupJob, maxUnfinished: number): Promise<StartedLookupJob> {
  const now = Date.now();
  const [inserted, existing] = await db.batch([
    db.run(sql`insert into lookup_jobs (id, account_id, actor, credit_caps, cost, max_credits, status, total, format, columns, email_details, profile, verify_emails, find_emails,
        min_confidence, callback_url, idempotency_key, request_hash, created_at, updated_at, creating, retention_seconds)
      select ${job.id}, ${job.accountId}, ${job.actor}, ${job.creditCaps}, ${job.cost}, ${job.maxCredits}, 'queued', ${job.total}, ${job.format}, ${job.columns},
        ${job.emailDetails ? 1 : 0}, ${job.profile ? 1 : 0}, ${job.verifyEmails ? 1 : 0}, ${job.findEmails ? 1 : 0}, ${job.minConfidence}, ${job.callbackUrl}, ${job.idempotencyKey}, ${job.requestHash}, ${now}, ${now}, 1, ${job.retentionSeconds}
      where ${unfinishedLookupJobs(job.accountId)} < ${maxUnfinished}
      on conflict do nothing`),
    db.all<LookupJobRow & { creating: number }>(sql`select ${LOOKUP_JOB_COLUMNS}, creating from lookup_jobs
      where account_id = ${job.accountId} and idempotency_key = ${job.idempotencyKey} and id != ${job.id}`),
  ]);
  if (rowsAffected(inserted) === 1) return { kind: "started" };
  const earlier = existing[0];
  if (earlier) return { kind: "existing", job: Number(earlier.creating) === 1 ? null : earlier, requestHash: earlier.request_hash };
  return { kind: "too_many_unfinished" };
}

/**
 * Writes a started job's lines as they come (a chunk at a time from the list's second read), LOOKUP_LINES_PER_TRANSACTION
 * per transaction, each insert only while the job is still being written. A line that failed the rules is answered
 * invalid here (its outcome counted by the trigger); the others wait for a turn.
 */
export async function writeLookupLines(db: Database, jobId: string, chunks: AsyncIterable<PreparedLine[]>): Promise<number> {
  let position = 0;
  let pending: Statement[] = [];
  let inTransaction = 0;
  const now = Date.now();
  const flush = async () => {
    if (pending.length > 0) await batch(db, pending);
    pending = [];
    inTransaction = 0;
  };
  for await (const chunk of chunks) {
    for (let start = 0; start < chunk.length; start += INSERT_ROWS) {
      const rows = chunk.slice(start, start + INSERT_ROWS).map((line, i) => [
        position + start + i,
        line.input,
        line.ids?.profnetId ?? null,
        line.ids?.profnetPublicIdentifier ?? null,
        line.ids?.codehostId ?? null,
        line.ids?.codehostLogin ?? null,
        line.ids ? "pending" : "done",
        line.ids ? null : "invalid",
        line.error,
        line.ids ? null : now,
        line.ids?.keys === undefined ? null : JSON.stringify(line.ids.keys),
      ]);
      pending.push(
        db.run(sql`insert into lookup_job_lines (job_id, position, input, profnet_id, profnet_public_identifier, codehost_id, codehost_login, state, outcome, error, answered_at, lookup_keys)
          select ${jobId}, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10
          from json_each(${JSON.stringify(rows)}) where (select creating from lookup_jobs where id = ${jobId}) = 1`),
      );
      inTransaction += rows.length;
      if (inTransaction >= LOOKUP_LINES_PER_TRANSACTION) await flush();
    }
    position += chunk.length;
  }
  await flush();
  return position;
}

/** Makes a written job visible (completing it at once when every line was invalid); returns it and its lines waiting for a turn. */
export async function finishLookupJob(db: Database, jobId: string): Promise<{ job: LookupJobRow; pending: number }> {
  const now = Date.now();
  const [finished, , , , job, pending] = await db.batch([
    db.run(sql`update lookup_jobs set creating = 0, updated_at = ${now} where id = ${jobId} and creating = 1`),
    // A list of invalid lines only has no address to verify, and no name to find an address for.
    db.run(sql`update lookup_jobs set verify_state = 'done' where id = ${jobId} and verify_emails = 1 and invalid >= total`),
    db.run(sql`update lookup_jobs set find_state = 'done' where id = ${jobId} and find_emails = 1 and invalid >= total`),
    completeIfDone(db, jobId, now),
    db.all<LookupJobRow>(sql`select ${LOOKUP_JOB_COLUMNS} from lookup_jobs where id = ${jobId}`),
    db.all<{ n: number }>(sql`select count(*) as n from lookup_job_lines where job_id = ${jobId} and state = 'pending'`),
  ]);
  if (rowsAffected(finished) !== 1 || !job[0]) throw new Error(`lookup job ${jobId} was given up while its lines were written`);
  return { job: job[0], pending: Number(pending[0]?.n ?? 0) };
}
