/**
 * The Worker's statements on the people tables (people, person_emails, person_phones, person_access_log,
 * erasure_notices): the lookup's match, read and disclosure record, which go to the database in one batch with the
 * charge (edge/routes/people.ts); the personal-data cron's writes of re-verified answers, its claim of the addresses
 * due and the old log rows it deletes (edge/personal-data-cron.ts); the erasure feed's page (edge/routes/erasures.ts).
 * The admin CLI's import, access reports and erasure (scripts/admin/people-*.ts) keep their own statements, on Node's
 * client in their own write batches (test/node/table-owners.test.ts holds both to it).
 */
import { chargedJustNow } from "../money/credits.ts";
import { sql, type SQL } from "drizzle-orm";
import { reasonsProving } from "../../shared/email/reasons.ts";
import { IDENTIFIER_NAMES, type Identifiers } from "../../shared/identifiers.ts";
import { storedAddressConfidenceSql, storedAddressFeedbackSql } from "./confidence-sql.ts";
import type { Database } from "../db/client.ts";
import { deleteInBatches, rowsAffected, type RawRow } from "../db/rows.ts";
import type { erasureNotices, people } from "../db/schema.ts";

/** A lookup's identifiers, as shared/identifiers.ts reads them. */
export type PeopleIdentifiers = Identifiers;

/** The matching person as findPersonQuery reads them, for toContactInfo (lookup.ts). */
export type PersonRow = Omit<RawRow<typeof people.$inferSelect>, "id" | "created_at" | "updated_at"> & {
  /** JSON: [email, first_seen_at, last_seen_at, classification, smtp_outcome, checked_at, sources, confidence, reason, feedback verdict] per address served. */
  emails: string;
  /** JSON: the phones, oldest first. */
  phones: string;
  /** JSON, with include=profile: the name (or null) and the employment entries (PROFILE_NAME, PROFILE_EMPLOYMENT). */
  name?: string | null;
  employment?: string | null;
};

/** What a lookup serves: the time its confidences are computed at, and the caller's floor (null: none). */
export type LookupFilter = { now: number; minConfidence: number | null };

/** The confidence of the person_emails row `e` (shared/people/confidence.ts), its reports' verdict included. */
const confidenceOf = (e: string, now: number) => storedAddressConfidenceSql(e, now);

/** Whether the person_emails row `e` is served: not undeliverable, and at or above the caller's floor. */
function served(e: string, filter: LookupFilter): SQL {
  const deliverable = sql.raw(`${e}.undeliverable_at is null`);
  return filter.minConfidence === null ? deliverable : sql`${deliverable} and ${confidenceOf(e, filter.now)} >= ${filter.minConfidence}`;
}

/**
 * The person_emails row `e` as a lookup serves it (lookup.ts's StoredEmail): the stored check, how many sources back
 * it, its confidence and its reports' verdict. The single lookup and the bulk lookups' snapshots read the same tuple.
 */
function storedEmailTuple(e: string, filter: LookupFilter): SQL {
  const row = (column: string) => sql.raw(`${e}.${column}`);
  return sql`json_array(${row("email")}, ${row("first_seen_at")}, ${row("last_seen_at")}, ${row("classification")}, ${row("smtp_outcome")}, ${row("checked_at")},
    (select count(*) from person_email_sources s where s.email_id = ${row("id")}), ${confidenceOf(e, filter.now)},
    ${row("reason")}, ${storedAddressFeedbackSql(e, filter.now)})`;
}

/**
 * The identifiers and other inputs of one lookup as SQL expressions (bound values for a single lookup, a batch item's
 * JSON field, a job line's column; an expression that is null matches nothing): what the match compares. `email` is an
 * address key, `phone` E.164, `name` a name key with `domain` or `company` (an employer key): shared/identifiers.ts.
 */
export type IdentifierExpressions = {
  /** Each absent (undefined) when the lookup cannot give it: its part of the match is left out of the statement. */
  profnetId?: SQL;
  profnetPublicIdentifier?: SQL;
  codehostId?: SQL;
  codehostLogin?: SQL;
  email?: SQL;
  phone?: SQL;
  name?: SQL;
  domain?: SQL;
  company?: SQL;
};

