/**
 * The /v1/people path, measured against the Worker as `wrangler dev` serves it (docs/api.md "Hot path"):
 *   1. database round trips for a hit with a cold and a warm key, counted at the libSQL server (GET /stats);
 *   2. the p50 of warm-key hits sent one at a time, with every database round trip held --delay-ms by a
 *      delaying proxy in front of the server (test/fixtures/database-proxy.ts), and without it;
 *   3. lookups that fail while a --import-rows line `people import` runs, through the libSQL server and
 *      straight to its file (as the CLI does by default beside `npm start`), under autocannon load.
 * The libSQL server runs in its own process, as under `npm start`; everything listens on ephemeral
 * loopback ports and lives in a temporary directory. Prints markdown.
 *
 *   npx tsx bench/lookup-path.ts [--reps 3] [--delay-ms 20] [--import-rows 20000] [--connections 50]
 */
import autocannon, { type Result } from "autocannon";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";
import { seedSamplePeople } from "../scripts/lib/samples.ts";
import { startDatabaseProxy } from "../test/fixtures/database-proxy.ts";
import { startDevWorker } from "./dev-worker.ts";
import { databaseRequests, runChild, startChild, stopChild } from "./child.ts";
import { writeGeneratedFile } from "./generated-people.ts";
import { median, percentile } from "./stats.ts";


const { values } = parseArgs({
  options: {
    reps: { type: "string", default: "3" },
    "delay-ms": { type: "string", default: "20" },
    "import-rows": { type: "string", default: "20000" },
    connections: { type: "string", default: "50" },
  },
});
const reps = Number(values.reps);
const delayMs = Number(values["delay-ms"]);
const importRows = Number(values["import-rows"]);
const connections = Number(values.connections);
const SEQUENTIAL_REQUESTS = 200;
const KEYS = 500;
const HIT = "/v1/people?profnet_id=1001";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";

const dir = await mkdtemp(join(tmpdir(), "bench-lookup-path-"));
const databaseFile = join(dir, "bench.db");
const databaseAuthToken = randomBytes(32).toString("base64url");
const server = await startChild(process.execPath, ["--import", "tsx", "scripts/libsql-server.ts", "--file", databaseFile, "--port", "0"], {
  env: { LIBSQL_AUTH_TOKEN: databaseAuthToken },
  ready: /libSQL server on (\S+)/,
});
const databaseUrl = /libSQL server on (\S+)/.exec(server.stdout)![1]!;
const stopping: (() => Promise<void>)[] = [() => stopChild(server.child), () => rm(dir, { recursive: true, force: true })];

const startWorker = (url: string) => startDevWorker(url, databaseAuthToken);

const requestsServed = () => databaseRequests(databaseUrl, databaseAuthToken);

async function get(base: string, path: string, token: string): Promise<number> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

