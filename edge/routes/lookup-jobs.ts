/**
 * Lookup jobs (docs/lookup-jobs.md): create one from a CSV or JSON Lines list (or ask what it would cost, dry_run), list
 * them, read one, cancel or purge it; its results are lookup-job-results.ts. The work runs on the lookup-jobs queue
 * (edge/jobs/lookup/consumer.ts); the database is the source of truth.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { LOOKUP_JOB_LIMITS, LOOKUP_JOB_MESSAGES, LOOKUP_JOBS_PATH, LookupJob, LookupJobCreateQuery, LookupJobQuote } from "../../shared/lookup-jobs.ts";
import { limitRequestBody } from "../body-limit.ts";
import { balanceQuery } from "../money/credits.ts";
import { openRequestDatabase, requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { newId } from "../identity/tokens.ts";
import { CALLBACK_RETRY_DELAYS_SECONDS, CALLBACK_TIMEOUT_MS, checkCallbackUrl } from "../webhooks/delivery.ts";
import { parseRetentionSeconds } from "../jobs/verification/input.ts";
import { ApiError } from "../lib/errors.ts";
import { readIdempotencyKey, sha256Hex } from "../lib/idempotency.ts";
import { pageLimit } from "../lib/paging.ts";
import { describeError, writeLog } from "../log.ts";
import { listFormat, listLines, namedColumns, scanList } from "../jobs/lookup/input.ts";
import { jobCreated, jobEnded } from "../jobs/ended.ts";
import { jobQueues } from "../jobs/queue.ts";
import { giveUpCreate, purgeResults } from "../jobs/store/envelope.ts";
import { finishLookupJob, startLookupJob, writeLookupLines } from "../jobs/store/lookup-creation.ts";
import { cancelLookupJob, listLookupJobs, lookupJobById, lookupJobJson, type LookupJobRow } from "../jobs/store/lookup-rows.ts";
import { cancelVerification } from "../jobs/lookup/verify-emails.ts";
import { parseIncludes, parseMinConfidence } from "../people/lookup.ts";
import { access } from "./access.ts";
import { registerLookupJobResultsRoute, LOOKUP_JOBS_TAG, LookupJobIdParam, lookupJobOr404 } from "./lookup-job-results.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";

/** A job's lines are written with this many times DATABASE_TIMEOUT_MS per transaction, as the verification jobs'. */
const WRITE_TIMEOUT_FACTOR = 4;
/** Lines handed from the list's second read to the writer at a time. */
const WRITE_CHUNK = 5_000;

const json = (schema: z.ZodType, description: string) => ({ description, content: { "application/json": { schema } } });
const jobAnswer = { ...json(LookupJob, "The job"), headers: { Location: { schema: { type: "string" as const }, description: "The job's URL" } } };

export const createLookupJobRoute = createRoute({
  method: "post",
  path: LOOKUP_JOBS_PATH,
  operationId: "createLookupJob",
  tags: [LOOKUP_JOBS_TAG],
  summary: "Look up a list: a lookup job, charged line by line as lines find someone",
  description:
    `The body is the list: a CSV file (text/csv) whose header names the identifier columns (profnet_id, profnet_public_identifier, codehost_id, codehost_login; any case, spaces for underscores), or JSON Lines (application/jsonl) whose objects carry them; <identifier>_column names another. At most ${LOOKUP_JOB_LIMITS.maxBodyBytes / 1024 / 1024} MiB and ${LOOKUP_JOB_LIMITS.maxLines.toLocaleString("en")} lines. ` +
    "Each line is read and answered as GET /v1/people would answer it; a line that finds someone costs LOOKUP_COST, once per person per job, charged as it is answered. When the balance (or the key's daily cap) runs out the job pauses, and resumes by itself within a minute of credits being added. " +
    "dry_run=true answers the quote (200) and creates nothing: the most the job can cost, which it never exceeds. An Idempotency-Key makes a retried create return the first job. Counts against the key's job_creation limit.",
  ...access({ who: { scope: "people:read" }, limits: ["job_creation"], body: limitRequestBody(LOOKUP_JOB_LIMITS.maxBodyBytes, LOOKUP_JOB_MESSAGES.bodyTooLarge) }),
  request: {
    query: LookupJobCreateQuery,
    headers: z.object({ "idempotency-key": z.string().optional() }),
    body: {
      required: true,
      content: {
        "text/csv": { schema: z.string().openapi({ description: "A header row naming the identifier columns, then one line per lookup; every column is kept" }) },
        // A plain schema, not zod's: the framework would take application/jsonl for JSON and validate it as one document.
        "application/jsonl": { schema: { type: "string", description: "One JSON object per line, carrying the identifiers; every field is kept" } },
      },
    },
  },
  responses: {
    200: json(LookupJobQuote, "dry_run=true: what the job would cost; nothing was created"),
    202: { ...jobAnswer, description: "The job was created (or, with a reused Idempotency-Key, the first one is returned)" },
    400: errorResponse("A CSV with no identifier column, a named column that is not in the header, malformed CSV or JSON Lines, a line over 64 KiB, no lines, a bad include, verify_emails, find_emails, min_confidence, dry_run, callback_url, retention_seconds or Idempotency-Key"),
    409: errorResponse(`${LOOKUP_JOB_MESSAGES.idempotencyConflict}; or ${LOOKUP_JOB_MESSAGES.stillCreating} (with Retry-After)`),
    413: errorResponse(`${LOOKUP_JOB_MESSAGES.bodyTooLarge}; or ${LOOKUP_JOB_MESSAGES.tooManyLines}`),
    415: errorResponse(LOOKUP_JOB_MESSAGES.unsupported),
    ...authenticatedErrorResponses,
    429: errorResponse("Rate limit exceeded; or too many lookup jobs unfinished for the account (JOB_MAX_RUNNING, with Retry-After)"),
  },
});

