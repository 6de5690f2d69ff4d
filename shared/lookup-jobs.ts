/**
 * The lookup jobs' shapes (docs/lookup-jobs.md): the job, a quote, a page of results, and the messages the Worker sends
 * itself over the lookup-jobs queue. The handlers, the OpenAPI document and the tests use these; field names are the
 * contract.
 */
import { z } from "@hono/zod-openapi";
import { ContactInfo, ERROR_REASONS, PEOPLE_INCLUDES } from "./api.ts";
import { LOOKUP_FIELDS } from "./identifiers.ts";
import { LOOKUP_JOB_LIMITS, LOOKUP_LINE_STATUSES } from "./lookup-job-limits.ts";

export { LOOKUP_JOB_CONTENT_TYPES, LOOKUP_JOB_LIMITS, LOOKUP_LINE_STATUSES, type LookupLineStatus } from "./lookup-job-limits.ts";

export const LOOKUP_JOBS_PATH = "/v1/lookup_jobs";

const en = (n: number) => n.toLocaleString("en");

export const LOOKUP_JOB_MESSAGES = {
  notFound: "No lookup job found",
  bodyTooLarge: `Request body too large: a lookup job is at most ${LOOKUP_JOB_LIMITS.maxBodyBytes / 1024 / 1024} MiB`,
  tooManyLines: `Too many lines: a lookup job has at most ${en(LOOKUP_JOB_LIMITS.maxLines)}`,
  unsupported: "Unsupported content type: send text/csv or application/jsonl (JSON Lines)",
  empty: "The list has no lines",
  noIdentifierColumn: `The CSV has no identifier column: name one of ${LOOKUP_FIELDS.join(", ")} in its header row, or say which column holds one with <identifier>_column=<header>`,
  noIdentifierField: `No line of the JSON Lines has an identifier: give each line one of ${LOOKUP_FIELDS.join(", ")}, or say which field holds one with <identifier>_column=<field>`,
  noSuchColumn: (param: string, name: string, header: readonly string[]) =>
    `${param} "${name.slice(0, 80)}": the header has no such column (it has: ${header.slice(0, 30).map((h) => h.slice(0, 40)).join(", ") || "nothing"})`,
  badColumnParam: (param: string) => `${param} must name a column of 1 to 256 characters`,
  notAnObject: (line: number) => `Line ${line}: each line of JSON Lines must be a JSON object`,
  badInclude: `include must be a comma-separated list of: ${PEOPLE_INCLUDES.join(", ")}`,
  badBoolean: (name: string) => `${name} must be true or false`,
  idempotencyConflict: "This Idempotency-Key was already used for a different lookup job",
  stillCreating: "The lookup job with this Idempotency-Key is still being created; retry in a few seconds",
  tooManyRunning: (max: number) => `Too many lookup jobs unfinished: an account may have ${max} queued, running or paused at once; wait for one to finish or cancel one`,
  badStatusFilter: (value: string) => `Unknown status "${value.slice(0, 40)}": expected one or more of ${LOOKUP_LINE_STATUSES.join(", ")}, comma-separated`,
  pausedForCredits: "The account's credit balance ran out: add credits and the job resumes by itself within a minute",
  pausedForCap: "The key's daily credit cap is spent for today (UTC): the job resumes by itself within a minute of the next UTC day, or of a grant that raises the cap's room",
  erased: "This person was erased after the line was answered; what was found is no longer kept (see GET /v1/people/erasures)",
} as const;

export const LOOKUP_JOB_STATUSES = ["queued", "running", "paused", "completed", "cancelled"] as const;
/** Why a job was cancelled: by its owner, by the pause limit, or with whoever made it (docs/lookup-jobs.md "The job object"). */
export const LOOKUP_JOB_CANCEL_REASONS = ["requested", "paused_too_long", "key_revoked", "key_expired", "member_removed"] as const;

const columnParams = Object.fromEntries(
  LOOKUP_FIELDS.map((name) => [
    `${name}_column`,
    z.string().optional().openapi({ description: `The header (CSV) or field (JSON Lines) that holds ${name}; naming any column turns the guess off` }),
  ]),
) as Record<`${(typeof LOOKUP_FIELDS)[number]}_column`, z.ZodOptional<z.ZodString>>;

