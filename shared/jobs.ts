/**
 * The bulk verification API's shapes (docs/jobs.md "Bulk verification jobs"): the job, a page of its
 * results, and the messages the Worker sends itself over its queue. The handlers, the OpenAPI
 * document and the tests use these; field names are the contract.
 */
import { z } from "@hono/zod-openapi";
import { CLASSIFICATIONS, EmailVerificationResult, ERROR_MESSAGES, VERIFICATION_REASONS } from "./api.ts";
import { isShowable } from "./display-name.ts";
import { CSV_LINE_ERRORS, JOB_LIMITS } from "./job-limits.ts";

export { JOB_LIMITS } from "./job-limits.ts";

export const JOB_INPUT_ERRORS = {
  bodyTooLarge: `Request body too large: a job is at most ${JOB_LIMITS.maxBodyBytes / 1024 / 1024} MB`,
  tooManyAddresses: `Too many addresses: a job has at most ${JOB_LIMITS.maxAddresses.toLocaleString("en")}`,
  empty: "The job has no addresses",
  notAnObject: "The JSON body must be an object",
  required: "The email_addresses parameter is required",
  notAnArray: "email_addresses must be an array of strings",
  unsupported: "Unsupported content type: send application/json or text/csv",
  callbackNotAUrl: "callback_url must be a URL",
  retentionNotAnInteger: "retention_seconds must be an integer number of seconds",
  retentionRange: (max: number) => `retention_seconds must be an integer between 0 and ${max}`,
  csvLineTooLong: (line: number) => `Line ${line}: an address is at most ${JOB_LIMITS.maxLineBytes} bytes`,
  jsonLineTooLong: (index: number) => `email_addresses[${index}]: an address is at most ${JOB_LIMITS.maxLineBytes} bytes`,
  csvRecordTooLong: CSV_LINE_ERRORS.tooLong,
  csvTooManyColumns: CSV_LINE_ERRORS.tooManyColumns,
  malformedCsv: CSV_LINE_ERRORS.malformed,
  emptyFile: "The file is empty",
  /** `detail` is shared/address-column.ts noAddressColumn's sentence, which names the columns. */
  noAddressColumn: (detail: string) => `${detail}. Name the column that holds the addresses with email_column`,
  emailColumnNotCsv: "email_column is for a CSV file: the addresses of a JSON body are its email_addresses",
  badName: `name must be 1 to ${JOB_LIMITS.maxNameChars} characters, without control characters`,
} as const;

/** A job's name: trimmed, 1 to JOB_LIMITS.maxNameChars characters, showable (as a member's or a key's name). */
export const JobName = z
  .string({ error: JOB_INPUT_ERRORS.badName })
  .trim()
  .min(1, JOB_INPUT_ERRORS.badName)
  .max(JOB_LIMITS.maxNameChars, JOB_INPUT_ERRORS.badName)
  .refine(isShowable, JOB_INPUT_ERRORS.badName)
  .openapi({ description: `What the job is called: 1 to ${JOB_LIMITS.maxNameChars} characters; lists are listed and searched by it, and downloads are named after it`, example: "crm-export-2026-11.csv" });

const utf8 = new TextEncoder();
/** Whether `text` takes more than JOB_LIMITS.maxLineBytes in UTF-8, without encoding a short one. */
export function overLineLimit(text: string): boolean {
  // A UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair, two units, is 4).
  if (text.length * 3 <= JOB_LIMITS.maxLineBytes) return false;
  if (text.length > JOB_LIMITS.maxLineBytes) return true;
  return utf8.encode(text).byteLength > JOB_LIMITS.maxLineBytes;
}

/** smtp_timeout as the verification routes take it: integer seconds, or a string of them (checked by the route, as a query value is). */
const outOfRange = { error: ERROR_MESSAGES.smtpTimeoutRange };
const SmtpTimeoutParam = z
  .union([z.number(outOfRange).int(outOfRange).min(1, outOfRange).max(60, outOfRange), z.string()], outOfRange)
  .openapi({ description: "Integer seconds 1..60, default 10", example: 10 });