const MAX_LIST = 100;
const BAD_LIST_LIMIT = `Invalid parameter limit: must be an integer between 1 and ${MAX_LIST}`;
const BAD_BEFORE = "Invalid parameter before: not a lookup job id";

export const LookupJobList = z
  .object({ jobs: z.array(LookupJob).openapi({ description: "Newest first" }), next_before: z.string().nullable().openapi({ description: "Pass as before for older jobs; null when there are none" }) })
  .openapi("LookupJobList");

const listRoute = createRoute({
  method: "get",
  path: LOOKUP_JOBS_PATH,
  operationId: "listLookupJobs",
  tags: [LOOKUP_JOBS_TAG],
  summary: "The account's lookup jobs, newest first",
  description: "Counts against the job_reads rate limit.",
  ...access({ who: { scope: "people:read" }, limits: ["job_reads"] }),
  request: { query: z.object({ limit: z.string().optional().openapi({ description: `1..${MAX_LIST}, default 20` }), before: z.string().optional() }) },
  responses: { 200: json(LookupJobList, "A page of jobs"), 400: errorResponse(`${BAD_LIST_LIMIT}; or ${BAD_BEFORE}`), ...authenticatedErrorResponses },
});

const getRoute = createRoute({
  method: "get",
  path: `${LOOKUP_JOBS_PATH}/{id}`,
  operationId: "getLookupJob",
  tags: [LOOKUP_JOBS_TAG],
  summary: "A lookup job: status, why it is paused, counts and credits",
  description: "Another account's job and no job at all are the same 404. Counts against the job_reads rate limit.",
  ...access({ who: { scope: "people:read" }, limits: ["job_reads"] }),
  request: { params: LookupJobIdParam },
  responses: { 200: json(LookupJob, "The job"), 404: errorResponse(LOOKUP_JOB_MESSAGES.notFound), ...authenticatedErrorResponses },
});

const BAD_PURGE = "purge must be true or false";

const cancelRoute = createRoute({
  method: "delete",
  path: `${LOOKUP_JOBS_PATH}/{id}`,
  operationId: "cancelLookupJob",
  tags: [LOOKUP_JOBS_TAG],
  summary: "Cancel a lookup job: nothing more is looked up or charged; results already in stay readable",
  description:
    "A job that has not ended (queued, running or paused) becomes cancelled: lines not answered yet never are, refused lines stay refused, and its callback (with a callback_url) is sent. An ended job is answered as it is. " +
    "With purge=true its lines and results are also deleted now: the job stays, with its counts, and its results answer 410.",
  ...access({ who: { scope: "people:read" }, limits: ["job_reads"] }),
  request: { params: LookupJobIdParam, query: z.object({ purge: z.enum(["true", "false"]).optional() }) },
  responses: { 200: json(LookupJob, "The job as it is now"), 400: errorResponse(BAD_PURGE), 404: errorResponse(LOOKUP_JOB_MESSAGES.notFound), ...authenticatedErrorResponses },
});

function booleanParam(name: string, raw: string | undefined): boolean {
  if (raw === undefined || raw.trim() === "" || raw.trim() === "false") return false;
  if (raw.trim() === "true") return true;
  throw new ApiError(400, LOOKUP_JOB_MESSAGES.badBoolean(name));
}

