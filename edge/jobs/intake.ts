/**
 * The one intake of every kind of list (docs/jobs.md "CSV files", docs/lookup-jobs.md "Creating a job"): an upload is
 * sniffed first (a spreadsheet, an image or an archive is refused as what it is, before any parser sees it), then read
 * as a stream: CSV by csv-parse, a slice of bytes at a time, record by record; JSON Lines line by line. Each record is
 * bounded before anything else looks at it (JOB_LIMITS.maxCsvLineChars characters, JOB_LIMITS.maxColumns cells), and
 * every problem is one 400 in our own words, naming its line and never quoting a byte of the file (csv-parse's own
 * messages do). A column is named by one rule (keptColumnNames), so a file downloads with the same header from every
 * kind. Nothing is held as rows: a kind takes the records a chunk at a time, with where each one's bytes are.
 */
import { parse as csvParser, type CsvError } from "csv-parse";
import { CSV_LINE_ERRORS, JOB_LIMITS } from "../../shared/job-limits.ts";
import { csvProblem, notTextMessage, sniffFileKind, SNIFF_BYTES } from "../../shared/file-kind.ts";
import { ApiError } from "../lib/errors.ts";

export { keptColumnNames } from "./kept-columns.ts";

/** The bytes handed to the CSV parser at a time. */
const CSV_SLICE_BYTES = 64 * 1024;

/** One CSV record: its cells, the file's line number where it ends, and the upload's byte offset at its end. */
export type CsvRecord = { cells: string[]; line: number; end: number };

/** A 400 for a file that is not text at all: says what it looks like, quotes none of its bytes. */
export function refuseNonText(bytes: Uint8Array): void {
  const kind = sniffFileKind(bytes.subarray(0, SNIFF_BYTES));
  if (!kind.text) throw new ApiError(400, notTextMessage(kind.what));
}

/** The parser's refusals in words of ours (its own messages quote the file's bytes). */
function csvRefusal(error: CsvError | Error): ApiError {
  const code = "code" in error ? String(error.code) : "";
  const line = "lines" in error && typeof error.lines === "number" ? error.lines : 0;
  if (code === "CSV_MAX_RECORD_SIZE") return new ApiError(400, CSV_LINE_ERRORS.tooLong(line));
  return new ApiError(400, CSV_LINE_ERRORS.malformed(line, csvProblem(code)));
}

/**
 * A CSV upload's records, `chunk` at a time (the header, when the file has one, is the first record): sniffed, parsed
 * from the bytes in slices (never the whole file as one string), each record bounded as it comes. RFC 4180 as
 * csv-parse reads it: quoted cells with commas and line breaks, a byte-order mark ignored, empty lines skipped, rows of
 * different lengths accepted.
 */
export async function* csvRecords(bytes: Uint8Array, chunk: number): AsyncGenerator<CsvRecord[]> {
  refuseNonText(bytes);
  let out: CsvRecord[] = [];
  let failure: ApiError | null = null;
  const parser = csvParser({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: JOB_LIMITS.maxCsvLineChars,
    on_record: (cells: string[], context: { lines: number; bytes: number }) => {
      if (failure) return null;
      if (cells.length > JOB_LIMITS.maxColumns) failure = new ApiError(400, CSV_LINE_ERRORS.tooManyColumns(context.lines));
      else out.push({ cells, line: context.lines, end: context.bytes });
      // Nothing is passed on: the parser's output side stays empty.
      return null;
    },
  });
  parser.on("error", (error: CsvError | Error) => (failure ??= csvRefusal(error)));
  parser.resume();
  // The parser reports an error as an event on the next tick.
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
  for (let at = 0; at < bytes.byteLength; at += CSV_SLICE_BYTES) {
    parser.write(bytes.subarray(at, at + CSV_SLICE_BYTES));
    if (parser.destroyed) await settle();
    if (failure) throw failure;
    if (out.length >= chunk) {
      yield out;
      out = [];
    }
  }
  parser.end();
  await settle();
  if (failure) throw failure;
  if (out.length > 0) yield out;
}

/** One JSON Lines line: its value (an object), its text as given, and its line number. */
export type JsonlLine = { value: Record<string, unknown>; text: string; line: number };

/**
 * A JSON Lines upload's non-blank lines, `chunk` at a time: sniffed, each line bounded as a CSV record is (characters),
 * then parsed; a line that is not a JSON object is `notAnObject(line)`.
 */
export function* jsonlLines(bytes: Uint8Array, chunk: number, notAnObject: (line: number) => string): Generator<JsonlLine[]> {
  refuseNonText(bytes);
  const decoder = new TextDecoder();
  let out: JsonlLine[] = [];
  let start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  for (let line = 1; start < bytes.byteLength; line++) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.byteLength;
    // Bytes first (no decoding of a huge line), then characters, the CSV records' bound.
    if (end - start > 4 * JOB_LIMITS.maxCsvLineChars) throw new ApiError(400, CSV_LINE_ERRORS.tooLong(line));
    const text = decoder.decode(bytes.subarray(start, end)).trim();
    if (text.length > JOB_LIMITS.maxCsvLineChars) throw new ApiError(400, CSV_LINE_ERRORS.tooLong(line));
    start = end + 1;
    if (text === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new ApiError(400, notAnObject(line));
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ApiError(400, notAnObject(line));
    out.push({ value: value as Record<string, unknown>, text, line });
    if (out.length >= chunk) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}