/**
 * The JSON body of POST /v1/email_verification_jobs: this schema parses it (edge/jobs/verification/input.ts)
 * and documents it (OpenAPI). A CSV upload carries the addresses as a file and the two parameters
 * in the query (JobCreateQuery); a query value wins over the body's.
 */
export const JobCreateRequest = z
  .object(
    {
      email_addresses: z
        .array(z.string({ error: JOB_INPUT_ERRORS.notAnArray }), {
          error: (issue) => (issue.input === undefined ? JOB_INPUT_ERRORS.required : JOB_INPUT_ERRORS.notAnArray),
        })
        .max(JOB_LIMITS.maxAddresses, { error: JOB_INPUT_ERRORS.tooManyAddresses })
        .superRefine((list, ctx) => {
          const index = list.findIndex(overLineLimit);
          if (index >= 0) ctx.addIssue({ code: "custom", path: [index], message: JOB_INPUT_ERRORS.jsonLineTooLong(index) });
        })
        .openapi({
          description: `The addresses, one per line of the job, in order; 1 to ${JOB_LIMITS.maxAddresses.toLocaleString("en")}, each at most ${JOB_LIMITS.maxLineBytes} bytes of UTF-8. Repeats are checked once; a line that fails the syntax check is answered invalid in place.`,
          example: ["ana@example.com", "ben@example.org"],
        }),
      smtp_timeout: SmtpTimeoutParam.optional(),
      name: JobName.optional(),
      retention_seconds: z
        .union([z.number(), z.string()], { error: JOB_INPUT_ERRORS.retentionNotAnInteger })
        .optional()
        .openapi({ description: "Keep the results this long after the job ends, 0..JOB_RETENTION_SECONDS (default 2,592,000, thirty days); 0: until the callback was delivered, or one hour", example: 86400 }),
      callback_url: z
        .string({ error: JOB_INPUT_ERRORS.callbackNotAUrl })
        .nullable()
        .optional()
        .openapi({ description: "An https URL that receives the finished job, signed (Standard Webhooks)", example: "https://example.com/hooks/verification" }),
    },
    { error: JOB_INPUT_ERRORS.notAnObject },
  )
  .openapi("JobCreateRequest");
export type JobCreateRequest = z.infer<typeof JobCreateRequest>;

/** The query of POST /v1/email_verification_jobs: the parameters of a CSV upload, or overrides of the JSON body's. */
export const JobCreateQuery = z.object({
  smtp_timeout: z.string().optional().openapi({ description: "Integer seconds 1..60, default 10", example: "10" }),
  email_column: z.string().optional().openapi({
    description:
      "For a CSV file: the column that holds the addresses, by its name in the first row or its 1-based number. Without it: the first column named like an address (email, e-mail address, work email…), else the column whose cells look like addresses; a file with neither is 400 naming its columns",
    example: "E-mail address",
  }),
  name: z.string().optional().openapi({ description: `The job's name, 1 to ${JOB_LIMITS.maxNameChars} characters (default: the job's id)`, example: "crm-export-2026-11.csv" }),
  callback_url: z.string().optional().openapi({ description: "As in the JSON body" }),
  retention_seconds: z.string().optional().openapi({ description: "As in the JSON body", example: "86400" }),
});

export const JOB_STATUSES = ["queued", "running", "completed", "cancelled"] as const;
/** Why a job was cancelled: by its owner, with whoever made it, or with the lookup job whose verify_emails phase it was. */
export const JOB_CANCEL_REASONS = ["requested", "key_revoked", "key_expired", "member_removed", "lookup_job_cancelled"] as const;

