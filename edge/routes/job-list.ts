/**
 * GET /v1/email_verification_jobs (docs/jobs.md "Listing jobs"): the account's jobs, newest first,
 * each as GET /v1/email_verification_jobs/{id} answers it but for the queue figures that need a
 * count of the job's lines (lines_in_progress, accounts_sharing, waiting_on): those read 0 here, so
 * a list of many jobs stays one indexed read (verification_jobs_account_created_idx).
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import { VerificationJob } from "../../shared/jobs.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { jobJson, type JobRow } from "../jobs/store/job-rows.ts";
import { ApiError } from "../lib/errors.ts";
import { scoped } from "../identity/scopes.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { JOBS_PATH, JOBS_TAG } from "./jobs.ts";

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

export const JOB_LIST_MESSAGES = {
  badLimit: `Invalid parameter limit: must be an integer between 1 and ${MAX_LIMIT}`,
  badBefore: "Invalid parameter before: not a job id",
} as const;

export const JobList = z
  .object({
    jobs: z.array(VerificationJob).openapi({ description: "Newest first; queue.lines_in_progress, accounts_sharing and waiting_on read 0 in a list (read the job for them)" }),
    next_before: z.string().nullable().openapi({ description: "Pass as before for older jobs; null when there are none" }),
  })
  .openapi("VerificationJobList");

const listRoute = createRoute({
  method: "get",
  path: JOBS_PATH,
  operationId: "listVerificationJobs",
  tags: [JOBS_TAG],
  summary: "The account's bulk verification jobs, newest first",
  description: "Each job as its own read answers it, without the queue figures that count its lines. Counts against the job_reads rate limit.",
  ...scoped("jobs:read"),
  request: {
    query: z.object({
      limit: z.string().optional().openapi({ description: `1..${MAX_LIMIT}, default ${DEFAULT_LIMIT}` }),
      before: z.string().optional().openapi({ description: "next_before of the previous page" }),
    }),
  },
  responses: {
    200: { description: "A page of jobs", content: { "application/json": { schema: JobList } } },
    400: errorResponse(`${JOB_LIST_MESSAGES.badLimit}; or ${JOB_LIST_MESSAGES.badBefore}`),
    ...authenticatedErrorResponses,
  },
});

export function registerJobListRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(listRoute, async (c) => {
    const { limit: rawLimit, before } = c.req.valid("query");
    const limit = rawLimit === undefined ? DEFAULT_LIMIT : Number(rawLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new ApiError(400, JOB_LIST_MESSAGES.badLimit);
    if (before !== undefined && !/^job_[A-Za-z0-9_-]{1,64}$/.test(before)) throw new ApiError(400, JOB_LIST_MESSAGES.badBefore);
    const { accountId } = c.get("auth");
    // Newest first by (created_at, id); `before` is a job of this account, found in the same statement.
    const cursor = before === undefined ? sql`` : sql`and (created_at, id) < (select created_at, id from verification_jobs where id = ${before} and account_id = ${accountId})`;
    const rows = await requestDatabase(c).all<JobRow>(sql`select id, account_id, status, total, processed, valid_count, risky_count, invalid_count, reason_counts,
      smtp_timeout, callback_url, callback_state, callback_attempts, request_hash, created_at, completed_at, updated_at, retention_seconds, results_state, started_at
      from verification_jobs where account_id = ${accountId} and creating = 0 ${cursor} order by created_at desc, id desc limit ${limit + 1}`);
    const page = rows.slice(0, limit);
    return c.json({ jobs: page.map(jobJson), next_before: rows.length > limit ? page.at(-1)!.id : null }, 200);
  });
}
