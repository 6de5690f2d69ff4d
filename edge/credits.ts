/**
 * Credits (README "GET /v1/people"). A charge is a single guarded INSERT into the ledger; the ledger trigger
 * applies it to the balance in the same statement and the CHECK on accounts forbids a negative
 * balance, so concurrent lookups can never overspend.
 */
import { sql } from "drizzle-orm";
import type { Database } from "./db/client.ts";

export type ChargeResult = { charged: true; balanceAfter: number } | { charged: false };

export async function chargeCredits(
  db: Database,
  accountId: string,
  cost: number,
  requestId: string,
): Promise<ChargeResult> {
  const rows = await db.all<{ balance_after: number }>(sql`
    insert into credit_ledger (account_id, delta, balance_after, reason, request_id)
    select id, ${-cost}, credit_balance - ${cost}, 'lookup', ${requestId}
    from accounts where id = ${accountId} and credit_balance >= ${cost}
    returning balance_after`);
  const row = rows[0];
  return row ? { charged: true, balanceAfter: Number(row.balance_after) } : { charged: false };
}

/** The statement that reads an account's balance, for use in a batch. */
export function balanceQuery(db: Database, accountId: string) {
  return db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
}
