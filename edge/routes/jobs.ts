/**
 * Bulk verification jobs (docs/jobs.md "Bulk verification jobs"): create from JSON or CSV, read the job, cancel it;
 * its results in input order are job-results.ts. The work itself
 * runs on the queue (edge/jobs/consumer.ts); the database is the source of truth.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { JOB_INPUT_ERRORS, JOB_LIMITS, JobCreateQuery, JobCreateRequest, VerificationJob } from "../../shared/jobs.ts";
import { limitRequestBody } from "../body-limit.ts";
import { openRequestDatabase, requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { CALLBACK_RETRY_DELAYS_SECONDS, CALLBACK_TIMEOUT_MS, checkCallbackUrl } from "../webhooks/delivery.ts";
import { jobCreated, jobEnded } from "../jobs/ended.ts";
import { jobQueues } from "../jobs/queue.ts";
import { parseJobBody, parseRetentionSeconds } from "../jobs/verification/input.ts";
import { giveUpCreate, purgeResults } from "../jobs/store/envelope.ts";
import { startJob, writeJobLines } from "../jobs/store/job-creation.ts";
import { cancelJob, jobById, jobJson, type JobRow } from "../jobs/store/job-rows.ts";
import { ApiError } from "../lib/errors.ts";
import { readIdempotencyKey, sha256Hex } from "../lib/idempotency.ts";
import { newId } from "../identity/tokens.ts";
import { writeLog, describeError } from "../log.ts";
import { parseSmtpTimeout } from "../verification/params.ts";
import { prepareLines } from "../jobs/verification/prepare-lines.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { JOB_MESSAGES, JOBS_PATH, JOBS_TAG, JobIdParam, jobOr404, json } from "./job-common.ts";
import { registerJobResultsRoute } from "./job-results.ts";
import { access } from "./access.ts";

export { JOB_MESSAGES, JOBS_PATH, JOBS_TAG };

/** A job's lines are written with this many times DATABASE_TIMEOUT_MS per transaction. */
const JOB_WRITE_TIMEOUT_FACTOR = 4;

const jobAnswer = { ...json(VerificationJob, "The job"), headers: { Location: { schema: { type: "string" as const }, description: "The job's URL" } } };

