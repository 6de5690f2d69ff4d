/**
 * GET /v1/lookup_jobs/{id}/results (docs/lookup-jobs.md "Results"): a job's results in input order, as JSON pages,
 * readable while it runs, or downloaded whole as CSV (the customer's columns, then what was found) or JSON Lines (one
 * result per line), narrowed by status. What the route declares and shares with the job routes (tag, id, 404) is here.
 */
import { sqliteLower } from "../../shared/sqlite-lower.ts";
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { PEOPLE_INCLUDES, type ContactInfo, type EmailDetail } from "../../shared/api.ts";
import { LOOKUP_JOB_MESSAGES, LOOKUP_JOBS_PATH, LOOKUP_LINE_STATUSES, LookupJobResultsPage, type LookupJobFind, type LookupJobResult, type LookupLineStatus } from "../../shared/lookup-jobs.ts";
import { requestDatabase, type Database } from "../db/client.ts";
import { iso } from "../db/rows.ts";
import type { AppEnv } from "../env.ts";
import { csvCell } from "../jobs/csv-export.ts";
import { ApiError } from "../lib/errors.ts";
import { attachment } from "../lib/attachment.ts";
import { cursorPaging, withinPageBudget } from "../lib/paging.ts";
import { keptColumnNames } from "../jobs/intake.ts";
import { inputObject, type ListFormat } from "../jobs/lookup/input.ts";
import { columnsOf, findLookupJob, isEnded, processedOf, type LookupJobRow } from "../jobs/store/lookup-rows.ts";
import { firstUnansweredQuery, resultRowsQuery, rowsWithOutcomesQuery, verdictsOfQuery, widestInput, type ResultRow, type VerdictRow } from "../jobs/store/lookup-lines.ts";
import { contactInfoFromSnapshot, type PeopleInclude } from "../people/lookup.ts";
import { access } from "./access.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";

export const LOOKUP_JOBS_TAG = "Lookup jobs";
export const LookupJobIdParam = z.object({ id: z.string().openapi({ example: "lkj_Qx3m9TtGkZ0lJ2rA" }) });

const DEFAULT_PAGE = 100;
const MAX_PAGE = 1_000;
/** Lines per database read of a download. */
const DOWNLOAD_PAGE = 1_000;
const BAD_LIMIT = `limit must be an integer between 1 and ${MAX_PAGE}`;
const BAD_CURSOR = "Invalid cursor";
const RESULTS_EXPIRED = "Lookup job results have expired";

export async function lookupJobOr404(c: Context<AppEnv>): Promise<LookupJobRow> {
  const job = await findLookupJob(requestDatabase(c), c.get("auth").accountId, c.req.param("id") ?? "");
  // Another account's job and no job at all look the same.
  if (!job) throw new ApiError(404, LOOKUP_JOB_MESSAGES.notFound);
  return job;
}

export const lookupJobResultsRoute = createRoute({
  method: "get",
  path: `${LOOKUP_JOBS_PATH}/{id}/results`,
  operationId: "listLookupJobResults",
  tags: [LOOKUP_JOBS_TAG],
  summary: "A lookup job's results in input order, readable while it runs",
  description:
    "JSON pages of results, one per line in input order; while the job runs (or is paused) a page ends before the first line not answered for good, and next_cursor continues there. " +
    "format=csv (or Accept: text/csv) downloads every line as CSV: the customer's own columns, then what was found (lookup_status, lookup_personal_emails, lookup_work_emails, lookup_phones, the identifiers and handles). " +
    "format=jsonl downloads one result per line. status narrows all three to lines with one of the statuses given (comma-separated).",
  ...access({ who: { scope: "people:read" }, limits: ["job_reads"] }),
  request: {
    params: LookupJobIdParam,
    query: z.object({
      limit: z.string().optional().openapi({ description: `1..${MAX_PAGE}, default ${DEFAULT_PAGE}` }),
      cursor: z.string().optional(),
      format: z.enum(["json", "csv", "jsonl"]).optional(),
      status: z.string().optional().openapi({ description: `Comma-separated, of: ${LOOKUP_LINE_STATUSES.join(", ")}`, example: "found" }),
    }),
  },
  responses: {
    200: {
      description: "A page, or the download",
      content: { "application/json": { schema: LookupJobResultsPage }, "text/csv": { schema: z.string() }, "application/jsonl": { schema: z.string() } },
    },
    400: errorResponse(`${BAD_LIMIT}; ${BAD_CURSOR}; or a status outside the vocabulary, named`),
    404: errorResponse(LOOKUP_JOB_MESSAGES.notFound),
    410: errorResponse(`${RESULTS_EXPIRED}: deleted after the job's retention_seconds, or by DELETE with purge=true`),
    ...authenticatedErrorResponses,
  },
});

