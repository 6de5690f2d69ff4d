/**
 * A job's results as CSV (RFC 4180: comma, CRLF, quotes doubled), one row per input line: the customer's kept columns
 * first, in their file's order (kept-columns.ts), then ours (CSV_COLUMNS). A cell that
 * a spreadsheet would run as a formula (starting with =, +, -, @, or a tab or carriage return, per
 * OWASP's CSV injection advice) gets a leading apostrophe: the list came from someone else, and an
 * address such as "=HYPERLINK(...)"@example.com must stay text when our user opens the file. So does one that starts
 * so once a spreadsheet has tidied it: after leading spaces, line breaks or invisible characters (which LibreOffice
 * Calc's "Trim spaces" import option and Google Sheets' whitespace clean-up remove), or with a full-width = + - @
 * (which CJK input methods type and Excel, in those locales, folds to the ASCII ones).
 */
import { trimAsciiWhitespace } from "../../shared/email/syntax.ts";
import type { JobResult } from "../../shared/jobs.ts";

export const CSV_COLUMNS = [
  "email",
  "classification",
  "valid",
  "score",
  "smtp_deliverable",
  "accepts_any_email",
  "disposable",
  "typo_suggestion",
  "mx_record",
  "warnings",
  "reason",
  "checked_at",
  "mx_provider",
] as const;

/** What a spreadsheet may drop before the first character it reads: white space of any kind, zero-width characters, a BOM. */
const INVISIBLE_LEAD = /^[\s\u180e\u200b-\u200f\u2060-\u2064\ufeff]*/u;
const FORMULA_START = /^[=+\-@\t\r\uff1d\uff0b\uff0d\uff20]/u;

/** Whether a cell reads as a formula, as it is or once tidied (INVISIBLE_LEAD dropped). */
const formulaLike = (text: string) => FORMULA_START.test(text) || FORMULA_START.test(text.replace(INVISIBLE_LEAD, ""));

export function csvCell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  let text = String(value);
  if (formulaLike(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The prefix of one of our columns whose name a kept column already has (ASCII case aside): "email" becomes "verification_email". */
export const OWN_COLUMN_PREFIX = "verification_";

/** Our columns' names beside `kept`: each as CSV_COLUMNS names it, unless a kept column has that name. */
export function ownColumnNames(kept: readonly string[]): string[] {
  const taken = new Set(kept.map((name) => name.toLowerCase()));
  return CSV_COLUMNS.map((name) => {
    let own: string = name;
    while (taken.has(own.toLowerCase())) own = `${OWN_COLUMN_PREFIX}${own}`;
    return own;
  });
}

export const csvHeader = (kept: readonly string[] = []): string => `${[...kept, ...ownColumnNames(kept)].map(csvCell).join(",")}\r\n`;

/**
 * A row for an input line: its kept cells (`keptCells`, as many as the job keeps columns, "" for any the line lacks),
 * then ours; `state` stands in for the classification of a line not checked (yet).
 */
export function csvRow(line: string, result: JobResult | null, state: "pending" | "cancelled" = "pending", keptCells: readonly string[] = []): string {
  const r = result;
  // The address as results show it: the input line without the whitespace around it.
  const email = trimAsciiWhitespace(line);
  const cells = r
    ? [
        email,
        r.classification,
        r.valid,
        r.score,
        r.checks.smtp_deliverable,
        r.checks.accepts_any_email,
        r.checks.disposable,
        r.checks.typo_suggestion,
        r.checks.mx_record,
        r.warnings.join("; "),
        r.reason,
        r.checked_at,
        r.details?.mx_provider,
      ]
    : [email, state, null, null, null, null, null, null, null, null, null, null, null];
  return `${[...keptCells, ...cells].map(csvCell).join(",")}\r\n`;
}
