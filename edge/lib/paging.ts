/**
 * Cursor paging, one way for every list (job results, erasure notices, audit events): a page size from `limit`, and an
 * opaque cursor holding the integers a page resumes after (base64 of "tag:n:n", so clients do not build their own and
 * one list's cursor is not another's). Anything else is a 400 with the list's own message, before any database read.
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

export function cursorPaging(o: { tag: string; fields: number; defaultLimit: number; maxLimit: number; badCursor: string; badLimit: string }): Paging {
  const pattern = new RegExp(`^${o.tag}${":(\\d{1,15})".repeat(o.fields)}$`);
  return {
    limit(raw) {
      const value = raw?.trim() ?? "";
      if (value === "") return o.defaultLimit;
      const n = /^[0-9]{1,4}$/.test(value) ? Number(value) : Number.NaN;
      if (!(n >= 1 && n <= o.maxLimit)) throw new ApiError(400, o.badLimit);
      return n;
    },
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