/**
 * A single lookup's inputs as bound values. The inputs it does not give are left out (their branch of the match is
 * not in the statement at all: a shorter statement is quicker for the database to prepare, and the single lookup
 * prepares its statements each time).
 */
export function boundIdentifiers(ids: PeopleIdentifiers): IdentifierExpressions {
  const k = ids.keys ?? {};
  const given = (value: string | number | undefined) => (value === undefined ? undefined : sql`${value}`);
  return {
    profnetId: given(ids.profnetId),
    profnetPublicIdentifier: given(ids.profnetPublicIdentifier),
    codehostId: given(ids.codehostId),
    codehostLogin: given(ids.codehostLogin),
    email: given(k.email),
    phone: given(k.phone),
    name: given(k.name),
    domain: given(k.domain),
    company: given(k.company),
  };
}

/** What a lookup's inputs came to (docs/api.md "GET /v1/people"): someone, nobody, more than one person, or inputs naming different people. */
export type MatchStatus = "found" | "none" | "ambiguous" | "conflict";

/**
 * The match as an SQL expression: a JSON array [status, person id or null, what found them (shared/identifiers.ts
 * MATCHED_BY)]. The four identifiers keep their rule: the first in precedence that matches someone wins. The other
 * inputs (email, phone, a name at a company) each name a set of people (an address or a number may be held by several;
 * a name at a company by several): with an identifier's person, each set given must hold that person, else the inputs
 * conflict; without one, the person must be the only one in every set given (one left: found; more: ambiguous, never
 * guessed between; none while two sets were given: conflict). One index probe per input given.
 */
function matchSql(x: IdentifierExpressions): SQL {
  const nul = sql`null`;
  const identifiers = sql`select 1 as r, id from people where profnet_id = ${x.profnetId ?? nul}
      union all select 2, id from people where lower(profnet_public_identifier) = lower(${x.profnetPublicIdentifier ?? nul})
      union all select 3, id from people where codehost_id = ${x.codehostId ?? nul}
      union all select 4, id from people where lower(codehost_login) = lower(${x.codehostLogin ?? nul})`;
  const given: SQL[] = [];
  if (x.profnetId !== undefined) given.push(sql`select 1 as r, id from people where profnet_id = ${x.profnetId}`);
  if (x.profnetPublicIdentifier !== undefined) given.push(sql`select 2, id from people where lower(profnet_public_identifier) = lower(${x.profnetPublicIdentifier})`);
  if (x.codehostId !== undefined) given.push(sql`select 3, id from people where codehost_id = ${x.codehostId}`);
  if (x.codehostLogin !== undefined) given.push(sql`select 4, id from people where lower(codehost_login) = lower(${x.codehostLogin})`);
  const keys: SQL[] = [];
  if (x.email !== undefined) keys.push(sql`select distinct 5, person_id from person_emails where address_key = ${x.email}`);
  if (x.phone !== undefined) keys.push(sql`select distinct 6, person_id from person_phones where phone = ${x.phone}`);
  if (x.name !== undefined && (x.domain !== undefined || x.company !== undefined)) {
    const byDomain = x.domain === undefined ? undefined : sql`d.domain = ${x.domain}`;
    const byCompany =
      x.company === undefined
        ? undefined
        : sql`d.domain in (select d2.domain from person_employment e2 join person_employment_domains d2 on d2.employment_id = e2.id where e2.employer_key = ${x.company})`;
    const where = byDomain && byCompany ? sql`(${byDomain} or ${byCompany})` : (byDomain ?? byCompany)!;
    keys.push(sql`select distinct 7, n.person_id from person_names n where n.name_key = ${x.name}
        and exists (select 1 from person_employment_domains d where d.person_id = n.person_id and ${where})`);
  }
  if (keys.length === 0) {
    // Only the four identifiers (every caller before 0028, and job lines without other inputs): null when nobody
    // matches, read as 'none'.
    return sql`(select json_array('found', id, case r ${sql.raw(IDENTIFIER_RANKS)} end) from (${identifiers}) order by r limit 1)`;
  }
  // g: each person matched, by the first input that matched them and by how many of the other inputs' sets hold them;
  // t: how many of those sets are not empty, and the first of them. With an identifier's person (the g row with the
  // lowest rank, 1-4), every non-empty set must hold it; without one, the person is the one every set holds.
  return sql`(with c(r, id) as (${sql.join([...given, ...keys], sql` union all `)}),
      g as (select id, min(r) as best, count(distinct case when r >= 5 then r end) as hits from c group by id),
      t as (select count(distinct r) as sets, min(r) as first from c where r >= 5)
    select case
      when (select min(best) from g) <= 4 then (select case when g.hits < t.sets then json_array('conflict', null, null)
          else json_array('found', g.id, case g.best ${sql.raw(IDENTIFIER_RANKS)} end) end from g order by g.best limit 1)
      when t.sets = 0 then json_array('none', null, null)
      else (select case count(*) when 0 then json_array('conflict', null, null)
          when 1 then json_array('found', max(g.id), case t.first ${sql.raw(KEY_RANKS)} end)
          else json_array('ambiguous', null, null) end from g where g.hits = t.sets) end
    from t)`;
}

