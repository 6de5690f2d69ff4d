/**
 * The list preview's Web Worker (docs/console.md "Lists"): parses a dropped file or pasted text with
 * csv-parse, the parser the API uses, in 1 MiB slices so a 10 MiB file never blocks the page; answers
 * the first rows and a guessed email column; then, for the column picked, counts duplicates and
 * malformed addresses with the API's own syntax check and duplicate key (shared/email/syntax.ts
 * `addressKey`, as edge/jobs/prepare-lines.ts) and builds the one-column CSV the page uploads.
 */
import { parse } from "csv-parse/browser/esm";
import { addressKey, parseEmailAddress } from "../../../shared/email/syntax.ts";
import { JOB_LIMITS } from "../../../shared/job-limits.ts";

export type Parsed = { type: "parsed"; header: string[] | null; preview: string[][]; rows: number; guess: number; columns: number };
export type Counted = { type: "counted"; rows: number; distinct: number; duplicates: number; malformed: number; empty: number; csv: Blob; firstTooLong: number | null };
export type Failed = { type: "failed"; message: string };
export type Request = { type: "parse"; file?: File; text?: string } | { type: "count"; column: number; hasHeader: boolean };

const SLICE = 1 << 20;
const ADDRESS_HEADERS = new Set(["email", "email_address"]);
let records: string[][] = [];

function quote(cell: string): string {
  // An empty cell is written as "" so the line is not skipped as empty: the job keeps every row.
  return cell === "" || /[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell;
}

async function parseAll(input: { file?: File; text?: string }): Promise<Parsed> {
  records = [];
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: 65_536 });
  const done = new Promise<void>((resolve, reject) => {
    parser.on("readable", () => {
      let record: string[] | null;
      while ((record = parser.read() as string[] | null) !== null) records.push(record);
    });
    parser.on("error", reject);
    parser.on("end", () => resolve());
  });
  if (input.file) {
    const decoder = new TextDecoder();
    for (let at = 0; at < input.file.size; at += SLICE) {
      parser.write(decoder.decode(await input.file.slice(at, at + SLICE).arrayBuffer(), { stream: true }));
      // Let the parser's events run between slices.
      await new Promise((r) => setTimeout(r, 0));
    }
    parser.write(decoder.decode());
  } else {
    parser.write(input.text ?? "");
  }
  parser.end();
  await done;
  const first = records[0] ?? [];
  const named = first.findIndex((cell) => ADDRESS_HEADERS.has(cell.trim().toLowerCase()));
  // The API's rule: a first row naming no address column whose first cell holds an @ is data.
  const hasHeader = named >= 0 || !(first[0] ?? "").includes("@");
  const body = hasHeader ? records.slice(1) : records;
  const columns = Math.max(0, ...records.slice(0, 50).map((r) => r.length));
  let guess = named;
  if (guess < 0) {
    const score = Array.from({ length: columns }, (_, i) => body.slice(0, 50).filter((r) => (r[i] ?? "").includes("@")).length);
    guess = score.indexOf(Math.max(0, ...score));
  }
  return { type: "parsed", header: hasHeader ? first : null, preview: body.slice(0, 5), rows: body.length, guess: Math.max(0, guess), columns };
}

function count(column: number, hasHeader: boolean): Counted {
  const body = hasHeader ? records.slice(1) : records;
  const seen = new Set<string>();
  let duplicates = 0;
  let malformed = 0;
  let empty = 0;
  const out: string[] = ["email"];
  const utf8 = new TextEncoder();
  let firstTooLong: number | null = null;
  for (const [index, record] of body.entries()) {
    const cell = record[column] ?? "";
    // The API refuses a whole list for one address over its line limit: say which row, before upload.
    if (firstTooLong === null && cell.length * 3 > JOB_LIMITS.maxLineBytes && utf8.encode(cell).byteLength > JOB_LIMITS.maxLineBytes) firstTooLong = index + 1;
    out.push(quote(cell));
    if (cell.trim() === "") {
      empty++;
      continue;
    }
    const parsed = parseEmailAddress(cell);
    if (!parsed.ok) {
      malformed++;
      continue;
    }
    const key = addressKey(parsed);
    if (seen.has(key)) duplicates++;
    else seen.add(key);
  }
  return { type: "counted", rows: body.length, distinct: seen.size, duplicates, malformed, empty, csv: new Blob([out.join("\r\n") + "\r\n"], { type: "text/csv" }), firstTooLong };
}

self.onmessage = async (event: MessageEvent<Request>) => {
  const request = event.data;
  try {
    if (request.type === "parse") self.postMessage(await parseAll(request));
    else self.postMessage(count(request.column, request.hasHeader));
  } catch (error) {
    self.postMessage({ type: "failed", message: `This file could not be read as CSV: ${error instanceof Error ? error.message : String(error)}` } satisfies Failed);
  }
};
