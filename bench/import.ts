/**
 * People import throughput: `npx tsx bench/import.ts [rows] [--batch-size N]` (default 10000 rows).
 * Generates a JSON Lines file in a temporary directory (nine new people in ten rows, the tenth
 * updating an earlier person through a differently cased login), imports it into a fresh temporary
 * file database through the CLI's code path, then imports it again (every row unchanged).
 */
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { parseArgs } from "node:util";
import { DEFAULT_BATCH_SIZE } from "../scripts/admin/people-import-limits.ts";
import { importPeople, type ImportSummary } from "../scripts/admin/people-import.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";

function generatedRow(index: number): object {
  if (index % 10 === 9) {
    const earlier = index - 5;
    return { codehost_login: `CODER-${earlier}`, email_addresses: [`work.${earlier}@example.org`] };
  }
  return {
    profnet_id: 1_000_000 + index,
    profnet_public_identifier: `person-${index}`,
    codehost_id: 5_000_000 + index,
    codehost_login: `coder-${index}`,
    codehost_username: `Coder ${index}`,
    socialnet_username: `social_${index}`,
    email_addresses: [`person${index}@example.com`, `Person${index}@Example.com`, `p.${index}@gmail.com`],
    phone_numbers: [`+33 6 ${String(10_000_000 + index).slice(-8)}`],
  };
}

async function writeGeneratedFile(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  for (let index = 0; index < rows; index++) {
    if (!out.write(`${JSON.stringify(generatedRow(index))}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}

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
