/** edge/lib/paging.ts: the one way lists read `limit` and `cursor` (job results, erasure notices, audit events). */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../edge/lib/errors.ts";
import { cursorPaging } from "../../edge/lib/paging.ts";

const paging = cursorPaging({ tag: "e", fields: 2, defaultLimit: 100, maxLimit: 1000, badCursor: "bad cursor", badLimit: "bad limit" });
const other = cursorPaging({ tag: "a", fields: 1, defaultLimit: 100, maxLimit: 500, badCursor: "bad cursor", badLimit: "bad limit" });

function refusal(run: () => unknown): { status: number; message: string } | null {
  try {
    run();
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.status, message: error.message };
  }
}

describe("cursorPaging", () => {
  it("a cursor gives back the integers it was made from; none is the first page", () => {
    const cursor = paging.cursor(1_764_115_200_000, 42);
    expect(cursor).toMatch(/^[A-Za-z0-9+/]+$/);
    expect(paging.after(cursor)).toEqual([1_764_115_200_000, 42]);
    expect(paging.after(undefined)).toBeNull();
    expect(paging.after("")).toBeNull();
  });

  it.each([["not base64!"], [btoa("e:1")], [btoa("e:1:2:3")], [btoa("e:-1:2")], [btoa("x:1:2")], [btoa(`e:${"9".repeat(16)}:1`)]])("refuses the cursor %s with the list's 400", (raw) => {
    expect(refusal(() => paging.after(raw))).toEqual({ status: 400, message: "bad cursor" });
  });

  it("one list's cursor is not another's", () => {
    expect(refusal(() => other.after(paging.cursor(1, 2)))).toEqual({ status: 400, message: "bad cursor" });
    expect(refusal(() => paging.after(other.cursor(7)))).toEqual({ status: 400, message: "bad cursor" });
  });

  it("limit: absent or blank is the default, 1..max is itself (spaces trimmed), anything else the list's 400", () => {
    expect([paging.limit(undefined), paging.limit(""), paging.limit(" "), paging.limit("1"), paging.limit(" 1000 ")]).toEqual([100, 100, 100, 1, 1000]);
    for (const raw of ["0", "1001", "-1", "1.5", "ten", "10000", "1e3"]) expect(refusal(() => paging.limit(raw))).toEqual({ status: 400, message: "bad limit" });
    expect(refusal(() => other.limit("501"))).toEqual({ status: 400, message: "bad limit" });
  });
});
