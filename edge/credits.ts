/**
 * Credits (docs/api.md "GET /v1/people"). A charge is a single guarded INSERT into the ledger; the ledger trigger
 * applies it to the balance in the same statement and the CHECK on accounts forbids a negative
 * balance, so concurrent lookups can never overspend.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "./db/client.ts";

/**
 * The statement that charges `cost` for a lookup only when `personId` (an SQL expression) finds
 * someone and the balance covers it, returning the balance after; no row means no charge. For use
 * in a batch with the reads, so that a lookup is one round trip.
 */
export function chargeForMatchQuery(db: Database, accountId: string, cost: number, requestId: string, personId: SQL) {
  return db.all<{ balance_after: number }>(sql`
    insert into credit_ledger (account_id, delta, balance_after, reason, request_id)
    select id, ${-cost}, credit_balance - ${cost}, 'lookup', ${requestId}
    from accounts where id = ${accountId} and credit_balance >= ${cost} and ${personId} is not null
    returning balance_after`);
}

/** The statement that reads an account's balance, for use in a batch. */
export function balanceQuery(db: Database, accountId: string) {
  return db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
}
