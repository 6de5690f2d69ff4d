/**
 * The body of POST /v1/email_verification_jobs (docs/jobs.md "Bulk verification jobs"): a JSON object
 * with `email_addresses`, or a CSV file whose address column is named `email_address` or `email`
 * (any case), else the first one. Bounded before it is parsed; every problem is a 4xx that says what
 * is wrong. Rows are kept as given (a row that fails the syntax check comes back invalid, in place).
 *
 * Memory is what an isolate runs out of first (Cloudflare stops one past 128 MB, failing every
 * request in it), so a CSV file is parsed from its bytes as a stream, record by record, keeping only
 * the address cell of each row and stopping at the first row past the limits; nothing holds every
 * row, or the whole file as a string.
 */
import { parse as csvParser, type CsvError } from "csv-parse";
import { ERROR_MESSAGES } from "../../shared/api.ts";
import { JOB_INPUT_ERRORS, JOB_LIMITS, JobCreateRequest, overLineLimit } from "../../shared/jobs.ts";
import { ApiError } from "../lib/errors.ts";

/** A whole CSV row, address and every other column together (an export from a CRM has many). */
const MAX_CSV_RECORD_CHARS = 64 * 1024;
/** The bytes handed to the CSV parser at a time. */
const CSV_SLICE_BYTES = 64 * 1024;

export type JobRequest = { addresses: string[]; smtpTimeout: unknown; callbackUrl: unknown; retentionSeconds: unknown };

const tooMany = () => new ApiError(413, JOB_INPUT_ERRORS.tooManyAddresses);

/** A JSON body, through the shared schema: too many addresses is 413, anything else 400 with the schema's message. */
function fromJson(bytes: Uint8Array): JobRequest {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ApiError(400, ERROR_MESSAGES.malformedJson);
  }
  const parsed = JobCreateRequest.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "too_big" && issue.path.length === 1) throw tooMany();
    throw new ApiError(400, issue.message);
  }
  return { addresses: parsed.data.email_addresses, smtpTimeout: parsed.data.smtp_timeout, callbackUrl: parsed.data.callback_url, retentionSeconds: parsed.data.retention_seconds };
}

const ADDRESS_HEADERS = new Set(["email_address", "email"]);

/**
 * The address column of a CSV file. The first row is a header: the column named email_address or
 * email (any case, surrounding spaces ignored) holds the addresses, else the first column does. A
 * first row whose first cell holds an "@" and names no such column is a plain list without a
 * header, and counts as data: a file of bare addresses must not lose its first one.
 *
 * Each record is reduced to its address cell as it is parsed (on_record), so the parser never keeps
 * a row; the file's bytes go in by slices, and parsing stops at the first row past a limit.
 */
export function addressesFromCsv(bytes: Uint8Array): Promise<string[]> {
  const addresses: string[] = [];
  let column = -1;
  // The refusal an on_record check decided; the parser then reports it as its error.
  let refusal: ApiError | null = null;
  const refuse = (error: ApiError) => {
    refusal = error;
    throw error;
  };
  return new Promise<string[]>((resolve, reject) => {
    const parser = csvParser({
      bom: true,
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: MAX_CSV_RECORD_CHARS,
      on_record: (record: string[], context: { lines: number }) => {
        if (column < 0) {
          const header = record.map((cell) => cell.trim().toLowerCase());
          const named = header.findIndex((cell) => ADDRESS_HEADERS.has(cell));
          column = named >= 0 ? named : 0;
          if (named >= 0 || !(record[0] ?? "").includes("@")) return null;
        }
        const cell = record[column] ?? "";
        if (overLineLimit(cell)) refuse(new ApiError(400, JOB_INPUT_ERRORS.csvLineTooLong(context.lines)));
        if (addresses.length === JOB_LIMITS.maxAddresses) refuse(tooMany());
        addresses.push(cell);
        // Nothing is passed on: the parser's output side stays empty.
        return null;
      },
    });
    parser.on("error", (err: CsvError | Error) => {
      if (refusal) return reject(refusal);
      reject(new ApiError(400, `Malformed CSV: ${err.message.slice(0, 200)}`));
    });
    parser.on("end", () => resolve(addresses));
    parser.resume();
    // write() parses synchronously; after an error the parser is destroyed and takes no more.
    for (let at = 0; at < bytes.byteLength && !parser.destroyed; at += CSV_SLICE_BYTES) {
      parser.write(bytes.subarray(at, at + CSV_SLICE_BYTES));
    }
    if (!parser.destroyed) parser.end();
  });
}

/** retention_seconds: an integer 0..max (a JSON number, or its decimal digits), or the default when absent. */
export function parseRetentionSeconds(raw: unknown, max: number): number {
  if (raw === undefined || raw === null) return max;
  const text = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw.trim() : "";
  if (!/^[0-9]{1,10}$/.test(text)) throw new ApiError(400, typeof raw === "number" || typeof raw === "string" ? JOB_INPUT_ERRORS.retentionRange(max) : JOB_INPUT_ERRORS.retentionNotAnInteger);
  const value = Number(text);
  if (value > max) throw new ApiError(400, JOB_INPUT_ERRORS.retentionRange(max));
  return value;
}

/** The parameters of a job from its body; query parameters carry smtp_timeout, callback_url and retention_seconds for CSV. */
export async function parseJobBody(contentType: string, bytes: Uint8Array, query: { smtp_timeout?: string; callback_url?: string; retention_seconds?: string }): Promise<JobRequest> {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  let request: JobRequest;
  if (type === "application/json" || type.endsWith("+json")) request = fromJson(bytes);
  else if (type === "text/csv" || type === "application/csv") request = { addresses: await addressesFromCsv(bytes), smtpTimeout: undefined, callbackUrl: undefined, retentionSeconds: undefined };
  else throw new ApiError(415, JOB_INPUT_ERRORS.unsupported);
  if (request.addresses.length === 0) throw new ApiError(400, JOB_INPUT_ERRORS.empty);
  // As for single verifications, the query string wins over the body.
  return {
    addresses: request.addresses,
    smtpTimeout: query.smtp_timeout !== undefined && query.smtp_timeout.trim() !== "" ? query.smtp_timeout : request.smtpTimeout,
    callbackUrl: query.callback_url !== undefined && query.callback_url.trim() !== "" ? query.callback_url : request.callbackUrl,
    retentionSeconds: query.retention_seconds !== undefined && query.retention_seconds.trim() !== "" ? query.retention_seconds : request.retentionSeconds,
  };
}
