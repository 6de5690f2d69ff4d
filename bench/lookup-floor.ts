/**
 * The floor a lookup job is measured against (issue 45): the same lines matched, answered and charged by plain
 * set-based SQL on the same libSQL server, over the same people: the lines written (10,000 per statement, as the job
 * writes its own), each matched to its person by the lower(profnet_public_identifier) index in one statement, each
 * found line given its person's addresses in one statement, and one ledger row per person found in one more. Scratch
 * tables of its own, dropped after; nothing of the product's tables is written.
 */
import type { Client } from "@libsql/client";

const LINES_PER_WRITE = 10_000;

export async function lookupFloor(client: Client, identifiers: readonly string[]): Promise<{ ms: number; found: number; charged: number }> {
  await client.batch(
    [
      "drop table if exists bench_floor_lines",
      "drop table if exists bench_floor_ledger",
      "create table bench_floor_lines (position integer primary key, ident text not null, person_id integer, answer text)",
      "create table bench_floor_ledger (id integer primary key, person_id integer not null unique, delta integer not null)",
    ],
    "write",
  );
  const started = performance.now();
  for (let from = 0; from < identifiers.length; from += LINES_PER_WRITE) {
    const slice = identifiers.slice(from, from + LINES_PER_WRITE);
    await client.execute({ sql: "insert into bench_floor_lines (position, ident) select ? + key, value from json_each(?)", args: [from, JSON.stringify(slice)] });
  }
  const [, , charged, found] = await client.batch(
    [
      "update bench_floor_lines set person_id = (select id from people where lower(profnet_public_identifier) = lower(bench_floor_lines.ident))",
      "update bench_floor_lines set answer = (select json_group_array(email) from person_emails where person_id = bench_floor_lines.person_id) where person_id is not null",
      "insert into bench_floor_ledger (person_id, delta) select distinct person_id, -1 from bench_floor_lines where person_id is not null",
      "select count(*) as n from bench_floor_lines where answer is not null",
    ],
    "write",
  );
  const ms = performance.now() - started;
  await client.batch(["drop table bench_floor_lines", "drop table bench_floor_ledger"], "write");
  return { ms, found: Number(found!.rows[0]!.n), charged: charged!.rowsAffected };
}
