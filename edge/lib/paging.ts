/**
 * Cursor paging, one way for every list (job results, erasure notices, audit events; the job list reads its `limit`
 * the same way and resumes after a job id): a page size from `limit`, and an opaque cursor holding the integers a page
 * resumes after (base64 of "tag:n:n", so clients do not build their own and one list's cursor is not another's).
 * Anything else is a 400 with the list's own message, before any database read.
 */
import { ApiError } from "./errors.ts";

export type Paging = {
  /** `limit`: absent or blank, the default; else an integer 1..max. */
  limit(raw: string | undefined): number;
  /** `cursor`: absent or empty, null (the first page); else the integers it holds. */
  after(raw: string | undefined): number[] | null;
  /** The cursor for the page after the one ending at these integers. */
  cursor(...fields: number[]): string;
};

type LimitRule = { defaultLimit: number; maxLimit: number; badLimit: string };

/** `limit`: absent or blank, the default; else an integer 1..max (spaces around it trimmed); anything else the list's 400. */
export function pageLimit(raw: string | undefined, o: LimitRule): number {
  const value = raw?.trim() ?? "";
  if (value === "") return o.defaultLimit;
  const n = /^[0-9]{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= o.maxLimit)) throw new ApiError(400, o.badLimit);
  return n;
}

export function cursorPaging(o: LimitRule & { tag: string; fields: number; badCursor: string }): Paging {
  const pattern = new RegExp(`^${o.tag}${":(\\d{1,15})".repeat(o.fields)}$`);
  return {
    limit: (raw) => pageLimit(raw, o),
    after(raw) {
      if (raw === undefined || raw === "") return null;
      let text: string;
      try {
        text = atob(raw);
      } catch {
        throw new ApiError(400, o.badCursor);
      }
      const m = pattern.exec(text);
      if (!m) throw new ApiError(400, o.badCursor);
      return m.slice(1).map(Number);
    },
    cursor: (...fields) => btoa(`${o.tag}:${fields.join(":")}`).replace(/=+$/, ""),
  };
}

/**
 * What one JSON page of results may carry of the customer's own data, in characters (their kept columns, their line's
 * cells, what was found): about 1 MiB, so a page of wide lines stays a page, not tens of megabytes in one isolate.
 */
export const PAGE_BUDGET_CHARS = 1024 * 1024;

/** The first rows of a page: at most `limit`, and past the first no more than `budget` characters by `weight`. */
export function withinPageBudget<T>(rows: readonly T[], limit: number, weight: (row: T) => number, budget = PAGE_BUDGET_CHARS): T[] {
  let total = 0;
  let taken = 0;
  for (const row of rows) {
    if (taken === limit) break;
    total += weight(row);
    if (taken > 0 && total > budget) break;
    taken++;
  }
  return rows.slice(0, taken);
}
