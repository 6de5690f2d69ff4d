/**
 * Reading a people import file as a stream of numbered rows, never holding more than one line:
 * JSON Lines (one object a line) or CSV (a header row with the ContactInfo field names, one record
 * a line, `;` between the items of a list cell). A line that cannot be read becomes a row with an
 * error; only a file that cannot be read at all (or a CSV header that makes no sense) throws.
 */
import { parse as parseCsv } from "csv-parse/sync";
import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { extname } from "node:path";
import { AdminError } from "./accounts.ts";
import { CSV_FIELDS, CSV_LIST_FIELDS, IDENTIFIER_FIELDS } from "./people-record.ts";

export type ImportFormat = "jsonl" | "csv";

/** One line of the file: its 1-based line number and either its decoded value or why it has none. */
export type SourceRow = { line: number; value: unknown } | { line: number; error: string };

type TextLine = { line: number; text: string } | { line: number; error: string };

const FORMAT_BY_EXTENSION: Record<string, ImportFormat> = { ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv" };
const SNIFF_BYTES = 4096;
const LIST_SEPARATOR = ";";
const LIST_COLUMNS: ReadonlySet<string> = new Set(CSV_LIST_FIELDS);

/** By extension; otherwise a file whose first non-blank character is `{` is JSON Lines, else CSV. */
export async function detectImportFormat(path: string): Promise<ImportFormat> {
  const byExtension = FORMAT_BY_EXTENSION[extname(path).toLowerCase()];
  if (byExtension) return byExtension;
  const file = await open(path, "r");
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(SNIFF_BYTES), 0, SNIFF_BYTES, 0);
    const start = buffer.subarray(0, bytesRead).toString("utf8").replace(/^\uFEFF/, "").trimStart();
    return start.startsWith("{") ? "jsonl" : "csv";
  } finally {
    await file.close();
  }
}

/**
 * Splits a byte stream into lines of at most `maxLineBytes` bytes. An overlong line is dropped as
 * soon as it passes the bound (its bytes are not kept) and reported as an error row, so a file with
 * no newline at all cannot exhaust memory.
 */
export async function* splitBoundedLines(chunks: AsyncIterable<Buffer>, maxLineBytes: number): AsyncGenerator<TextLine> {
  // fatal: a line with invalid UTF-8 is reported instead of silently getting U+FFFD;
  // ignoreBOM false: a byte order mark at the start of the file is dropped.
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  let pieces: Buffer[] = [];
  let pendingBytes = 0;
  let overlong = false;
  let lineNumber = 0;

  const takeLine = (): TextLine => {
    lineNumber++;
    const bytes = Buffer.concat(pieces);
    const wasOverlong = overlong;
    pieces = [];
    pendingBytes = 0;
    overlong = false;
    if (wasOverlong) return { line: lineNumber, error: `line is longer than ${maxLineBytes} bytes` };
    const withoutCr = bytes.at(-1) === 0x0d ? bytes.subarray(0, -1) : bytes;
    try {
      return { line: lineNumber, text: decoder.decode(withoutCr) };
    } catch {
      return { line: lineNumber, error: "line is not valid UTF-8" };
    }
  };

  for await (const chunk of chunks) {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!overlong) {
        if (pendingBytes + end - start > maxLineBytes) {
          overlong = true;
          pieces = [];
        } else {
          pieces.push(chunk.subarray(start, end));
          pendingBytes += end - start;
        }
      }
      if (newline === -1) break;
      yield takeLine();
      start = newline + 1;
    }
  }
  if (pendingBytes > 0 || overlong) yield takeLine();
}

async function* readChunks(path: string, onBytesRead: (bytes: number) => void): AsyncGenerator<Buffer> {
  for await (const chunk of createReadStream(path)) {
    onBytesRead(chunk.length);
    yield chunk as Buffer;
  }
}

function isBlank(text: string): boolean {
  return text.trim() === "";
}

async function* jsonLinesRows(lines: AsyncIterable<TextLine>): AsyncGenerator<SourceRow> {
  for await (const line of lines) {
    if ("error" in line) {
      yield line;
    } else if (!isBlank(line.text)) {
      try {
        yield { line: line.line, value: JSON.parse(line.text) };
      } catch (error) {
        yield { line: line.line, error: `malformed JSON: ${(error as Error).message}` };
      }
    }
  }
}

/** The fields of one CSV line; a quoted field may hold the delimiter and quotes, not a line break. */
function parseCsvLine(text: string): string[] {
  const records = parseCsv(text, { relax_column_count: true }) as string[][];
  return records[0] ?? [];
}

function checkCsvHeader(columns: string[]): void {
  const known: ReadonlySet<string> = new Set(CSV_FIELDS);
  const unknown = columns.filter((column) => !known.has(column));
  if (unknown.length > 0) {
    throw new AdminError(`Unknown CSV column ${unknown.map((c) => JSON.stringify(c)).join(", ")}; known columns: ${CSV_FIELDS.join(", ")}`);
  }
  const duplicate = columns.find((column, index) => columns.indexOf(column) !== index);
  if (duplicate) throw new AdminError(`Duplicate CSV column ${JSON.stringify(duplicate)}`);
  if (!columns.some((column) => (IDENTIFIER_FIELDS as readonly string[]).includes(column))) {
    throw new AdminError(`The CSV header needs at least one of ${IDENTIFIER_FIELDS.join(", ")}`);
  }
}

async function* csvRows(lines: AsyncIterable<TextLine>): AsyncGenerator<SourceRow> {
  let columns: string[] | undefined;
  for await (const line of lines) {
    if (!("error" in line) && isBlank(line.text)) continue;
    if (!columns) {
      // Without a usable header no row can be read, so the whole import stops here.
      if ("error" in line) throw new AdminError(`Cannot read the CSV header (line ${line.line}): ${line.error}`);
      try {
        columns = parseCsvLine(line.text).map((column) => column.trim());
      } catch (error) {
        throw new AdminError(`Cannot read the CSV header (line ${line.line}): ${(error as Error).message}`);
      }
      checkCsvHeader(columns);
      continue;
    }
    if ("error" in line) {
      yield line;
      continue;
    }
    let fields: string[];
    try {
      fields = parseCsvLine(line.text);
    } catch (error) {
      yield { line: line.line, error: `malformed CSV: ${(error as Error).message}` };
      continue;
    }
    if (fields.length !== columns.length) {
      yield { line: line.line, error: `expected ${columns.length} fields, found ${fields.length}` };
      continue;
    }
    const value: Record<string, string | string[]> = {};
    columns.forEach((column, index) => {
      const cell = fields[index] ?? "";
      value[column] = LIST_COLUMNS.has(column) ? cell.split(LIST_SEPARATOR) : cell;
    });
    yield { line: line.line, value };
  }
}

export type ReadOptions = {
  maxLineBytes: number;
  /** Called with the size of every chunk read, for progress reporting. */
  onBytesRead?: (bytes: number) => void;
};

export function readPeopleRows(path: string, format: ImportFormat, options: ReadOptions): AsyncGenerator<SourceRow> {
  const lines = splitBoundedLines(readChunks(path, options.onBytesRead ?? (() => {})), options.maxLineBytes);
  return format === "csv" ? csvRows(lines) : jsonLinesRows(lines);
}
