/**
 * `people import FILE`: stream the file, validate each line, upsert valid rows in batches of
 * bounded size, and summarise. A bad line is rejected with its line number and a reason and never
 * stops the import; a batch the database refuses for a passing reason (its lock is busy, the
 * network failed) is tried again with back-off; only a file that cannot be read or a database that
 * stays unavailable stops it.
 */
import type { Client } from "@libsql/client";
import { stat } from "node:fs/promises";
import { basename } from "node:path";
import { AdminError } from "./accounts.ts";
import { DEFAULT_BATCH_SIZE, DEFAULT_MAX_LINE_BYTES, MAX_LISTED_REJECTIONS } from "./people-import-limits.ts";
import { detectImportFormat, readPeopleRows, type ImportFormat } from "./people-file.ts";
import { parsePersonRecord } from "./people-record.ts";
import { checkSuppressionKey, recordHashes, suppressedAmong } from "./people-privacy.ts";
import { upsertPeopleBatch, type BatchRow, type RowOutcome } from "./people-upsert.ts";

const PROGRESS_EVERY_ROWS = 250;

export type ImportProgress = { bytesRead: number; totalBytes: number; rows: number };

export type ImportOptions = {
  /** Recorded on new emails and phones; defaults to the file's name. */
  source?: string;
  batchSize?: number;
  maxLineBytes?: number;
  onProgress?: (progress: ImportProgress) => void;
  /** SUPPRESSION_KEY: lines that carry an erased identifier or address are rejected. Without it, an import into a database with suppressions fails. */
  suppressionKey?: string;
};

export type Rejection = { line: number; reason: string };

export type ImportSummary = {
  file: string;
  format: ImportFormat;
  source: string;
  /** Non-blank lines read, the CSV header excepted. */
  rows: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  /** Rejected lines whose identifiers point at two different people, kept for review (`people merges list`). */
  merge_candidates: number;
  /** In line order, at most MAX_LISTED_REJECTIONS of them. */
  rejections: Rejection[];
  rejections_not_listed: number;
  rows_per_second: number;
  elapsed_ms: number;
  /** Batches written again after a passing failure (a busy lock, the network). */
  batch_retries: number;
};

/** Constraint-like failures come from the data of one row; anything else (locks, I/O) is not. */
const ROW_SPECIFIC_ERROR_CODE = /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG)/;

function isRowSpecificDatabaseError(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && ROW_SPECIFIC_ERROR_CODE.test(code)) return true;
  }
  return false;
}

const TRANSIENT_ERROR_CODE = /^(SQLITE_BUSY|SQLITE_LOCKED|SERVER_ERROR|ECONN|ETIMEDOUT|EPIPE|EAI_AGAIN|ENOTFOUND|UND_ERR)/;

/** A failure that may pass: the database's lock is busy, or the request never got an answer. */
function isTransientDatabaseError(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && TRANSIENT_ERROR_CODE.test(code)) return true;
  }
  return false;
}

/** Waits between tries of a batch the database refused for a passing reason: about 26 s in all. */
const RETRY_DELAYS_MS = [100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000, 5_000];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes a batch; when one row makes the database refuse it, redoes it row by row to reject just that row. */
async function writeBatch(client: Client, rows: BatchRow[], source: string, tally: ImportTally): Promise<RowOutcome[]> {
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        return await upsertPeopleBatch(client, rows, source);
      } catch (error) {
        const delay = RETRY_DELAYS_MS[attempt];
        if (delay === undefined || !isTransientDatabaseError(error)) throw error;
        tally.batchRetries++;
        // A statement refused with SQLITE_BUSY can stay half-run on a local file connection and
        // block every later COMMIT there; fresh connections leave it behind.
        await client.reconnect();
        await sleep(delay);
      }
    }
  } catch (error) {
    if (!isRowSpecificDatabaseError(error)) throw error;
    const [onlyRow] = rows;
    if (rows.length === 1 && onlyRow) {
      return [{ line: onlyRow.line, outcome: "rejected", reason: `the database rejected the row: ${(error as Error).message}` }];
    }
    const outcomes: RowOutcome[] = [];
    for (const row of rows) outcomes.push(...(await writeBatch(client, [row], source, tally)));
    return outcomes;
  }
}

