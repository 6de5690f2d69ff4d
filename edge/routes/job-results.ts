/**
 * GET /v1/email_verification_jobs/{id}/results (docs/jobs.md): a job's results in input order, as JSON pages of one
 * database read each or streamed as CSV, narrowed by classification and reason, readable while the job runs.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { EmailVerificationResult } from "../../shared/api.ts";
import { mxProvider } from "../../shared/email/receivers.ts";
import { trimAsciiWhitespace } from "../../shared/email/syntax.ts";
import { verificationReason } from "../../shared/email/verdict.ts";
import { JOB_RESULT_FILTERS, JobResultsPage, type JobResult } from "../../shared/jobs.ts";
import { requestDatabase } from "../db/client.ts";
import { iso } from "../db/rows.ts";
import type { AppEnv } from "../env.ts";
import { csvHeader, csvRow } from "../jobs/csv-export.ts";
import { decodeRecord, keptCells } from "../jobs/kept-columns.ts";
import { jobName, keptColumnsOf, type JobRow } from "../jobs/store/job-rows.ts";
import { attachment, safeBaseName } from "../lib/attachment.ts";
import { doneRowsQuery, firstUnansweredQuery, resultRowsQuery, type ResultFilter, type ResultRow } from "../jobs/store/lines.ts";
import { ApiError } from "../lib/errors.ts";
import { cursorPaging, PAGE_BUDGET_CHARS, withinPageBudget } from "../lib/paging.ts";
import { DEFAULT_PAGE, JOB_MESSAGES, JOBS_PATH, JOBS_TAG, JobIdParam, jobWithResults, MAX_PAGE } from "./job-common.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { access } from "./access.ts";

/** Lines per database read of a CSV stream. */
const CSV_PAGE = 1_000;

/**
 * A JSON page's kept columns, in characters (each result's stored cells and the columns' names): past it the page ends
 * early and next_cursor resumes, so a page of 1,000 lines of a wide file stays a few MB, not the whole upload.
 */
export const KEPT_PAGE_CHARS = PAGE_BUDGET_CHARS;

