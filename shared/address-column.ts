/**
 * Which column of a CSV file holds the email addresses (docs/jobs.md "CSV files"): one rule for the jobs API
 * (edge/jobs/verification/input.ts) and the console's preview (edge/console/browser/list-worker.ts), so the page never shows one
 * column and the API checks another. In order:
 *
 * 1. `email_column`, when given: a column's name in the first row, or its 1-based number.
 * 2. The first column whose header is named like an address ("Email", "E-mail address", "Work email", "Courriel"...).
 * 3. The column whose cells look like addresses: the most of them among the first ADDRESS_SAMPLE_ROWS data rows, and at
 *    least half of its filled cells.
 * 4. None: the file is refused with the columns it has (noAddressColumn), never checked on a column of names.
 *
 * The first row is a header unless it holds a cell that looks like an address (then the file is a plain list).
 * Pure and without dependencies: the browser bundles it.
 */

/** Data rows the content rule looks at. */
export const ADDRESS_SAMPLE_ROWS = 50;

/**
 * A header named like an address, once lower-cased with every run of other characters than letters and digits made a
 * space: "E-mail address" is "e mail address". A qualifier may come before or after ("work email", "email (work)"),
 * and a number after ("email 2"); a few other languages' words too.
 */
const QUALIFIER = "(?:work|business|personal|primary|private|contact|company|office|home|main|other|alternate|alt|secondary|professional|pro)";
const ADDRESS_HEADER = new RegExp(
  "^(?:" +
    [
      `(?:${QUALIFIER} )?(?:e ?mail|mail)(?: ?address(?:es)?)?(?: ?id)?(?: ?\\d+)?(?: ${QUALIFIER})?`,
      "courriel|adresse (?:e ?mail|mail|courriel|electronique)|correo(?: electr[oó]nico)?|e ?mail ?adres(?:se)?|mailadres(?:se)?",
      "indirizzo (?:e ?mail|di posta elettronica)|posta elettronica|endere[cç]o de e ?mail|e ?post(?:adresse)?",
    ].join("|") +
    ")$",
  "u",
);

export function isAddressHeader(cell: string): boolean {
  const words = cell
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
  return ADDRESS_HEADER.test(words);
}

/**
 * A cell that looks like an address, loosely: text, an @, more text with a dot, no space and no separator that would
 * mean the row was split wrongly (a semicolon-separated file read as one column has "Ada;ada@x.io" cells). Whether it is
 * a good address is the syntax check's question, not this one's: a column of mistyped addresses is still the column.
 */
const LOOKS_LIKE_ADDRESS = /^[^\s@,;|<>]+@[^\s@,;|<>]+\.[^\s@,;|<>]+$/u;

export function looksLikeAddress(cell: string | undefined): boolean {
  return cell !== undefined && cell.length <= 1024 && LOOKS_LIKE_ADDRESS.test(cell.trim());
}

/** What the rule decided: the column (0-based) and whether the first row is a header; `column` null when none qualifies. */
export type AddressColumn = { column: number | null; hasHeader: boolean; by: "parameter" | "header" | "cells" | "none" };

/** email_column as given: a column's name, or its 1-based number (digits only). */
export type ColumnParameter = string;

/** An email_column that names no column of the file: the refusal's words. */
export class UnknownColumnError extends Error {}

/**
 * The address column of a file whose first record is `first` and whose next records (up to ADDRESS_SAMPLE_ROWS of
 * them; fewer in a short file) are `sample`; `parameter` is email_column when given. Throws UnknownColumnError when
 * email_column names no column.
 */
export function chooseAddressColumn(first: readonly string[], sample: readonly (readonly string[])[], parameter?: ColumnParameter): AddressColumn {
  if (parameter !== undefined) {
    const wanted = parameter.trim();
    const width = Math.max(first.length, ...sample.map((r) => r.length));
    if (/^[0-9]+$/.test(wanted)) {
      const column = Number(wanted) - 1;
      if (column < 0 || column >= width) throw new UnknownColumnError(`email_column ${wanted}: the file has ${width === 1 ? "1 column" : `${width} columns`}`);
      return { column, hasHeader: !looksLikeAddress(first[column]), by: "parameter" };
    }
    let column = first.findIndex((cell) => cell.trim() === wanted);
    if (column < 0) column = first.findIndex((cell) => cell.trim().toLowerCase() === wanted.toLowerCase());
    if (column < 0) throw new UnknownColumnError(`email_column "${clip(wanted)}" is not a column of the file (${columnList(first, true)})`);
    return { column, hasHeader: true, by: "parameter" };
  }
  const named = first.findIndex(isAddressHeader);
  if (named >= 0) return { column: named, hasHeader: true, by: "header" };
  const hasHeader = !first.some((cell) => looksLikeAddress(cell));
  const rows = hasHeader ? sample : [first, ...sample];
  const width = Math.max(0, ...rows.map((r) => r.length));
  let best: number | null = null;
  let bestHits = 0;
  for (let column = 0; column < width; column++) {
    let hits = 0;
    let filled = 0;
    for (const row of rows) {
      const cell = row[column];
      if (cell === undefined || cell.trim() === "") continue;
      filled++;
      if (looksLikeAddress(cell)) hits++;
    }
    if (hits > bestHits && hits * 2 >= filled) {
      best = column;
      bestHits = hits;
    }
  }
  return { column: best, hasHeader, by: best === null ? "none" : "cells" };
}

/** Control and bidirectional control characters: never echoed from someone's file into a message. */
const UNSHOWABLE = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

function clip(text: string, max = 40): string {
  const clean = text.replace(UNSHOWABLE, " ").trim();
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}

/** The columns as a message names them: their header cells (clipped, at most 12), or their number without a header. */
export function columnList(first: readonly string[], hasHeader: boolean): string {
  if (!hasHeader) return first.length === 1 ? "no header row; 1 column" : `no header row; ${first.length} columns`;
  const shown = first.slice(0, 12).map((cell, i) => (cell.trim() === "" ? `column ${i + 1} (no name)` : `“${clip(cell)}”`));
  const more = first.length > 12 ? `, and ${first.length - 12} more` : "";
  return `columns: ${shown.join(", ")}${more}`;
}

/**
 * Why a file has no address column, naming its columns; with a hint when its first row reads as one column that holds a
 * semicolon, a tab or a bar (a file that separates columns with another character than the comma).
 */
export function noAddressColumn(first: readonly string[], hasHeader: boolean): string {
  const oneColumn = first.length === 1 && /[;\t|]/.test(first[0] ?? "");
  const hint = oneColumn ? ". Its first row reads as one column: the file seems to separate columns with semicolons or tabs; save it as comma-separated CSV" : "";
  return `No column of the file looks like email addresses (${columnList(first, hasHeader)})${hint}`;
}
