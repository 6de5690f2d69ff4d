/**
 * A lookup job's lines (lookup_job_lines): a turn that takes, matches, charges and answers them, a resume after credits
 * came back, and the reads of results. A turn is one transaction (one round trip): it takes up to LOOKUP_LINES_PER_TURN
 * pending lines in input order, matches each to a person, charges the first people in line order that the balance and
 * the key's caps cover (one ledger row each, a person once per job), answers found, not found or refused, records the
 * disclosures and counts the rest, and pauses the job when something was refused. Nothing is ever half done: a consumer
 * that dies, a message delivered twice or a failed write leaves each line as it was or answered, charged at most once.
 */
import { LINES_PER_TURN } from "../queue.ts";
import { sql, type SQL } from "drizzle-orm";
import { ERROR_MESSAGES } from "../../../shared/api.ts";
import { chargeRankedQuery, countBulkLookupsQuery, lookupsCovered, balanceBelow, type LookupCharge } from "../../money/credits.ts";
import type { Database } from "../../db/client.ts";
import type { CreditCap } from "../../caller.ts";
import { actorGoneReason, actorLive, decodeCreditCaps } from "../../identity/store/keys.ts";
import { rowsAffected, type RawRow } from "../../db/rows.ts";
import type { lookupJobLines, lookupJobVerdicts } from "../../db/schema.ts";
import { freshVerificationsOf, matchedBySql, matchStatusSql, personIdMatching, personSnapshot, recordAccessesQuery, type IdentifierExpressions, type LookupFilter } from "../../people/store.ts";
import { ACCOUNT_ACTIVE, batch, cancelStatement, completeIfDone, LOOKUP_JOB_COLUMNS, type LookupJobRow, type Statement } from "./lookup-rows.ts";

/** Lines a turn takes (one queue message): hundreds per statement, so a 100,000-line job is a few hundred transactions. */
export const LOOKUP_LINES_PER_TURN = LINES_PER_TURN.lookup;

/** What a turn needs of its job: who is charged, at what cost, against which caps, and whether it verifies addresses. */
export type TurnJob = Pick<LookupJobRow, "id" | "account_id" | "actor" | "credit_caps" | "cost" | "verify_emails" | "min_confidence">;

const chargeOf = (job: TurnJob, now: number): Omit<LookupCharge, "requestId"> & { creditCaps: readonly CreditCap[] } => ({
  accountId: job.account_id,
  keyId: job.actor,
  cost: Number(job.cost),
  now,
  creditCaps: decodeCreditCaps(job.credit_caps),
});

/**
 * One turn of a job, as the statements of one transaction, and where their answers are: the job after it, and how many
 * lines it took. `verifiedSince`: with verify_emails, a stored verification at or after it is used as the address's verdict.
 */
