/**
 * GET /v1/usage over 90 days of a busy account (docs/api.md "GET /v1/usage"), against the Worker as
 * `wrangler dev` serves it and a libSQL server in its own process: --lookups lookups charged through the
 * ledger (the trigger builds the roll-up as production writes do) over --keys keys and 90 days, then the
 * p50 of --requests sequential requests per shape (by day, by key, CSV) and the database round trips of
 * one warm request, counted at the server. The roll-up has one row per day and key whatever the volume.
 *
 *   npx tsx bench/usage.ts [--lookups 300000] [--keys 20] [--requests 50]
 */
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";
import { root, startFreshDatabase } from "./child.ts";
import { percentile } from "./stats.ts";

const { unstable_startWorker } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");

const { values } = parseArgs({
  options: { lookups: { type: "string", default: "300000" }, keys: { type: "string", default: "20" }, requests: { type: "string", default: "50" } },
});
const lookups = Number(values.lookups);
const keyCount = Number(values.keys);
const requests = Number(values.requests);
const DAYS = 90;
const DAY_MS = 86_400_000;

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";

const database = await startFreshDatabase();
const stopping: (() => Promise<void>)[] = [() => database.close()];
try {
  const db = openDatabase(database.url, database.authToken);
  await applyMigrations(db);
  const account = await createAccount(db, "busy", lookups + 1);
  const keys = [];
  for (let i = 0; i < keyCount; i++) keys.push(await createApiKey(db, account.id, { name: `key ${i}` }));
  const keyIds = JSON.stringify(keys.map((k) => k.id));
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const seeding = performance.now();
  // Charges as the lookup writes them (one ledger row each, the trigger keeping balance and roll-up), in slices of 20,000.
  for (let from = 0; from < lookups; from += 20_000) {
    const n = Math.min(20_000, lookups - from);
    await db.run(sql`
      insert into credit_ledger (account_id, delta, balance_after, reason, request_id, key_id, created_at)
      with recursive i(n) as (select ${from} union all select n + 1 from i where n < ${from + n - 1})
      select ${account.id}, -1, 0, 'lookup', 'bench-' || n, json_extract(${keyIds}, '$[' || (cast(n / ${DAYS} as integer) % cast(${keyCount} as integer)) || ']'),
             ${today} - cast(n % ${DAYS} as integer) * ${DAY_MS} + 43200000
      from i`);
  }
  const seedSeconds = (performance.now() - seeding) / 1000;
  const [rollup] = await db.all<{ rows: number; charged: number }>(sql`select count(*) as rows, sum(lookups_charged) as charged from usage_daily where account_id = ${account.id}`);
  db.$client.close();

  const plain = (value: string) => ({ type: "plain_text" as const, value });
  const worker = await unstable_startWorker({
    config: join(root, "wrangler.toml"),
    bindings: { DATABASE_URL: plain(database.url), DATABASE_AUTH_TOKEN: plain(database.authToken), PROBE_URL: plain("") },
    dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, watch: false, logLevel: "warn" },
  });
  stopping.unshift(() => worker.dispose());
  await worker.ready;
  const base = (await worker.url).href.replace(/\/$/, "");
  const served = async () => ((await (await fetch(`${database.url}/stats`, { headers: { authorization: `Bearer ${database.authToken}` } })).json()) as { requests: number }).requests;
  const from = new Date(today - (DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
  const to = new Date(today).toISOString().slice(0, 10);

  const shapes: [string, string][] = [
    ["by day (JSON)", `/v1/usage?from=${from}&to=${to}&group_by=day`],
    ["by key (JSON)", `/v1/usage?from=${from}&to=${to}&group_by=key`],
    ["by day (CSV)", `/v1/usage?from=${from}&to=${to}&format=csv`],
  ];
  const rows: string[] = [];
  for (const [index, [label, path]] of shapes.entries()) {
    // A key per shape: each key may make 100 such requests per 10 s (docs/api.md "Rate limits").
    const token = keys[index]!.token;
    const get = async () => {
      const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${body}`);
      return body.length;
    };
    await get();
    const before = await served();
    const bytes = await get();
    const trips = (await served()) - before;
    const ms: number[] = [];
    for (let i = 0; i < requests; i++) {
      const started = performance.now();
      await get();
      ms.push(performance.now() - started);
    }
    ms.sort((a, b) => a - b);
    rows.push(`| ${label} | ${percentile(ms, 50).toFixed(1)} | ${percentile(ms, 95).toFixed(1)} | ${trips} | ${bytes} |`);
  }
  console.log(
    `\n${lookups.toLocaleString("en")} charged lookups over ${keyCount} keys and ${DAYS} days (seeded through the ledger trigger in ${seedSeconds.toFixed(1)} s): ` +
      `${rollup!.rows} roll-up rows, ${Number(rollup!.charged).toLocaleString("en")} lookups in them. ${requests} sequential requests per row, a key per row, warm.\n`,
  );
  console.log("| GET /v1/usage, 90 days | p50 ms | p95 ms | database round trips (warm) | bytes |");
  console.log("|---|---|---|---|---|");
  for (const row of rows) console.log(row);
} finally {
  for (const stop of stopping) await stop();
}