const IDENTIFIER_RANKS = IDENTIFIER_NAMES.map((name, i) => `when ${i + 1} then '${name}'`).join(" ");
const KEY_RANKS = "when 5 then 'email' when 6 then 'phone' when 7 then 'name'";

/** The match's status (matchSql), as an SQL expression. */
export const matchStatusSql = (x: IdentifierExpressions): SQL => sql`coalesce(${matchSql(x)} ->> 0, 'none')`;

/** What found the person (shared/identifiers.ts MATCHED_BY), as an SQL expression; null when nobody was. */
export const matchedBySql = (x: IdentifierExpressions): SQL => sql`(${matchSql(x)} ->> 2)`;

/**
 * The id of the person the inputs match (matchSql), or null, as an SQL expression correlated with wherever the inputs
 * come from. With a confidence floor, the person matched is null when no address of theirs reaches it (a 404, not
 * charged): the next identifier's person is not tried instead.
 */
export function personIdMatching(ids: IdentifierExpressions, filter?: LookupFilter): SQL {
  const matched = sql`(${matchSql(ids)} ->> 1)`;
  if (filter === undefined || filter.minConfidence === null) return matched;
  return sql`(select m.id from (select ${matched} as id) m where exists (select 1 from person_emails e where e.person_id = m.id and ${served("e", filter)}))`;
}

/** personIdMatching for a single lookup's inputs. */
export const matchingPersonId = (ids: PeopleIdentifiers, filter: LookupFilter): SQL => personIdMatching(boundIdentifiers(ids), filter);

/** "Someone with this id exists", for statements that charge for people matched a moment before (an erasure may come between). */
export const personExists = (personId: SQL): SQL => sql`exists (select 1 from people where id = ${personId})`;

/** The people who hold an address (an SQL expression), in any letter case SQLite folds: by the lower(email) index. */
export const peopleWithAddress = (email: SQL): SQL => sql`select person_id from person_emails where lower(email) = lower(${email})`;

/**
 * The person `p`'s name and work history as include=profile answers them (docs/api.md "include=profile"), as JSON:
 * `name`, the name the sources reported last ({full, given, family, middle}, or null); `employment`, current first
 * (then those the sources did not say of, then past ones), each newest start first, with its domains.
 */
const PROFILE_NAME = sql`(select json_object('full', full, 'given', given, 'family', family, 'middle', middle)
    from person_names where person_id = p.id order by last_seen_at desc, id desc limit 1)`;
const PROFILE_EMPLOYMENT = sql`(select json_group_array(json(entry)) from (select json_object('employer', w.employer,
      'domains', json((select json_group_array(domain) from (select domain from person_employment_domains where employment_id = w.id order by domain))),
      'title', w.title, 'start', w.start_date, 'end', w.end_date,
      'current', case w.current when 1 then json('true') when 0 then json('false') end) as entry
    from person_employment w where w.person_id = p.id
    order by case w.current when 1 then 0 when 0 then 2 else 1 end, w.start_date is null, w.start_date desc, w.last_seen_at desc, w.id))`;