/** The query of POST /v1/lookup_jobs: the body is the list itself (CSV or JSON Lines). */
export const LookupJobCreateQuery = z.object({
  ...columnParams,
  include: z.string().optional().openapi({ description: `Comma-separated additions to each line's data, of: ${PEOPLE_INCLUDES.join(", ")} (no extra credit)`, example: "email_details" }),
  verify_emails: z.string().optional().openapi({ description: "true: verify each returned address with our engine (a stored verification newer than LOOKUP_VERIFY_MAX_AGE_SECONDS is used instead of probing again); implies include=email_details" }),
  find_emails: z
    .string()
    .optional()
    .openapi({ description: "true: once every line is answered, each line with a name and a company_domain (or company) that the lookup gave no work address at that domain gets the email finder (GET /v1/email_finder), charged as that call is: LOOKUP_COST only when confirmed" }),
  min_confidence: z.string().optional().openapi({ description: "0-100, as GET /v1/people's: addresses below this confidence are left out of each line, and a line whose person is left with none is not_found and not charged", example: "50" }),
  dry_run: z.string().optional().openapi({ description: "true: answer the quote (200) and create nothing" }),
  callback_url: z.string().optional().openapi({ description: "An https URL that receives the finished job, signed (Standard Webhooks)" }),
  retention_seconds: z.string().optional().openapi({ description: "Keep the results this long after the job ends, 0..JOB_RETENTION_SECONDS (default thirty days)", example: "86400" }),
});

export const LookupJobQuote = z
  .object({
    format: z.enum(["csv", "jsonl"]),
    columns: z.record(z.string(), z.string()).openapi({ description: "Each identifier read, and the header (CSV) or field (JSON Lines) it is read from", example: { profnet_public_identifier: "LinkedIn" } }),
    lines: z.number().int().openapi({ description: "Every line of the list (a CSV's header row is not one)" }),
    well_formed: z.number().int().openapi({ description: "Lines whose identifiers pass GET /v1/people's rules" }),
    invalid: z.number().int().openapi({ description: "Lines that do not: answered invalid, never charged" }),
    repeated: z.number().int().openapi({ description: "Well-formed lines that ask for the same identifiers as an earlier line (a person is charged once per job)" }),
    cost_per_line: z.number().int().openapi({ description: "LOOKUP_COST: credits per line that finds someone not found before in the job" }),
    find_lines: z.number().int().optional().openapi({ description: "With find_emails only: the distinct names at a company that the finder may charge for (at most cost_per_line each, only when confirmed)" }),
    max_credits: z.number().int().openapi({ description: "The most the job can cost: (well_formed - repeated + find_lines) x cost_per_line (find_lines 0 without find_emails). The job never charges more" }),
    credit_balance: z.number().int(),
  })
  .openapi("LookupJobQuote");
export type LookupJobQuote = z.infer<typeof LookupJobQuote>;

