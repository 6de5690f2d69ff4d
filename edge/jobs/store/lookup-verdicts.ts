/**
 * verify_emails (docs/lookup-jobs.md "Verified addresses"): the statements on a lookup job's verdicts and its
 * verification phase. Once every line is answered, the addresses no stored verification covered go to one verification
 * job of the account's (edge/jobs/lookup/verify-emails.ts starts it with the verification jobs' own machinery); when it
 * has ended its verdicts are written here, and the job completes.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { peopleWithAddress } from "../../people/store.ts";
import { batch, completeIfDone, type Statement } from "./lookup-rows.ts";

/**
 * Claims the start of the verification phase for this caller: only when every line is answered for good (and, with
 * find_emails, the finder is done: the phases run one after the other), once per
 * job (a second caller gets false). A claim that dies is handed back by the cron (store/scheduling.ts).
 */
export async function claimVerificationStart(db: Database, jobId: string, now: number): Promise<boolean> {
  const rows = await db.all<{ id: string }>(sql`update lookup_jobs set verify_state = 'starting', updated_at = ${now}
    where id = ${jobId} and verify_emails = 1 and verify_state is null and status = 'running' and found + not_found + invalid + erased >= total
      and (find_emails = 0 or find_state = 'done')
    returning id`);
  return rows.length === 1;
}

/** Lines read per page when the addresses to verify are gathered. */
const LINES_PER_READ = 10_000;

/**
 * The addresses the job's answers carry that no verdict covers yet (each once, in its first spelling), from the lines
 * at `from` on, LINES_PER_READ lines at a time; `next` is where the next page starts, null at the end.
 */
export async function addressesToVerify(db: Database, jobId: string, from: number): Promise<{ emails: string[]; next: number | null }> {
  const [rows, last] = await db.batch([
    db.all<{ email: string }>(sql`select min(e.value ->> 0) as email from lookup_job_lines l, json_each(l.person, '$.emails') e
      where l.job_id = ${jobId} and l.outcome = 'found' and l.position >= ${from} and l.position < ${from + LINES_PER_READ}
        and not exists (select 1 from lookup_job_verdicts v where v.job_id = ${jobId} and v.email = lower(e.value ->> 0))
      group by lower(e.value ->> 0)`),
    db.all<{ position: number | null }>(sql`select max(position) as position from lookup_job_lines where job_id = ${jobId}`),
  ]);
  const end = Number(last[0]?.position ?? -1);
  return { emails: rows.map((r) => String(r.email)), next: from + LINES_PER_READ > end ? null : from + LINES_PER_READ };
}

/**
 * Which of these addresses (as the phase's verification job spelt them) a line of the job still answers found with:
 * through the stored address's person and the job's (job_id, person_id) index, so a page costs an index probe per
 * address. An address whose person was erased (its line now says erased) or is no longer stored is not among them.
 */
export async function addressesStillFound(db: Database, jobId: string, emails: readonly string[]): Promise<Set<string>> {
  const rows = await db.all<{ email: string }>(sql`select v.value as email from json_each(${JSON.stringify(emails)}) v
    where exists (select 1 from lookup_job_lines l where l.job_id = ${jobId} and l.outcome = 'found' and l.person_id in (${peopleWithAddress(sql`v.value`)}))`);
  return new Set(rows.map((r) => String(r.email)));
}

/** The verification phase under way with this verification job (or done at once, with none: every address was covered). */
export async function verificationStarted(db: Database, jobId: string, verificationJobId: string | null, now: number): Promise<void> {
  await batch(db, [
    db.run(sql`update lookup_jobs set verify_state = ${verificationJobId === null ? "done" : "verifying"}, verification_job_id = ${verificationJobId}, updated_at = ${now}
      where id = ${jobId} and verify_state = 'starting'`),
    completeIfDone(db, jobId, now),
  ]);
}

export type Verdict = { email: string; classification: string; reason: string | null; smtp_outcome: string | null; checked_at: number };

/** Writes the verification job's verdicts (source verified): the same again changes nothing, so a page written twice is harmless. */
export function writeVerdictsStatement(db: Database, jobId: string, verdicts: readonly Verdict[]): Statement {
  return db.run(sql`insert into lookup_job_verdicts (job_id, email, classification, reason, smtp_outcome, checked_at, source)
    select ${jobId}, lower(value ->> 'email'), value ->> 'classification', value ->> 'reason', value ->> 'smtp_outcome', value ->> 'checked_at', 'verified'
    from json_each(${JSON.stringify(verdicts)}) where true
    on conflict (job_id, email) do update set classification = excluded.classification, reason = excluded.reason, smtp_outcome = excluded.smtp_outcome,
      checked_at = excluded.checked_at, source = 'verified'`);
}

/** The verification phase over: the job completes (once), and says whether this call completed it. */
export async function finishVerification(db: Database, jobId: string, now: number): Promise<boolean> {
  const [, completed] = await db.batch([
    db.run(sql`update lookup_jobs set verify_state = 'done', updated_at = ${now} where id = ${jobId} and verify_state = 'verifying'`),
    completeIfDone(db, jobId, now),
  ]);
  return completed.length === 1;
}
