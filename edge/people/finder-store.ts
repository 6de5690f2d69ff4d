/**
 * The finder's and the domain search's statements (docs/api.md "GET /v1/email_finder", "GET /v1/domains/{domain}"): a
 * domain's addresses are read by the person_emails_domain_idx expression index (ADDRESS_DOMAIN, the same expression),
 * a name's people by person_names' name_key index; the finder's own state is domain_facts, finder_checks, finder_finds
 * and erased_addresses (edge/db/schema.ts). Every value goes in as a bound parameter.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { rowsAffected } from "../db/rows.ts";
import { storedAddressConfidenceSql, storedAddressFeedbackSql } from "./confidence-sql.ts";
import { balanceQuery, chargedJustNow, chargeForMatchQuery, chargeRankedQuery, capRefusalQuery, lookupsCovered, rankedChargedJustNow, ranksOf, type LookupCharge } from "../money/credits.ts";
import { recordAccessesQuery } from "./store.ts";

/** The domain of the person_emails row `e`, as the expression index states it (0029 migration). */
const addressDomain = (e: string): SQL => sql.raw(`substr(${e}.address_key, instr(${e}.address_key, '@') + 1)`);

/** Pairs read per domain to learn its patterns, and addresses counted per domain search. */
export const PAIRS_READ = 2_000;

/** A stored address of the person named, at the domain (the finder's first step), as knownAtDomainQuery reads it. */
export type KnownAddressRow = {
  person_id: number;
  email: string;
  confidence: number;
  classification: string | null;
  reason: string | null;
  smtp_outcome: string | null;
  checked_at: number | null;
  sources: number;
  first_seen_at: number;
  last_seen_at: number;
  feedback: string;
};

/** The addresses at `domain` held by people whose name key is `nameKey`, deliverable, best first (at most 5). */
export function knownAtDomainQuery(db: Database, nameKey: string, domain: string, now: number) {
  return db.all<KnownAddressRow>(sql`
    select e.person_id, e.email, ${storedAddressConfidenceSql("e", now)} as confidence, e.classification, e.reason, e.smtp_outcome, e.checked_at,
      (select count(*) from person_email_sources s where s.email_id = e.id) as sources, e.first_seen_at, e.last_seen_at,
      ${storedAddressFeedbackSql("e", now)} as feedback
    from person_emails e
    where ${addressDomain("e")} = ${domain} and e.undeliverable_at is null
      and e.person_id in (select person_id from person_names where name_key = ${nameKey})
    order by confidence desc, e.id limit 5`);
}

/** A known pair at a domain: the address, its person's latest name ([given, family, full] JSON), and what counts against it. */
export type PairRow = { email: string; name: string | null; undeliverable: number; reason: string | null; feedback: string };

/** The newest PAIRS_READ addresses at `domain`, each with its person's latest name and the facts that weigh it. */
export function domainPairsQuery(db: Database, domain: string, now: number) {
  return db.all<PairRow>(sql`
    select e.email, (select json_array(n.given, n.family, n.full) from person_names n where n.person_id = e.person_id order by n.last_seen_at desc, n.id desc limit 1) as name,
      e.undeliverable_at is not null as undeliverable, e.reason, ${storedAddressFeedbackSql("e", now)} as feedback
    from person_emails e where ${addressDomain("e")} = ${domain}
    order by e.id desc limit ${PAIRS_READ}`);
}

/** How many addresses we hold at `domain` (every one, not only those read). */
export function domainAddressCountQuery(db: Database, domain: string) {
  return db.all<{ total: number }>(sql`select count(*) as total from person_emails e where ${addressDomain("e")} = ${domain}`);
}

export type DomainFactsRow = { accept_all: number | null; accept_all_checked_at: number | null; mx_provider: string | null; receiver_family: string | null };

export function domainFactsQuery(db: Database, domain: string) {
  return db.all<DomainFactsRow>(sql`select accept_all, accept_all_checked_at, mx_provider, receiver_family from domain_facts where domain = ${domain}`);
}

/** Records a catch-all answer (and who runs the domain's mail): a newer answer only. */
export function recordDomainFactsQuery(db: Database, domain: string, facts: { acceptAll: boolean | null; checkedAt: number; mxProvider: string | null; receiverFamily: string | null }) {
  const acceptAll = facts.acceptAll === null ? null : facts.acceptAll ? 1 : 0;
  return db.run(sql`insert into domain_facts (domain, accept_all, accept_all_checked_at, mx_provider, receiver_family, updated_at)
    values (${domain}, ${acceptAll}, ${acceptAll === null ? null : facts.checkedAt}, ${facts.mxProvider}, ${facts.receiverFamily}, ${facts.checkedAt})
    on conflict (domain) do update set
      accept_all = coalesce(excluded.accept_all, domain_facts.accept_all),
      accept_all_checked_at = coalesce(excluded.accept_all_checked_at, domain_facts.accept_all_checked_at),
      mx_provider = excluded.mx_provider, receiver_family = excluded.receiver_family, updated_at = excluded.updated_at`);
}