export const LookupJob = z
  .object({
    id: z.string().openapi({ example: "lkj_Qx3m9TtGkZ0lJ2rA" }),
    status: z.enum(LOOKUP_JOB_STATUSES),
    pause: z
      .object({
        reason: z.enum(["insufficient_credits", "daily_credit_cap"]),
        message: z.string(),
        since: z.string().openapi({ description: "RFC 3339, UTC" }),
      })
      .nullable()
      .openapi({ description: "While paused: why, and since when; null otherwise" }),
    cancel_reason: z
      .enum(LOOKUP_JOB_CANCEL_REASONS)
      .nullable()
      .openapi({
        description:
          "Once cancelled, why: requested (DELETE), paused_too_long (paused for LOOKUP_JOB_MAX_PAUSE_SECONDS), key_revoked, key_expired or member_removed (whoever made it can no longer act: its jobs stop with it); null otherwise, and for jobs cancelled before 1.11",
      }),
    created_at: z.string(),
    completed_at: z.string().nullable().openapi({ description: "When the job completed or was cancelled" }),
    total: z.number().int().openapi({ description: "Lines of the list" }),
    processed: z.number().int().openapi({ description: "Lines answered for good: found + not_found + invalid + erased" }),
    counts: z
      .object({
        found: z.number().int(),
        not_found: z.number().int(),
        invalid: z.number().int(),
        refused: z.number().int().openapi({ description: "Lines that found someone but could not be charged (the balance or the key's cap): the job pauses, and they are looked up again when it resumes; a cancelled job keeps them refused" }),
        erased: z.number().int().openapi({ description: "Lines whose person was erased after they were answered: their data is no longer kept" }),
      })
      .openapi({ description: "Lines by outcome, kept in the same writes as the answers" }),
    credits: z.object({
      cost_per_line: z.number().int().openapi({ description: "LOOKUP_COST when the job was created: what each charged line costs" }),
      max: z.number().int().openapi({ description: "The most the job can cost (its quote)" }),
      charged: z.number().int().openapi({ description: "Credits charged so far" }),
    }),
    input: z.object({
      format: z.enum(["csv", "jsonl"]),
      columns: z.record(z.string(), z.string()).openapi({ description: "Each identifier read, and the header or field it is read from" }),
    }),
    include: z.array(z.enum(PEOPLE_INCLUDES)),
    verify_emails: z.boolean(),
    min_confidence: z.number().int().nullable().openapi({ description: "The job's min_confidence: addresses below it were left out (null: none)" }),
    verification: z
      .object({
        state: z.enum(["pending", "verifying", "done"]).openapi({ description: "pending until every line is answered; verifying while its verification job runs; done" }),
        job_id: z.string().nullable().openapi({ description: "The verification job that checks the addresses no stored verification covers (one of this account's bulk verification jobs); null when none was needed" }),
        stored_verdicts_used: z.number().int().openapi({ description: "Addresses answered from a verification of ours newer than max_age_seconds, without probing again" }),
        max_age_seconds: z.number().int(),
      })
      .nullable()
      .openapi({ description: "With verify_emails: where the verification stands; null without it" }),
    find_emails: z.boolean(),
    finder: z
      .object({ state: z.enum(["pending", "finding", "done"]).openapi({ description: "pending until every line is answered; finding while the finder looks at the lines due; done" }) })
      .nullable()
      .openapi({ description: "With find_emails: where the finder stands; null without it" }),
    results_url: z.string(),
    retention_seconds: z.number().int(),
    results_expired: z.boolean(),
    results_delete_at: z.string().nullable().openapi({ description: "When the lines and results will be deleted (RFC 3339), by the verification jobs' rule; null while the job has not ended" }),
  })
  .openapi("LookupJob");
export type LookupJob = z.infer<typeof LookupJob>;

/** find_emails: a line's finder answer (edge/jobs/lookup/find-emails.ts), as GET /v1/email_finder's. */
export const LookupJobFind = z
  .object({
    status: z
      .enum(["found", "not_found", "not_needed", "error", "erased"])
      .openapi({ description: "not_needed: the lookup already gave a work address at the domain; error: the finder refused the line (error says why); erased: the address found was an erased person's, and is no longer kept" }),
    email: z.string().optional(),
    confidence: z.number().int().optional(),
    method: z.enum(["known_address", "pattern", "receiver_accepted"]).optional(),
    confirmed: z.boolean().optional().openapi({ description: "As GET /v1/email_finder's: only a confirmed answer is charged" }),
    accept_all: z.boolean().nullable().optional(),
    credits_charged: z.number().int().optional().openapi({ description: "What this find cost: cost_per_line when confirmed, 0 when not or a repeat within 30 days" }),
    error: z.string().optional(),
    reason: z.enum(ERROR_REASONS).optional(),
  })
  .openapi("LookupJobFind");
export type LookupJobFind = z.infer<typeof LookupJobFind>;

export const LookupJobResult = z
  .object({
    line: z.number().int().openapi({ description: "The line's number in the list, from 1 (a CSV's header row not counted)" }),
    status: z.enum(LOOKUP_LINE_STATUSES),
    input: z.record(z.string(), z.unknown()).openapi({ description: "The line as given: a CSV row by its columns' names (a column without a name as column_<n>, a repeated name with \" (2)\"), or the JSON Lines object" }),
    data: ContactInfo.optional().openapi({ description: "With found" }),
    error: z.string().optional().openapi({ description: "With any other status: the message GET /v1/people would give (or why the line was erased)" }),
    reason: z.enum(ERROR_REASONS).optional().openapi({ description: "daily_credit_cap with a refused line the key's cap refused" }),
    find: LookupJobFind.optional().openapi({ description: "find_emails: what the finder answered for this line, once it looked at it" }),
  })
  .openapi("LookupJobResult");
export type LookupJobResult = z.infer<typeof LookupJobResult>;

export const LookupJobResultsPage = z
  .object({
    results: z.array(LookupJobResult),
    next_cursor: z.string().nullable(),
    status: z.enum(LOOKUP_JOB_STATUSES),
    processed: z.number().int(),
    total: z.number().int(),
  })
  .openapi("LookupJobResultsPage");
export type LookupJobResultsPage = z.infer<typeof LookupJobResultsPage>;

