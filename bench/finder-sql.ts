/**
 * The finder's and the domain search's reads at 1,000,000 stored addresses (issue 47): one domain of 20,000 of them
 * (a large company) and 50,000 small ones, written straight into a fresh libSQL file by SQL; then the pairs a find
 * learns patterns from (the newest 2,000), the person's own address at the domain, and a domain search's listing of
 * 100 people, three times each at the large domain and at a small one.
 *
 *   npx tsx bench/finder-sql.ts [--file /tmp/finder-sql.db]
 */
import { rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";
import { domainPairsQuery, knownAtDomainQuery, domainPeopleQuery } from "../edge/people/finder-store.ts";
const { values } = parseArgs({ options: { file: { type: "string", default: "/tmp/finder-sql.db" } } });
for (const suffix of ["", "-journal", "-wal", "-shm"]) rmSync(`${values.file}${suffix}`, { force: true });
const db = openDatabase(`file:${values.file}`);
await applyMigrations(db);
const c = db.$client;
const N = 1_000_000, BIG = 20_000;
const gen = `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${N})`;
const dom = `case when i <= ${BIG} then 'big.example' else 'd' || (i % 50000) || '.example' end`;
await c.execute(`insert into people (id, profnet_id) ${gen} select i, i from n`);
await c.execute(`insert into person_names (person_id, full, given, family, folded, name_key, first_seen_at, last_seen_at) ${gen} select i, 'Given' || i || ' Family' || i, 'Given' || i, 'Family' || i, 'given' || i || ' family' || i, 'given' || i || ' family' || i, 0, 0 from n`);
await c.execute(`insert into person_emails (person_id, email, address_key) ${gen} select i, 'given' || i || '.family' || i || '@' || ${dom}, 'given' || i || '.family' || i || '@' || ${dom} from n`);
console.log("rows in", (await c.execute("select count(*) as n from person_emails")).rows[0]);
const now = Date.now();
for (const d of ["big.example", "d7.example"]) {
  for (let r = 0; r < 3; r++) {
    let t = performance.now();
    const pairs = await domainPairsQuery(db as never, d, now);
    const a = performance.now() - t;
    t = performance.now();
    await knownAtDomainQuery(db as never, "given5 family5", d, now);
    const b = performance.now() - t;
    t = performance.now();
    await domainPeopleQuery(db as never, d, now, 100);
    const e = performance.now() - t;
    console.log(d, "pairs", pairs.length, a.toFixed(1), "ms; known", b.toFixed(1), "ms; people(100)", e.toFixed(1), "ms");
  }
}
