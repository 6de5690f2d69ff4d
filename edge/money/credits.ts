/**
 * Credits (docs/api.md "GET /v1/people"). A charge is a single guarded INSERT into the ledger; the ledger trigger
 * applies it to the balance in the same statement and the CHECK on accounts forbids a negative
 * balance, so concurrent lookups can never overspend.
 */
import { sql, type SQL } from "drizzle-orm";
import type { CreditCap } from "../caller.ts";
import { capExceeded, capRoom } from "../identity/store/keys.ts";
import type { Database } from "../db/client.ts";
import { utcDay } from "../db/rows.ts";

/**
 * The statement that charges `cost` for a lookup only when `personId` (an SQL expression) finds
 * someone, the balance covers it and every daily credit cap the key counts against does too (its own,
 * shared with the keys rolled from it, and those of the capped keys that made it: api_keys.credit_caps),
 * returning the balance after; no row means no charge. Each cap is read from its budget's row for the
 * day, which the ledger trigger (0018 migration) updates in this same statement, so concurrent lookups
 * cannot overrun one any more than the balance. For use in a batch with the reads, so that a lookup is one round trip.
 */
export function chargeForMatchQuery(db: Database, charge: LookupCharge, personId: SQL) {
  const { accountId, keyId, cost, requestId, now } = charge;
  return db.all<{ balance_after: number }>(sql`
    insert into credit_ledger (account_id, delta, balance_after, reason, request_id, key_id, created_at)
    select id, ${-cost}, credit_balance - ${cost}, 'lookup', ${requestId}, ${keyId}, ${now}
    from accounts where id = ${accountId} and credit_balance >= ${cost} and ${personId} is not null and not ${capExceeded(charge)}
    returning balance_after`);
}

export type LookupCharge = { accountId: string; keyId: string; cost: number; requestId: string; now: number; creditCaps: readonly CreditCap[] };

/** The statement (for a batch) that says whether the key's caps refuse `cost` now: read after a charge that did not happen. */
export function capRefusalQuery(db: Database, charge: Pick<LookupCharge, "cost" | "now" | "creditCaps">) {
  return db.all<{ cap_exceeded: number }>(sql`select ${capExceeded(charge)} as cap_exceeded`);
}

/**
 * The statement that counts a lookup that charged nothing in the usage roll-up (a charge counts
 * itself, by the ledger trigger): refused for credits (the balance or the key's cap) or not found.
 * It must come right after recordAccessQuery in the batch: that insert wrote a row (changes() = 1)
 * exactly when the lookup was charged. Returns the key's credits spent today.
 */
export function countLookupQuery(db: Database, charge: LookupCharge, personId: SQL) {
  const { accountId, keyId, cost, now } = charge;
  const refused = sql`(changes() = 0 and ((select credit_balance from accounts where id = ${accountId}) < ${cost} or ${capExceeded(charge)}))`;
  return db.all<{ credits_spent: number }>(sql`
    insert into usage_daily (account_id, key_id, day, lookups_not_found, lookups_refused_credits)
    select ${accountId}, ${keyId}, ${utcDay(now)}, (${personId} is null and not ${refused}), ${refused} where true
    on conflict (account_id, day, key_id) do update set
      lookups_not_found = lookups_not_found + excluded.lookups_not_found,
      lookups_refused_credits = lookups_refused_credits + excluded.lookups_refused_credits
    returning credits_spent`);
}

/** "The balance is below `cost` now", as an SQL condition: why a lookup that matched was refused, when it was not the cap. */
export const balanceBelow = (accountId: string, cost: number): SQL => sql`coalesce((select credit_balance from accounts where id = ${accountId}), 0) < ${cost}`;

/** The balance now, as an SQL expression. */
export const balanceNow = (accountId: string): SQL => sql`(select credit_balance from accounts where id = ${accountId})`;

/** The statement that reads an account's balance, for use in a batch. */
export function balanceQuery(db: Database, accountId: string) {
  return db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
}

