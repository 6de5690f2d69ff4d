/**
 * The body of POST /v1/email_verification_jobs (docs/jobs.md "Bulk verification jobs"): a JSON object with
 * `email_addresses`, or a CSV file whose every column is kept with each line, the addresses in the column
 * shared/address-column.ts picks (email_column, else a header named like an address, else the column of
 * address-looking cells; none is 400 naming the columns). Bounded before it is parsed; every problem is a 4xx that says
 * what is wrong and quotes no byte of a file that is not text. Rows are kept as given (a row that fails the syntax
 * check comes back invalid, in place).
 *
 * Memory is what an isolate runs out of first (Cloudflare stops one past 128 MB, failing every request in it), so a
 * CSV file is read by the one intake (intake.ts) as a stream: each record is reduced at once to its address cell and
 * where its bytes are in the upload (two numbers: the line is read out of the upload again when it is written, never
 * held twice), and reading stops at the first row past a limit. Only the first ADDRESS_SAMPLE_ROWS records are held as
 * cells, until the address column is decided.
 */
import { ADDRESS_SAMPLE_ROWS, chooseAddressColumn, noAddressColumn, UnknownColumnError, type AddressColumn } from "../../../shared/address-column.ts";
import { ERROR_MESSAGES } from "../../../shared/api.ts";
import { JOB_INPUT_ERRORS, JOB_LIMITS, JobCreateRequest, JobName, overLineLimit } from "../../../shared/jobs.ts";
import { ApiError } from "../../lib/errors.ts";
import { csvRecords, keptColumnNames } from "../intake.ts";

/**
 * What a CSV file keeps besides its addresses: each line as it was in the file (a CSV record, read back by
 * kept-columns.ts decodeRecord), the columns' names, and which of them held the addresses. A file of one column keeps
 * nothing besides: its addresses are the results.
 */
export type KeptColumns = { record(position: number): string; names: string[]; emailColumn: number };

const CR = 0x0d;
const LF = 0x0a;
const UTF8_BOM = [0xef, 0xbb, 0xbf];

/**
 * Where each line's bytes are in an upload: from the end of the line before (csv-parse's `bytes`, counted from the
 * upload's start) to this line's end, less the empty lines the parser skipped, a byte-order mark and the line break.
 * What is left is the record as the parser read it: valid RFC 4180, quoted cells and line breaks inside them included.
 */
class LineSpans {
  /** Start and end of line i at [2i] and [2i + 1]: typed, so 100,000 lines take 800 KB and no object each. */
  private spans = new Uint32Array(2048);
  private count = 0;
  private last = 0;
  constructor(private readonly bytes: Uint8Array) {}
  add(end: number): void {
    let start = this.last;
    this.last = end;
    if (start === 0 && UTF8_BOM.every((b, i) => this.bytes[i] === b)) start = UTF8_BOM.length;
    while (start < end && (this.bytes[start] === CR || this.bytes[start] === LF)) start++;
    while (end > start && (this.bytes[end - 1] === CR || this.bytes[end - 1] === LF)) end--;
    if (2 * this.count + 2 > this.spans.length) {
      const grown = new Uint32Array(this.spans.length * 2);
      grown.set(this.spans);
      this.spans = grown;
    }
    this.spans[2 * this.count] = start;
    this.spans[2 * this.count + 1] = end;
    this.count++;
  }
  /** The line `i` (0-based, counting the header when there is one). */
  text(i: number): string {
    return new TextDecoder().decode(this.bytes.subarray(this.spans[2 * i], this.spans[2 * i + 1]));
  }
}

export type JobRequest = {
  addresses: string[];
  kept: KeptColumns | null;
  name: string | null;
  /** The email_column asked for (part of what a reused Idempotency-Key must repeat). */
  emailColumn: string | null;
  smtpTimeout: unknown;
  callbackUrl: unknown;
  retentionSeconds: unknown;
};

const tooMany = () => new ApiError(413, JOB_INPUT_ERRORS.tooManyAddresses);

/** A JSON body, through the shared schema: too many addresses is 413, anything else 400 with the schema's message. */
function fromJson(bytes: Uint8Array): Omit<JobRequest, "emailColumn"> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ApiError(400, ERROR_MESSAGES.malformedJson);
  }
  const parsed = JobCreateRequest.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "too_big" && issue.path.length === 1 && issue.path[0] === "email_addresses") throw tooMany();
    throw new ApiError(400, issue.message);
  }
  const d = parsed.data;
  return { addresses: d.email_addresses, kept: null, name: d.name ?? null, smtpTimeout: d.smtp_timeout, callbackUrl: d.callback_url, retentionSeconds: d.retention_seconds };
}

/**
 * The lines of a CSV file (read by the one intake, intake.ts): every record's address cell, and (when the file has more
 * than one column) where each line is in the upload, to be kept as it was. The first ADDRESS_SAMPLE_ROWS + 1 records
 * wait as cells until the address column is decided from them (shared/address-column.ts); every later record is
 * reduced at once to its address cell and its span, and reading stops at the first row past a limit.
 */