const paging = cursorPaging({ tag: "l", fields: 1, defaultLimit: DEFAULT_PAGE, maxLimit: MAX_PAGE, badCursor: BAD_CURSOR, badLimit: BAD_LIMIT });

function statusFilter(raw: string | undefined): LookupLineStatus[] {
  if (raw === undefined) return [];
  const values = raw.split(",").map((v) => v.trim());
  for (const value of values) if (!(LOOKUP_LINE_STATUSES as readonly string[]).includes(value)) throw new ApiError(400, LOOKUP_JOB_MESSAGES.badStatusFilter(value));
  return [...new Set(values)] as LookupLineStatus[];
}

/**
 * How a job's results read: its input's format, header and the names its cells go by (once per read: a page's work is
 * linear in its size, whatever the width), its include, and (verify_emails) the verdicts to show.
 */
type View = { format: ListFormat; header: string[] | null; names: string[]; namesChars: number; include: Set<PeopleInclude>; verify: boolean; find: boolean };

function viewOf(job: LookupJobRow): View {
  const header = columnsOf(job).header;
  const names = keptColumnNames(header, header?.length ?? 0);
  return {
    format: job.format,
    header,
    names,
    namesChars: names.reduce((n, name) => n + name.length, 0),
    include: new Set<PeopleInclude>(PEOPLE_INCLUDES.filter((name) => Number(name === "profile" ? job.profile : job.email_details) === 1)),
    verify: Number(job.verify_emails) === 1,
    find: Number(job.find_emails) === 1,
  };
}

/** What a line weighs in a JSON page: its cells and the names that key them, and what was found. */
const lineWeight = (row: ResultRow, view: View) => row.input.length + (view.format === "csv" ? view.namesChars : 0) + (row.person?.length ?? 0) + (row.find?.length ?? 0);

/** The addresses a set of rows answered with, for their verdicts. */
const emailsOf = (rows: readonly ResultRow[]) => rows.flatMap((r) => (r.person ? (JSON.parse(r.person) as { emails: [string][] }).emails.map(([e]) => e) : []));

async function verdictsFor(db: Database, job: LookupJobRow, view: View, rows: readonly ResultRow[]): Promise<Map<string, VerdictRow>> {
  if (!view.verify) return new Map();
  const emails = emailsOf(rows);
  if (emails.length === 0) return new Map();
  return new Map((await verdictsOfQuery(db, job.id, emails)).map((v) => [String(v.email), v]));
}

/** With verify_emails, each address's verification is the job's verdict for it (null when none could be had). */
function withVerdicts(data: ContactInfo, verdicts: ReadonlyMap<string, VerdictRow>): ContactInfo {
  if (!data.email_details) return data;
  const details = data.email_details.map((d): EmailDetail => {
    // Keyed as the database folds it (store/lookup-verdicts.ts: lower(), ASCII only): the one address key.
    const v = verdicts.get(sqliteLower(d.email));
    return { ...d, verification: v ? { classification: v.classification, smtp_outcome: v.smtp_outcome as NonNullable<EmailDetail["verification"]>["smtp_outcome"], checked_at: iso(Number(v.checked_at)) } : null };
  });
  return { ...data, email_details: details };
}

/** find_emails: the finder's answer for a line it looked at (none while the line is due, or for a line it never takes). */
const findOf = (row: Pick<ResultRow, "find">): LookupJobFind | null => (row.find === null || row.find === "due" ? null : (JSON.parse(row.find) as LookupJobFind));