try {
  const db = openDatabase(databaseUrl, databaseAuthToken);
  await applyMigrations(db);
  await seedSamplePeople(db);
  const account = await createAccount(db, "bench", 100_000_000);
  // Many keys in turn, as many customers' traffic would be: each key is limited per 10 s.
  const tokens: string[] = [];
  for (let i = 0; i < KEYS; i++) tokens.push((await createApiKey(db, account.id)).token);
  const freshToken = async () => (await createApiKey(db, account.id)).token;

  // ---- 1. Round trips ----
  const direct = await startWorker(databaseUrl);
  stopping.unshift(direct.dispose);
  const trips = { cold: [] as number[], warm: [] as number[], miss: [] as number[] };
  for (let rep = 0; rep < reps; rep++) {
    const token = await freshToken();
    for (const [kind, path] of [["cold", HIT], ["warm", HIT], ["miss", "/v1/people?profnet_id=999999999"]] as const) {
      const before = await requestsServed();
      await get(direct.base, path, token);
      trips[kind].push((await requestsServed()) - before);
    }
  }

  // ---- 2. Latency with every round trip held delayMs ----
  async function sequentialP50(base: string, path: string): Promise<number> {
    const warmKeys = tokens.slice(0, 50);
    for (const token of warmKeys) await get(base, path, token);
    const ms: number[] = [];
    for (let i = 0; i < SEQUENTIAL_REQUESTS; i++) {
      const started = performance.now();
      const status = await get(base, path, warmKeys[i % warmKeys.length]!);
      if (status !== 200) throw new Error(`${path} answered ${status}`);
      ms.push(performance.now() - started);
    }
    return percentile(ms.sort((a, b) => a - b), 50);
  }
  const latency: { label: string; p50: number[] }[] = [];
  for (const delay of [0, delayMs]) {
    const proxy = await startDatabaseProxy(databaseUrl, { delayMs: delay });
    const worker = await startWorker(proxy.url);
    const p50: number[] = [];
    const healthz: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      healthz.push(await sequentialP50(worker.base, "/healthz"));
      p50.push(await sequentialP50(worker.base, HIT));
    }
    await worker.dispose();
    await proxy.close();
    if (delay === 0) latency.push({ label: "GET /healthz (no database), for the Worker's own overhead", p50: healthz });
    latency.push({ label: `GET /v1/people hit, ${delay === 0 ? "no delay (the proxy forwards at once)" : `${delay} ms added to every database round trip`}`, p50 });
  }

  // ---- 3. Lookups during an import ----
  let sent = 0;
  const rotatingKeys = [
    { setupRequest: (request: { headers: Record<string, string> }) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${tokens[sent++ % tokens.length]}` } }) },
  ];
  for (const token of tokens) await get(direct.base, HIT, token);
  type ImportRun = { mode: string; load: Result; summary: { rows: number; elapsed_ms: number; rows_per_second: number; batch_retries: number; rejected: number } };
  const imports: ImportRun[] = [];
  let firstId = 0;
  for (const mode of ["through the libSQL server", "straight to the file"] as const) {
    for (let rep = 0; rep < reps; rep++) {
      const file = join(dir, `people-${firstId}.jsonl`);
      await writeGeneratedFile(file, importRows, firstId);
      firstId += importRows;
      let load!: { stop(): void };
      const finished = new Promise<Result>((resolve, reject) => {
        load = autocannon({ url: `${direct.base}${HIT}`, connections, duration: 600, requests: rotatingKeys }, (error, result) =>
          error ? reject(error) : resolve(result),
        );
      });
      const importDatabase = mode === "straight to the file" ? `file:${databaseFile}` : databaseUrl;
      const out = await runChild(process.execPath, ["--import", "tsx", "scripts/admin.ts", "people", "import", file, "--json"], {
        env: { DATABASE_URL: importDatabase, DATABASE_AUTH_TOKEN: databaseAuthToken },
      });
      load.stop();
      imports.push({ mode, load: await finished, summary: JSON.parse(out) as ImportRun["summary"] });
    }
  }

  // ---- Report ----
  const fmt = (values: number[], digits = 0) => (values.length > 1 ? `${median(values).toFixed(digits)} (${values.map((v) => v.toFixed(digits)).join(", ")})` : values[0]!.toFixed(digits));
  const failed = (run: ImportRun) => run.load.non2xx + run.load.errors + run.load.timeouts;
  console.log(`Lookup path: wrangler dev (workerd) on loopback, libSQL stand-in in its own process, ${reps} repetitions\n`);
  console.log("| Database round trips per GET /v1/people, counted at the libSQL server | Each repetition |");
  console.log("|---|---|");
  console.log(`| Hit, cold key (first use in the isolate) | ${trips.cold.join(", ")} |`);
  console.log(`| Hit, warm key | ${trips.warm.join(", ")} |`);
  console.log(`| Miss (404), warm key | ${trips.miss.join(", ")} |`);
  console.log(`\n| Requests one at a time, warm keys, through the proxy | p50 of ${SEQUENTIAL_REQUESTS} requests, ms: median (each repetition) |`);
  console.log("|---|---|");
  for (const row of latency) console.log(`| ${row.label} | ${fmt(row.p50, 1)} |`);
  const delayed = median(latency.at(-1)!.p50);
  const undelayed = median(latency.at(-2)!.p50);
  console.log(
    `\nWith ${delayMs} ms per round trip the p50 is ${delayed.toFixed(1)} ms, ${(delayed / delayMs).toFixed(2)}x one round trip; ` +
      `the delay adds ${(delayed - undelayed).toFixed(1)} ms to it, ${((delayed - undelayed) / delayMs).toFixed(2)} round trips on the request's path.\n`,
  );
  console.log(`| ${importRows.toLocaleString("en")}-line import, ${connections} connections of lookups meanwhile | Lookups answered | Lookups failed | Import s | Import rows/s | Batch retries | Rows rejected |`);
  console.log("|---|---|---|---|---|---|---|");
  for (const run of imports) {
    console.log(
      `| ${run.mode} | ${run.load.requests.total} | ${failed(run)} | ${(run.summary.elapsed_ms / 1000).toFixed(1)} | ${run.summary.rows_per_second} | ${run.summary.batch_retries} | ${run.summary.rejected} |`,
    );
  }
  console.log(`\nLookups failed during imports, all runs: ${imports.reduce((n, run) => n + failed(run), 0)}`);
  db.$client.close();
} finally {
  for (const stop of stopping) await stop();
}