export function turnStatements(db: Database, job: TurnJob, turn: string, max: number, now: number, verifiedSince: number) {
  const J = job.id;
  const charge = chargeOf(job, now);
  // A turn's lines are found by the turn index only: the `+` before the other columns keeps SQLite from choosing an index
  // on (job_id, person_id), (job_id, state) or (job_id, outcome) instead, each a scan of every line of the job answered or
  // pending so far, which made a 100,000-line job's turns slower and slower (bench/bulk-lookups.ts: 0.26 s to 1.7 s); and
  // the `+` in the ranking's order keeps it from walking the job's lines in position order to save a sort of 500.
  const mine = sql`job_id = ${J} and turn = ${turn}`;
  const line = (column: string) => sql.raw(`lookup_job_lines.${column}`);
  // A line's inputs: the four identifiers, and when it gives an email, phone or name, their keys (lookup_keys). A line
  // with the identifiers alone takes the identifiers' own statement (no probes of the other inputs).
  const identifiers = {
    profnetId: line("profnet_id"),
    profnetPublicIdentifier: line("profnet_public_identifier"),
    codehostId: line("codehost_id"),
    codehostLogin: line("codehost_login"),
  };
  const key = (name: string) => sql.raw(`(lookup_job_lines.lookup_keys ->> '${name}')`);
  const withKeys = { ...identifiers, email: key("email"), phone: key("phone"), name: key("name"), domain: key("domain"), company: key("company") };
  const matchLine = (of: (x: IdentifierExpressions, f?: LookupFilter) => SQL, f?: LookupFilter) =>
    sql`(case when lookup_job_lines.lookup_keys is null then ${of(identifiers, f)} else ${of(withKeys, f)} end)`;
  // This turn's pending lines that found someone no earlier line of the job was charged for, each person once (their
  // first line here), ranked in line order: what the charge covers the first of.
  // Set-based: the turn's lines grouped by person (their first line), then those no earlier line charged; a correlated
  // "no earlier line of this person" per line walked the turn's pending lines by position, quadratic in the turn's size.
  const ranked = sql`select f.position as position, row_number() over (order by f.position) as rank from (
      select min(l.position) as position, l.person_id as person_id from lookup_job_lines l
      where l.job_id = ${J} and l.turn = ${turn} and +l.state = 'pending' and +l.person_id is not null group by l.person_id) f
    where not exists (select 1 from lookup_job_lines d where d.job_id = ${J} and d.person_id = f.person_id and d.charged = 1)`;
  const budget = sql`(select turn_budget from lookup_jobs where id = ${J})`;
  // Once nothing more can be paid for (read after the charge), every line after the last one charged is refused,
  // whether or not it matched anyone: a turn that cannot pay tells nothing of who is held (docs/lookup-jobs.md
  // "Credits running out"). Refused lines are matched again when the job resumes.
  const exhausted = sql`(${lookupsCovered(charge)} < 1)`;
  const cut = sql`(select coalesce(max(position), -1) from lookup_job_lines where ${mine} and charged = 1)`;
  const makerLive = actorLive(sql.raw("lookup_jobs.actor"), now);
  // The job's confidence floor, at this turn's time: what a line matches (none of the person's addresses reaching it
  // matches nobody, not charged) and what its snapshot serves.
  const filter = { now, minConfidence: job.min_confidence == null ? null : Number(job.min_confidence) };
  const statements: Statement[] = [
    // Whoever made it can no longer act (revoked, expired, removed): it stops here, and nothing is charged to them.
    cancelStatement(db, sql`id = ${J} and not ${makerLive}`, actorGoneReason(sql.raw("lookup_jobs.actor")), now),
    db.run(sql`update lookup_jobs set status = 'running', started_at = coalesce(started_at, ${now}), last_turn_at = ${now},
        updated_at = case when status = 'queued' then ${now} else updated_at end
      where id = ${J} and status in ('queued', 'running') and creating = 0 and ${ACCOUNT_ACTIVE}`),
    // Take the next pending lines (only of a running job of an active account), matched to people as they are taken.
    db.run(sql`update lookup_job_lines set turn = ${turn}, person_id = ${matchLine(personIdMatching, filter)}, matched_by = ${matchLine(matchedBySql)},
        error = case ${matchLine(matchStatusSql)} when 'ambiguous' then ${ERROR_MESSAGES.ambiguousMatch} when 'conflict' then ${ERROR_MESSAGES.conflictingInputs} end
      where rowid in (select rowid from lookup_job_lines where job_id = ${J} and state = 'pending' order by position limit ${max})
        and (select status from lookup_jobs where id = ${J} and ${ACCOUNT_ACTIVE}) = 'running'`),
    // Read once, before the charge moves the balance and the caps.
    db.run(sql`update lookup_jobs set turn_budget = ${lookupsCovered(charge)} where id = ${J}`),
    chargeRankedQuery(db, charge, sql`select rank, ${J} || ':' || (position + 1) as request_id from (${ranked})`, budget),
    db.run(sql`update lookup_job_lines set charged = 1 where ${mine} and position in (select position from (${ranked}) where rank <= ${budget})`),
    db.run(sql`update lookup_job_lines set state = 'done', outcome = 'found', answered_at = ${now}, person = ${personSnapshot(line("person_id"), filter)}
      where ${mine} and +state = 'pending' and +person_id is not null
        and exists (select 1 from lookup_job_lines d where d.job_id = ${J} and d.person_id = lookup_job_lines.person_id and d.charged = 1)`),
    db.run(sql`update lookup_job_lines set state = 'refused', outcome = 'refused', answered_at = ${now},
        error = case when ${balanceBelow(charge.accountId, charge.cost)} then ${ERROR_MESSAGES.insufficientCredits} else ${ERROR_MESSAGES.dailyCreditCap} end
      where ${mine} and +state = 'pending' and (+person_id is not null or (${exhausted} and position > ${cut}))`),
    // changes(): the lines the statement just before answered, on this connection in this transaction.
    countBulkLookupsQuery(db, charge, sql`0`, sql`changes()`),
    db.run(sql`update lookup_job_lines set state = 'done', outcome = 'not_found', answered_at = ${now} where ${mine} and state = 'pending' and person_id is null`),
    countBulkLookupsQuery(db, charge, sql`changes()`, sql`0`),
    recordAccessesQuery(db, sql`select person_id, matched_by from lookup_job_lines where ${mine} and charged = 1`, charge.accountId, charge.keyId, now),
    ...(Number(job.verify_emails) === 1
      ? [
          db.run(sql`insert into lookup_job_verdicts (job_id, email, classification, reason, smtp_outcome, checked_at, source)
            select ${J}, lower(v.email), v.classification, v.reason, v.smtp_outcome, v.checked_at, 'stored'
            from (${freshVerificationsOf(sql`select person_id from lookup_job_lines where ${mine} and +outcome = 'found'`, verifiedSince)}) v where true
            on conflict do nothing`),
        ]
      : []),
    db.run(sql`update lookup_jobs set status = 'paused', pause_reason = case when ${balanceBelow(charge.accountId, charge.cost)} then 'insufficient_credits' else 'daily_credit_cap' end,
        paused_at = ${now}, updated_at = ${now}
      where id = ${J} and status = 'running' and exists (select 1 from lookup_job_lines where job_id = ${J} and state = 'refused')`),
    completeIfDone(db, J, now),
  ];
  const reads = [
    db.all<LookupJobRow & { taken: number }>(sql`select ${LOOKUP_JOB_COLUMNS}, (select count(*) from lookup_job_lines where ${mine}) as taken from lookup_jobs where id = ${J}`),
  ];
  return { statements, reads };
}

