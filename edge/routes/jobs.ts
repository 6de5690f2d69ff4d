/**
 * Bulk verification jobs (docs/jobs.md "Bulk verification jobs"): create from JSON or CSV, read the job,
 * read its results in input order (JSON pages or CSV) while it runs, cancel it. The work itself
 * runs on the queue (edge/jobs/consumer.ts); the database is the source of truth.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { EmailVerificationResult } from "../../shared/api.ts";
import { JOB_INPUT_ERRORS, JOB_LIMITS, JOB_RESULT_FILTERS, JobCreateQuery, JobCreateRequest, JobResultsPage, VerificationJob, type JobResult } from "../../shared/jobs.ts";
import { limitRequestBody } from "../body-limit.ts";
import { openRequestDatabase, requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { CALLBACK_RETRY_DELAYS_SECONDS, CALLBACK_TIMEOUT_MS, checkCallbackUrl } from "../jobs/callback.ts";
import { enqueueTurns } from "../jobs/queue.ts";
import { csvHeader, csvRow, lineEmail } from "../jobs/csv-export.ts";
import { parseJobBody, parseRetentionSeconds } from "../jobs/input.ts";
import { purgeResults } from "../jobs/retention.ts";
import { giveUpCreate, startJob, writeJobLines, type NewLine } from "../jobs/store/job-creation.ts";
import { cancelJob, findJob, jobJson, type JobRow } from "../jobs/store/job-rows.ts";
import { doneRowsQuery, firstUnansweredQuery, resultRowsQuery, type ResultFilter, type ResultRow } from "../jobs/store/lines.ts";
import { mxProvider } from "../../shared/email/mx-providers.ts";
import { verificationReason } from "../../shared/email/verdict.ts";
import { ApiError } from "../lib/errors.ts";
import { newId } from "../lib/tokens.ts";
import { writeLog, describeError } from "../log.ts";
import { parseSmtpTimeout } from "../verification-params.ts";
import { newLines } from "../jobs/new-lines.ts";
import { requireScope, scoped, scopeSecurity } from "../scopes.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { cursorPaging } from "../lib/paging.ts";

export const JOBS_PATH = "/v1/email_verification_jobs";
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1_000;
const CSV_PAGE = 1_000;
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** A job's lines are written with this many times DATABASE_TIMEOUT_MS per transaction. */
const JOB_WRITE_TIMEOUT_FACTOR = 4;

export const JOB_MESSAGES = {
  notFound: "No job found",
  idempotencyConflict: "This Idempotency-Key was already used for a different job",
  badIdempotencyKey: `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`,
  badLimit: `limit must be an integer between 1 and ${MAX_PAGE}`,
  badCursor: "Invalid cursor",
  resultsExpired: "Job results have expired",
  badPurge: "purge must be true or false",
  badFilter: (name: string, value: string, allowed: readonly string[]) => `Unknown ${name} "${value}": expected one or more of ${allowed.join(", ")}, comma-separated`,
  tooManyRunning: (max: number) => `Too many jobs running: an account may have ${max} queued or running at once; wait for one to finish or cancel one`,
  dailyQuota: (max: number, used: number) =>
    `Daily line quota exceeded: an account may submit ${max.toLocaleString("en")} lines per 24 hours (JOB_MAX_LINES_PER_DAY); ${used.toLocaleString("en")} were submitted in the last 24 hours`,
  stillCreating: "The job with this Idempotency-Key is still being created; retry in a few seconds",
} as const;

const json = (schema: z.ZodType, description: string) => ({ description, content: { "application/json": { schema } } });
/** The OpenAPI tag of the job operations and the job callback. */
export const JOBS_TAG = "Bulk verification jobs";

const JobIdParam = z.object({ id: z.string().openapi({ example: "job_Qx3m9TtGkZ0lJ2rA" }) });
const jobAnswer = { ...json(VerificationJob, "The job"), headers: { Location: { schema: { type: "string" as const }, description: "The job's URL" } } };

