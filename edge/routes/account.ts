/** GET /v1/account (docs/api.md, the section of that name): the calling key's account, its limits and its usage. */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { sql, type SQL } from "drizzle-orm";
import { AccountInfo } from "../../shared/api.ts";
import { requestDatabase } from "../db/client.ts";
import type { RawRow } from "../db/rows.ts";
import type { accounts } from "../db/schema.ts";
import type { AppEnv } from "../env.ts";
import { FAILED_AUTHENTICATION_LIMIT, RATE_LIMITS, type RateLimitPolicy } from "../rate-limits.ts";
import { LINE_QUOTA_WINDOW_MS, linesSubmittedSince, runningJobCount } from "../jobs/store/job-creation.ts";
import { authenticatedErrorResponses } from "./responses.ts";
import { access } from "./access.ts";

export const accountRoute = createRoute({
  method: "get",
  path: "/v1/account",
  operationId: "getAccount",
  tags: ["Account"],
  summary: "The calling key's account: balance, rate limits and usage",
  description:
    "Usage is read from the credit ledger: lookups charged and credits spent since the start of the day and of the month (UTC). " +
    "jobs gives the bulk-job limits and where the account stands against them. " +
    "Counts against the key's lookup rate limit.",
  ...access({ who: { scope: "account:read" }, limits: ["account"] }),
  responses: {
    200: { description: "The account", content: { "application/json": { schema: AccountInfo } } },
    ...authenticatedErrorResponses,
  },
});

function describeLimit(policy: RateLimitPolicy, per: "key" | "client_address") {
  return { limit: policy.limit, period_seconds: policy.periodSeconds, per };
}

type AccountRow = Pick<RawRow<typeof accounts.$inferSelect>, "id" | "name" | "status" | "credit_balance"> & {
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
function periodStarts(now: Date): { dayStart: number; monthStart: number } {
  return {
    dayStart: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()),
    monthStart: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1),
  };
}

export function registerAccountRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(accountRoute, async (c) => {
    const { accountId } = c.get("auth");
    const now = new Date();
    const [row] = await requestDatabase(c).all<AccountRow>(accountQuery(accountId, now));
    const { dayStart, monthStart } = periodStarts(now);
    // The key was found through its account moments ago (or up to a minute ago, from the cache).
    if (!row) throw new Error("The authenticated key's account is missing");
    const body: AccountInfo = {
      account_id: row.id,
      name: row.name,
      status: row.status,
      credit_balance: Number(row.credit_balance),
      rate_limits: {
        verification: describeLimit(RATE_LIMITS.verification, "key"),
        lookup: describeLimit(RATE_LIMITS.lookup, "key"),
        bulk_lookup: describeLimit(RATE_LIMITS.bulk_lookup, "key"),
        account: describeLimit(RATE_LIMITS.account, "key"),
        job_creation: describeLimit(RATE_LIMITS.job_creation, "key"),
        job_reads: describeLimit(RATE_LIMITS.job_reads, "key"),
        feedback: describeLimit(RATE_LIMITS.feedback, "key"),
        failed_authentication: describeLimit(FAILED_AUTHENTICATION_LIMIT, "client_address"),
      },
      usage: {
        today: { since: new Date(dayStart).toISOString(), lookups_charged: Number(row.lookups_today), credits_spent: Number(row.credits_today) },
        this_month: { since: new Date(monthStart).toISOString(), lookups_charged: Number(row.lookups_month), credits_spent: Number(row.credits_month) },
      },
      jobs: {
        max_running: c.get("config").JOB_MAX_RUNNING,
        running: Number(row.jobs_running),
        max_lines_per_24h: c.get("config").JOB_MAX_LINES_PER_DAY,
        lines_last_24h: Number(row.job_lines_24h),
      },
    };
    return c.json(body, 200);
  });
}
