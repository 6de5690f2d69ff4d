/**
 * The list preview's Web Worker (docs/console.md "Lists"): parses a dropped file with csv-parse, the parser the API
 * uses, in 1 MiB slices so a 10 MiB file never blocks the page; refuses what the API would refuse, by the API's own
 * rules (shared/file-kind.ts: not text; shared/address-column.ts: no column of addresses, named; the line bounds of
 * shared/job-limits.ts); answers the first rows and the address column the API would pick; then, for the column
 * picked, counts duplicates and malformed addresses with the API's own syntax check and duplicate key
 * (shared/email/syntax.ts `addressKey`, as edge/jobs/verification/prepare-lines.ts). Pasted text is addresses one per line.
 * The page then uploads the file itself: the API keeps every column.
 */
import { parse } from "csv-parse/browser/esm/sync";
import { ADDRESS_SAMPLE_ROWS, chooseAddressColumn, looksLikeAddress, noAddressColumn, type AddressColumn } from "../../../shared/address-column.ts";
import { addressKey, parseEmailAddress } from "../../../shared/email/syntax.ts";
import { csvProblem, notTextMessage, sniffFileKind, SNIFF_BYTES } from "../../../shared/file-kind.ts";
import { CSV_LINE_ERRORS, JOB_LIMITS } from "../../../shared/job-limits.ts";

export type Parsed = {
  type: "parsed";
  /** The first row's cells (the header, or the first line of a file without one). */
  first: string[];
  preview: string[][];
  /** Lines in the file, header included. */
  records: number;
  columns: number;
  /** The API's choice of address column, and whether the first row is a header. */
  choice: AddressColumn;
  /** Why no column qualifies (names the columns), when none does. */
  noColumn: string | null;
  pasted: boolean;
};
export type Counted = {
  type: "counted";
  rows: number;
  hasHeader: boolean;
  distinct: number;
  duplicates: number;
  malformed: number;
  empty: number;
  /** Cells of the column that look like addresses: 0 means the column holds none. */
  addressLike: number;
  firstTooLong: number | null;
  /** The addresses, for pasted text (sent as a JSON list); null for a file (sent as it is). */
  addresses: string[] | null;
};
export type Failed = { type: "failed"; message: string; empty?: boolean };
export type Request = { type: "parse"; file?: File; text?: string } | { type: "count"; column: number };

let records: string[][] = [];
let pasted = false;

/** Thrown for what the API would refuse, with the API's words. */
class Refusal extends Error {}

async function parseFile(file: File): Promise<void> {
  const kind = sniffFileKind(new Uint8Array(await file.slice(0, SNIFF_BYTES).arrayBuffer()));
  if (!kind.text) throw new Refusal(notTextMessage(kind.what));
  // The synchronous parser (as the enrich preview's): every record is kept for the counts anyway, so a stream would
  // save no memory, and it halves the worker's weight (the console's 50 KB budget, docs/console.md).
  const text = await file.text();
  let items: { record: string[]; info: { lines: number } }[];
  try {
    items = parse(text, { bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: JOB_LIMITS.maxCsvLineChars, info: true }) as unknown as typeof items;
  } catch (caught) {
    const error = caught as Error & { code?: string; lines?: number };
    const line = error.lines ?? 0;
    throw new Refusal(error.code === "CSV_MAX_RECORD_SIZE" ? CSV_LINE_ERRORS.tooLong(line) : CSV_LINE_ERRORS.malformed(line, csvProblem(error.code ?? "")));
  }
  for (const item of items) {
    if (item.record.length > JOB_LIMITS.maxColumns) throw new Refusal(CSV_LINE_ERRORS.tooManyColumns(item.info.lines));
    records.push(item.record);
  }
}

async function parseAll(input: { file?: File; text?: string }): Promise<Parsed | Failed> {
  records = [];
  pasted = input.file === undefined;
  if (input.file) await parseFile(input.file);
  else records = (input.text ?? "").split(/\r?\n/).filter((line) => line.trim() !== "").map((line) => [line]);
  if (records.length === 0) return { type: "failed", message: pasted ? "Nothing was pasted yet." : "The file is empty: it has no lines.", empty: true };
  const first = records[0]!;
  const columns = Math.max(0, ...records.slice(0, ADDRESS_SAMPLE_ROWS + 1).map((r) => r.length));
  // Pasted lines are addresses, every one: the JSON list the API gets has no header.
  const choice: AddressColumn = pasted ? { column: 0, hasHeader: false, by: "parameter" } : chooseAddressColumn(first, records.slice(1, ADDRESS_SAMPLE_ROWS + 1));
  const noColumn = choice.column === null ? noAddressColumn(first, choice.hasHeader) : null;
  const body = choice.hasHeader ? records.slice(1) : records;
  return { type: "parsed", first, preview: body.slice(0, 5), records: records.length, columns, choice, noColumn, pasted };
}

/**
 * The figures for `column`: its first row is a header unless its cell there looks like an address (the API's rule for
 * an email_column given by number, which is how the page sends the column picked).
 */
function count(column: number): Counted {
  const hasHeader = !pasted && !looksLikeAddress(records[0]?.[column]);
  const body = hasHeader ? records.slice(1) : records;
  const seen = new Set<string>();
  let duplicates = 0;
  let malformed = 0;
  let empty = 0;
  let addressLike = 0;
  const utf8 = new TextEncoder();
  let firstTooLong: number | null = null;
  for (const [index, record] of body.entries()) {
    const cell = record[column] ?? "";
    // The API refuses a whole list for one address over its line limit: say which row, before upload.
    if (firstTooLong === null && cell.length * 3 > JOB_LIMITS.maxLineBytes && utf8.encode(cell).byteLength > JOB_LIMITS.maxLineBytes) firstTooLong = index + 1;
    if (cell.trim() === "") {
      empty++;
      continue;
    }
    if (looksLikeAddress(cell)) addressLike++;
    const parsed = parseEmailAddress(cell);
    if (!parsed.ok) {
      malformed++;
      continue;
    }
    const key = addressKey(parsed);
    if (seen.has(key)) duplicates++;
    else seen.add(key);
  }
  const addresses = pasted ? body.map((r) => r[0] ?? "") : null;
  return { type: "counted", rows: body.length, hasHeader, distinct: seen.size, duplicates, malformed, empty, addressLike, firstTooLong, addresses };
}

self.onmessage = async (event: MessageEvent<Request>) => {
  const request = event.data;
  try {
    if (request.type === "parse") self.postMessage(await parseAll(request));
    else self.postMessage(count(request.column));
  } catch (error) {
    records = [];
    // A refusal is in the API's words; anything else says what to do, never what the file held.
    const message = error instanceof Refusal ? `${error.message}.` : "This file could not be read as CSV. Save it as CSV (comma-separated values) and choose it again.";
    self.postMessage({ type: "failed", message } satisfies Failed);
  }
};