export const createJobRoute = createRoute({
  method: "post",
  path: JOBS_PATH,
  operationId: "createVerificationJob",
  tags: [JOBS_TAG],
  summary: "Create a bulk verification job",
  description:
    "A JSON body {email_addresses, smtp_timeout, callback_url}, or a CSV file (text/csv) with smtp_timeout and callback_url in the query. " +
    `At most ${JOB_LIMITS.maxBodyBytes / 1024 / 1024} MB and ${JOB_LIMITS.maxAddresses.toLocaleString("en")} addresses, each at most ${JOB_LIMITS.maxLineBytes} bytes of UTF-8. ` +
    "An Idempotency-Key header makes a retried create return the first job (keys are remembered 24 hours). " +
    "Lines and results are deleted retention_seconds after the job ends (default JOB_RETENTION_SECONDS, thirty days). " +
    "Counts against the key's job-creation and verification rate limits. Verification costs no credits.",
  security: scopeSecurity("jobs:write"),
  middleware: [requireScope("jobs:write"), limitRequestBody(JOB_LIMITS.maxBodyBytes, JOB_INPUT_ERRORS.bodyTooLarge)] as const,
  request: {
    query: JobCreateQuery,
    headers: z.object({ "idempotency-key": z.string().optional() }),
    body: {
      required: true,
      content: {
        // By reference, not as a schema to validate with: the body (JSON or CSV, up to the limits above) is read by
        // parseJobBody, bounded and with the messages docs/jobs.md gives, not by the framework's JSON validator.
        "application/json": { schema: { $ref: "#/components/schemas/JobCreateRequest" } },
        "text/csv": { schema: z.string().openapi({ description: "A header row with a column named email_address or email (any case), else the first column is used" }) },
      },
    },
  },
  responses: {
    202: { ...jobAnswer, description: "The job was created (or, with a reused Idempotency-Key, the first one is returned)" },
    400: errorResponse(`Malformed body, no addresses, an address over ${JOB_LIMITS.maxLineBytes} bytes, a bad smtp_timeout, retention_seconds, callback_url or Idempotency-Key`),
    409: errorResponse(`${JOB_MESSAGES.idempotencyConflict}; or ${JOB_MESSAGES.stillCreating} (with Retry-After)`),
    413: errorResponse(`${JOB_INPUT_ERRORS.bodyTooLarge}; or ${JOB_INPUT_ERRORS.tooManyAddresses}`),
    415: errorResponse(JOB_INPUT_ERRORS.unsupported),
    ...authenticatedErrorResponses,
    429: errorResponse("Rate limit exceeded; too many jobs running for the account (JOB_MAX_RUNNING); or the account's daily line quota (JOB_MAX_LINES_PER_DAY) exceeded. Retry-After says when to try again"),
  },
});

export const getJobRoute = createRoute({
  method: "get",
  path: `${JOBS_PATH}/{id}`,
  operationId: "getVerificationJob",
  tags: [JOBS_TAG],
  summary: "A bulk verification job: status, progress and counts",
  description:
    "The job as it is now: status, lines answered, counts and a summary by classification and by reason (kept in the same writes as the answers), " +
    "and where it stands in the scheduling (queue). Another account's job and no job at all are the same 404.",
  ...scoped("jobs:read"),
  request: { params: JobIdParam },
  responses: { 200: json(VerificationJob, "The job"), 404: errorResponse(JOB_MESSAGES.notFound), ...authenticatedErrorResponses },
});

export const jobResultsRoute = createRoute({
  method: "get",
  path: `${JOBS_PATH}/{id}/results`,
  operationId: "listVerificationJobResults",
  tags: [JOBS_TAG],
  summary: "A job's results in input order, readable while it runs",
  description:
    "JSON pages of results (EmailVerificationResult with checked_at), one per input line in input order. While the job runs a page ends before the first line not answered yet; " +
    "next_cursor continues from there. format=csv (or Accept: text/csv) streams every input line as CSV instead. " +
    "classification and reason narrow both to the answered lines with one of the values given (comma-separated; both: each must match).",
  ...scoped("jobs:read"),
  request: {
    params: JobIdParam,
    query: z.object({
      limit: z.string().optional().openapi({ description: `1..${MAX_PAGE}, default ${DEFAULT_PAGE}` }),
      cursor: z.string().optional(),
      format: z.enum(["json", "csv"]).optional(),
      classification: z.string().optional().openapi({ description: `Comma-separated, of: ${JOB_RESULT_FILTERS.classification.join(", ")}`, example: "valid,risky" }),
      reason: z.string().optional().openapi({ description: `Comma-separated, of: ${JOB_RESULT_FILTERS.reason.join(", ")} (VerificationReason)`, example: "mailbox_not_found" }),
    }),
  },
  responses: {
    200: { description: "A page, or the CSV", content: { "application/json": { schema: JobResultsPage }, "text/csv": { schema: z.string() } } },
    400: errorResponse(`${JOB_MESSAGES.badLimit}; ${JOB_MESSAGES.badCursor}; or a classification or reason outside the vocabulary, named`),
    404: errorResponse(JOB_MESSAGES.notFound),
    410: errorResponse(`${JOB_MESSAGES.resultsExpired}: deleted after the job's retention_seconds, or by DELETE with purge=true (the job itself stays readable)`),
    ...authenticatedErrorResponses,
  },
});

