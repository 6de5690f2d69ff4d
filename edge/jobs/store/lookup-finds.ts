/**
 * find_emails (docs/lookup-jobs.md "Found addresses"): the statements of a lookup job's finder phase. Once every line
 * is answered, its start is claimed once and marks due (lookup_job_lines.find = 'due') each line with a name at a
 * company (company_domain or company) that the lookup answered found or not_found; the phase takes due lines a few at a
 * time (edge/jobs/lookup/find-emails.ts) and writes each one's answer in place of 'due', charged in that same write,
 * only while the line is still due and its job running; once no line is due the phase is done.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { balanceBelow, chargedJustNow, chargeForMatchQuery, capRefusalQuery, type LookupCharge } from "../../money/credits.ts";
import { chargedFindSince, recordFindQuery } from "../../people/finder-store.ts";
import { recordAccessesQuery } from "../../people/store.ts";
import type { LookupJobFind } from "../../../shared/lookup-jobs.ts";
import { completeIfDone, type Statement } from "./lookup-rows.ts";

/**
 * Claims the phase's start (every line answered for good, not started yet, the job running): once, whoever else tries;
 * the same transaction marks its lines due. A claim that returns true has marked them.
 */
export async function claimFindStart(db: Database, jobId: string, now: number): Promise<boolean> {
  const [claimed] = await db.batch([
    db.all<{ id: string }>(sql`update lookup_jobs set find_state = 'finding', updated_at = ${now}
      where id = ${jobId} and find_emails = 1 and find_state is null and status = 'running' and found + not_found + invalid + erased >= total
      returning id`),
    // changes(): the statement before claimed the start.
    db.run(sql`update lookup_job_lines set find = 'due'
      where job_id = ${jobId} and outcome in ('found', 'not_found') and lookup_keys ->> 'name' is not null
        and (lookup_keys ->> 'domain' is not null or lookup_keys ->> 'company' is not null) and changes() = 1`),
  ]);
  return claimed.length === 1;
}

export type DueLine = { position: number; input: string; outcome: string; person: string | null };

/** The job's next due lines, in input order (the find-due index). */
export function dueLinesQuery(db: Database, jobId: string, limit: number) {
  return db.all<DueLine>(sql`select position, input, outcome, person from lookup_job_lines where job_id = ${jobId} and find = 'due' order by position limit ${limit}`);
}

/** "This line is still due and its job running": what every write of an answer is guarded by. */
const stillDue = (jobId: string, position: number): SQL =>
  sql`(exists (select 1 from lookup_job_lines where job_id = ${jobId} and position = ${position} and find = 'due')
    and (select status from lookup_jobs where id = ${jobId}) = 'running')`;

/** Writes a line's answer that charges nothing (a miss, a refusal, not needed, an unconfirmed or repeated find). */
export async function answerLine(db: Database, jobId: string, position: number, answer: LookupJobFind, now: number): Promise<void> {
  await db.batch([
    db.run(sql`update lookup_job_lines set find = ${JSON.stringify(answer)} where job_id = ${jobId} and position = ${position} and ${stillDue(jobId, position)}`),
    db.run(sql`update lookup_jobs set updated_at = ${now} where id = ${jobId}`),
  ]);
}

/**
 * Writes a found line's answer, in one transaction with its charge when `chargeable` (confirmed, not a repeat when the
 * find was made): charged only while the line is still due, its job running and the find still no repeat (another line
 * of the job may have been charged for the same name at the domain meanwhile: then it is free); the charge, the job's
 * credits, the record of the find for the 30-day repeat and the disclosure of a known person go with the answer, or
 * nothing does. Returns whether the line is answered: false when the balance or a cap refused the charge (then `cap`).
 */
export async function answerFound(
  db: Database,
  job: { id: string; accountId: string },
  position: number,
  answer: LookupJobFind,
  find: { chargeable: boolean; findKey: string; repeatSince: number; personId: number | null },
  charge: LookupCharge,
): Promise<{ answered: boolean; cap: boolean }> {
  const J = job.id;
  const repeatNow = chargedFindSince(job.accountId, find.findKey, find.repeatSince);
  const charged = chargedJustNow(charge.requestId);
  const written = JSON.stringify({ ...answer, credits_charged: 0 });
  const answeredNow = sql`exists (select 1 from lookup_job_lines where job_id = ${J} and position = ${position} and find != 'due')`;
  const disclosed = find.personId === null ? null : sql`select ${find.personId} as person_id, 'name' as matched_by where ${answeredNow}`;
  const statements: Statement[] = find.chargeable
    ? [
        chargeForMatchQuery(db, charge, sql`(select 1 where ${stillDue(J, position)} and not ${repeatNow})`),
        // Right after the charge (last_insert_rowid() is its ledger row): the answer says what it cost; written only when
        // charged, or free because it became a repeat. An UPDATE leaves last_insert_rowid() as it was.
        db.run(sql`update lookup_job_lines set find = json_set(${written}, '$.credits_charged', case when ${charged} then ${charge.cost} else 0 end)
          where job_id = ${J} and position = ${position} and find = 'due' and (${charged} or ${repeatNow})`),
        db.run(sql`update lookup_jobs set credits_charged = credits_charged + ${charge.cost} where id = ${J} and ${charged}`),
        recordFindQuery(db, job.accountId, find.findKey, charge.now, charged),
      ]
    : [db.run(sql`update lookup_job_lines set find = ${written} where job_id = ${J} and position = ${position} and ${stillDue(J, position)}`)];
  if (disclosed) statements.push(recordAccessesQuery(db, disclosed, charge.accountId, charge.keyId, charge.now));
  const results = await db.batch([
    ...(statements as [Statement, ...Statement[]]),
    db.run(sql`update lookup_jobs set updated_at = ${charge.now} where id = ${J}`),
    db.all<{ find: string | null }>(sql`select find from lookup_job_lines where job_id = ${J} and position = ${position}`),
    capRefusalQuery(db, charge),
  ]);
  const line = results.at(-2) as { find: string | null }[];
  const cap = results.at(-1) as { cap_exceeded: number }[];
  return { answered: line[0]?.find !== "due", cap: Number(cap[0]?.cap_exceeded ?? 0) === 1 };
}

/** Pauses the job for credits (as a turn does when the balance or a cap refuses a charge): its resume check brings it back. */
export async function pauseForFinds(db: Database, job: { id: string; accountId: string; cost: number }, now: number): Promise<void> {
  await db.run(sql`update lookup_jobs set status = 'paused', pause_reason = case when ${balanceBelow(job.accountId, job.cost)} then 'insufficient_credits' else 'daily_credit_cap' end,
      paused_at = ${now}, updated_at = ${now}
    where id = ${job.id} and status = 'running'`);
}

/** The phase over once no line is due: done, and the job completes when nothing else waits (returns whether this call completed it). */
export async function finishFinds(db: Database, jobId: string, now: number): Promise<{ done: boolean; completed: boolean }> {
  const [finished, completed] = await db.batch([
    db.all<{ id: string }>(sql`update lookup_jobs set find_state = 'done', updated_at = ${now}
      where id = ${jobId} and find_state = 'finding' and not exists (select 1 from lookup_job_lines where job_id = ${jobId} and find = 'due')
      returning id`),
    completeIfDone(db, jobId, now),
  ]);
  return { done: finished.length === 1, completed: completed.length === 1 };
}