export const createJobRoute = createRoute({
  method: "post",
  path: JOBS_PATH,
  operationId: "createVerificationJob",
  tags: [JOBS_TAG],
  summary: "Create a bulk verification job",
  description:
    "A JSON body {email_addresses, name, smtp_timeout, callback_url}, or a CSV file (text/csv) with its parameters in the query. " +
    "A CSV file keeps every column of each line: results give them back (columns) before ours. Its addresses are in email_column when given, else in the first column named like an address, " +
    "else in the column whose cells look like addresses; a file with none is 400 naming its columns, and a file that is not text (a spreadsheet, an image) is 400 saying what it looks like. " +
    `At most ${JOB_LIMITS.maxBodyBytes / 1024 / 1024} MB and ${JOB_LIMITS.maxAddresses.toLocaleString("en")} addresses, each at most ${JOB_LIMITS.maxLineBytes} bytes of UTF-8; ` +
    `a CSV line at most ${JOB_LIMITS.maxCsvLineChars.toLocaleString("en")} characters and ${JOB_LIMITS.maxColumns.toLocaleString("en")} columns (a longer one is 400 naming it: nothing is cut). ` +
    "An Idempotency-Key header makes a retried create return the first job (keys are remembered 24 hours). " +
    "Lines and results are deleted retention_seconds after the job ends (default JOB_RETENTION_SECONDS, thirty days). " +
    "Counts against the key's job-creation and verification rate limits. Verification costs no credits.",
  // A job is verification in bulk: creating one counts against job_creation and verification.
  ...access({ who: { scope: "jobs:write" }, limits: ["job_creation", "verification"], body: limitRequestBody(JOB_LIMITS.maxBodyBytes, JOB_INPUT_ERRORS.bodyTooLarge) }),
  request: {
    query: JobCreateQuery,
    headers: z.object({ "idempotency-key": z.string().optional() }),
    body: {
      required: true,
      content: {
        // By reference, not as a schema to validate with: the body (JSON or CSV, up to the limits above) is read by
        // parseJobBody, bounded and with the messages docs/jobs.md gives, not by the framework's JSON validator.
        "application/json": { schema: { $ref: "#/components/schemas/JobCreateRequest" } },
        "text/csv": {
          schema: z.string().openapi({
            description: "A CSV file (RFC 4180), usually with a header row; every column is kept. The addresses: email_column, else a column named like an address, else the column of address-looking cells",
          }),
        },
      },
    },
  },
  responses: {
    202: { ...jobAnswer, description: "The job was created (or, with a reused Idempotency-Key, the first one is returned)" },
    400: errorResponse(
      `Malformed body, no addresses, an address over ${JOB_LIMITS.maxLineBytes} bytes, a CSV line over its bounds, a CSV file with no address column (its columns named) or that is not text, an email_column that is not a column, a bad name, smtp_timeout, retention_seconds, callback_url or Idempotency-Key`,
    ),
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
  // Reading, listing or cancelling a job counts against job_reads, so polling spends neither verification nor creation.
  ...access({ who: { scope: "jobs:read" }, limits: ["job_reads"] }),
  request: { params: JobIdParam },
  responses: { 200: json(VerificationJob, "The job"), 404: errorResponse(JOB_MESSAGES.notFound), ...authenticatedErrorResponses },
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
  ...access({ who: { scope: "jobs:write" }, limits: ["job_reads"] }),
  request: { params: JobIdParam, query: z.object({ purge: z.enum(["true", "false"]).optional().openapi({ description: "true: delete the job's results now" }) }) },
  responses: {
    200: json(VerificationJob, "The job as it is now"),
    400: errorResponse(JOB_MESSAGES.badPurge),
    404: errorResponse(JOB_MESSAGES.notFound),
    409: errorResponse("The job is a lookup job's verify_emails phase: cancel that lookup job instead"),
    ...authenticatedErrorResponses,
  },
});

/** The job callback, in the document's webhooks: sent by the queue consumer (edge/webhooks/delivery.ts), not a route. */
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


function accepted(c: Context<AppEnv>, job: JobRow) {
  return c.json(jobJson(job), 202, { Location: `${JOBS_PATH}/${job.id}` });
}

async function create(c: Context<AppEnv>, query: z.infer<typeof JobCreateQuery>, rawKey: string | undefined) {
  const config = c.get("config");
  const { accountId } = c.get("auth");
  const body = new Uint8Array(await c.req.arrayBuffer());
  const request = await parseJobBody(c.req.header("content-type") ?? "", body, query);
  const smtpTimeout = parseSmtpTimeout(request.smtpTimeout);
  const retentionSeconds = parseRetentionSeconds(request.retentionSeconds, config.JOB_RETENTION_SECONDS);
  let callbackUrl: string | null = null;
  if (request.callbackUrl !== undefined && request.callbackUrl !== null && request.callbackUrl !== "") {
    const checked = checkCallbackUrl(request.callbackUrl, config.CALLBACK_ALLOW_PRIVATE_TARGETS);
    if (!checked.ok) throw new ApiError(400, checked.error);
    callbackUrl = checked.url;
  }
  const key = readIdempotencyKey(rawKey);
  // A retention, a name or an email_column asked for is part of the request (a retry with another is a different
  // request); a default is not, so a retry from before these existed still finds its job. A file's kept columns count
  // by the file's bytes.
  const requestHash = await sha256Hex(
    JSON.stringify([
      request.addresses,
      smtpTimeout,
      callbackUrl,
      ...(request.retentionSeconds === undefined ? [] : [retentionSeconds]),
      ...(request.name === null ? [] : [{ name: request.name }]),
      ...(request.emailColumn === null ? [] : [{ email_column: request.emailColumn }]),
      ...(request.kept === null ? [] : [{ file: await sha256Hex(body) }]),
    ]),
  );
  const db = requestDatabase(c);

  const id = newId("job");
  const limits = { maxRunning: config.JOB_MAX_RUNNING, maxLinesPerDay: config.JOB_MAX_LINES_PER_DAY };
  const columns = request.kept === null ? null : { names: request.kept.names, emailColumn: request.kept.emailColumn };
  const started = await startJob(
    db,
    { id, accountId, smtpTimeout, callbackUrl, idempotencyKey: key, requestHash, total: request.addresses.length, retentionSeconds, name: request.name, columns, actor: c.get("auth").actor },
    limits,
  );
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
    const lines = await prepareLines(request.addresses);
    // Each transaction of lines may queue behind other uploads' at the database's write lock: it
    // gets a longer wait than an interactive read (a lookup's own timeout is unchanged).
    const linesDb = openRequestDatabase(config.DATABASE_URL, config.DATABASE_AUTH_TOKEN, config.DATABASE_TIMEOUT_MS * JOB_WRITE_TIMEOUT_FACTOR);
    job = await writeJobLines(linesDb, id, lines, c.get("auth").actor, request.kept?.record ?? null);
  } catch (error) {
    // Nothing of a failed create may count: its job stops counting against both limits at once,
    // and the cron deletes what was written. Should this fail too, the cron finds the job later.
    await giveUpCreate(db, "verification", id).catch(() => undefined);
    throw error;
  }
  c.get("accessLog").job_lines = request.addresses.length;
  try {
    // A list that failed the syntax check line by line is complete already: only its callback is left.
    await jobCreated(jobQueues(c.env), "verification", job, job.status === "completed" ? 0 : request.addresses.length);
  } catch (error) {
    // The job is safe in the database; the cron puts its work on the queue once it looks stalled.
    writeLog("error", { event: "job_enqueue_failed", request_id: c.get("requestId"), job_id: id, error: describeError(error) });
  }
  return accepted(c, job);
}

