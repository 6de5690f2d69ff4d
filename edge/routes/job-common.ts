/**
 * What the bulk-job routes share (edge/routes/jobs.ts, job-results.ts): the path, the OpenAPI tag, the messages, the
 * job id parameter and finding the caller's job.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { findJob, type JobRow } from "../jobs/store/job-rows.ts";
import { ApiError } from "../lib/errors.ts";

export const JOBS_PATH = "/v1/email_verification_jobs";
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1_000;
export { MAX_IDEMPOTENCY_KEY_LENGTH } from "../lib/idempotency.ts";
import { BAD_IDEMPOTENCY_KEY } from "../lib/idempotency.ts";

export const JOB_MESSAGES = {
  notFound: "No job found",
  idempotencyConflict: "This Idempotency-Key was already used for a different job",
  badIdempotencyKey: BAD_IDEMPOTENCY_KEY,
  badLimit: `limit must be an integer between 1 and ${MAX_PAGE}`,
  badCursor: "Invalid cursor",
  resultsExpired: "Job results have expired",
  badPurge: "purge must be true or false",
  badFilter: (name: string, value: string, allowed: readonly string[]) => `Unknown ${name} "${value}": expected one or more of ${allowed.join(", ")}, comma-separated`,
  tooManyRunning: (max: number) => `Too many jobs running: an account may have ${max} queued or running at once; wait for one to finish or cancel one`,
  dailyQuota: (max: number, used: number) =>
    `Daily line quota exceeded: an account may submit ${max.toLocaleString("en")} lines per 24 hours (JOB_MAX_LINES_PER_DAY); ${used.toLocaleString("en")} were submitted in the last 24 hours`,
  stillCreating: "The job with this Idempotency-Key is still being created; retry in a few seconds",
  childOfLookupJob: (lookupJobId: string) => `This verification job is the verify_emails phase of the lookup job ${lookupJobId}: cancel that job (DELETE /v1/lookup_jobs/${lookupJobId})`,
} as const;

export const json = (schema: z.ZodType, description: string) => ({ description, content: { "application/json": { schema } } });
/** The OpenAPI tag of the job operations and the job callback. */
export const JOBS_TAG = "Bulk verification jobs";

export const JobIdParam = z.object({ id: z.string().openapi({ example: "job_Qx3m9TtGkZ0lJ2rA" }) });

export async function jobOr404(c: Context<AppEnv>): Promise<JobRow> {
  const job = await findJob(requestDatabase(c), c.get("auth").accountId, c.req.param("id") ?? "");
  // Another account's job and no job at all look the same; so does a lookup job's verify_emails phase to a caller that
  // may not look people up (it holds the addresses that lookup job found: docs/lookup-jobs.md "Verified addresses").
  if (!job || (job.parent_job_id !== null && !c.get("auth").scopes.includes("people:read"))) throw new ApiError(404, JOB_MESSAGES.notFound);
  return job;
}

/** The job whose results are asked for: 410 once they were deleted (retention, or a purge). */
export async function jobWithResults(c: Context<AppEnv>): Promise<JobRow> {
  const job = await jobOr404(c);
  if (Number(job.results_state) > 0) throw new ApiError(410, JOB_MESSAGES.resultsExpired);
  return job;
}