function lineResult(row: ResultRow, view: View, verdicts: ReadonlyMap<string, VerdictRow>): LookupJobResult {
  const find = findOf(row);
  const base = { line: Number(row.position) + 1, input: inputObject(view.format, view.names, row.input), ...(find ? { find } : {}) };
  const status = (row.outcome ?? "refused") as LookupLineStatus;
  if (status === "found" && row.person) {
    const data = contactInfoFromSnapshot(row.person, view.include);
    return { ...base, status, data: view.verify ? withVerdicts(data, verdicts) : data };
  }
  const error = row.error ?? (status === "not_found" ? "No profile found for the given parameters" : "");
  return { ...base, status, error, ...(status === "refused" && error.startsWith("Daily credit cap") ? { reason: "daily_credit_cap" as const } : {}) };
}

async function page(db: Database, job: LookupJobRow, view: View, from: number, limit: number, filter: LookupLineStatus[]) {
  const ended = isEnded(job);
  // An ended job's page is its answered lines (the outcome index), a cancelled job's never-looked-up lines passed over.
  const outcomes = filter.length > 0 ? filter : ended ? [...LOOKUP_LINE_STATUSES] : [];
  let rows: ResultRow[];
  let stop: number | null = null;
  if (outcomes.length > 0) {
    const [unanswered, found] = await db.batch([firstUnansweredQuery(db, job.id, from), rowsWithOutcomesQuery(db, job.id, outcomes, from, limit + 1)]);
    stop = ended ? null : (unanswered[0]?.position ?? null);
    rows = found.filter((r) => stop === null || Number(r.position) < Number(stop));
  } else {
    rows = await resultRowsQuery(db, job.id, from, limit + 1);
    const at = rows.findIndex((r) => r.state !== "done");
    if (at >= 0) {
      stop = Number(rows[at]!.position);
      rows = rows.slice(0, at);
    }
  }
  // At most `limit` lines and, past the first, PAGE_BUDGET_CHARS of them: next_cursor resumes at the first left out.
  const shown = withinPageBudget(rows, limit, (row) => lineWeight(row, view));
  const verdicts = await verdictsFor(db, job, view, shown);
  let next: number | null;
  if (rows.length > shown.length) next = Number(rows[shown.length]!.position);
  else if (stop !== null) next = stop;
  else if (ended) next = null;
  else next = shown.length > 0 ? Number(shown.at(-1)!.position) + 1 : from;
  return {
    results: shown.map((r) => lineResult(r, view, verdicts)),
    next_cursor: next === null ? null : paging.cursor(next),
    status: job.status,
    processed: processedOf(job),
    total: Number(job.total),
  };
}

const LOOKUP_CSV_COLUMNS = [
  "lookup_status",
  "lookup_error",
  "lookup_personal_emails",
  "lookup_work_emails",
  "lookup_phones",
  "lookup_profnet_id",
  "lookup_profnet_public_identifier",
  "lookup_codehost_id",
  "lookup_codehost_login",
  "lookup_codehost_username",
  "lookup_socialnet_username",
  "lookup_microblog_username",
] as const;

/** With find_emails, last: the finder's answer (empty where it found nothing or did not look). */
const FIND_CSV_COLUMNS = ["found_email", "found_confidence", "found_method", "found_confirmed"] as const;

/** With include=profile, after LOOKUP_CSV_COLUMNS: the person's full name and the first employment (current first). */
const PROFILE_CSV_COLUMNS = ["lookup_full_name", "lookup_employer", "lookup_title", "lookup_employer_domains"] as const;

const csvLine = (cells: readonly (string | number | null | undefined)[]) => `${cells.map(csvCell).join(",")}\r\n`;

