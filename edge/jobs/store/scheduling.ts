/**
 * The scheduler's queries: which jobs have due lines and how many (edge/jobs/fair-share.ts weighs them), and what the
 * cron requeues (stalled jobs' due lines, callbacks whose time has come), marked in the same transaction that reads them.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { LINES_PER_TURN } from "../queue.ts";

const TURN = LINES_PER_TURN.verification;
import { ACCOUNT_ACTIVE } from "./job-rows.ts";

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

/** Due lines are counted up to this: more than one delivery (10 turns of LINES_PER_TURN) can take. */
export const MAX_DUE_COUNTED = 10 * TURN;

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
    where j.status in ('queued', 'running') and j.creating = 0 and ${ACCOUNT_ACTIVE}`);
  return rows.map((r) => ({
    job: String(r.id),
    account: String(r.account_id),
    due: Math.min(MAX_DUE_COUNTED, Number(r.pending) + Number(r.rechecks) + Number(r.parked) + Number(r.expired)),
    inHand: Number(r.in_hand),
    lastClaimAt: r.last_claim_at === null ? null : Number(r.last_claim_at),
    createdAt: Number(r.created_at),
  }));
}

/** Stalled jobs the cron requeues per run, the longest stalled first. */
export const STALLED_JOBS_PER_RUN = 20;
/** Turns the cron sends per stalled job and run, at most: LINES_PER_TURN lines each. */
export const TURNS_PER_STALLED_JOB = 500;
/**
 * What the cron requeues of the verification kind: turns for the due lines of stalled unfinished jobs that have some
 * (one per LINES_PER_TURN; callbacks whose time has come are the engine's, store/envelope.ts). A bounded number per
 * run, oldest first; exactly those are marked as requeued (not again before another stall period has passed), in the same
 * transaction that reads them, so nothing is marked that was not sent and what is left over comes
 * first in the next run.
 */
export async function stalledWork(db: Database, stalledBefore: number): Promise<{ job: string; turns: number }[]> {
  const now = Date.now();
  // Only jobs with due lines: one whose lines all wait on a receiver (parked) has nothing to send and
  // must not take the places of jobs that do.
  const stalledJobs = sql`select id from verification_jobs
    where status in ('queued', 'running') and creating = 0 and updated_at < ${stalledBefore} and ${ACCOUNT_ACTIVE}
      and exists (select 1 from verification_job_items i where i.job_id = verification_jobs.id and i.duplicate_of is null and ${dueLine(now, "i.")})
    order by updated_at, id limit ${sql.raw(String(STALLED_JOBS_PER_RUN))}`;
  const [due] = await db.batch([
    db.all<{ job_id: string; lines: number }>(sql`
      select job_id, count(*) as lines from verification_job_items
      where job_id in (${stalledJobs}) and duplicate_of is null and ${dueLine(now)}
      group by job_id order by job_id`),
    db.run(sql`update verification_jobs set updated_at = ${now} where id in (${stalledJobs})`),
  ]);
  return due.map((d) => ({ job: String(d.job_id), turns: Math.min(TURNS_PER_STALLED_JOB, Math.ceil(Number(d.lines) / TURN)) }));
}
