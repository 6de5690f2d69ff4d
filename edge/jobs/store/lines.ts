/**
 * A job's lines (verification_job_items): reading results, claiming turns under a lease, renewing it, writing answers
 * only while the lease holds, taking back answers a probe no longer trusts, and deleting lines a bounded number at a time.
 */
import { sql, type SQL } from "drizzle-orm";
import type { EmailVerificationResult } from "../../../shared/api.ts";
import type { Database } from "../../db/client.ts";
import { rowsAffected, type RawRow } from "../../db/rows.ts";
import type { verificationJobItems } from "../../db/schema.ts";
import type { LineHistory } from "../verification/line-policy.ts";
import { UNTRUSTED_RECHECK_DELAY_MS, untrustedSpan, type UntrustedNotice } from "../verification/untrusted.ts";
import { ACCOUNT_ACTIVE, batch, completeIfDone, JOB_COLUMNS, type JobRow, type Statement } from "./job-rows.ts";

type LineRow = RawRow<typeof verificationJobItems.$inferSelect>;

export type ResultRow = Pick<LineRow, "position" | "email" | "state" | "result" | "checked_at" | "fields">;

/** Lines from `from` on, in input order (a duplicate carries its own copy of the answer). */
export function resultRowsQuery(db: Database, jobId: string, from: number, limit: number) {
  return db.all<ResultRow>(sql`
    select position, email, state, result, checked_at, fields from verification_job_items
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
    select position, email, state, result, checked_at, fields from verification_job_items indexed by verification_job_items_done_idx
    where job_id = ${jobId} and state = 'done' and position >= ${from} ${filterSql(filter)} order by position limit ${limit}`);
}

/** The first line from `from` on that is not answered yet (a running job's results stop there). */
export function firstUnansweredQuery(db: Database, jobId: string, from: number) {
  return db.all<{ position: number }>(sql`
    select position from verification_job_items where job_id = ${jobId} and position >= ${from} and state != 'done' order by position limit 1`);
}

/** A line this consumer holds: its address and its history (edge/jobs/verification/line-policy.ts decides with it). */
export type ClaimedLine = LineHistory & { position: number; email: string };

/** Who holds a claim and for how long: a fresh token per consumer run, checked by every renewal and write. */
export type Lease = { token: string; ms: number };

export const newLease = (ms: number): Lease => ({ token: crypto.randomUUID(), ms });

type ClaimedRow = Pick<LineRow, "position" | "email" | "recheck_at" | "claims" | "probe_failures" | "waiting_since" | "waiting_on">;

