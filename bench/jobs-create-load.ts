/**
 * Lookups while large jobs are created (issue 20, item 2): 10 creates of 100,000 addresses each at
 * once, against the Worker as `wrangler dev` serves it (one instance for the creates, another for
 * the lookups, as separate isolates would on Cloudflare) and the libSQL server in its own process
 * (which locks like sqld: one write transaction at a time), while 20 clients send warm-key
 * GET /v1/people hits in a loop. Each lookup's charge is a write, so it waits for whatever write
 * transaction holds the lock; past DATABASE_TIMEOUT_MS (3 s) it is a 503. Reported: the lookups
 * answered during the creates, their latency, and how many were 503s; and how long the creates took.
 *
 *   npx tsx bench/jobs-create-load.ts [--jobs 10] [--addresses 100000] [--clients 20] [--root DIR]
 *
 * `--root` runs another checkout's Worker and libSQL server (e.g. `git worktree add /tmp/old 9ac4584`
 * with this checkout's node_modules linked in) against the same load, for a before/after. Each
 * created job is cancelled as soon as it answers, so the queue consumer adds no load of its own; DNS
 * points at a closed port and there is no probe.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";
import { seedSamplePeople } from "../scripts/lib/samples.ts";
import { root as ourRoot, startChild, stopChild } from "./child.ts";
import { percentile } from "./stats.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

const { unstable_startWorker } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");
const HIT = "/v1/people?profnet_id=1001";
const KEYS = 200;

export type CreateLoadResult = {
  jobs: number;
  addresses: number;
  clients: number;
  createsMs: number;
  createStatuses: Record<string, number>;
  lookups: number;
  lookupsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  statuses: Record<string, number>;
};

export async function runJobsCreateLoad(opts: { jobs: number; addresses: number; clients: number; root?: string; log?: (m: string) => void }): Promise<CreateLoadResult> {
  const root = opts.root ?? ourRoot;
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_SEND_METRICS = "false";
  const dir = await mkdtemp(join(tmpdir(), "bench-create-load-"));
  const token = randomBytes(32).toString("base64url");
  const server = await startChild(process.execPath, ["--import", "tsx", join(root, "scripts/libsql-server.ts"), "--file", join(dir, "bench.db"), "--port", "0"], {
    env: { LIBSQL_AUTH_TOKEN: token },
    ready: /libSQL server on (\S+)/,
  });
  const databaseUrl = /libSQL server on (\S+)/.exec(server.stdout)![1]!;
  const stopping: (() => Promise<unknown>)[] = [() => stopChild(server.child), () => rm(dir, { recursive: true, force: true })];
  try {
    const db = openDatabase(databaseUrl, token);
    await applyMigrations(db);
    await seedSamplePeople(db);
    const account = await createAccount(db, "bench", 100_000_000);
    // Lookups take 200 keys in turn, as many customers' traffic would: each key is limited per 10 s.
    const keys = await Promise.all(Array.from({ length: KEYS + 1 }, () => createApiKey(db, account.id)));
    db.$client.close();
    const plain = (value: string) => ({ type: "plain_text" as const, value });
    // Two Workers on the one database: on Cloudflare a lookup does not share a thread with someone
    // else's 100,000-line upload, and under one local workerd their CPU would be the bottleneck
    // measured instead of the database's write lock.
    const startWorker = async () => {
      const worker = await unstable_startWorker({
        config: join(root, "wrangler.toml"),
        bindings: {
          DATABASE_URL: plain(databaseUrl),
          DATABASE_AUTH_TOKEN: plain(token),
          PROBE_URL: plain(""),
          DOH_URL: plain("http://127.0.0.1:9/dns-query"),
          JOB_MAX_RUNNING: plain(String(opts.jobs * 2)),
          JOB_MAX_LINES_PER_DAY: plain(String(opts.jobs * opts.addresses * 2)),
        },
        dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, watch: false, logLevel: "error" },
      });
      stopping.unshift(() => worker.dispose());
      await worker.ready;
      return (await worker.url).href.replace(/\/$/, "");
    };
    const lookupBase = await startWorker();
    const createBase = await startWorker();
    const get = async (base: string, path: string, key: string, init: RequestInit = {}) => {
      const res = await fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });
      await res.arrayBuffer();
      return res;
    };
    for (const k of keys) await get(lookupBase, HIT, k.token);

    const body = (j: number) =>
      JSON.stringify({ email_addresses: Array.from({ length: opts.addresses }, (_, i) => `user${i}.${j}@domain${i % 1000}.example`) });
    const bodies = Array.from({ length: opts.jobs }, (_, j) => body(j));
    const creator = keys[KEYS]!.token;
    let creating = true;
    let sent = 0;
    const samples: { ms: number; status: number }[] = [];
    const clients = Array.from({ length: opts.clients }, async () => {
      while (creating) {
        const started = performance.now();
        const res = await get(lookupBase, HIT, keys[sent++ % KEYS]!.token);
        samples.push({ ms: performance.now() - started, status: res.status });
      }
    });
    opts.log?.(`create load: ${opts.jobs} creates of ${opts.addresses.toLocaleString("en")} addresses, ${opts.clients} lookup clients`);
    const started = performance.now();
    const createStatuses: Record<string, number> = {};
    await Promise.all(
      bodies.map(async (b) => {
        const res = await fetch(`${createBase}/v1/email_verification_jobs`, { method: "POST", headers: { authorization: `Bearer ${creator}`, "content-type": "application/json" }, body: b });
        createStatuses[res.status] = (createStatuses[res.status] ?? 0) + 1;
        const job = (await res.json()) as { id?: string };
        if (job.id) await get(createBase, `/v1/email_verification_jobs/${job.id}`, creator, { method: "DELETE" });
      }),
    );
    const createsMs = performance.now() - started;
    creating = false;
    await Promise.all(clients);
    const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
    const statuses: Record<string, number> = {};
    for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
    return {
      jobs: opts.jobs,
      addresses: opts.addresses,
      clients: opts.clients,
      createsMs,
      createStatuses,
      lookups: samples.length,
      lookupsPerSecond: samples.length / (createsMs / 1000),
      p50Ms: percentile(ms, 50),
      p99Ms: percentile(ms, 99),
      maxMs: ms.at(-1) ?? 0,
      statuses,
    };
  } finally {
    for (const stop of stopping) await stop().catch(() => undefined);
  }
}

export function jobsCreateLoadMarkdown(rows: { label: string; result: CreateLoadResult }[]): string {
  const fmt = (r: Record<string, number>) =>
    Object.entries(r)
      .map(([k, v]) => `${v} × ${k}`)
      .join(", ");
  return [
    "| Code | Creates (all done) | Creates answered | Lookups answered | Lookups/s | p50 | p99 | max | Lookup answers |",
    "|---|---:|---|---:|---:|---:|---:|---:|---|",
    ...rows.map(
      ({ label, result: r }) =>
        `| ${label} | ${(r.createsMs / 1000).toFixed(1)} s | ${fmt(r.createStatuses)} | ${r.lookups} | ${r.lookupsPerSecond.toFixed(0)} | ${r.p50Ms.toFixed(0)} ms | ${r.p99Ms.toFixed(0)} ms | ${r.maxMs.toFixed(0)} ms | ${fmt(r.statuses)} |`,
    ),
  ].join("\n");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      jobs: { type: "string", default: "10" },
      addresses: { type: "string", default: "100000" },
      clients: { type: "string", default: "20" },
      root: { type: "string" },
    },
  });
  const result = await runJobsCreateLoad({
    jobs: Number(values.jobs),
    addresses: Number(values.addresses),
    clients: Number(values.clients),
    ...(values.root ? { root: resolve(values.root) } : {}),
    log: (m) => process.stderr.write(`${m}\n`),
  });
  process.stdout.write(`${jobsCreateLoadMarkdown([{ label: values.root ?? "this checkout", result }])}\n`);
}