/** Runs one turn; returns the job as it is after it, the lines it took and whether it ended the job (completed or cancelled). */
export async function runTurn(db: Database, job: TurnJob, turn: string, max: number, now: number, verifiedSince: number): Promise<{ job: LookupJobRow | null; taken: number; completed: boolean }> {
  const { statements, reads } = turnStatements(db, job, turn, max, now, verifiedSince);
  const results = await batch(db, [...statements, ...reads]);
  // Ended by this turn: completed, or cancelled because whoever made it is gone (its first statement).
  const completed = (results[statements.length - 1] as unknown[]).length === 1 || rowsAffected(results[0]) === 1;
  const row = (results.at(-1) as (LookupJobRow & { taken: number })[])[0] ?? null;
  return { job: row, taken: Number(row?.taken ?? 0), completed };
}

/**
 * A paused job, looked at: cancelled once whoever made it can no longer act, or once it has been paused for `maxPauseMs`
 * (its refused lines stay refused), else
 * running again when the balance and the caps cover a lookup, its refused lines pending again; else left paused and
 * marked as looked at. Returns the job after, and how many lines now wait for a turn.
 */
export async function resumeIfCovered(db: Database, job: TurnJob, now: number, maxPauseMs: number): Promise<{ job: LookupJobRow | null; pending: number; cancelled: boolean }> {
  const J = job.id;
  const makerLive = actorLive(sql.raw("lookup_jobs.actor"), now);
  const [gone, cancelled, , , , rows, pending] = await db.batch([
    // Whoever made it can no longer act (revoked, expired, removed): it stops, and nothing more is charged to them.
    cancelStatement(db, sql`id = ${J} and not ${makerLive}`, actorGoneReason(sql.raw("lookup_jobs.actor")), now),
    cancelStatement(db, sql`id = ${J} and status = 'paused' and paused_at <= ${now - maxPauseMs}`, "paused_too_long", now),
    db.run(sql`update lookup_jobs set status = 'running', pause_reason = null, paused_at = null, updated_at = ${now}
      where id = ${J} and status = 'paused' and ${ACCOUNT_ACTIVE} and ${makerLive} and ${lookupsCovered(chargeOf(job, now))} >= 1`),
    // changes(): the statement before resumed the job.
    db.run(sql`update lookup_job_lines set state = 'pending', outcome = null, error = null, answered_at = null where job_id = ${J} and state = 'refused' and changes() = 1`),
    db.run(sql`update lookup_jobs set updated_at = ${now} where id = ${J} and status = 'paused'`),
    db.all<LookupJobRow>(sql`select ${LOOKUP_JOB_COLUMNS} from lookup_jobs where id = ${J}`),
    db.all<{ n: number }>(sql`select count(*) as n from lookup_job_lines where job_id = ${J} and state = 'pending'`),
  ]);
  return { job: rows[0] ?? null, pending: Number(pending[0]?.n ?? 0), cancelled: rowsAffected(gone) + rowsAffected(cancelled) === 1 };
}