/** The person's row as findPersonQuery reads it, with emails and phones as JSON arrays (not text): what lookup.ts's contactInfoFromSnapshot reads. */
const PERSON_SNAPSHOT = (personId: SQL, filter: LookupFilter) => sql`(select json_object(
    'profnet_id', p.profnet_id, 'profnet_public_identifier', p.profnet_public_identifier, 'codehost_id', p.codehost_id, 'codehost_login', p.codehost_login,
    'codehost_username', p.codehost_username, 'socialnet_username', p.socialnet_username, 'microblog_username', p.microblog_username,
    'emails', json((select json_group_array(${storedEmailTuple("e", filter)}) from
      (select * from person_emails e where person_id = p.id and ${served("e", filter)} order by first_seen_at, id) e)),
    'phones', json((select json_group_array(phone) from (select phone from person_phones where person_id = p.id order by first_seen_at, id))),
    'name', json(${PROFILE_NAME}), 'employment', json(${PROFILE_EMPLOYMENT}))
  from people p where p.id = ${personId})`;

/**
 * The person `personId` (an SQL expression) as an answer discloses them, as JSON text, read in the statement that
 * stores the answer (a lookup job's line, a batch's first answer kept for its replays): what was charged is what is kept.
 */
export const personSnapshot = (personId: SQL, filter: LookupFilter): SQL => PERSON_SNAPSHOT(personId, filter);

/**
 * The statement that records disclosures of many people at once (the bulk lookups), for the batch that charged them:
 * one access-log row per person of `disclosed`, an SQL select of (person_id) rows, with the four identifiers the
 * answer carried (read in the same transaction as the answer), as recordAccessQuery records one.
 */
export function recordAccessesQuery(db: Database, disclosed: SQL, accountId: string, keyId: string, now: number) {
  return db.run(sql`
    insert into person_access_log (person_id, account_id, key_id, created_at, profnet_id, profnet_public_identifier, codehost_id, codehost_login, matched_by)
    select p.id, ${accountId}, ${keyId}, ${now}, p.profnet_id, p.profnet_public_identifier, p.codehost_id, p.codehost_login, d.matched_by
    from (${disclosed}) d join people p on p.id = d.person_id`);
}

/**
 * The addresses of these people (an SQL select of person_id rows) that a lookup returns (not undeliverable) and that
 * our engine checked at or after `since`: (email, classification, reason, smtp_outcome, checked_at), for a lookup job
 * with verify_emails, which uses a verification this fresh instead of probing again (docs/lookup-jobs.md).
 */
export function freshVerificationsOf(personIds: SQL, since: number): SQL {
  return sql`select email, classification, reason, smtp_outcome, checked_at from person_emails
    where person_id in (${personIds}) and undeliverable_at is null and classification is not null and checked_at >= ${since}`;
}

/** The statement that reads the matching person with the addresses served (each with its confidence) and phones, for use in a batch. */
export function findPersonQuery(db: Database, ids: PeopleIdentifiers, filter: LookupFilter, profile = false) {
  return db.all<PersonRow>(sql`
    select p.profnet_id, p.profnet_public_identifier, p.codehost_id, p.codehost_login,
           p.codehost_username, p.socialnet_username, p.microblog_username,
           (select json_group_array(${storedEmailTuple("e", filter)}) from
              (select * from person_emails e where person_id = p.id and ${served("e", filter)} order by first_seen_at, id) e) as emails,
           (select json_group_array(phone) from
              (select phone from person_phones where person_id = p.id order by first_seen_at, id)) as phones
           ${profile ? sql`, ${PROFILE_NAME} as name, ${PROFILE_EMPLOYMENT} as employment` : sql``}
    from people p
    where p.id = ${matchingPersonId(ids, filter)}`);
}

/** The statement that reads what the single lookup's inputs came to (matchSql's status), for use in the same batch. */
export function matchStatusQuery(db: Database, ids: PeopleIdentifiers) {
  return db.all<{ status: MatchStatus }>(sql`select ${matchStatusSql(boundIdentifiers(ids))} as status`);
}

/**
 * The statement that records a 200 lookup's disclosure (who received whom, when, and the four identifiers the
 * answer carried: what an erasure notice will name), for the batch that charges it, right after the charge: it
 * writes only when the charge did (the charge is this connection's last insert, with this request's id). The
 * identifiers are read in the same transaction as the person the answer returns, so they are the same.
 */