export function registerJobRoutes(app: OpenAPIHono<AppEnv>): void {
  registerCallbackDocs(app);
  app.openapi(createJobRoute, (c) => create(c, c.req.valid("query"), c.req.valid("header")["idempotency-key"]));
  app.openapi(getJobRoute, async (c) => c.json(jobJson(await jobOr404(c)), 200));
  registerJobResultsRoute(app);
  // purge is the only parameter that can fail here: its own message rather than the generic one.
  const purgeHook = (result: { success: boolean }): undefined => {
    if (!result.success) throw new ApiError(400, JOB_MESSAGES.badPurge);
    return undefined;
  };
  app.openapi(cancelJobRoute, async (c) => {
    const purge = c.req.valid("query").purge === "true";
    const db = requestDatabase(c);
    // A lookup job's verify_emails phase ends with that job: cancelling it alone would leave the lookup job half verified.
    const parent = (await jobOr404(c)).parent_job_id;
    if (parent) throw new ApiError(409, JOB_MESSAGES.childOfLookupJob(parent));
    const outcome = await cancelJob(db, c.get("auth").accountId, c.req.valid("param").id);
    if (!outcome) throw new ApiError(404, JOB_MESSAGES.notFound);
    const { cancelled } = outcome;
    // A purge deletes the results now: reads answer 410 at once, the first lines go in this request and any rest in the cron's next runs.
    if (purge) await purgeResults(db, "verification", outcome.job.id);
    const job = purge ? ((await jobById(db, outcome.job.id)) ?? outcome.job) : outcome.job;
    if (cancelled) {
      // Its callback says it ended; should the queue refuse the message, the cron sends it.
      await jobEnded(jobQueues(c.env), "verification", job).catch((error: unknown) =>
        writeLog("error", { event: "job_enqueue_failed", request_id: c.get("requestId"), job_id: job.id, error: describeError(error) }),
      );
    }
    return c.json(jobJson(job), 200);
  }, purgeHook);
}