const claimedLine = (r: ClaimedRow): ClaimedLine => ({
  position: Number(r.position),
  email: String(r.email),
  rechecking: r.recheck_at !== null,
  claims: Number(r.claims),
  probeFailures: Number(r.probe_failures),
  waitingSince: r.waiting_since === null ? null : Number(r.waiting_since),
  waitingOn: r.waiting_on === null || r.waiting_on === undefined ? null : String(r.waiting_on),
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
  const returning = sql.raw("returning position, email, recheck_at, claims, probe_failures, waiting_since, waiting_on");
  return [
    db.run(sql`update verification_jobs set status = 'running', started_at = coalesce(started_at, ${now}),
        updated_at = case when status = 'queued' then ${now} else updated_at end, last_claim_at = ${now}
      where id = ${jobId} and status in ('queued', 'running') and creating = 0 and ${ACCOUNT_ACTIVE}`),
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
  | { position: number; kind: "park"; until: number; waitingOn: string | null }
  /** Not asked: the receiver refuses its probe (a block): back to pending for the next probe of its ranking, this claim not counted. */
  | { position: number; kind: "move" };

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
    if (a.kind === "release" || a.kind === "defer" || a.kind === "move") {
      // A move takes the line one place down its probe ranking (line-policy.ts probeRank), as a release does, at no claim.
      const counted =
        a.kind === "defer" ? sql`claims = max(0, claims - 1)` : a.kind === "move" ? sql`claims = max(0, claims - 1), probe_failures = probe_failures + 1` : sql`probe_failures = probe_failures + 1`;
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

/**
 * The lines of unfinished jobs at a notice's domains answered `answer` within its span (as far as the probe's window lets
 * it reach, untrustedSpan): what a notice takes back, for both kinds of notice.
 */
function answeredInNoticeSpan(notice: UntrustedNotice, now: number, answer: SQL): SQL {
  const domains = [...new Set(notice.domains.map((d) => d.toLowerCase()))];
  const { sinceMs, untilMs } = untrustedSpan(notice, now);
  return sql`state = 'done' and ${answer} and checked_at >= ${sinceMs} and checked_at <= ${untilMs}
    and job_id in (select id from verification_jobs where status in ('queued', 'running'))
    and lower(substr(email, instr(email, '@') + 1)) in (${sql.join(
      domains.map((d) => sql`${d}`),
      sql`, `,
    )})`;
}

/**
 * A probe's notice applied (edge/jobs/verification/untrusted.ts): the `valid` lines of unfinished jobs at its domains, answered in its
 * span as far as the probe's window lets it reach (untrustedSpan), go back for a recheck after UNTRUSTED_RECHECK_DELAY_MS, a duplicate to pending behind its original; the lease
 * columns are cleared as a written answer leaves them, so no consumer's write lands on them. Returns, per job, how many
 * original lines will be checked again (for their queue turns).
 */
export async function untrustValids(db: Database, notice: UntrustedNotice, now = Date.now()): Promise<Map<string, number>> {
  const which = answeredInNoticeSpan(notice, now, sql`classification = 'valid'`);
  const [originals] = await db.batch([
    db.all<{ job_id: string }>(sql`update verification_job_items
      set state = 'recheck', recheck_at = ${now + UNTRUSTED_RECHECK_DELAY_MS}, classification = null, reason = null, lease_token = null, lease_until = null
      where duplicate_of is null and ${which} returning job_id`),
    db.run(sql`update verification_job_items set state = 'pending', classification = null, reason = null, lease_token = null, lease_until = null
      where duplicate_of is not null and ${which}`),
  ]);
  const byJob = new Map<string, number>();
  for (const r of originals) byJob.set(String(r.job_id), (byJob.get(String(r.job_id)) ?? 0) + 1);
  return byJob;
}

/**
 * A probe's refused notice applied (edge/jobs/verification/untrusted.ts, docs/jobs.md "While our probe is blocked"): the `policy_block`
 * answers of unfinished jobs at its domains, written in its span (as far as the window lets it reach), were a receiver's
 * block of our probe, not answers: back to pending to be asked again (a duplicate too, behind its original). Returns,
 * per job, how many original lines (for their queue turns).
 */
export async function takeBackRefusals(db: Database, notice: UntrustedNotice, now = Date.now()): Promise<Map<string, number>> {
  const which = answeredInNoticeSpan(notice, now, sql`reason = 'policy_block'`);
  const [originals] = await db.batch([
    db.all<{ job_id: string }>(sql`update verification_job_items
      set state = 'pending', classification = null, reason = null, result = null, lease_token = null, lease_until = null
      where duplicate_of is null and ${which} returning job_id`),
    db.run(sql`update verification_job_items set state = 'pending', classification = null, reason = null, result = null, lease_token = null, lease_until = null
      where duplicate_of is not null and ${which}`),
  ]);
  const byJob = new Map<string, number>();
  for (const r of originals) byJob.set(String(r.job_id), (byJob.get(String(r.job_id)) ?? 0) + 1);
  return byJob;
}

/** Deletes a job's first `limit` lines (by position; one statement): expired results, an abandoned create. */
export function deleteFirstLines(db: Database, jobId: string, limit: number) {
  return db.run(sql`delete from verification_job_items where job_id = ${jobId}
    and position in (select position from verification_job_items where job_id = ${jobId} order by position limit ${limit})`);
}
