/**
 * What one job may hold, apart from shared/jobs.ts so the console's browser scripts can state the same
 * limits without bundling zod (shared/jobs.ts re-exports it for everything else).
 */
/** The limits the create route enforces and the OpenAPI document states. */
export const JOB_LIMITS = {
  maxBodyBytes: 10 * 1024 * 1024,
  maxAddresses: 100_000,
  /**
   * One address (a CSV cell or a JSON array element) in UTF-8 bytes: RFC 5321 allows 254 octets in a
   * path, and a little room stays for surrounding whitespace. Anything longer cannot be an address,
   * and would be stored twice (the line and its result).
   */
  maxLineBytes: 320,
} as const;
