/**
 * The cron's background statements against a database of `--addresses` stored addresses none of which is named yet
 * (issue 45 item 9: after an import of 200,000 people, naming one slice of 2,000 took 169 s and held the write lock):
 * the real `nameStoredAddresses` (edge/people/feedback-store.ts) on a migrated libSQL file, one slice at a time, each
 * timed, and the statement's plan. The statement it replaced (the same UPDATE ... FROM json_each without the unary +)
 * is timed on a slice of 200 for comparison, unless --skip-old.
 *
 *   npx tsx bench/background-statements.ts [--addresses 200000] [--slices 5] [--skip-old]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { nameStoredAddresses } from "../edge/people/feedback-store.ts";
import type { Database } from "../edge/db/client.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";

const { values } = parseArgs({ options: { addresses: { type: "string", default: "200000" }, slices: { type: "string", default: "5" }, "skip-old": { type: "boolean", default: false } } });
const addresses = Number(values.addresses);
const dir = await mkdtemp(join(tmpdir(), "bg-statements-"));
try {
  const db = openDatabase(`file:${join(dir, "bench.db")}`);
  await applyMigrations(db);
  await db.run(sql`with recursive n(x) as (select 1 union all select x + 1 from n where x < ${addresses}) insert into people (id) select x from n`);
  await db.run(sql`insert into person_emails (person_id, email, first_seen_at, last_seen_at) select id, 'user' || id || '@example' || (id % 1000) || '.test', 1, 1 from people`);
  const hash = async (email: string) => `h:${email}`;
  const slices: number[] = [];
  for (let i = 0; i < Number(values.slices); i++) {
    const started = performance.now();
    const named = await nameStoredAddresses(db as unknown as Database, hash, 2_000);
    slices.push(performance.now() - started);
    if (named !== 2_000) throw new Error(`named ${named}, expected 2000`);
  }
  const plan = await db.all<{ detail: string }>(sql`explain query plan update person_emails set address_hash = u.value ->> 'hash' from json_each('[]') u
    where person_emails.id = u.value ->> 'id' and +person_emails.address_hash is null`);
  let old: number | null = null;
  if (!values["skip-old"]) {
    const rows = await db.all<{ id: number; email: string }>(sql`select id, email from person_emails where address_hash is null limit 200`);
    const names = JSON.stringify(rows.map((r) => ({ id: Number(r.id), hash: `h:${r.email}` })));
    const started = performance.now();
    await db.run(sql`update person_emails set address_hash = u.value ->> 'hash' from json_each(${names}) u where person_emails.id = u.value ->> 'id' and person_emails.address_hash is null`);
    old = performance.now() - started;
  }
  console.log(JSON.stringify({ addresses, slice: 2_000, slice_ms: slices.map((ms) => Math.round(ms)), plan: plan.map((p) => p.detail), old_statement_200_rows_ms: old === null ? null : Math.round(old) }));
  db.$client.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
