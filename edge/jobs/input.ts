/**
 * The body of POST /v1/email_verification_jobs (README "Bulk verification jobs"): a JSON object
 * with `email_addresses`, or a CSV file whose address column is named `email_address` or `email`
 * (any case), else the first one. Bounded before it is parsed; every problem is a 4xx that says what
 * is wrong. Rows are kept as given (a row that fails the syntax check comes back invalid, in place).
 */
import { parse as parseCsv } from "csv-parse/sync";
import { ApiError } from "../lib/errors.ts";

export const MAX_JOB_BODY_BYTES = 10 * 1024 * 1024;
export const MAX_JOB_ADDRESSES = 100_000;

export type JobRequest = { addresses: string[]; smtpTimeout: unknown; callbackUrl: unknown };

export const JOB_ERRORS = {
  bodyTooLarge: `Request body too large: a job is at most ${MAX_JOB_BODY_BYTES / 1024 / 1024} MB`,
  tooManyAddresses: `Too many addresses: a job has at most ${MAX_JOB_ADDRESSES.toLocaleString("en")}`,
  empty: "The job has no addresses",
  notAnArray: "email_addresses must be an array of strings",
  unsupported: "Unsupported content type: send application/json or text/csv",
} as const;

const tooMany = () => new ApiError(413, JOB_ERRORS.tooManyAddresses);

function fromJson(text: string): JobRequest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(400, "Malformed JSON body");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ApiError(400, "The JSON body must be an object");
  const body = value as Record<string, unknown>;
  const list = body.email_addresses;
  if (list === undefined) throw new ApiError(400, "The email_addresses parameter is required");
  if (!Array.isArray(list) || list.some((a) => typeof a !== "string")) throw new ApiError(400, JOB_ERRORS.notAnArray);
  if (list.length > MAX_JOB_ADDRESSES) throw tooMany();
  return { addresses: list as string[], smtpTimeout: body.smtp_timeout, callbackUrl: body.callback_url };
}

const ADDRESS_HEADERS = new Set(["email_address", "email"]);

/**
 * The address column of a CSV file. The first row is a header: the column named email_address or
 * email (any case, surrounding spaces ignored) holds the addresses, else the first column does. A
 * first row whose first cell holds an "@" and names no such column is a plain list without a
 * header, and counts as data: a file of bare addresses must not lose its first one.
 */
export function addressesFromCsv(text: string): string[] {
  let rows: string[][];
  try {
    rows = parseCsv(text, { bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: 64 * 1024 });
  } catch (err) {
    throw new ApiError(400, `Malformed CSV: ${err instanceof Error ? err.message.slice(0, 200) : "unreadable"}`);
  }
  if (rows.length === 0) return [];
  const header = rows[0]!.map((cell) => cell.trim().toLowerCase());
  const named = header.findIndex((cell) => ADDRESS_HEADERS.has(cell));
  const column = named >= 0 ? named : 0;
  const data = named < 0 && (rows[0]![0] ?? "").includes("@") ? rows : rows.slice(1);
  if (data.length > MAX_JOB_ADDRESSES) throw tooMany();
  return data.map((row) => row[column] ?? "");
}

/** The parameters of a job from its body; query parameters carry smtp_timeout and callback_url for CSV. */
export function parseJobBody(contentType: string, text: string, query: { smtp_timeout?: string; callback_url?: string }): JobRequest {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  let request: JobRequest;
  if (type === "application/json" || type.endsWith("+json")) request = fromJson(text);
  else if (type === "text/csv" || type === "application/csv") request = { addresses: addressesFromCsv(text), smtpTimeout: undefined, callbackUrl: undefined };
  else throw new ApiError(415, JOB_ERRORS.unsupported);
  if (request.addresses.length === 0) throw new ApiError(400, JOB_ERRORS.empty);
  // As for single verifications, the query string wins over the body.
  return {
    addresses: request.addresses,
    smtpTimeout: query.smtp_timeout !== undefined && query.smtp_timeout.trim() !== "" ? query.smtp_timeout : request.smtpTimeout,
    callbackUrl: query.callback_url !== undefined && query.callback_url.trim() !== "" ? query.callback_url : request.callbackUrl,
  };
}