export function recordAccessQuery(db: Database, ids: PeopleIdentifiers, filter: LookupFilter, accountId: string, keyId: string, requestId: string) {
  const personId = matchingPersonId(ids, filter);
  return db.run(sql`
    insert into person_access_log (person_id, account_id, key_id, created_at, profnet_id, profnet_public_identifier, codehost_id, codehost_login, matched_by)
    select p.id, ${accountId}, ${keyId}, ${Date.now()}, p.profnet_id, p.profnet_public_identifier, p.codehost_id, p.codehost_login,
      ${matchedBySql(boundIdentifiers(ids))}
    from people p
    where p.id = ${personId} and changes() = 1 and ${chargedJustNow(requestId)}`);
}

/** Answers written to person_emails per statement (and read back from a refresh job per read). */
export const ANSWERS_PER_WRITE = 1_000;

/** Answers that find the mailbox (shared/email/reasons.ts): an undeliverable address comes back. */
const MAILBOX_EXISTS = reasonsProving("mailbox_exists");
/** Answers where the server took the address (the mailbox's, or any): the run of not-found answers starts again. */
const BREAKS_NOT_FOUND_RUN = reasonsProving("mailbox_exists", "accepts_any");
/**
 * Answers that say nothing about the mailbox yet: tried again after EMAIL_RECHECK_SECONDS rather than
 * EMAIL_MAX_AGE_SECONDS (a receiver's budget spent included; a provider that forbids probing is not:
 * asking sooner would not change its answer).
 */
const INCONCLUSIVE = reasonsProving("nothing_yet");

/** A list of values for `in (...)`, as bound parameters (a JSON array read by json_each), never as SQL text. */
const inList = (values: string[]) => sql`select value from json_each(${JSON.stringify(values)})`;

/** EMAIL_MAX_AGE_SECONDS and EMAIL_RECHECK_SECONDS: when a stored address is due again after an answer. */
export type StoredEmailRules = { maxAgeSeconds: number; recheckSeconds: number };

export type StoredEmailAnswer = { email: string; classification: string; smtp_outcome: string | null; reason: string; checked_at: number };

/**
 * Writes answers to every stored row of each address (any person), by the rules above (a stored address's life: edge/personal-data-cron.ts). An answer no newer than
 * what a row holds changes nothing, so writing the same answers twice is harmless. A mailbox_not_found makes the address
 * undeliverable when it is the second at least EMAIL_RECHECK_SECONDS after the first, or when a customer reported a hard
 * bounce of it since our previous check: our own check agrees with the report (docs/api.md "POST /v1/email_feedback").
 */
export async function writeStoredEmailAnswers(db: Database, answers: StoredEmailAnswer[], config: StoredEmailRules): Promise<number> {
  const recheckMs = config.recheckSeconds * 1000;
  const maxAgeMs = config.maxAgeSeconds * 1000;
  let updated = 0;
  for (let i = 0; i < answers.length; i += ANSWERS_PER_WRITE) {
    const slice = JSON.stringify(answers.slice(i, i + ANSWERS_PER_WRITE));
    const reason = sql.raw("(u.value ->> 'reason')");
    const at = sql.raw("(u.value ->> 'checked_at')");
    // Right-hand sides read the row as it was before this update (SQLite's UPDATE semantics).
    const secondNotFound = sql`person_emails.not_found_at is not null and ${at} - person_emails.not_found_at >= ${recheckMs}`;
    // A customer's hard bounce since our previous check, and now our check agrees: confirmed without waiting a day.
    const bounceReported = sql`exists (select 1 from email_feedback f where f.address_hash = person_emails.address_hash and f.outcome = 'hard_bounce'
      and f.occurred_at > coalesce(person_emails.checked_at, 0))`;
    const confirmedNotFound = sql`${reason} = 'mailbox_not_found' and (${secondNotFound} or ${bounceReported})`;
    const result = await db.run(sql`update person_emails set
        classification = u.value ->> 'classification',
        smtp_outcome = u.value ->> 'smtp_outcome',
        reason = ${reason},
        checked_at = ${at},
        not_found_at = case
          when ${reason} = 'mailbox_not_found' then coalesce(person_emails.not_found_at, ${at})
          when ${reason} in (${inList(BREAKS_NOT_FOUND_RUN)}) then null
          else person_emails.not_found_at end,
        undeliverable_at = case
          when ${reason} in (${inList(MAILBOX_EXISTS)}) then null
          when ${confirmedNotFound} then coalesce(person_emails.undeliverable_at, ${at})
          else person_emails.undeliverable_at end,
        next_check_at = case
          when ${reason} = 'mailbox_not_found' and person_emails.undeliverable_at is null and not (${confirmedNotFound})
            then coalesce(person_emails.not_found_at, ${at}) + ${recheckMs}
          when ${reason} in (${inList(INCONCLUSIVE)}) then ${at} + ${recheckMs}
          else ${at} + ${maxAgeMs} end
      from json_each(${slice}) as u
      where lower(person_emails.email) = lower(u.value ->> 'email') and coalesce(person_emails.checked_at, 0) < ${at}`);
    updated += rowsAffected(result);
  }
  return updated;
}

