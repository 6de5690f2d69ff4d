/**
 * People import throughput: `npx tsx bench/import.ts [rows] [--batch-size N]` (default 10000 rows).
 * Generates a JSON Lines file in a temporary directory (nine new people in ten rows, the tenth
 * updating an earlier person through a differently cased login), imports it into a fresh temporary
 * file database through the CLI's code path, then imports it again (every row unchanged).
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_BATCH_SIZE } from "../scripts/admin/people-import-limits.ts";
import { importPeople, type ImportSummary } from "../scripts/admin/people-import.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";
import { writeGeneratedFile } from "./generated-people.ts";

function describe(label: string, summary: ImportSummary): string {
  return (
    `${label}: ${summary.rows} rows in ${(summary.elapsed_ms / 1000).toFixed(2)} s = ${summary.rows_per_second} rows/s ` +
    `(inserted ${summary.inserted}, updated ${summary.updated}, unchanged ${summary.unchanged}, rejected ${summary.rejected})`
  );
}

const { positionals, values } = parseArgs({ allowPositionals: true, options: { "batch-size": { type: "string" } } });
const rows = Number(positionals[0] ?? 10_000);
const batchSize = Number(values["batch-size"] ?? DEFAULT_BATCH_SIZE);
if (!Number.isSafeInteger(rows) || rows < 1 || !Number.isSafeInteger(batchSize) || batchSize < 1) {
  throw new Error("Usage: npx tsx bench/import.ts [rows] [--batch-size N]");
}

const dir = await mkdtemp(join(tmpdir(), "bench-import-"));
try {
  const file = join(dir, "people.jsonl");
  const db = openDatabase(`file:${join(dir, "bench.db")}`);
  await applyMigrations(db);
  await writeGeneratedFile(file, rows);
  console.log(`${rows} rows, ${((await stat(file)).size / 1e6).toFixed(1)} MB of JSON Lines, batch size ${batchSize}`);
  console.log(describe("import   ", await importPeople(db.$client, file, { batchSize })));
  console.log(describe("re-import", await importPeople(db.$client, file, { batchSize })));
  db.$client.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
