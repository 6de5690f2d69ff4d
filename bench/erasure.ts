/**
 * How long `people erase` takes to find every spelling of an address: `npx tsx bench/erasure.ts [addresses]`
 * (default 1,000,000). Fills a fresh temporary file database with one address per person (a third at Gmail, one in
 * a thousand with non-ASCII text, the rest over 1,000 domains), then erases by a Gmail address written another way,
 * by an ordinary one, and by one nobody has, through the CLI's code path (scripts/admin/people-erase.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { erasePeople } from "../scripts/admin/people-erase.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";

const addresses = Number(process.argv[2] ?? 1_000_000);
if (!Number.isSafeInteger(addresses) || addresses < 10) throw new Error("Usage: npx tsx bench/erasure.ts [addresses, at least 10]");
const KEY = Buffer.alloc(32, 7).toString("base64");

const dir = await mkdtemp(join(tmpdir(), "bench-erasure-"));
const db = openDatabase(`file:${join(dir, "erasure.db")}`);
try {
  await applyMigrations(db);
  const client = db.$client;
  const series = `with recursive s(i) as (select 1 union all select i + 1 from s where i < ${addresses})`;
  await client.execute(`${series} insert into people (id, profnet_id) select i, i from s`);
  await client.execute(`${series} insert into person_emails (id, person_id, email) select i, i, case
      when i % 1000 = 7 then 'Üser' || i || '@bücher.de'
      when i % 3 = 0 then 'user' || i || '@gmail.com'
      else 'user' || i || '@example' || (i % 1000) || '.com' end from s`);
  await client.execute(`${series} insert into person_email_sources (email_id, source, first_seen_at, last_seen_at) select i, 'bench', 0, 0 from s`);
  for (const email of ["User.9+news@googlemail.com", "USER10@example10.com", "nobody@example.org"]) {
    const started = performance.now();
    const result = await erasePeople(client, KEY, { kind: "email", value: email }, null);
    console.log(`${addresses.toLocaleString("en")} stored addresses: erase --email ${email}: ${(performance.now() - started).toFixed(0)} ms (erased ${result.erased})`);
  }
} finally {
  db.$client.close();
  await rm(dir, { recursive: true, force: true });
}
