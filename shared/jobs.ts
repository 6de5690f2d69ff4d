/**
 * The bulk verification API's shapes (README "Bulk verification jobs"): the job, a page of its
 * results, and the messages the Worker sends itself over its queue. The handlers, the OpenAPI
 * document and the tests use these; field names are the contract.
 */
import { z } from "@hono/zod-openapi";
import { EmailVerificationResult } from "./api.ts";

export const JOB_STATUSES = ["queued", "running", "completed", "cancelled"] as const;

export const VerificationJob = z
  .object({
    id: z.string().openapi({ example: "job_Qx3m9TtGkZ0lJ2rA" }),
    status: z.enum(JOB_STATUSES),
    created_at: z.string().openapi({ description: "ISO 8601, UTC" }),
    completed_at: z.string().nullable().openapi({ description: "When the last address was answered, or the job cancelled" }),
    total: z.number().int().openapi({ description: "Input lines, duplicates and invalid ones included" }),
    processed: z.number().int().openapi({ description: "Input lines answered so far" }),
    counts: z.object({ valid: z.number().int(), risky: z.number().int(), invalid: z.number().int() }),
    smtp_timeout: z.number().int(),
    results_url: z.string().openapi({ example: "/v1/email_verification_jobs/job_Qx3m9TtGkZ0lJ2rA/results" }),
  })
  .openapi("VerificationJob");
export type VerificationJob = z.infer<typeof VerificationJob>;

export const JobResultsPage = z
  .object({
    results: z.array(EmailVerificationResult),
    next_cursor: z.string().nullable().openapi({ description: "Pass as cursor for the next page; null at the end of a finished job" }),
    status: z.enum(JOB_STATUSES),
    processed: z.number().int(),
    total: z.number().int(),
  })
  .openapi("JobResultsPage");
export type JobResultsPage = z.infer<typeof JobResultsPage>;

/** What the Worker puts on its queue: the database holds the work, a message only says where to look. */
export const JobMessage = z.discriminatedUnion("kind", [
  /** Check the claimable addresses of input lines [from, to) of a job. */
  z.object({ kind: z.literal("chunk"), job: z.string(), from: z.number().int().min(0), to: z.number().int().min(1) }),
  /** Deliver the job's callback; `attempt` counts deliveries tried before this one. */
  z.object({ kind: z.literal("callback"), job: z.string(), attempt: z.number().int().min(0) }),
]);
export type JobMessage = z.infer<typeof JobMessage>;
