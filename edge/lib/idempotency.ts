/**
 * The Idempotency-Key header and the hash that tells one request's body from another's, written once for every create
 * that takes one: both kinds of job (docs/jobs.md, docs/lookup-jobs.md) and the batch call (docs/api.md "POST
 * /v1/people/bulk"): 1 to 255 printable ASCII characters, trimmed, per account.
 */
import { ApiError } from "./errors.ts";

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
export const BAD_IDEMPOTENCY_KEY = `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`;

/** The header's key, or null without one; 400 for one that breaks the rule. */
export function readIdempotencyKey(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const key = raw.trim();
  if (key === "" || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(key)) throw new ApiError(400, BAD_IDEMPOTENCY_KEY);
  return key;
}

export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