export const cancelJobRoute = createRoute({
  method: "delete",
  path: `${JOBS_PATH}/{id}`,
  operationId: "cancelVerificationJob",
  tags: [JOBS_TAG],
  summary: "Cancel a job: no new checks start; results already in stay readable",
  description:
    "A job that has not ended becomes cancelled: lines not answered yet are never checked, and its callback (if it has a callback_url) is sent. " +
    "A job that has ended is answered as it is. Idempotent. " +
    "With purge=true its lines and results are also deleted now (a running job is cancelled first): the job stays, with its counts and summary and results_expired true, and its results answer 410.",
  ...scoped("jobs:write"),
  request: { params: JobIdParam, query: z.object({ purge: z.enum(["true", "false"]).optional().openapi({ description: "true: delete the job's results now" }) }) },
  responses: {
    200: json(VerificationJob, "The job as it is now"),
    400: errorResponse(JOB_MESSAGES.badPurge),
    404: errorResponse(JOB_MESSAGES.notFound),
    ...authenticatedErrorResponses,
  },
});

/** The job callback, in the document's webhooks: sent by the queue consumer (edge/jobs/callback.ts), not a route. */
function registerCallbackDocs(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerWebhook({
    method: "post",
    path: "verificationJobEnded",
    operationId: "verificationJobEnded",
    tags: [JOBS_TAG],
    summary: "A job ended: sent to its callback_url once it is completed or cancelled",
    // No credentials of the receiver's: the request proves itself by its signature headers.
    security: [],
    description:
      "An HTTPS POST of the job as GET /v1/email_verification_jobs/{id} answers it, signed the Standard Webhooks way (standardwebhooks.com) with the " +
      "account's whsec_ secret: webhook-signature is v1, and the base64 HMAC-SHA256 of \"webhook-id.webhook-timestamp.body\" under the secret's base64-decoded part. " +
      "webhook-id is the same on every retry of one event (evt_<job id>_<status>), so a receiver can drop repeats. " +
      `Any 2xx ends it; anything else, a redirect or no answer within ${CALLBACK_TIMEOUT_MS / 1000} s is retried ${CALLBACK_RETRY_DELAYS_SECONDS.length} times, after ${CALLBACK_RETRY_DELAYS_SECONDS.join(", ")} seconds. ` +
      "Check the signature and that webhook-timestamp is recent before trusting the body.",
    request: {
      headers: z.object({
        "webhook-id": z.string().openapi({ description: "The event's id, the same on every retry", example: "evt_job_Qx3m9TtGkZ0lJ2rA_completed" }),
        "webhook-timestamp": z.string().openapi({ description: "Seconds since the Unix epoch when this attempt was signed", example: "1795561761" }),
        "webhook-signature": z.string().openapi({ description: "v1,<base64 HMAC-SHA256>", example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=" }),
      }),
      body: { required: true, content: { "application/json": { schema: VerificationJob } } },
    },
    responses: {
      200: { description: "Received (any 2xx): no more attempts for this event" },
    },
  });
  // The create's body is given by reference (createJobRoute): its schema is registered here by name.
  app.openAPIRegistry.register("JobCreateRequest", JobCreateRequest);
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function idempotencyKey(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const key = raw.trim();
  if (key === "" || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(key)) throw new ApiError(400, JOB_MESSAGES.badIdempotencyKey);
  return key;
}

function accepted(c: Context<AppEnv>, job: JobRow) {
  return c.json(jobJson(job), 202, { Location: `${JOBS_PATH}/${job.id}` });
}

async function create(c: Context<AppEnv>, query: z.infer<typeof JobCreateQuery>, rawKey: string | undefined) {
  const config = c.get("config");
  const { accountId } = c.get("auth");
  const request = await parseJobBody(c.req.header("content-type") ?? "", new Uint8Array(await c.req.arrayBuffer()), query);
  const smtpTimeout = parseSmtpTimeout(request.smtpTimeout);
  const retentionSeconds = parseRetentionSeconds(request.retentionSeconds, config.JOB_RETENTION_SECONDS);
  let callbackUrl: string | null = null;
  if (request.callbackUrl !== undefined && request.callbackUrl !== null && request.callbackUrl !== "") {
    const checked = checkCallbackUrl(request.callbackUrl, config.CALLBACK_ALLOW_PRIVATE_TARGETS);
    if (!checked.ok) throw new ApiError(400, checked.error);
    callbackUrl = checked.url;
  }
  const key = idempotencyKey(rawKey);
  // A retention asked for is part of the request (a retry with another is a different request); the default is not.
  const requestHash = await sha256Hex(JSON.stringify([request.addresses, smtpTimeout, callbackUrl, ...(request.retentionSeconds === undefined ? [] : [retentionSeconds])]));
  const db = requestDatabase(c);

  const id = newId("job");
  const limits = { maxRunning: config.JOB_MAX_RUNNING, maxLinesPerDay: config.JOB_MAX_LINES_PER_DAY };
  const started = await startJob(db, { id, accountId, smtpTimeout, callbackUrl, idempotencyKey: key, requestHash, total: request.addresses.length, retentionSeconds }, limits);
  switch (started.kind) {
    case "existing":
      if (started.requestHash !== requestHash) throw new ApiError(409, JOB_MESSAGES.idempotencyConflict);
      // The first create with this key is still writing its lines (or died doing so: the cron removes it).
      if (!started.job) throw new ApiError(409, JOB_MESSAGES.stillCreating, { "Retry-After": "5" });
      return accepted(c, started.job);
    case "too_many_running":
      throw new ApiError(429, JOB_MESSAGES.tooManyRunning(config.JOB_MAX_RUNNING), { "Retry-After": "60" });
    case "daily_quota":
      throw new ApiError(429, JOB_MESSAGES.dailyQuota(config.JOB_MAX_LINES_PER_DAY, started.used), { "Retry-After": String(started.retryAfterSeconds) });
  }
  let job: JobRow;
  try {
    // The syntax checks (most of a second for 100,000 lines) only once the limits have said yes.
    const lines = await newLines(request.addresses);
    // Each transaction of lines may queue behind other uploads' at the database's write lock: it
    // gets a longer wait than an interactive read (a lookup's own timeout is unchanged).
    const linesDb = openRequestDatabase(config.DATABASE_URL, config.DATABASE_AUTH_TOKEN, config.DATABASE_TIMEOUT_MS * JOB_WRITE_TIMEOUT_FACTOR);
    job = await writeJobLines(linesDb, id, lines, c.get("auth").keyId);
  } catch (error) {
    // Nothing of a failed create may count: its job stops counting against both limits at once,
    // and the cron deletes what was written. Should this fail too, the cron finds the job later.
    await giveUpCreate(db, id).catch(() => undefined);
    throw error;
  }
  c.get("accessLog").job_lines = request.addresses.length;
  try {
    // A list that failed the syntax check line by line is complete already: only its callback is left.
    if (job.status !== "completed") await enqueueTurns(c.env.JOBS_QUEUE!, id, request.addresses.length);
    else if (job.callback_state === "pending") await c.env.JOBS_QUEUE!.send({ kind: "callback", job: id, attempt: 0 });
  } catch (error) {
    // The job is safe in the database; the cron puts its work on the queue once it looks stalled.
    writeLog("error", { event: "job_enqueue_failed", request_id: c.get("requestId"), job_id: id, error: describeError(error) });
  }
  return accepted(c, job);
}

async function jobOr404(c: Context<AppEnv>): Promise<JobRow> {
  const job = await findJob(requestDatabase(c), c.get("auth").accountId, c.req.param("id") ?? "");
  // Another account's job and no job at all look the same.
  if (!job) throw new ApiError(404, JOB_MESSAGES.notFound);
  return job;
}

/** The job whose results are asked for: 410 once they were deleted (retention, or a purge). */
async function jobWithResults(c: Context<AppEnv>): Promise<JobRow> {
  const job = await jobOr404(c);
  if (Number(job.results_expired) > 0) throw new ApiError(410, JOB_MESSAGES.resultsExpired);
  return job;
}

/** A results cursor is the position the next page starts from. */
const paging = cursorPaging({ tag: "p", fields: 1, defaultLimit: DEFAULT_PAGE, maxLimit: MAX_PAGE, badCursor: JOB_MESSAGES.badCursor, badLimit: JOB_MESSAGES.badLimit });

/** A stored answer as the line's own result: `email` is that line, trimmed, whichever duplicate was checked. */
function lineResult(row: ResultRow): JobResult {
  const stored = JSON.parse(row.result!) as EmailVerificationResult;
  return {
    ...stored,
    // Results stored before mx_provider existed get it from their MX hosts, by the same table.
    ...(stored.details ? { details: { ...stored.details, mx_provider: stored.details.mx_provider ?? mxProvider(stored.details.mx_hosts) } } : {}),
    email: lineEmail(row.email),
    // Results stored before `reason` existed get it from the same rules.
    reason: stored.reason ?? verificationReason(stored),
    checked_at: new Date(Number(row.checked_at ?? 0)).toISOString(),
  };
}

/** A filter parameter: comma-separated values of its vocabulary; anything else is 400 naming it. */
function filterValues(raw: string | undefined, name: keyof typeof JOB_RESULT_FILTERS): string[] {
  if (raw === undefined) return [];
  const allowed: readonly string[] = JOB_RESULT_FILTERS[name];
  const values = raw.split(",").map((v) => v.trim());
  for (const value of values) if (!allowed.includes(value)) throw new ApiError(400, JOB_MESSAGES.badFilter(name, value.slice(0, 40), allowed));
  return [...new Set(values)];
}

async function results(c: Context<AppEnv>, query: z.infer<typeof jobResultsRoute.request.query>) {
  const wantsCsv = query.format === "csv" || (query.format === undefined && (c.req.header("accept") ?? "").includes("text/csv"));
  // Parameters first: a bad request costs no database read.
  const filter: ResultFilter = { classifications: filterValues(query.classification, "classification"), reasons: filterValues(query.reason, "reason") };
  const filtered = filter.classifications.length + filter.reasons.length > 0;
  if (!wantsCsv) {
    const limit = paging.limit(query.limit);
    const from = paging.after(query.cursor)?.[0] ?? 0;
    const job = await jobWithResults(c);
    return c.json(filtered ? await filteredPage(c, job, from, limit, filter) : await page(c, job, from, limit), 200);
  }
  const job = await jobWithResults(c);
  return csvStream(c, job, filtered ? filter : null);
}

const finishedJob = (job: JobRow) => job.status === "completed" || job.status === "cancelled";

function pageBody(job: JobRow, results: JobResult[], next: number | null): z.infer<typeof JobResultsPage> {
  return { results, next_cursor: next === null ? null : paging.cursor(next), status: job.status, processed: Number(job.processed), total: Number(job.total) };
}

/**
 * One page in one database read, whatever the job's state: a finished job's page is its next
 * answered lines (by the done index); a running job's page is the lines from the cursor on, up to
 * the first one not answered yet, where the next page resumes.
 */
async function page(c: Context<AppEnv>, job: JobRow, from: number, limit: number) {
  const finished = finishedJob(job);
  const db = requestDatabase(c);
  // One row past the page says whether another page follows.
  const rows = finished ? await doneRowsQuery(db, job.id, from, limit + 1) : await resultRowsQuery(db, job.id, from, limit);
  const out: JobResult[] = [];
  let next: number | null = from;
  for (const row of rows) {
    if (out.length === limit || row.state !== "done" || row.result === null) {
      next = Number(row.position);
      break;
    }
    out.push(lineResult(row));
    next = Number(row.position) + 1;
  }
  // A finished job with no row past the page has no next page.
  if (finished && rows.length <= limit) next = null;
  return pageBody(job, out, next);
}

/**
 * A page of the answered lines that pass the filter, in input order, in one round trip. While the
 * job runs it stops, as an unfiltered page does, before the first line not answered yet, so that a
 * client following next_cursor sees every matching line once, however the lines finish.
 */
async function filteredPage(c: Context<AppEnv>, job: JobRow, from: number, limit: number, filter: ResultFilter) {
  const finished = finishedJob(job);
  const db = requestDatabase(c);
  const [unanswered, rows] = await db.batch([firstUnansweredQuery(db, job.id, from), doneRowsQuery(db, job.id, from, limit + 1, filter)]);
  const stop = finished ? null : (unanswered[0]?.position ?? null);
  const inRange = rows.filter((r) => stop === null || Number(r.position) < Number(stop));
  const out = inRange.slice(0, limit).map(lineResult);
  let next: number | null;
  if (inRange.length > limit) next = Number(inRange[limit]!.position);
  else if (finished) next = null;
  else next = stop !== null ? Number(stop) : Math.max(from, ...out.map((r, i) => Number(inRange[i]!.position) + 1));
  return pageBody(job, out, next);
}

/** Every input line as CSV, in input order; with a filter, only the answered lines that pass it. */
function csvStream(c: Context<AppEnv>, job: JobRow, filter: ResultFilter | null) {
  const db = requestDatabase(c);
  const encoder = new TextEncoder();
  const notDone = job.status === "cancelled" ? "cancelled" : "pending";
  let position = 0;
  let headerSent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(csvHeader()));
        return;
      }
      const rows = filter ? await doneRowsQuery(db, job.id, position, CSV_PAGE, filter) : await resultRowsQuery(db, job.id, position, CSV_PAGE);
      if (rows.length === 0) return controller.close();
      controller.enqueue(encoder.encode(rows.map((r) => csvRow(r.email, r.state === "done" && r.result ? lineResult(r) : null, notDone)).join("")));
      position = Number(rows.at(-1)!.position) + 1;
    },
  });
  return c.body(stream, 200, { "Content-Type": "text/csv; charset=utf-8", "Content-Disposition": `attachment; filename="${job.id}.csv"` });
}