/**
 * How many lookups at `cost` the balance and every daily cap of the key still cover, as an SQL expression whose every
 * part is an uncorrelated subquery, so SQLite reads it once per statement, before the statement's first row is written
 * (a charge's own rows move the balance and the caps as they go in). Unbounded (a large number) at cost 0.
 */
export function lookupsCovered(charge: Pick<LookupCharge, "accountId" | "cost" | "now" | "creditCaps">): SQL {
  if (charge.cost === 0) return sql`${Number.MAX_SAFE_INTEGER}`;
  const balance = sql`coalesce((select credit_balance / ${charge.cost} from accounts where id = ${charge.accountId}), 0)`;
  const caps = capRoom(charge);
  return caps === null ? balance : sql`min(${balance}, coalesce(${caps}, ${balance}))`;
}

/**
 * The bulk lookups' guarded charge (docs/api.md "POST /v1/people/bulk", docs/lookup-jobs.md): one ledger row of `cost`
 * for each row of `ranked` (an SQL select of `rank`, 1, 2, 3, … in the order the people were asked for, and the
 * row's `request_id`) whose rank is within `budget` (lookupsCovered, or a value the same transaction stored from it).
 * So when the balance or a cap covers k of them, the first k are charged and the rest are not; the ledger's triggers
 * apply each row to the balance, the usage roll-up and the cap budgets in this same statement, and the CHECK on the
 * balance stands behind it. Returns the rows written, in rank order, with the balance after each.
 */
export function chargeRankedQuery(db: Database, charge: Omit<LookupCharge, "requestId" | "creditCaps">, ranked: SQL, budget: SQL) {
  const { accountId, keyId, cost, now } = charge;
  return db.all<{ request_id: string; balance_after: number }>(sql`
    insert into credit_ledger (account_id, delta, balance_after, reason, request_id, key_id, created_at)
    select ${accountId}, ${-cost}, (select credit_balance from accounts where id = ${accountId}) - c.rank * ${cost}, 'lookup', c.request_id, ${keyId}, ${now}
    from (${ranked}) c where c.rank <= ${budget} order by c.rank
    returning request_id, balance_after`);
}

/**
 * The statement that counts bulk lookups that charged nothing in the usage roll-up (a charge counts itself, by the
 * ledger trigger): `notFound` and `refused` are SQL expressions of how many (read in the same transaction).
 */
export function countBulkLookupsQuery(db: Database, charge: Pick<LookupCharge, "accountId" | "keyId" | "now">, notFound: SQL, refused: SQL) {
  const { accountId, keyId, now } = charge;
  return db.run(sql`
    insert into usage_daily (account_id, key_id, day, lookups_not_found, lookups_refused_credits)
    select ${accountId}, ${keyId}, ${utcDay(now)}, ${notFound}, ${refused} where true
    on conflict (account_id, day, key_id) do update set
      lookups_not_found = lookups_not_found + excluded.lookups_not_found,
      lookups_refused_credits = lookups_refused_credits + excluded.lookups_refused_credits`);
}

/** "The last row this connection inserted is this request's charge": for a statement right after the charge in its batch. */
export const chargedJustNow = (requestId: string): SQL => sql`exists (select 1 from credit_ledger where id = last_insert_rowid() and request_id = ${requestId})`;

/**
 * How many ledger rows the connection's last insert wrote for this request's ranked charge (request ids
 * `<requestId>:<rank>`, at most `max`): for a statement right after chargeRankedQuery in its batch.
 */
export const rankedChargedJustNow = (requestId: string, max: number): SQL =>
  sql`(select count(*) from credit_ledger where id > last_insert_rowid() - ${max} and id <= last_insert_rowid() and request_id like ${`${requestId}:%`})`;

/** The ranks 1..n with their request ids `<requestId>:<rank>`, as chargeRankedQuery takes them. */
export const ranksOf = (requestId: string, n: number): SQL =>
  sql`select value as rank, ${requestId} || ':' || value as request_id from json_each(${JSON.stringify(Array.from({ length: n }, (_, i) => i + 1))})`;
