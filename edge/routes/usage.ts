/**
 * GET /v1/usage (docs/api.md "Usage"): the account's use by day or by key, read from the daily roll-up
 * (usage_daily, one row per account, day and key), never from the ledger: 90 days of a busy account
 * is at most 90 rows per key, found by the table's primary key.
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { MAX_USAGE_DAYS, USAGE_FIELDS, UsageQuery, UsageReport } from "../../shared/keys.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { utcDay } from "../db/rows.ts";
import { ApiError } from "../lib/errors.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { access } from "./access.ts";
import { csvCell } from "../jobs/csv-export.ts";
import { usageRows } from "../money/usage.ts";

const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

export const USAGE_MESSAGES = {
  badFrom: "Invalid parameter from: must be a date as YYYY-MM-DD",
  badTo: "Invalid parameter to: must be a date as YYYY-MM-DD",
  fromAfterTo: "Invalid parameter from: must not be after to",
  tooLong: `Invalid parameter from: the period may cover at most ${MAX_USAGE_DAYS} days`,
  badKey: "Invalid parameter key_id: not a key or member id",
} as const;

const usageRoute = createRoute({
  method: "get",
  path: "/v1/usage",
  operationId: "getUsage",
  tags: ["Account"],
  summary: "Usage by day or by key: lookups, verifications, job lines, credits",
  description:
    `From a daily roll-up kept as the work happens (UTC days). Default period: the last ${DEFAULT_DAYS} days; at most ${MAX_USAGE_DAYS}. ` +
    "group_by=day lists the days with any use; group_by=key the keys with any use in the period, each with its name (key_name; a member's name for their console use). " +
    "key_id narrows either to one key's (or member's) use. " +
    "format=csv (or Accept: text/csv) answers the same rows as CSV with a header line. Counts against the lookup rate limit.",
  ...access({ who: { scope: "account:read" }, limits: ["account"] }),
  request: { query: UsageQuery },
  responses: {
    200: { description: "The usage", content: { "application/json": { schema: UsageReport }, "text/csv": { schema: UsageReport.shape.rows } } },
    400: errorResponse(`${USAGE_MESSAGES.badFrom}; ${USAGE_MESSAGES.badTo}; ${USAGE_MESSAGES.fromAfterTo}; ${USAGE_MESSAGES.tooLong}; ${USAGE_MESSAGES.badKey}; or group_by / format not one of the values`),
    ...authenticatedErrorResponses,
  },
});

function parseDay(raw: string | undefined, message: string): number | null {
  if (raw === undefined || raw.trim() === "") return null;
  const value = raw.trim();
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  // Date.parse rolls 2026-02-30 over to March: only a day that reads back the same is one.
  if (!Number.isFinite(ms) || utcDay(ms) !== value) throw new ApiError(400, message);
  return ms;
}

type Counts = Record<(typeof USAGE_FIELDS)[number], number>;
type Row = Counts & { day?: string; key_id?: string; key_name?: string | null };

function counts(raw: Record<string, unknown>): Counts {
  return Object.fromEntries(USAGE_FIELDS.map((f) => [f, Number(raw[f] ?? 0)])) as Counts;
}

function toCsv(groupBy: "day" | "key", rows: Row[]): string {
  const first = groupBy === "day" ? ["day"] : ["key_id", "key_name"];
  const lines = [[...first, ...USAGE_FIELDS].join(",")];
  // Days and key ids are [0-9A-Za-z_-]: nothing to quote. A name is a person's words: quoted, and never a formula.
  for (const r of rows) lines.push([...(groupBy === "day" ? [r.day] : [r.key_id, csvCell(r.key_name)]), ...USAGE_FIELDS.map((f) => r[f])].join(","));
  return `${lines.join("\r\n")}\r\n`;
}

export function registerUsageRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(usageRoute, async (c) => {
    const query = c.req.valid("query");
    const today = Date.parse(`${utcDay(Date.now())}T00:00:00Z`);
    const to = parseDay(query.to, USAGE_MESSAGES.badTo) ?? today;
    const from = parseDay(query.from, USAGE_MESSAGES.badFrom) ?? to - (DEFAULT_DAYS - 1) * DAY_MS;
    if (from > to) throw new ApiError(400, USAGE_MESSAGES.fromAfterTo);
    if ((to - from) / DAY_MS + 1 > MAX_USAGE_DAYS) throw new ApiError(400, USAGE_MESSAGES.tooLong);
    const groupBy = query.group_by ?? "day";
    const keyId = query.key_id?.trim() || undefined;
    if (keyId !== undefined && !/^[A-Za-z0-9_-]{1,80}$/.test(keyId)) throw new ApiError(400, USAGE_MESSAGES.badKey);
    const accountId = c.get("auth").accountId;
    const csv = query.format === "csv" || (query.format === undefined && (c.req.header("accept") ?? "").includes("text/csv"));
    const found = await usageRows(requestDatabase(c), accountId, { from: utcDay(from), to: utcDay(to), groupBy, keyId });
    const rows: Row[] = found.map((r) => ({
      ...(groupBy === "day" ? { day: String(r.grp) } : { key_id: String(r.grp), key_name: r.name === null || r.name === undefined ? null : String(r.name) }),
      ...counts(r),
    }));
    Object.assign(c.get("accessLog"), { usage_rows: rows.length });
    if (csv) return c.body(toCsv(groupBy, rows), 200, { "Content-Type": "text/csv; charset=utf-8" });
    const totals = counts(Object.fromEntries(USAGE_FIELDS.map((f) => [f, rows.reduce((n, r) => n + r[f], 0)])));
    const body: UsageReport = { from: utcDay(from), to: utcDay(to), group_by: groupBy, rows, totals };
    return c.json(body, 200);
  });
}
