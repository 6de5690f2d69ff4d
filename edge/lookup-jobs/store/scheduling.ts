/**
 * The lookup jobs' scheduler queries: which jobs have lines waiting and how many (edge/jobs/fair-share.ts weighs them,
 * as it does the verification jobs'), and what the cron puts back on the queue (turns of stalled jobs, paused jobs'
 * resume checks, verification phases and callbacks whose time has come), marked in the transaction that reads them.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import type { BulkCandidate } from "../../jobs/store/scheduling.ts";
import { LOOKUP_LINES_PER_TURN } from "./lines.ts";
import { ACCOUNT_ACTIVE } from "./job-rows.ts";

/** Waiting lines are counted up to this: more than one delivery (10 turns) can take. */
const MAX_DUE_COUNTED = 10 * LOOKUP_LINES_PER_TURN;

/** Every job of an active account with lines waiting for a turn. A turn is one transaction, so nothing is ever "in hand". */
export async function lookupCandidates(db: Database): Promise<BulkCandidate[]> {
  const rows = await db.all<{ id: string; account_id: string; last_turn_at: number | null; created_at: number; due: number }>(sql`
    select j.id, j.account_id, j.last_turn_at, j.created_at,
      (select count(*) from (select 1 from lookup_job_lines i where i.job_id = j.id and i.state = 'pending' limit ${MAX_DUE_COUNTED})) as due
    from lookup_jobs j where j.status in ('queued', 'running') and j.creating = 0 and ${ACCOUNT_ACTIVE}`);
  return rows
    .filter((r) => Number(r.due) > 0)
    .map((r) => ({ job: String(r.id), account: String(r.account_id), due: Number(r.due), inHand: 0, lastClaimAt: r.last_turn_at === null ? null : Number(r.last_turn_at), createdAt: Number(r.created_at) }));
}

/** Per cron run, at most: stalled jobs requeued, turns per job, and callbacks. */
export const LOOKUP_STALLED_PER_RUN = 20;
const TURNS_PER_STALLED_JOB = 500;
const DUE_CALLBACKS_PER_RUN = 1_000;

export type StalledLookupWork = {
  turns: { job: string; turns: number }[];
  resumes: string[];
  verifications: string[];
  callbacks: { job: string; attempt: number }[];
};

/**
 * What the cron requeues: jobs with no progress since `stalledBefore` that have lines waiting (turns), that are paused
 * (a resume check: its own message may be lost), or whose verification phase is due or under way; and callbacks whose
 * time has come. A bounded number per run, the oldest first; exactly those are marked (updated_at), in the same
 * transaction, so nothing is marked that was not sent. A verification start that died (verify_state 'starting') is
 * handed back.
 */
export async function stalledLookupWork(db: Database, stalledBefore: number, now = Date.now()): Promise<StalledLookupWork> {
  const stale = sql`status in ('queued', 'running', 'paused') and creating = 0 and updated_at < ${stalledBefore} and ${ACCOUNT_ACTIVE}`;
  const stalled = sql`select id from lookup_jobs where ${stale} order by updated_at, id limit ${LOOKUP_STALLED_PER_RUN}`;
  const dueCallbacks = sql`select id from lookup_jobs where status in ('completed', 'cancelled') and callback_state = 'pending' and callback_next_at < ${stalledBefore} and ${ACCOUNT_ACTIVE}
    order by callback_next_at, id limit ${DUE_CALLBACKS_PER_RUN}`;
  const [jobs, callbacks] = await db.batch([
    db.all<{ id: string; status: string; verify_emails: number; verify_state: string | null; done: number; total: number; pending: number }>(sql`
      select id, status, verify_emails, verify_state, found + not_found + invalid + erased as done, total,
        (select count(*) from lookup_job_lines i where i.job_id = lookup_jobs.id and i.state = 'pending') as pending
      from lookup_jobs where id in (${stalled})`),
    db.all<{ id: string; callback_attempts: number }>(sql`select id, callback_attempts from lookup_jobs where id in (${dueCallbacks})`),
    db.run(sql`update lookup_jobs set verify_state = null where id in (${stalled}) and verify_state = 'starting'`),
    db.run(sql`update lookup_jobs set updated_at = ${now} where id in (${stalled})`),
    db.run(sql`update lookup_jobs set callback_next_at = ${now} where id in (${dueCallbacks})`),
  ]);
  const work: StalledLookupWork = { turns: [], resumes: [], verifications: [], callbacks: callbacks.map((c) => ({ job: String(c.id), attempt: Number(c.callback_attempts) })) };
  for (const j of jobs) {
    if (j.status === "paused") work.resumes.push(String(j.id));
    else if (Number(j.pending) > 0) work.turns.push({ job: String(j.id), turns: Math.min(TURNS_PER_STALLED_JOB, Math.ceil(Number(j.pending) / LOOKUP_LINES_PER_TURN)) });
    else if (Number(j.verify_emails) === 1 && j.verify_state !== "done" && Number(j.done) >= Number(j.total)) work.verifications.push(String(j.id));
  }
  return work;
}

/** Records a callback attempt: delivered, failed for good, or to be tried again at `nextAt`. */
export async function recordLookupCallback(db: Database, jobId: string, outcome: { delivered: true } | { delivered: false; error: string; nextAt: number | null }): Promise<void> {
  if (outcome.delivered) {
    await db.run(sql`update lookup_jobs set callback_state = 'delivered', callback_attempts = callback_attempts + 1, callback_next_at = null, callback_last_error = null where id = ${jobId}`);
    return;
  }
  await db.run(sql`update lookup_jobs set callback_attempts = callback_attempts + 1, callback_last_error = ${outcome.error.slice(0, 200)},
      callback_state = ${outcome.nextAt === null ? "failed" : "pending"}, callback_next_at = ${outcome.nextAt}
    where id = ${jobId} and callback_state = 'pending'`);
}