export const VerificationJob = z
  .object({
    id: z.string().openapi({ example: "job_Qx3m9TtGkZ0lJ2rA" }),
    name: z.string().openapi({ description: "What the job is called: the name given at creation (the console gives the file's name), else its id", example: "crm-export-2026-11.csv" }),
    columns: z.array(z.string()).openapi({
      description:
        "The columns of the CSV file the job keeps with every line, in the file's order, as results name them (a column without a name is column_<n>, a repeated name gets \" (2)\"); empty for a JSON list or a file of one column",
      example: ["Name", "E-mail address", "Company"],
    }),
    email_column: z.string().nullable().openapi({ description: "Which of columns held the addresses; null for a JSON list or a file of one column", example: "E-mail address" }),
    status: z.enum(JOB_STATUSES),
    cancel_reason: z.enum(JOB_CANCEL_REASONS).nullable().openapi({
      description:
        "Once cancelled, why: requested (DELETE), key_revoked, key_expired or member_removed (whoever made it can no longer act: its jobs stop with it); null otherwise, and for jobs cancelled before 1.11",
    }),
    created_at: z.string().openapi({ description: "ISO 8601, UTC" }),
    completed_at: z.string().nullable().openapi({ description: "When the last address was answered, or the job cancelled" }),
    total: z.number().int().openapi({ description: "Input lines, duplicates and invalid ones included" }),
    processed: z.number().int().openapi({ description: "Input lines answered so far" }),
    counts: z.object({ valid: z.number().int(), risky: z.number().int(), invalid: z.number().int() }),
    summary: z
      .object({
        classification: z.object({ valid: z.number().int(), risky: z.number().int(), invalid: z.number().int() }),
        reason: z.record(z.string(), z.number().int()).openapi({
          description: "Answered lines by reason: every value of VerificationReason (0 included), and any reason added later",
          example: { deliverable: 120, mailbox_not_found: 31, catch_all: 9, syntax: 2 },
        }),
      })
      .openapi({ description: "Answered lines by classification and by reason, kept in the same writes as the answers" }),
    queue: z
      .object({
        lines_waiting: z.number().int().openapi({ description: "Lines not answered and not in a consumer's hands: waiting for a turn, or for their recheck" }),
        lines_in_progress: z.number().int().openapi({ description: "Lines a consumer holds now (being checked)" }),
        accounts_sharing: z.number().int().openapi({ description: "Accounts with unfinished jobs now: turns go round them equally, so this job's account gets 1/accounts_sharing of the capacity" }),
        waiting_on: z.record(z.string(), z.number().int()).openapi({
          description:
            "Addresses parked because the receiving servers' budget for this account is spent, by receiver family (docs/jobs.md \"Waiting on a receiver\"): each is asked again when the budget has room, or answered risky, receiver_budget_spent, once it has waited JOB_RECEIVER_WAIT_MAX_SECONDS; empty when none waits",
          example: { google: 1200 },
        }),
        estimated_completion_at: z.string().nullable().openapi({
          description: "When the job should be done, roughly (RFC 3339, UTC): the lines not parked at the rate it has answered lines so far, the parked ones not before the last is due again; null when there is nothing to go by yet, or once the job has ended",
        }),
      })
      .openapi({ description: "Where the job stands in the scheduling (0 once it has ended); read with the job, as of the read" }),
    smtp_timeout: z.number().int(),
    results_url: z.string().openapi({ example: "/v1/email_verification_jobs/job_Qx3m9TtGkZ0lJ2rA/results" }),
    retention_seconds: z.number().int().openapi({
      description: "How long after the job ends its lines and results are kept (0: until its callback was delivered, or one hour without one); then they are deleted and the results endpoints answer 410",
    }),
    results_expired: z.boolean().openapi({ description: "true once the results were deleted (retention, or DELETE with purge=true); counts and summary stay" }),
    results_delete_at: z.string().nullable().openapi({
      description:
        "When the lines and results will be deleted (RFC 3339, UTC): completed_at plus retention_seconds; with retention_seconds 0, one hour after completed_at without a callback, and completed_at once the callback was delivered or given up. A time in the past means the deletion is due: the cron's next run makes it. null while the job runs, while a retention_seconds 0 job's callback is still being delivered, and once the results are deleted",
      example: "2026-12-23T10:00:04.000Z",
    }),
  })
  .openapi("VerificationJob");
export type VerificationJob = z.infer<typeof VerificationJob>;

/** One line's result in a job: the verification result, and when it was answered. */
export const JobResult = EmailVerificationResult.extend({
  checked_at: z.string().openapi({ description: "When the line was answered (RFC 3339, UTC)", example: "2026-11-25T04:12:09.512Z" }),
  columns: z.record(z.string(), z.string()).openapi({
    description: "The line's cells in the job's kept columns (the job's columns, in that order; a cell the line lacks is \"\"); {} for a JSON list or a file of one column",
    example: { Name: "Ada Lovelace", "E-mail address": "ada@example.com", Company: "Analytical Engines" },
  }),
}).openapi("JobResult");
export type JobResult = z.infer<typeof JobResult>;

