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
  /**
   * One line of a CSV file, every column together, in characters: a CRM's export row is a few hundred; a longer one is
   * refused naming its line, never cut (docs/jobs.md "CSV files"). What a job keeps of its lines is bounded by its
   * upload: a line is stored in no more characters than it took in the file.
   */
  maxCsvLineChars: 65_536,
  /** Columns in one line of a CSV file. */
  maxColumns: 1_000,
  /** A job's name (the file's name by default in the console). */
  maxNameChars: 200,
} as const;