type LineRow = RawRow<typeof lookupJobLines.$inferSelect>;
export type ResultRow = Pick<LineRow, "position" | "input" | "state" | "outcome" | "error" | "person" | "find">;
export type VerdictRow = Pick<RawRow<typeof lookupJobVerdicts.$inferSelect>, "email" | "classification" | "reason" | "smtp_outcome" | "checked_at">;

const RESULT_COLUMNS = sql.raw("position, input, state, outcome, error, person, find");

/** Lines from `from` on, in input order. */
export function resultRowsQuery(db: Database, jobId: string, from: number, limit: number) {
  return db.all<ResultRow>(sql`select ${RESULT_COLUMNS} from lookup_job_lines where job_id = ${jobId} and position >= ${from} order by position limit ${limit}`);
}

/** Lines with one of these outcomes from `from` on, in input order (the outcome index). */
export function rowsWithOutcomesQuery(db: Database, jobId: string, outcomes: readonly string[], from: number, limit: number) {
  return db.all<ResultRow>(sql`select ${RESULT_COLUMNS} from lookup_job_lines
    where job_id = ${jobId} and outcome in (select value from json_each(${JSON.stringify(outcomes)})) and position >= ${from} order by position limit ${limit}`);
}

/** The first line from `from` on not answered for good (pending, or refused while the job may still charge it). */
export function firstUnansweredQuery(db: Database, jobId: string, from: number) {
  return db.all<{ position: number }>(sql`select position from lookup_job_lines where job_id = ${jobId} and position >= ${from} and state != 'done' order by position limit 1`);
}

/** The verdicts of these addresses in the job (verify_emails): what a page of results shows for each. */
export function verdictsOfQuery(db: Database, jobId: string, emails: readonly string[]) {
  return db.all<VerdictRow>(sql`select email, classification, reason, smtp_outcome, checked_at from lookup_job_verdicts
    where job_id = ${jobId} and email in (select lower(value) from json_each(${JSON.stringify(emails)}))`);
}

/** The widest row of a CSV job's input (cells): the download's header is padded to it. */
export async function widestInput(db: Database, jobId: string): Promise<number> {
  const [row] = await db.all<{ n: number | null }>(sql`select max(json_array_length(input)) as n from lookup_job_lines where job_id = ${jobId}`);
  return Number(row?.n ?? 0);
}
