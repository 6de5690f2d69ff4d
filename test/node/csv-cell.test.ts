/**
 * The one CSV cell rule of every download (edge/jobs/csv-export.ts csvCell; docs/jobs.md "Results"): a cell a
 * spreadsheet would run as a formula gets a leading apostrophe, as it is and as a spreadsheet may tidy it first
 * (leading white space and invisible characters dropped, full-width signs folded); anything else is left as it is.
 */
import { describe, expect, it } from "vitest";
import { csvCell } from "../../edge/jobs/csv-export.ts";

describe("csvCell", () => {
  it.each([
    ["=HYPERLINK(1)", "'=HYPERLINK(1)"],
    ["+1", "'+1"],
    ["-2", "'-2"],
    ["@SUM(A1)", "'@SUM(A1)"],
    ["\t=1", "'\t=1"],
    ["\r=1", `"'\r=1"`],
    [" =1+1", "' =1+1"],
    ["\n=1+1", `"'\n=1+1"`],
    ["\u00a0=1+1", "'\u00a0=1+1"],
    ["\u200b=1+1", "'\u200b=1+1"],
    ["\ufeff@cmd", "'\ufeff@cmd"],
    ["\u3000+1", "'\u3000+1"],
    ["＝1+1", "'＝1+1"],
    ["＋1", "'＋1"],
    ["－1", "'－1"],
    ["＠SUM(A1)", "'＠SUM(A1)"],
  ])("%j runs as a formula somewhere: %j", (cell, out) => {
    expect(csvCell(cell)).toBe(out);
  });

  it.each([
    ["ada@example.org", "ada@example.org"],
    [" John", " John"],
    ["\u00a0Müller", "\u00a0Müller"],
    ["a=b", "a=b"],
    ["x, y", `"x, y"`],
    ['say "hi"', `"say ""hi"""`],
    ["", ""],
  ])("%j stays as it is: %j", (cell, out) => {
    expect(csvCell(cell)).toBe(out);
  });

  it("numbers, booleans and nothing", () => {
    expect([csvCell(5), csvCell(-5), csvCell(true), csvCell(null), csvCell(undefined)]).toEqual(["5", "'-5", "true", "", ""]);
  });
});