function accepted(c: Context<AppEnv>, job: LookupJobRow) {
  return c.json(lookupJobJson(job, c.get("config").LOOKUP_VERIFY_MAX_AGE_SECONDS), 202, { Location: `${LOOKUP_JOBS_PATH}/${job.id}` });
}

async function create(c: Context<AppEnv>, query: z.infer<typeof LookupJobCreateQuery>) {
  const config = c.get("config");
  const auth = c.get("auth");
  const db = requestDatabase(c);
  // The parameters first: a bad one costs no reading of the list.
  const dryRun = booleanParam("dry_run", query.dry_run);
  const verifyEmails = booleanParam("verify_emails", query.verify_emails);
  const findEmails = booleanParam("find_emails", query.find_emails);
  const includes = parseIncludes(query.include);
  const emailDetails = verifyEmails || includes.has("email_details");
  const profile = includes.has("profile");
  const minConfidence = parseMinConfidence(query.min_confidence);
  const named = namedColumns(query);
  const retentionSeconds = parseRetentionSeconds(query.retention_seconds, config.JOB_RETENTION_SECONDS);
  let callbackUrl: string | null = null;
  if (query.callback_url !== undefined && query.callback_url.trim() !== "") {
    const checked = checkCallbackUrl(query.callback_url, config.CALLBACK_ALLOW_PRIVATE_TARGETS);
    if (!checked.ok) throw new ApiError(400, checked.error);
    callbackUrl = checked.url;
  }
  const key = readIdempotencyKey(c.req.header("idempotency-key"));
  const format = listFormat(c.req.header("content-type") ?? "");
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  const scanned = await scanList(bytes, format, named);
  const cost = config.LOOKUP_COST;
  // find_emails: at most one charged find per distinct name at a company, on top of the lookups.
  const findLines = findEmails ? scanned.findable : 0;
  const maxCredits = (scanned.wellFormed - scanned.repeated + findLines) * cost;
  const columns = Object.fromEntries(Object.entries(scanned.plan.columns).map(([identifier, column]) => [identifier, column.name]));
  if (dryRun) {
    const [balance] = await balanceQuery(db, auth.accountId);
    const quote: LookupJobQuote = {
      format,
      columns,
      lines: scanned.lines,
      well_formed: scanned.wellFormed,
      invalid: scanned.invalid,
      repeated: scanned.repeated,
      cost_per_line: cost,
      ...(findEmails ? { find_lines: findLines } : {}),
      max_credits: maxCredits,
      credit_balance: Number(balance?.credit_balance ?? 0),
    };
    return c.json(quote, 200);
  }

  // The request: the list's bytes and what was asked of it (a retention left to its default is not part of it).
  const requestHash = await sha256Hex(JSON.stringify([await sha256Hex(bytes), format, named, emailDetails, verifyEmails, ...(profile ? ["profile"] : []), ...(findEmails ? ["find_emails"] : []), minConfidence, callbackUrl, query.retention_seconds === undefined ? null : retentionSeconds]));
  const id = newId("lkj");
  const started = await startLookupJob(
    db,
    {
      id,
      accountId: auth.accountId,
      actor: auth.actor,
      creditCaps: JSON.stringify(auth.creditCaps),
      cost,
      maxCredits,
      total: scanned.lines,
      format,
      columns: JSON.stringify({ header: scanned.plan.header, columns }),
      emailDetails,
      profile,
      verifyEmails,
      findEmails,
      minConfidence,
      callbackUrl,
      idempotencyKey: key,
      requestHash,
      retentionSeconds,
    },
    config.JOB_MAX_RUNNING,
  );
  if (started.kind === "existing") {
    if (started.requestHash !== requestHash) throw new ApiError(409, LOOKUP_JOB_MESSAGES.idempotencyConflict);
    if (!started.job) throw new ApiError(409, LOOKUP_JOB_MESSAGES.stillCreating, { "Retry-After": "5" });
    return accepted(c, started.job);
  }
  if (started.kind === "too_many_unfinished") throw new ApiError(429, LOOKUP_JOB_MESSAGES.tooManyRunning(config.JOB_MAX_RUNNING), { "Retry-After": "60" });

  let finished: Awaited<ReturnType<typeof finishLookupJob>>;
  try {
    const linesDb = openRequestDatabase(config.DATABASE_URL, config.DATABASE_AUTH_TOKEN, config.DATABASE_TIMEOUT_MS * WRITE_TIMEOUT_FACTOR);
    await writeLookupLines(linesDb, id, listLines(bytes, scanned.plan, WRITE_CHUNK));
    finished = await finishLookupJob(linesDb, id);
  } catch (error) {
    // Nothing of a failed create may count or be seen; the cron deletes what was written.
    await giveUpCreate(db, "lookup", id).catch(() => undefined);
    throw error;
  }
  c.get("accessLog").lookup_job_lines = scanned.lines;
  try {
    await jobCreated(jobQueues(c.env), "lookup", finished.job, finished.pending);
  } catch (error) {
    // The job is safe in the database; the cron puts its work on the queue once it looks stalled.
    writeLog("error", { event: "lookup_job_enqueue_failed", request_id: c.get("requestId"), job_id: id, error: describeError(error) });
  }
  return accepted(c, finished.job);
}