/** A line of the CSV download: the customer's cells (padded to the header), then what was found, or the line's state. */
function csvRow(row: ResultRow, view: View, width: number, verdicts: ReadonlyMap<string, VerdictRow>, notAnswered: string): string {
  const own = view.format === "csv" ? (JSON.parse(row.input) as string[]) : [row.input];
  const cells: (string | number | null)[] = [...own, ...Array.from({ length: Math.max(0, width - own.length) }, () => "")];
  const profile = view.include.has("profile");
  if (row.state === "pending") {
    return csvLine([...cells, notAnswered, ...Array.from({ length: LOOKUP_CSV_COLUMNS.length - 1 + (profile ? PROFILE_CSV_COLUMNS.length : 0) + (view.verify ? 1 : 0) + (view.find ? FIND_CSV_COLUMNS.length : 0) }, () => null)]);
  }
  const result = lineResult(row, view, verdicts);
  const d = result.data;
  const join = (list: readonly string[] | undefined) => (list ?? []).join("; ");
  const found = [
    result.status,
    result.error ?? null,
    join(d?.personal_email_addresses),
    join(d?.work_email_addresses),
    join(d?.phone_numbers),
    d?.profnet_id ?? null,
    d?.profnet_public_identifier ?? null,
    d?.codehost_id ?? null,
    d?.codehost_login ?? null,
    d?.codehost_username ?? null,
    d?.socialnet_username ?? null,
    d?.microblog_username ?? null,
  ];
  // include=profile: the name, and the first employment as the answer orders it (current first).
  const job = d?.employment?.[0];
  const profileCells = profile ? [d?.name?.full ?? null, job?.employer ?? null, job?.title ?? null, job ? job.domains.join("; ") : null] : [];
  const verdictCell = view.verify ? [(d?.email_details ?? []).map((e) => `${e.email} ${e.verification?.classification ?? "unverified"}`).join("; ")] : [];
  const f = view.find ? findOf(row) : null;
  const findCells = view.find ? (f?.status === "found" ? [f.email ?? null, f.confidence ?? null, f.method ?? null, f.confirmed ? "true" : "false"] : [null, null, null, null]) : [];
  return csvLine([...cells, ...found, ...profileCells, ...verdictCell, ...findCells]);
}

/** Every line (or those with the statuses asked for) as CSV or JSON Lines, streamed a database read at a time. */
async function download(c: Context<AppEnv>, job: LookupJobRow, view: View, format: "csv" | "jsonl", filter: LookupLineStatus[]) {
  const db = requestDatabase(c);
  const encoder = new TextEncoder();
  const notAnswered = job.status === "cancelled" ? "cancelled" : "pending";
  const width = format === "csv" && view.format === "csv" ? Math.max(view.header?.length ?? 0, await widestInput(db, job.id)) : 1;
  let position = 0;
  let headerSent = format === "jsonl";
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        const own = view.format === "csv" ? keptColumnNames(view.header, width) : ["input"];
        return controller.enqueue(encoder.encode(csvLine([...own, ...LOOKUP_CSV_COLUMNS, ...(view.include.has("profile") ? PROFILE_CSV_COLUMNS : []), ...(view.verify ? ["lookup_email_verdicts"] : []), ...(view.find ? FIND_CSV_COLUMNS : [])])));
      }
      const rows = filter.length > 0 ? await rowsWithOutcomesQuery(db, job.id, filter, position, DOWNLOAD_PAGE) : await resultRowsQuery(db, job.id, position, DOWNLOAD_PAGE);
      if (rows.length === 0) return controller.close();
      const verdicts = await verdictsFor(db, job, view, rows);
      const text =
        format === "csv"
          ? rows.map((r) => csvRow(r, view, width, verdicts, notAnswered)).join("")
          : rows
              .filter((r) => r.state !== "pending")
              .map((r) => `${JSON.stringify(lineResult(r, view, verdicts))}\n`)
              .join("");
      controller.enqueue(encoder.encode(text));
      position = Number(rows.at(-1)!.position) + 1;
    },
  });
  const type = format === "csv" ? "text/csv; charset=utf-8" : "application/jsonl; charset=utf-8";
  return c.body(stream, 200, { "Content-Type": type, "Content-Disposition": attachment(`${job.id}.${format}`) });
}

async function results(c: Context<AppEnv>, query: z.infer<typeof lookupJobResultsRoute.request.query>) {
  const accept = c.req.header("accept") ?? "";
  const format = query.format ?? (accept.includes("text/csv") ? "csv" : "json");
  // Parameters first: a bad request costs no database read.
  const filter = statusFilter(query.status);
  const limit = format === "json" ? paging.limit(query.limit) : 0;
  const from = format === "json" ? (paging.after(query.cursor)?.[0] ?? 0) : 0;
  const job = await lookupJobOr404(c);
  if (Number(job.results_state) > 0) throw new ApiError(410, RESULTS_EXPIRED);
  const view = viewOf(job);
  if (format !== "json") return download(c, job, view, format, filter);
  return c.json(await page(requestDatabase(c), job, view, from, limit, filter), 200);
}

export function registerLookupJobResultsRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(lookupJobResultsRoute, (c) => results(c, c.req.valid("query")));
}