/** The domain our data ties the employer (an employer key) to most: the company's domain, or none. */
export function companyDomainQuery(db: Database, employer: string) {
  return db.all<{ domain: string }>(sql`select d.domain from person_employment w join person_employment_domains d on d.employment_id = w.id
    where w.employer_key = ${employer} group by d.domain order by count(*) desc, d.domain limit 1`);
}

/** Whether the account was charged for this find (its keyed name) since `since`. */
export function repeatQuery(db: Database, accountId: string, findKey: string, since: number) {
  return db.all<{ charged_at: number }>(sql`select charged_at from finder_finds where account_id = ${accountId} and find_key = ${findKey} and charged_at >= ${since}`);
}

/** "The account was charged for this find since `since`", as an SQL condition (for a job's line, in its own transaction). */
export const chargedFindSince = (accountId: string, findKey: string, since: number): SQL =>
  sql`exists (select 1 from finder_finds where account_id = ${accountId} and find_key = ${findKey} and charged_at >= ${since})`;

/** Records a charged find, for the batch that charged it (right after the charge: it writes only when the charge did). */
export function recordFindQuery(db: Database, accountId: string, findKey: string, now: number, chargedJustNow: SQL) {
  return db.run(sql`insert into finder_finds (account_id, find_key, charged_at) select ${accountId}, ${findKey}, ${now} where ${chargedJustNow}
    on conflict (account_id, find_key) do update set charged_at = excluded.charged_at`);
}

export type CheckRow = { address_hash: string; outcome: string | null; reason: string | null; classification: string | null; catch_all: number | null; checked_at: number | null; pending_until: number | null };

/**
 * What we know of candidate addresses (by their keyed hashes): our checks since `since`, whether one is an erased
 * person's, the reports about them, and (by their address keys) the name keys of the people we hold them for: a
 * candidate another person holds is theirs, not the one being found.
 */
export function candidateFactsQueries(db: Database, hashes: string[], since: number, addressKeys: string[]) {
  const list = JSON.stringify(hashes);
  return [
    db.all<{ address_key: string; name_key: string | null }>(sql`select e.address_key, (select n.name_key from person_names n where n.person_id = e.person_id order by n.last_seen_at desc, n.id desc limit 1) as name_key
      from person_emails e where e.address_key in (select value from json_each(${JSON.stringify(addressKeys)}))`),
    db.all<CheckRow>(sql`select address_hash, outcome, reason, classification, catch_all, checked_at, pending_until from finder_checks
      where address_hash in (select value from json_each(${list})) and (created_at >= ${since} or pending_until is not null)`),
    db.all<{ address_hash: string }>(sql`select address_hash from erased_addresses where address_hash in (select value from json_each(${list}))`),
    db.all<{ address_hash: string; account_id: string; outcome: string; occurred_at: number }>(sql`select address_hash, account_id, outcome, occurred_at from email_feedback
      where address_hash in (select value from json_each(${list})) order by occurred_at desc limit 500`),
  ] as const;
}

/**
 * Marks a check under way (a repeat or a 202's fetch waits for it rather than asking the receiver again); false when
 * another find holds it. A mark past its time is taken over.
 */
export async function claimCheck(db: Database, hash: string, now: number, until: number): Promise<boolean> {
  const result = await db.run(sql`insert into finder_checks (address_hash, pending_until, created_at) values (${hash}, ${until}, ${now})
    on conflict (address_hash) do update set pending_until = excluded.pending_until, created_at = excluded.created_at
    where finder_checks.pending_until is null or finder_checks.pending_until < ${now}`);
  return rowsAffected(result) === 1;
}

/** Writes a check's answer (and lifts its mark). */
export function recordCheckQuery(db: Database, hash: string, c: { outcome: string; reason: string; classification: string; catchAll: boolean | null; checkedAt: number }) {
  return db.run(sql`insert into finder_checks (address_hash, outcome, reason, classification, catch_all, checked_at, pending_until, created_at)
    values (${hash}, ${c.outcome}, ${c.reason}, ${c.classification}, ${c.catchAll === null ? null : c.catchAll ? 1 : 0}, ${c.checkedAt}, null, ${c.checkedAt})
    on conflict (address_hash) do update set outcome = excluded.outcome, reason = excluded.reason, classification = excluded.classification,
      catch_all = excluded.catch_all, checked_at = excluded.checked_at, pending_until = null, created_at = excluded.created_at`);
}