/** The lookup job callback, in the document's webhooks: sent by the queue consumer, not a route. */
function registerCallbackDocs(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerWebhook({
    method: "post",
    path: "lookupJobEnded",
    operationId: "lookupJobEnded",
    tags: [LOOKUP_JOBS_TAG],
    summary: "A lookup job ended: sent to its callback_url once it is completed or cancelled",
    security: [],
    description:
      "An HTTPS POST of the job as GET /v1/lookup_jobs/{id} answers it, signed as the verification jobs' callbacks are (Standard Webhooks, the account's whsec_ secret). " +
      `webhook-id is evt_<job id>_<status>, the same on every retry. Any 2xx ends it; anything else, a redirect or no answer within ${CALLBACK_TIMEOUT_MS / 1000} s is retried ${CALLBACK_RETRY_DELAYS_SECONDS.length} times.`,
    request: {
      headers: z.object({ "webhook-id": z.string(), "webhook-timestamp": z.string(), "webhook-signature": z.string() }),
      body: { required: true, content: { "application/json": { schema: LookupJob } } },
    },
    responses: { 200: { description: "Received (any 2xx): no more attempts for this event" } },
  });
}

export function registerLookupJobRoutes(app: OpenAPIHono<AppEnv>): void {
  registerCallbackDocs(app);
  app.openapi(createLookupJobRoute, (c) => create(c, c.req.valid("query")));
  app.openapi(listRoute, async (c) => {
    const { limit: rawLimit, before } = c.req.valid("query");
    const limit = pageLimit(rawLimit, { defaultLimit: 20, maxLimit: MAX_LIST, badLimit: BAD_LIST_LIMIT });
    if (before !== undefined && !/^lkj_[A-Za-z0-9_-]{1,64}$/.test(before)) throw new ApiError(400, BAD_BEFORE);
    const { jobs, more } = await listLookupJobs(requestDatabase(c), c.get("auth").accountId, before, limit);
    const maxAge = c.get("config").LOOKUP_VERIFY_MAX_AGE_SECONDS;
    return c.json({ jobs: jobs.map((j) => lookupJobJson(j, maxAge)), next_before: more ? jobs.at(-1)!.id : null }, 200);
  });
  app.openapi(getRoute, async (c) => c.json(lookupJobJson(await lookupJobOr404(c), c.get("config").LOOKUP_VERIFY_MAX_AGE_SECONDS), 200));
  registerLookupJobResultsRoute(app);
  const purgeHook = (result: { success: boolean }): undefined => {
    if (!result.success) throw new ApiError(400, BAD_PURGE);
    return undefined;
  };
  app.openapi(
    cancelRoute,
    async (c) => {
      const purge = c.req.valid("query").purge === "true";
      const db = requestDatabase(c);
      const outcome = await cancelLookupJob(db, c.get("auth").accountId, c.req.valid("param").id);
      if (!outcome) throw new ApiError(404, LOOKUP_JOB_MESSAGES.notFound);
      const { cancelled } = outcome;
      if (cancelled) await cancelVerification(db, outcome.job);
      if (purge) await purgeResults(db, "lookup", outcome.job.id);
      const job = purge ? ((await lookupJobById(db, outcome.job.id)) ?? outcome.job) : outcome.job;
      if (cancelled) {
        await jobEnded(jobQueues(c.env), "lookup", job).catch((error: unknown) =>
          writeLog("error", { event: "lookup_job_enqueue_failed", request_id: c.get("requestId"), job_id: job.id, error: describeError(error) }),
        );
      }
      return c.json(lookupJobJson(job, c.get("config").LOOKUP_VERIFY_MAX_AGE_SECONDS), 200);
    },
    purgeHook,
  );
}