/** The filters of GET /v1/email_verification_jobs/{id}/results: comma-separated lists of values. */
export const JOB_RESULT_FILTERS = { classification: CLASSIFICATIONS, reason: VERIFICATION_REASONS } as const;

export const JobResultsPage = z
  .object({
    results: z.array(JobResult),
    next_cursor: z.string().nullable().openapi({ description: "Pass as cursor for the next page; null at the end of a finished job" }),
    status: z.enum(JOB_STATUSES),
    processed: z.number().int(),
    total: z.number().int(),
  })
  .openapi("JobResultsPage");
export type JobResultsPage = z.infer<typeof JobResultsPage>;

/** The kinds of job the one engine runs (edge/jobs/kinds.ts): a list of addresses verified, a list of people looked up. */
export const JOB_KINDS = ["verification", "lookup"] as const;
export type JobKind = (typeof JOB_KINDS)[number];

/**
 * What a job's message asks (edge/jobs/consumer.ts): a turn of its lines (for whichever job of the kind is next: the
 * fair share); a paused job's look at what it waits for (resume); its phase after the lines (a lookup job's
 * verify_emails, woken by its verification job's end); its callback (`attempt`: deliveries tried before this one).
 */
export const JOB_MESSAGE_TYPES = ["turn", "resume", "phase", "callback"] as const;

const jobMessage = <K extends JobKind>(kind: K) =>
  z.object({ kind: z.literal(kind), type: z.enum(JOB_MESSAGE_TYPES), job: z.string(), attempt: z.number().int().min(0).optional() });

/**
 * What the Worker puts on its two queues (the verification jobs' and the lookup jobs': one schema for both): the
 * database holds the work, a message only says where to look. The jobs queue also carries people events' deliveries
 * (docs/api.md "People events"), retried as callbacks are.
 */
export const JobMessage = z.discriminatedUnion("kind", [
  jobMessage("verification"),
  jobMessage("lookup"),
  z.object({ kind: z.literal("people_event"), event: z.string(), attempt: z.number().int().min(0) }),
]);
export type JobMessage = z.infer<typeof JobMessage>;
export type JobKindMessage = Extract<JobMessage, { kind: JobKind }>;

/** The forms messages had before 1.11: one still on a queue after an upgrade is read as the message it meant. */
const LegacyJobMessage = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("work"), job: z.string() }),
  z.object({ kind: z.literal("chunk"), job: z.string() }),
  z.object({ kind: z.literal("callback"), job: z.string(), attempt: z.number().int().min(0) }),
  z.object({ kind: z.literal("lookup_turn"), job: z.string() }),
  z.object({ kind: z.literal("lookup_resume"), job: z.string() }),
  z.object({ kind: z.literal("lookup_verify"), job: z.string() }),
  z.object({ kind: z.literal("lookup_callback"), job: z.string(), attempt: z.number().int().min(0) }),
]);
const LEGACY: Record<z.infer<typeof LegacyJobMessage>["kind"], [JobKind, (typeof JOB_MESSAGE_TYPES)[number]]> = {
  work: ["verification", "turn"],
  chunk: ["verification", "turn"],
  callback: ["verification", "callback"],
  lookup_turn: ["lookup", "turn"],
  lookup_resume: ["lookup", "resume"],
  lookup_verify: ["lookup", "phase"],
  lookup_callback: ["lookup", "callback"],
};

/** A delivered message's body as a JobMessage (an earlier form read as what it meant), or null: not ours to understand. */
export function readJobMessage(body: unknown): JobMessage | null {
  const parsed = JobMessage.safeParse(body);
  if (parsed.success) return parsed.data;
  const legacy = LegacyJobMessage.safeParse(body);
  if (!legacy.success) return null;
  const [kind, type] = LEGACY[legacy.data.kind];
  return { kind, type, job: legacy.data.job, ...("attempt" in legacy.data ? { attempt: legacy.data.attempt } : {}) };
}
