/**
 * The money room (docs/architecture.md): every statement on the credit ledger and the usage roll-up, and the account's
 * balance read with them. GET /v1/account's read: the account and its usage in one round trip.
 */
import { sql, type SQL } from "drizzle-orm";
import type { RawRow } from "../db/rows.ts";
import type { accounts } from "../db/schema.ts";
import { LINE_QUOTA_WINDOW_MS, linesSubmittedSince, runningJobCount } from "../jobs/store/job-creation.ts";

export type AccountRow = Pick<RawRow<typeof accounts.$inferSelect>, "id" | "name" | "status" | "credit_balance"> & {
  lookups_today: number;
  credits_today: number;
  lookups_month: number;
  credits_month: number;
  jobs_running: number;
  job_lines_24h: number;
};

/**
 * The account and its usage in one round trip: one pass over this month's charges, found by the
 * (account_id, reason, created_at) index (created_at is in ms), so an account with years of ledger
 * costs no more than one with a month.
 */
export function accountQuery(accountId: string, now: Date): SQL {
  const { dayStart, monthStart } = periodStarts(now);
  return sql`
      select a.id, a.name, a.status, a.credit_balance,
             u.lookups_today, u.credits_today, u.lookups_month, u.credits_month,
             ${runningJobCount(accountId)} as jobs_running,
             ${linesSubmittedSince(accountId, now.getTime() - LINE_QUOTA_WINDOW_MS)} as job_lines_24h
      from accounts a, (
        select count(*) filter (where created_at >= ${dayStart}) as lookups_today,
               coalesce(-sum(delta) filter (where created_at >= ${dayStart}), 0) as credits_today,
               count(*) as lookups_month,
               coalesce(-sum(delta), 0) as credits_month
        from credit_ledger where account_id = ${accountId} and reason = 'lookup' and created_at >= ${monthStart}) u
      where a.id = ${accountId}`;
}

/** The starts (UTC, ms) of the day and the month that `now` is in. */
export function periodStarts(now: Date): { dayStart: number; monthStart: number } {
  return {
    dayStart: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()),
    monthStart: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1),
  };
}
