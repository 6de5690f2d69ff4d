/**
 * Parameters of GET and POST /v1/email_verifications (docs/api.md, the section of that name): from the query string, a JSON
 * object body, or a form body; the query string wins over the body.
 */
import type { Context } from "hono";
import { ERROR_MESSAGES } from "../../shared/api.ts";
import { trimAsciiWhitespace } from "../../shared/email/syntax.ts";
import { ApiError } from "../lib/errors.ts";

export const MAX_VERIFICATION_BODY_BYTES = 16 * 1024;
export const DEFAULT_SMTP_TIMEOUT_SECONDS = 10;

export type VerificationParams = { email: string; smtpTimeoutSeconds: number };

type RawParams = { email_address?: unknown; smtp_timeout?: unknown };

async function readBody(c: Context): Promise<RawParams> {
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/json" || type.endsWith("+json")) {
    const text = await c.req.text();
    if (text.trim() === "") return {};
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new ApiError(400, ERROR_MESSAGES.malformedJson);
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new ApiError(400, "The JSON body must be an object");
    }
    return value as RawParams;
  }
  if (type === "application/x-www-form-urlencoded" || type === "multipart/form-data") {
    let form: Record<string, unknown>;
    try {
      form = await c.req.parseBody();
    } catch {
      throw new ApiError(400, "Malformed form body");
    }
    return { email_address: form.email_address, smtp_timeout: form.smtp_timeout };
  }
  const text = await c.req.text();
  if (text.length === 0) return {};
  throw new ApiError(
    415,
    "Unsupported content type: send application/json, application/x-www-form-urlencoded or multipart/form-data",
  );
}

export function parseSmtpTimeout(raw: unknown): number {
  if (raw === undefined || raw === null) return DEFAULT_SMTP_TIMEOUT_SECONDS;
  if (typeof raw === "number") {
    if (Number.isInteger(raw) && raw >= 1 && raw <= 60) return raw;
    throw new ApiError(400, ERROR_MESSAGES.smtpTimeoutRange);
  }
  if (typeof raw === "string") {
    const value = raw.trim();
    if (value === "") return DEFAULT_SMTP_TIMEOUT_SECONDS;
    if (/^[0-9]{1,2}$/.test(value)) {
      const n = Number(value);
      if (n >= 1 && n <= 60) return n;
    }
  }
  throw new ApiError(400, ERROR_MESSAGES.smtpTimeoutRange);
}

function readEmail(raw: unknown): string {
  if (raw === undefined || raw === null) throw new ApiError(400, ERROR_MESSAGES.emailRequired);
  if (typeof raw !== "string") throw new ApiError(400, "email_address must be a string");
  // Only ASCII whitespace is trimmed (the syntax check's own trimming); anything else is the syntax check's business.
  const value = trimAsciiWhitespace(raw);
  if (value === "") throw new ApiError(400, ERROR_MESSAGES.emailRequired);
  return value;
}

export async function readVerificationParams(c: Context): Promise<VerificationParams> {
  const query: RawParams = { email_address: c.req.query("email_address"), smtp_timeout: c.req.query("smtp_timeout") };
  const body = c.req.method === "POST" ? await readBody(c) : {};
  // A query parameter wins over the body, but a blank one does not hide a body value.
  const pick = (q: unknown, b: unknown) => (typeof q === "string" && q.trim() !== "" ? q : (b ?? q));
  return {
    email: readEmail(pick(query.email_address, body.email_address)),
    smtpTimeoutSeconds: parseSmtpTimeout(pick(query.smtp_timeout, body.smtp_timeout)),
  };
}