export async function linesFromCsv(bytes: Uint8Array, emailColumn?: string): Promise<{ addresses: string[]; kept: KeptColumns | null }> {
  const addresses: string[] = [];
  const spans = new LineSpans(bytes);
  let width = 0;
  let choice: AddressColumn | null = null;
  let header: string[] | null = null;
  const waiting: { cells: string[]; line: number }[] = [];
  const take = (cells: string[], line: number) => {
    const cell = cells[choice!.column!] ?? "";
    if (overLineLimit(cell)) throw new ApiError(400, JOB_INPUT_ERRORS.csvLineTooLong(line));
    if (addresses.length === JOB_LIMITS.maxAddresses) throw tooMany();
    addresses.push(cell);
    if (cells.length > width) width = cells.length;
  };
  const decide = () => {
    const [first, ...sample] = waiting;
    try {
      choice = chooseAddressColumn(first!.cells, sample.map((r) => r.cells), emailColumn);
    } catch (error) {
      if (error instanceof UnknownColumnError) throw new ApiError(400, error.message);
      throw error;
    }
    if (choice.column === null) throw new ApiError(400, JOB_INPUT_ERRORS.noAddressColumn(noAddressColumn(first!.cells, choice.hasHeader)));
    if (choice.hasHeader) {
      header = first!.cells;
      width = header.length;
    }
    for (const row of choice.hasHeader ? sample : waiting) take(row.cells, row.line);
    waiting.length = 0;
  };
  for await (const records of csvRecords(bytes, RECORDS_PER_CHUNK)) {
    for (const record of records) {
      spans.add(record.end);
      if (choice !== null) take(record.cells, record.line);
      else {
        waiting.push({ cells: record.cells, line: record.line });
        if (waiting.length > ADDRESS_SAMPLE_ROWS) decide();
      }
    }
  }
  if (choice === null) {
    if (waiting.length === 0) throw new ApiError(400, JOB_INPUT_ERRORS.emptyFile);
    decide();
  }
  const decided = choice as AddressColumn | null;
  // One column is the address alone: the results' own email holds it. The header, when there is one, is the first
  // span: the job's line i is span i + 1.
  const skip = decided!.hasHeader ? 1 : 0;
  const kept = width > 1 ? { record: (position: number) => spans.text(position + skip), names: keptColumnNames(header, width), emailColumn: decided!.column! } : null;
  return { addresses, kept };
}

/** Records handed from the intake at a time. */
const RECORDS_PER_CHUNK = 2_000;

/** retention_seconds: an integer 0..max (a JSON number, or its decimal digits), or the default when absent. */
export function parseRetentionSeconds(raw: unknown, max: number): number {
  if (raw === undefined || raw === null) return max;
  const text = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw.trim() : "";
  if (!/^[0-9]{1,10}$/.test(text)) throw new ApiError(400, typeof raw === "number" || typeof raw === "string" ? JOB_INPUT_ERRORS.retentionRange(max) : JOB_INPUT_ERRORS.retentionNotAnInteger);
  const value = Number(text);
  if (value > max) throw new ApiError(400, JOB_INPUT_ERRORS.retentionRange(max));
  return value;
}

type JobQuery = { smtp_timeout?: string; callback_url?: string; retention_seconds?: string; email_column?: string; name?: string };

const given = (value: string | undefined): value is string => value !== undefined && value.trim() !== "";

/** A name from the query: the same rule as the JSON body's. */
function queryName(raw: string): string {
  const parsed = JobName.safeParse(raw);
  if (!parsed.success) throw new ApiError(400, JOB_INPUT_ERRORS.badName);
  return parsed.data;
}

/** The parameters of a job from its body; the query carries a CSV file's parameters (and may override a JSON body's). */
export async function parseJobBody(contentType: string, bytes: Uint8Array, query: JobQuery): Promise<JobRequest> {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  let request: Omit<JobRequest, "emailColumn">;
  const emailColumn = given(query.email_column) ? query.email_column : null;
  if (type === "application/json" || type.endsWith("+json")) {
    if (emailColumn !== null) throw new ApiError(400, JOB_INPUT_ERRORS.emailColumnNotCsv);
    request = fromJson(bytes);
  } else if (type === "text/csv" || type === "application/csv") {
    const lines = await linesFromCsv(bytes, emailColumn ?? undefined);
    request = { ...lines, name: null, smtpTimeout: undefined, callbackUrl: undefined, retentionSeconds: undefined };
  } else throw new ApiError(415, JOB_INPUT_ERRORS.unsupported);
  if (request.addresses.length === 0) throw new ApiError(400, JOB_INPUT_ERRORS.empty);
  // As for single verifications, the query string wins over the body.
  return {
    addresses: request.addresses,
    kept: request.kept,
    name: given(query.name) ? queryName(query.name) : request.name,
    emailColumn,
    smtpTimeout: given(query.smtp_timeout) ? query.smtp_timeout : request.smtpTimeout,
    callbackUrl: given(query.callback_url) ? query.callback_url : request.callbackUrl,
    retentionSeconds: given(query.retention_seconds) ? query.retention_seconds : request.retentionSeconds,
  };
}