export function registerJobRoutes(app: OpenAPIHono<AppEnv>): void {
  registerCallbackDocs(app);
  app.openapi(createJobRoute, (c) => create(c, c.req.valid("query"), c.req.valid("header")["idempotency-key"]));
  app.openapi(getJobRoute, async (c) => c.json(jobJson(await jobOr404(c)), 200));
  app.openapi(jobResultsRoute, (c) => results(c, c.req.valid("query")));
  // purge is the only parameter that can fail here: its own message rather than the generic one.
  const purgeHook = (result: { success: boolean }): undefined => {
    if (!result.success) throw new ApiError(400, JOB_MESSAGES.badPurge);
    return undefined;
  };
  app.openapi(cancelJobRoute, async (c) => {
    const purge = c.req.valid("query").purge === "true";
    const db = requestDatabase(c);
    const outcome = await cancelJob(db, c.get("auth").accountId, c.req.valid("param").id);
    if (!outcome) throw new ApiError(404, JOB_MESSAGES.notFound);
    const { cancelled } = outcome;
    // A purge deletes the results now: reads answer 410 at once, the first lines go in this request and any rest in the cron's next runs.
    const job = purge ? ((await purgeResults(db, outcome.job)) ?? outcome.job) : outcome.job;
    if (cancelled && job.callback_state === "pending") {
      // Its callback says it ended; should the queue refuse the message, the cron sends it.
      await c.env.JOBS_QUEUE!.send({ kind: "callback", job: job.id, attempt: 0 }).catch((error: unknown) =>
        writeLog("error", { event: "job_enqueue_failed", request_id: c.get("requestId"), job_id: job.id, error: describeError(error) }),
      );
    }
    return c.json(jobJson(job), 200);
  }, purgeHook);
}
