/** GET /v1/account (docs/api.md, the section of that name): the calling key's account, its limits and its usage. */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { AccountInfo } from "../../shared/api.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { FAILED_AUTHENTICATION_LIMIT, RATE_LIMITS, type RateLimitPolicy } from "../rate-limits.ts";
import { accountQuery, periodStarts, type AccountRow } from "../money/account.ts";
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
