/**
 * Credits (docs/api.md "GET /v1/people"). A charge is a single guarded INSERT into the ledger; the ledger trigger
 * applies it to the balance in the same statement and the CHECK on accounts forbids a negative
 * balance, so concurrent lookups can never overspend.
 */
import { sql, type SQL } from "drizzle-orm";
import type { CreditCap } from "./caller.ts";
import { capExceeded } from "./identity/store/keys.ts";
import type { Database } from "./db/client.ts";
import { utcDay } from "./db/rows.ts";

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

/** The statement that reads an account's balance, for use in a batch. */
export function balanceQuery(db: Database, accountId: string) {
  return db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
}
