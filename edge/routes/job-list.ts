/**
 * GET /v1/email_verification_jobs (docs/jobs.md "Listing jobs"): the account's jobs, newest first,
 * each as GET /v1/email_verification_jobs/{id} answers it but for the queue figures that need a
 * count of the job's lines (lines_in_progress, accounts_sharing, waiting_on): those read 0 here, so
 * a list of many jobs stays one indexed read (verification_jobs_account_created_idx).
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { JOB_LIMITS, VerificationJob } from "../../shared/jobs.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { jobJson, listJobs } from "../jobs/store/job-rows.ts";
import { ApiError } from "../lib/errors.ts";
import { pageLimit } from "../lib/paging.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { JOBS_PATH, JOBS_TAG } from "./jobs.ts";
import { access } from "./access.ts";

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

export const JOB_LIST_MESSAGES = {
  badLimit: `Invalid parameter limit: must be an integer between 1 and ${MAX_LIMIT}`,
  badBefore: "Invalid parameter before: not a job id",
  badName: `Invalid parameter name: at most ${JOB_LIMITS.maxNameChars} characters`,
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
  summary: "The account's bulk verification jobs, newest first; searched by name",
  description: "Each job as its own read answers it, without the queue figures that count its lines; with name, only the jobs whose name holds it. Counts against the job_reads rate limit.",
  ...access({ who: { scope: "jobs:read" }, limits: ["job_reads"] }),
  request: {
    query: z.object({
      limit: z.string().optional().openapi({ description: `1..${MAX_LIMIT}, default ${DEFAULT_LIMIT}` }),
      before: z.string().optional().openapi({ description: "next_before of the previous page" }),
      name: z.string().optional().openapi({ description: "Only the jobs whose name holds this text (ASCII letters compared without case; a job without a name is searched by its id)", example: "crm-export" }),
    }),
  },
  responses: {
    200: { description: "A page of jobs", content: { "application/json": { schema: JobList } } },
    400: errorResponse(`${JOB_LIST_MESSAGES.badLimit}; ${JOB_LIST_MESSAGES.badBefore}; or ${JOB_LIST_MESSAGES.badName}`),
    ...authenticatedErrorResponses,
  },
});

export function registerJobListRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(listRoute, async (c) => {
    const { limit: rawLimit, before, name: rawName } = c.req.valid("query");
    const limit = pageLimit(rawLimit, { defaultLimit: DEFAULT_LIMIT, maxLimit: MAX_LIMIT, badLimit: JOB_LIST_MESSAGES.badLimit });
    if (before !== undefined && !/^job_[A-Za-z0-9_-]{1,64}$/.test(before)) throw new ApiError(400, JOB_LIST_MESSAGES.badBefore);
    const name = rawName?.trim() || undefined;
    if (name !== undefined && name.length > JOB_LIMITS.maxNameChars) throw new ApiError(400, JOB_LIST_MESSAGES.badName);
    const { jobs, more } = await listJobs(requestDatabase(c), c.get("auth").accountId, before, limit, name);
    return c.json({ jobs: jobs.map(jobJson), next_before: more ? jobs.at(-1)!.id : null }, 200);
  });
}
