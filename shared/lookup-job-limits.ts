/**
 * What one lookup job may hold (docs/lookup-jobs.md), apart from shared/lookup-jobs.ts so the console's browser scripts
 * can state the same limits without bundling zod.
 */
export const LOOKUP_JOB_LIMITS = {
  maxLines: 100_000,
  /** The upload: a CRM export keeps its own columns, so more room per line than an address list's 10 MB. */
  maxBodyBytes: 32 * 1024 * 1024,
} as const;

/** The input types a lookup job takes, by content type. */
export const LOOKUP_JOB_CONTENT_TYPES = {
  csv: ["text/csv", "application/csv"],
  jsonl: ["application/jsonl", "application/x-ndjson", "application/x-jsonlines", "application/jsonlines"],
} as const;

/** What a line of a lookup job became: the status of its result. */
export const LOOKUP_LINE_STATUSES = ["found", "not_found", "invalid", "refused", "erased"] as const;
export type LookupLineStatus = (typeof LOOKUP_LINE_STATUSES)[number];
