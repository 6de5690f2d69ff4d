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

/** What a CSV line past a bound is told, in the API's 400 and the console's preview alike (`line`: the file's line number). */
export const CSV_LINE_ERRORS = {
  tooLong: (line: number) => `Line ${line}: a line is at most ${JOB_LIMITS.maxCsvLineChars.toLocaleString("en")} characters, all its columns together`,
  tooManyColumns: (line: number) => `Line ${line}: a line has at most ${JOB_LIMITS.maxColumns.toLocaleString("en")} columns`,
  /** `reason` from shared/file-kind.ts csvProblem: never the line's own text. */
  malformed: (line: number, reason: string) => `Malformed CSV at line ${line}: ${reason}`,
} as const;
