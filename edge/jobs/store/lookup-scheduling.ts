/**
 * The lookup jobs' scheduler queries: which jobs have lines waiting and how many (edge/jobs/fair-share.ts weighs them,
 * as it does the verification jobs'), and what the cron puts back on the queue (turns of stalled jobs, paused jobs'
 * resume checks, verification phases and callbacks whose time has come), marked in the transaction that reads them.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import type { BulkCandidate } from "./scheduling.ts";
import { LINES_PER_TURN } from "../queue.ts";

const LOOKUP_LINES_PER_TURN = LINES_PER_TURN.lookup;
import { ACCOUNT_ACTIVE } from "./lookup-rows.ts";

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

export type StalledLookupWork = {
  turns: { job: string; turns: number }[];
  resumes: string[];
  verifications: string[];
};

/**
 * What the cron requeues: jobs with no progress since `stalledBefore` that have lines waiting (turns), that are paused
 * (a resume check: its own message may be lost), or whose find_emails or verification phase is due or whose child verification job
 * has ended (its wake-up may be lost; a child still running wakes the phase itself, edge/jobs/ended.ts, and its job is
 * left alone). Callbacks whose time has come are the engine's (store/envelope.ts). A bounded number per run, the oldest first; exactly those are marked (updated_at), in the same
 * transaction, so nothing is marked that was not sent. A verification start that died (verify_state 'starting') is
 * handed back.
 */
export async function stalledLookupWork(db: Database, stalledBefore: number, now = Date.now()): Promise<StalledLookupWork> {
  const childRunning = sql`(verify_state = 'verifying' and exists (select 1 from verification_jobs v where v.id = lookup_jobs.verification_job_id and v.status in ('queued', 'running')))`;
  const stale = sql`status in ('queued', 'running', 'paused') and creating = 0 and updated_at < ${stalledBefore} and ${ACCOUNT_ACTIVE} and not ${childRunning}`;
  const stalled = sql`select id from lookup_jobs where ${stale} order by updated_at, id limit ${LOOKUP_STALLED_PER_RUN}`;
  const [jobs] = await db.batch([
    db.all<{ id: string; status: string; verify_emails: number; verify_state: string | null; find_emails: number; find_state: string | null; done: number; total: number; pending: number }>(sql`
      select id, status, verify_emails, verify_state, find_emails, find_state, found + not_found + invalid + erased as done, total,
        (select count(*) from lookup_job_lines i where i.job_id = lookup_jobs.id and i.state = 'pending') as pending
      from lookup_jobs where id in (${stalled})`),
    db.run(sql`update lookup_jobs set verify_state = null where id in (${stalled}) and verify_state = 'starting'`),
    db.run(sql`update lookup_jobs set updated_at = ${now} where id in (${stalled})`),
  ]);
  const work: StalledLookupWork = { turns: [], resumes: [], verifications: [] };
  for (const j of jobs) {
    if (j.status === "paused") work.resumes.push(String(j.id));
    else if (Number(j.pending) > 0) work.turns.push({ job: String(j.id), turns: Math.min(TURNS_PER_STALLED_JOB, Math.ceil(Number(j.pending) / LOOKUP_LINES_PER_TURN)) });
    else if (Number(j.done) >= Number(j.total) && ((Number(j.verify_emails) === 1 && j.verify_state !== "done") || (Number(j.find_emails) === 1 && j.find_state !== "done"))) work.verifications.push(String(j.id));
  }
  return work;
}