/** Stored addresses due for a check at `now` (rows, oldest first by the next_check_at index; one address may be stored for several people). */
export async function dueAddresses(db: Database, now: number, rows: number): Promise<string[]> {
  const due = await db.all<{ email: string }>(sql`select email from person_emails where next_check_at <= ${now} order by next_check_at limit ${rows}`);
  return due.map((r) => r.email);
}

/** The statement that makes these addresses (every row of each, in any letter case) not due again before `until`, for a batch. */
export function claimAddressesQuery(db: Database, emails: string[], until: number) {
  return db.run(sql`update person_emails set next_check_at = ${until}
    where lower(email) in (select lower(value) from json_each(${JSON.stringify(emails)}))`);
}

/** Rows of the access log or erasure notices deleted per statement, and statements per run. */
const LOG_ROWS_PER_DELETE = 5_000;
const LOG_DELETES_PER_RUN = 10;

async function deleteOld(db: Database, table: "person_access_log" | "erasure_notices", column: "created_at" | "erased_at", before: number): Promise<number> {
  const deleteUpTo = (limit: number) =>
    db.run(sql`delete from ${sql.identifier(table)} where id in (select id from ${sql.identifier(table)} where ${sql.identifier(column)} < ${before} limit ${limit})`);
  return (await deleteInBatches(deleteUpTo, LOG_ROWS_PER_DELETE, LOG_ROWS_PER_DELETE * LOG_DELETES_PER_RUN)).deleted;
}

/** Deletes access-log rows older than `before`, a bounded number per run; returns how many. */
export const deleteOldAccessLog = (db: Database, before: number) => deleteOld(db, "person_access_log", "created_at", before);

/** Deletes erasure notices older than `before`, a bounded number per run; returns how many. */
export const deleteOldErasureNotices = (db: Database, before: number) => deleteOld(db, "erasure_notices", "erased_at", before);

/** Deletes merge candidates recorded or decided before `before` (docs/operations.md "Merge candidates"); returns how many. */
export async function deleteOldMergeCandidates(db: Database, before: number): Promise<number> {
  return rowsAffected(await db.run(sql`delete from merge_candidates where coalesce(decided_at, created_at) < ${before}`));
}

export type ErasureNoticeRow = Omit<RawRow<typeof erasureNotices.$inferSelect>, "account_id">;

/**
 * A page of the account's erasure notices since `since`, oldest first by (erased_at, id), after the notice `after`
 * ([erased_at, id]) when given, and whether more follow; the (account_id, erased_at, id) index serves it.
 */
export async function erasureNoticesPage(db: Database, accountId: string, since: number, after: number[] | null, limit: number): Promise<{ notices: ErasureNoticeRow[]; more: boolean }> {
  const [afterAt, afterId] = after ?? [];
  // One row past the page says whether another follows.
  const rows = await db.all<ErasureNoticeRow>(sql`
    select id, profnet_id, profnet_public_identifier, codehost_id, codehost_login, erased_at from erasure_notices
    where account_id = ${accountId} and erased_at >= ${since}
      ${afterAt !== undefined ? sql`and (erased_at > ${afterAt} or (erased_at = ${afterAt} and id > ${afterId}))` : sql``}
    order by erased_at, id limit ${limit + 1}`);
  return { notices: rows.slice(0, limit), more: rows.length > limit };
}