export const jobResultsRoute = createRoute({
  method: "get",
  path: `${JOBS_PATH}/{id}/results`,
  operationId: "listVerificationJobResults",
  tags: [JOBS_TAG],
  summary: "A job's results in input order, readable while it runs",
  description:
    "JSON pages of results (EmailVerificationResult with checked_at), one per input line in input order. While the job runs a page ends before the first line not answered yet; " +
    "next_cursor continues from there. A job made from a CSV file gives each line's cells in its kept columns (columns); a page also ends early once those come to 1 MiB. " +
    "format=csv (or Accept: text/csv) streams every input line as CSV instead: the file's kept columns in their order, then ours, named <job name>-<filter>.csv by Content-Disposition. " +
    "classification and reason narrow both to the answered lines with one of the values given (comma-separated; both: each must match).",
  ...access({ who: { scope: "jobs:read" }, limits: ["job_reads"] }),
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

/** A results cursor is the position the next page starts from. */
const paging = cursorPaging({ tag: "p", fields: 1, defaultLimit: DEFAULT_PAGE, maxLimit: MAX_PAGE, badCursor: JOB_MESSAGES.badCursor, badLimit: JOB_MESSAGES.badLimit });

/** A stored answer as the line's own result: `email` is that line, trimmed, whichever duplicate was checked; `columns` its kept cells by name. */
function lineResult(row: ResultRow, kept: readonly string[] = []): JobResult {
  const stored = JSON.parse(row.result!) as EmailVerificationResult;
  return {
    ...stored,
    // Results stored before mx_provider existed get it from their MX hosts, by the same table.
    ...(stored.details ? { details: { ...stored.details, mx_provider: stored.details.mx_provider ?? mxProvider(stored.details.mx_hosts) } } : {}),
    email: trimAsciiWhitespace(row.email),
    // Results stored before `reason` existed get it from the same rules.
    reason: stored.reason ?? verificationReason(stored),
    checked_at: iso(row.checked_at ?? 0),
    columns: kept.length === 0 ? {} : keptCells(kept, row.fields),
  };
}

/** What a line's kept columns weigh in a JSON page: its stored cells and the names that key them. */
const keptWeight = (row: ResultRow, namesChars: number) => (row.fields === null ? 0 : row.fields.length + namesChars);

/** The page's results from `rows`, at most `limit` and, past the first, no more than KEPT_PAGE_CHARS of kept columns. */
function withinBudget(rows: ResultRow[], limit: number, kept: readonly string[]): ResultRow[] {
  const namesChars = kept.reduce((n, name) => n + name.length, 0);
  return withinPageBudget(rows, limit, (row) => keptWeight(row, namesChars), KEPT_PAGE_CHARS);
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
  const kept = keptColumnsOf(job);
  const answered = rows.findIndex((row) => row.state !== "done" || row.result === null);
  const taken = withinBudget(answered < 0 ? rows : rows.slice(0, answered), limit, kept);
  const after = rows[taken.length];
  // The next page starts at the first row not on this one; a finished job with none left has no next page.
  const next = after !== undefined ? Number(after.position) : finished ? null : taken.length > 0 ? Number(taken.at(-1)!.position) + 1 : from;
  return pageBody(job, taken.map((row) => lineResult(row, kept)), next);
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
  const kept = keptColumnsOf(job);
  const taken = withinBudget(inRange, limit, kept);
  let next: number | null;
  if (inRange.length > taken.length) next = Number(inRange[taken.length]!.position);
  else if (finished) next = null;
  else next = stop !== null ? Number(stop) : Math.max(from, ...taken.map((r) => Number(r.position) + 1));
  return pageBody(job, taken.map((row) => lineResult(row, kept)), next);
}

/** What a download of `job` with `filter` is called: `<name>-<filter>.csv` ("all" unfiltered), the name without a .csv, .tsv or .txt ending. */
export function downloadName(job: Pick<JobRow, "id" | "name">, filter: ResultFilter | null): string {
  const base = safeBaseName(jobName(job).replace(/\.(csv|tsv|txt)$/i, ""), job.id);
  const which = filter === null ? "all" : [...filter.classifications, ...filter.reasons].join("-");
  return `${base}-${which}.csv`;
}

/**
 * Every input line as CSV, in input order, the job's kept columns first (each line's cells, "" for one it lacks) and
 * ours after; with a filter, only the answered lines that pass it.
 */
function csvStream(c: Context<AppEnv>, job: JobRow, filter: ResultFilter | null) {
  const db = requestDatabase(c);
  const kept = keptColumnsOf(job);
  const cellsOf = (row: ResultRow) => {
    if (kept.length === 0) return [];
    const cells = row.fields === null ? [] : decodeRecord(row.fields);
    return kept.map((_, i) => cells[i] ?? "");
  };
  const encoder = new TextEncoder();
  const notDone = job.status === "cancelled" ? "cancelled" : "pending";
  let position = 0;
  let headerSent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(csvHeader(kept)));
        return;
      }
      const rows = filter ? await doneRowsQuery(db, job.id, position, CSV_PAGE, filter) : await resultRowsQuery(db, job.id, position, CSV_PAGE);
      if (rows.length === 0) return controller.close();
      controller.enqueue(encoder.encode(rows.map((r) => csvRow(r.email, r.state === "done" && r.result ? lineResult(r) : null, notDone, cellsOf(r))).join("")));
      position = Number(rows.at(-1)!.position) + 1;
    },
  });
  return c.body(stream, 200, { "Content-Type": "text/csv; charset=utf-8", "Content-Disposition": attachment(downloadName(job, filter)) });
}

export function registerJobResultsRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(jobResultsRoute, (c) => results(c, c.req.valid("query")));
}