/** Lifts a mark without an answer (the check could not be made). */
export function releaseCheckQuery(db: Database, hash: string) {
  return db.run(sql`delete from finder_checks where address_hash = ${hash} and outcome is null`);
}

/**
 * The people listed by a domain search: the named holders of the newest addresses at the domain (read from the newest
 * 4 × limit, so a large domain costs what a small one does), with their latest name and current title.
 */
export type ListedPersonRow = { person_id: number; email: string; full: string | null; given: string | null; family: string | null; title: string | null; confidence: number };

export function domainPeopleQuery(db: Database, domain: string, now: number, limit: number) {
  return db.all<ListedPersonRow>(sql`
    select person_id, email, full, given, family, title, confidence from (
      select e.person_id, e.email, n.full, n.given, n.family,
        (select w.title from person_employment w where w.person_id = e.person_id order by case w.current when 1 then 0 when 0 then 2 else 1 end, w.start_date desc limit 1) as title,
        ${storedAddressConfidenceSql("e", now)} as confidence,
        row_number() over (partition by e.person_id order by e.id) as nth
      from (select * from person_emails e where ${addressDomain("e")} = ${domain} and e.undeliverable_at is null order by e.id desc limit ${limit * 4}) e
      join person_names n on n.id = (select id from person_names where person_id = e.person_id order by last_seen_at desc, id desc limit 1)
      order by e.id desc)
    where nth = 1 limit ${limit}`);
}

/** Deletes the finder's state past its time: charged finds older than the repeat window, checks older than theirs. */
export async function deleteOldFinderState(db: Database, findsBefore: number, checksBefore: number): Promise<number> {
  const finds = await db.run(sql`delete from finder_finds where rowid in (select rowid from finder_finds where charged_at < ${findsBefore} limit 5000)`);
  const checks = await db.run(sql`delete from finder_checks where rowid in (select rowid from finder_checks where created_at < ${checksBefore} and (pending_until is null or pending_until < ${checksBefore}) limit 5000)`);
  return rowsAffected(finds) + rowsAffected(checks);
}

/** A statement that does nothing, for a batch whose shape stays the same when a step is not needed. */
const nothing = (db: Database) => db.all<{ balance_after: number }>(sql`select 0 as balance_after where 0`);

/**
 * The batch (one transaction) that settles a find (edge/routes/email-finder.ts settleFind): the charge when it is
 * chargeable, the record of the charged find for the 30-day repeat, the disclosure of a known person (charged or not),
 * the balance after and whether the key's caps refused. Results in that order.
 */
export function settleFindStatements(db: Database, s: { charge: LookupCharge; chargeable: boolean; findKey: string; personId: number | null }) {
  const { charge } = s;
  const disclosed = s.personId === null ? null : sql`select ${s.personId} as person_id, 'name' as matched_by`;
  return [
    s.chargeable ? chargeForMatchQuery(db, charge, sql`1`) : nothing(db),
    s.chargeable ? recordFindQuery(db, charge.accountId, s.findKey, charge.now, chargedJustNow(charge.requestId)) : nothing(db),
    disclosed ? recordAccessesQuery(db, disclosed, charge.accountId, charge.keyId, charge.now) : nothing(db),
    balanceQuery(db, charge.accountId),
    capRefusalQuery(db, charge),
  ] as const;
}

/**
 * The batch that charges a domain search's listed people in rank order, as far as the balance and the key's caps
 * cover, and records in the access log exactly those charged (the ledger rows the charge just wrote), then reads the
 * balance. At cost 0 every listed person is recorded.
 */
export function listPeopleStatements(db: Database, charge: Omit<LookupCharge, "requestId">, requestId: string, personIds: number[]) {
  const ids = JSON.stringify(personIds);
  const all = sql`select value as person_id, 'domain' as matched_by from json_each(${ids})`;
  const covered = sql`select value as person_id, 'domain' as matched_by from json_each(${ids}) where key < ${rankedChargedJustNow(requestId, personIds.length)}`;
  const free = charge.cost === 0;
  return [
    free ? db.all<{ request_id: string; balance_after: number }>(sql`select null as request_id, 0 as balance_after where 0`) : chargeRankedQuery(db, charge, ranksOf(requestId, personIds.length), lookupsCovered(charge)),
    recordAccessesQuery(db, free ? all : covered, charge.accountId, charge.keyId, charge.now),
    balanceQuery(db, charge.accountId),
  ] as const;
}
