/**
 * The body of POST /v1/email_verification_jobs (README "Bulk verification jobs"): a JSON object
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
import { ApiError } from "../lib/errors.ts";

export const MAX_JOB_BODY_BYTES = 10 * 1024 * 1024;
export const MAX_JOB_ADDRESSES = 100_000;
/**
 * One address (a CSV cell or a JSON array element) in UTF-8 bytes: RFC 5321 allows 254 octets in a
 * path, and a little room stays for surrounding whitespace. Anything longer cannot be an address,
 * and would be stored twice (the line and its result).
 */
export const MAX_JOB_LINE_BYTES = 320;
/** A whole CSV row, address and every other column together (an export from a CRM has many). */
const MAX_CSV_RECORD_CHARS = 64 * 1024;
/** The bytes handed to the CSV parser at a time. */
const CSV_SLICE_BYTES = 64 * 1024;

export type JobRequest = { addresses: string[]; smtpTimeout: unknown; callbackUrl: unknown };

export const JOB_ERRORS = {
  bodyTooLarge: `Request body too large: a job is at most ${MAX_JOB_BODY_BYTES / 1024 / 1024} MB`,
  tooManyAddresses: `Too many addresses: a job has at most ${MAX_JOB_ADDRESSES.toLocaleString("en")}`,
  empty: "The job has no addresses",
  notAnArray: "email_addresses must be an array of strings",
  unsupported: "Unsupported content type: send application/json or text/csv",
  csvLineTooLong: (line: number) => `Line ${line}: an address is at most ${MAX_JOB_LINE_BYTES} bytes`,
  jsonLineTooLong: (index: number) => `email_addresses[${index}]: an address is at most ${MAX_JOB_LINE_BYTES} bytes`,
} as const;

const tooMany = () => new ApiError(413, JOB_ERRORS.tooManyAddresses);

const utf8 = new TextEncoder();
/** Whether `text` takes more than MAX_JOB_LINE_BYTES in UTF-8, without encoding a short one. */
function overLineLimit(text: string): boolean {
  // A UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair, two units, is 4).
  if (text.length * 3 <= MAX_JOB_LINE_BYTES) return false;
  if (text.length > MAX_JOB_LINE_BYTES) return true;
  return utf8.encode(text).byteLength > MAX_JOB_LINE_BYTES;
}

function fromJson(bytes: Uint8Array): JobRequest {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ApiError(400, "Malformed JSON body");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ApiError(400, "The JSON body must be an object");
  const body = value as Record<string, unknown>;
  const list = body.email_addresses;
  if (list === undefined) throw new ApiError(400, "The email_addresses parameter is required");
  if (!Array.isArray(list)) throw new ApiError(400, JOB_ERRORS.notAnArray);
  if (list.length > MAX_JOB_ADDRESSES) throw tooMany();
  for (let i = 0; i < list.length; i++) {
    const item: unknown = list[i];
    if (typeof item !== "string") throw new ApiError(400, JOB_ERRORS.notAnArray);
    if (overLineLimit(item)) throw new ApiError(400, JOB_ERRORS.jsonLineTooLong(i));
  }
  return { addresses: list as string[], smtpTimeout: body.smtp_timeout, callbackUrl: body.callback_url };
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
        if (overLineLimit(cell)) refuse(new ApiError(400, JOB_ERRORS.csvLineTooLong(context.lines)));
        if (addresses.length === MAX_JOB_ADDRESSES) refuse(tooMany());
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

/** The parameters of a job from its body; query parameters carry smtp_timeout and callback_url for CSV. */
export async function parseJobBody(contentType: string, bytes: Uint8Array, query: { smtp_timeout?: string; callback_url?: string }): Promise<JobRequest> {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  let request: JobRequest;
  if (type === "application/json" || type.endsWith("+json")) request = fromJson(bytes);
  else if (type === "text/csv" || type === "application/csv") request = { addresses: await addressesFromCsv(bytes), smtpTimeout: undefined, callbackUrl: undefined };
  else throw new ApiError(415, JOB_ERRORS.unsupported);
  if (request.addresses.length === 0) throw new ApiError(400, JOB_ERRORS.empty);
  // As for single verifications, the query string wins over the body.
  return {
    addresses: request.addresses,
    smtpTimeout: query.smtp_timeout !== undefined && query.smtp_timeout.trim() !== "" ? query.smtp_timeout : request.smtpTimeout,
    callbackUrl: query.callback_url !== undefined && query.callback_url.trim() !== "" ? query.callback_url : request.callbackUrl,
  };
}