class ImportTally {
  inserted = 0;
  updated = 0;
  unchanged = 0;
  rejected = 0;
  mergeCandidates = 0;
  readonly rejections: Rejection[] = [];
  rejectionsNotListed = 0;
  batchRetries = 0;

  /** Takes the outcomes of a run of lines; sorting keeps the rejection list in line order. */
  add(outcomes: RowOutcome[]): void {
    for (const outcome of outcomes.sort((a, b) => a.line - b.line)) {
      if (outcome.outcome !== "rejected") {
        this[outcome.outcome]++;
        continue;
      }
      this.rejected++;
      if (outcome.mergeCandidate) this.mergeCandidates++;
      if (this.rejections.length < MAX_LISTED_REJECTIONS) this.rejections.push({ line: outcome.line, reason: outcome.reason });
      else this.rejectionsNotListed++;
    }
  }

  get committedRows(): number {
    return this.inserted + this.updated + this.unchanged;
  }
}

export async function importPeople(client: Client, path: string, options: ImportOptions = {}): Promise<ImportSummary> {
  const started = performance.now();
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const fileStats = await stat(path).catch((error: Error) => {
    throw new AdminError(`Cannot read ${path}: ${error.message}`);
  });
  if (!fileStats.isFile()) throw new AdminError(`${path} is not a file`);
  const format = await detectImportFormat(path);
  const source = options.source ?? basename(path);
  // Under another key than the erasures' no erased person would be recognised: refused before a line is read.
  if (options.suppressionKey) await checkSuppressionKey(client, options.suppressionKey);

  const tally = new ImportTally();
  let rows = 0;
  let bytesRead = 0;
  const reportProgress = () => options.onProgress?.({ bytesRead, totalBytes: fileStats.size, rows });

  // Lines since the last write: the valid ones to upsert and the outcomes of the invalid ones.
  let batch: BatchRow[] = [];
  let batchRejections: RowOutcome[] = [];
  const flush = async () => {
    const [firstRow] = batch;
    try {
      // Erased people stay erased: a line with any suppressed identifier or address is rejected, and nothing of it stored.
      const hashes = batch.map((row) => (options.suppressionKey ? recordHashes(options.suppressionKey, row.record) : []));
      const suppressed = firstRow ? await suppressedAmong(client, options.suppressionKey, hashes.flat()) : new Set<string>();
      if (suppressed.size > 0) {
        batchRejections.push(...batch.filter((_, i) => hashes[i]!.some((h) => suppressed.has(h))).map((row) => ({ line: row.line, outcome: "rejected" as const, reason: "suppressed" })));
        batch = batch.filter((_, i) => !hashes[i]!.some((h) => suppressed.has(h)));
      }
      tally.add([...batchRejections, ...(batch.length > 0 ? await writeBatch(client, batch, source, tally) : [])]);
    } catch (error) {
      throw new AdminError(
        `Import stopped at the batch starting on line ${firstRow?.line}: ${(error as Error).message} ` +
          `(${tally.committedRows} rows before it were committed)`,
        { cause: error },
      );
    }
    batch = [];
    batchRejections = [];
  };

  const readOptions = { maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, onBytesRead: (n: number) => (bytesRead += n) };
  for await (const row of readPeopleRows(path, format, readOptions)) {
    rows++;
    const parsed = "error" in row ? { ok: false as const, reason: row.error } : parsePersonRecord(row.value);
    if (parsed.ok) batch.push({ line: row.line, record: parsed.record });
    else batchRejections.push({ line: row.line, outcome: "rejected", reason: parsed.reason });
    // Counting rejections too bounds memory on a file of mostly bad lines.
    if (batch.length + batchRejections.length >= batchSize) await flush();
    if (rows % PROGRESS_EVERY_ROWS === 0) reportProgress();
  }
  await flush();
  reportProgress();

  const elapsedMs = performance.now() - started;
  return {
    file: path,
    format,
    source,
    rows,
    inserted: tally.inserted,
    updated: tally.updated,
    unchanged: tally.unchanged,
    rejected: tally.rejected,
    merge_candidates: tally.mergeCandidates,
    rejections: tally.rejections,
    rejections_not_listed: tally.rejectionsNotListed,
    rows_per_second: elapsedMs > 0 ? Math.round((rows * 1000) / elapsedMs) : rows,
    elapsed_ms: Math.round(elapsedMs),
    batch_retries: tally.batchRetries,
  };
}
