/**
 * The stack bench/receivers.ts measures: `npm start`'s Worker under wrangler dev and a fresh libSQL
 * server (bench/child.ts startJobsStack), a receiver-like mail server (test/fixtures/mta-fixture.ts
 * with `--receiver`, on 0.0.0.0:25, so on every 127.x.y.z) and the DoH fixture serving the scenario's
 * zone, and a fleet of probes: each its own process (the esbuild bundle, as it ships), registered with
 * the Worker through PROBE_URL, each with its own HELO name (the fixture tells probes apart by it: on
 * loopback they all send from 127.0.0.1, so each name stands for one sending IP), each behind a small
 * proxy that counts what the Worker asks it (claims per address, and the deferrals it answered with
 * their `retry_after_ms`). Each probe runs in a fresh working folder of its own and can be killed and
 * restarted on its port, in that folder, mid-run.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { parse as parseCsv } from "csv-parse/sync";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { VerificationJob } from "../shared/jobs.ts";
import type { Zone } from "../test/fixtures/doh-server.ts";
import type { ReceiverCounters } from "../test/fixtures/receiver-fixtures.ts";
import { freePortOn } from "../test/fixtures/smtp-servers.ts";
import { childCounters, startChild, startJobsStack, stopChild, type JobsStack } from "./child.ts";
import { BENCH_PROBE_SECRET, buildProbeBundle } from "./probe-process.ts";

export type StackOptions = {
  zone: Zone;
  /** --receiver of the fixture: google, eop, cisco, outlook-consumer, forcepoint. */
  receiver: string;
  receiverOptions?: Record<string, unknown>;
  /** PROBE_POLICY_TIME_SCALE for the probes and --time-scale for the fixture. */
  scale: number;
  probes: number;
  delayMs?: number;
  edgePort: number;
  /** More settings for every probe and for the Worker (from --probe-env and --edge-env). */
  probeEnv?: Record<string, string>;
  edgeEnv?: Record<string, string>;
};

/** What the fixture prints on SIGUSR2. */
export type FixtureCounters = { connections: number; rcpts: number; harvest_blocks: number[]; harvest_blocked_replies: number; receiver?: ReceiverCounters & { silently_accepted: string[] } };

/** What the Worker asked the probes: per address, when it was claimed, and when its deferrals said to come back. */
export type ClaimLog = { claims: Map<string, number[]>; reliefs: Map<string, { at: number; until: number }[]> };

let bundle: Promise<string> | undefined;

/** The probe as it ships, bundled once per run. */
function probeBundle(): Promise<string> {
  bundle ??= mkdtemp(join(tmpdir(), "bench-receivers-")).then((dir) => buildProbeBundle(dir));
  return bundle;
}

async function startProbe(file: string, port: number, helo: string, env: Record<string, string>, cwd: string): Promise<ChildProcess> {
  const { child } = await startChild(process.execPath, [file], {
    cwd,
    env: {
      PORT: String(port),
      PROBE_LISTEN_HOST: "127.0.0.1",
      PROBE_SECRET: BENCH_PROBE_SECRET,
      PROBE_HELO_NAME: helo,
      PROBE_SMTP_PORT: "25",
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      PROBE_METRICS_LISTEN: "off",
      ...env,
    },
    ready: /probe listening/,
  });
  return child;
}

/** A pass-through proxy in front of one probe that notes each batch's addresses and each deferred line's relief. */
async function startClaimProxy(target: string, log: ClaimLog): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const now = Date.now();
      const batch = req.url === "/v1/probe/batch";
      if (batch) {
        const parsed = JSON.parse(body.toString()) as { groups: { emails: string[] }[] };
        for (const email of parsed.groups.flatMap((g) => g.emails)) log.claims.set(email, [...(log.claims.get(email) ?? []), now]);
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length" && k !== "connection")) as Record<string, string>;
      fetch(`${target}${req.url}`, { method: req.method, headers, body: req.method === "GET" ? undefined : body })
        .then(async (upstream) => {
          res.writeHead(upstream.status, Object.fromEntries([...upstream.headers].filter(([k]) => k !== "content-length" && k !== "transfer-encoding")));
          if (!upstream.body) return void res.end();
          let pending = "";
          const decoder = new TextDecoder();
          for await (const chunk of upstream.body) {
            res.write(chunk);
            if (!batch) continue;
            pending += decoder.decode(chunk, { stream: true });
            let nl: number;
            while ((nl = pending.indexOf("\n")) !== -1) {
              const line = JSON.parse(pending.slice(0, nl)) as { email: string; deferred?: boolean; retry_after_ms?: number };
              pending = pending.slice(nl + 1);
              if (line.deferred) log.reliefs.set(line.email, [...(log.reliefs.get(line.email) ?? []), { at: Date.now(), until: Date.now() + (line.retry_after_ms ?? 0) }]);
            }
          }
          res.end();
        })
        .catch(() => res.destroy());
    });
  });
  const port = await freePortOn(["127.0.0.1"]);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

export type Api = {
  createJob(emails: string[]): Promise<string>;
  job(id: string): Promise<VerificationJob>;
  /** Polls until `completed` or `limitMs`; the seconds it took, or null at the limit. */
  waitJob(id: string, limitMs: number, onPoll?: (job: VerificationJob) => void): Promise<{ seconds: number | null; job: VerificationJob }>;
  /** Creates a job and waits for it: seconds from the upload to `completed`, or null at the limit. */
  runJob(emails: string[], limitMs: number): Promise<{ seconds: number | null; job: VerificationJob }>;
  results(id: string): Promise<{ email: string; classification: string; reason: string }[]>;
  verify(email: string): Promise<{ classification: string; reason: string; status: number }>;
};

export async function startReceiverStack(o: StackOptions) {
  const file = await probeBundle();
  const claims: ClaimLog = { claims: new Map(), reliefs: new Map() };
  // Budgets kept in each probe's own working folder, as the container keeps them on its volume: the restart scenario reads them back.
  const probeEnv = { PROBE_POLICY_TIME_SCALE: String(o.scale), PROBE_STATE_FILE: "probe-state.json", ...o.probeEnv };
  const probes: { port: number; helo: string; dir: string; origin: string; metrics: number; child: ChildProcess }[] = [];
  const proxies: Awaited<ReturnType<typeof startClaimProxy>>[] = [];
  let stack: JobsStack<ChildProcess> | undefined;
  try {
    for (let i = 1; i <= o.probes; i++) {
      const port = await freePortOn(["127.0.0.1"]);
      const helo = `probe${i}.bench.example`;
      // Its own working folder, kept across a restart: whatever the probe keeps on disk is its own and survives it, and no scenario inherits another's.
      const dir = await mkdtemp(join(tmpdir(), `bench-probe${i}-`));
      // The proxy first: the Worker signs each request for the URL it calls (the proxy's), which the probe must know as its own origin.
      const proxy = await startClaimProxy(`http://127.0.0.1:${port}`, claims);
      proxies.push(proxy);
      const origin = new URL(proxy.url).origin;
      // Its /metrics on a port of its own: what it counted by family (connections, RCPTs, blocks, held checks).
      const metrics = await freePortOn(["127.0.0.1"]);
      const env = { ...probeEnv, PROBE_ORIGIN: origin, PROBE_METRICS_LISTEN: `127.0.0.1:${metrics}` };
      probes.push({ port, helo, dir, origin, metrics, child: await startProbe(file, port, helo, env, dir) });
    }
    stack = await startJobsStack({
      zone: o.zone,
      delayMs: o.delayMs ?? 20,
      edgePort: o.edgePort,
      probePort: o.edgePort + 1,
      mtaArgs: ["--receiver", o.receiver, "--receiver-options", JSON.stringify(o.receiverOptions ?? {}), "--time-scale", String(o.scale), "--client-key", "helo"],
      env: { PROBE_URL: proxies.map((p) => p.url).join(","), PROBE_SECRET: BENCH_PROBE_SECRET, ...o.edgeEnv },
    });
  } catch (err) {
    await Promise.all(probes.map((p) => stopChild(p.child)));
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(probes.map((p) => rm(p.dir, { recursive: true, force: true })));
    await stack?.stop();
    throw err;
  }
  const running = stack;
  const db = openDatabase(running.database.url, running.database.authToken);
  return {
    claims,
    counters: () => childCounters<FixtureCounters>(running.mta),
    /** An account with plenty of credits, and a client for its key. */
    async account(name: string): Promise<Api> {
      const account = await createAccount(db, name, 10_000_000);
      return api(o.edgePort, (await createApiKey(db, account.id)).token);
    },
    /** Kills probe `i` (SIGKILL: no goodbye, as a crash or an OOM kill) and starts it again on its port with the same settings. */
    async restartProbe(i: number): Promise<void> {
      const p = probes[i]!;
      const exited = new Promise((resolve) => p.child.once("exit", resolve));
      p.child.kill("SIGKILL");
      await exited;
      p.child = await startProbe(file, p.port, p.helo, { ...probeEnv, PROBE_ORIGIN: p.origin, PROBE_METRICS_LISTEN: `127.0.0.1:${p.metrics}` }, p.dir);
    },
    /** Each probe's /metrics text now. */
    probeMetrics: () => Promise.all(probes.map(async (p) => await (await fetch(`http://127.0.0.1:${p.metrics}/metrics`)).text())),
    async stop() {
      db.$client.close();
      await running.stop();
      await Promise.all(probes.map((p) => stopChild(p.child)));
      await Promise.all(proxies.map((p) => p.close()));
      await Promise.all(probes.map((p) => rm(p.dir, { recursive: true, force: true })));
    },
  };
}

function api(edgePort: number, token: string): Api {
  const base = `http://127.0.0.1:${edgePort}/v1`;
  const headers = { authorization: `Bearer ${token}` };
  const job = async (id: string) => VerificationJob.parse(await (await fetch(`${base}/email_verification_jobs/${id}`, { headers })).json());
  return {
    async createJob(emails) {
      const res = await fetch(`${base}/email_verification_jobs`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ email_addresses: emails }) });
      if (res.status !== 202) throw new Error(`job creation answered ${res.status}: ${await res.text()}`);
      return VerificationJob.parse(await res.json()).id;
    },
    job,
    async waitJob(id, limitMs, onPoll) {
      const started = performance.now();
      for (;;) {
        const state = await job(id);
        onPoll?.(state);
        if (state.status === "completed") return { seconds: (performance.now() - started) / 1000, job: state };
        if (performance.now() - started > limitMs) return { seconds: null, job: state };
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    async runJob(emails, limitMs) {
      const started = performance.now();
      const done = await this.waitJob(await this.createJob(emails), limitMs - (performance.now() - started));
      return { seconds: done.seconds === null ? null : (performance.now() - started) / 1000, job: done.job };
    },
    async results(id) {
      const res = await fetch(`${base}/email_verification_jobs/${id}/results?format=csv`, { headers });
      if (!res.ok) return [];
      const rows = parseCsv(await res.text(), { columns: true, skip_empty_lines: true }) as Record<string, string>[];
      return rows.map((r) => ({ email: r.email ?? "", classification: r.classification ?? "", reason: r.reason ?? "" }));
    },
    async verify(email) {
      const res = await fetch(`${base}/email_verifications?email_address=${encodeURIComponent(email)}`, { headers });
      const body = (await res.json()) as { classification?: string; reason?: string };
      return { classification: body.classification ?? `http_${res.status}`, reason: body.reason ?? `http_${res.status}`, status: res.status };
    },
  };
}

/** "user…" local parts exist at every fixture; anything else is an unknown user. */
export const truthOf = (email: string) => (email.startsWith("user") ? "valid" : "invalid");

/** `n` addresses over `domains` (by weight), `unknownShare` of them unknown users, shuffled by a fixed seed. */
export function buildList(n: number, domains: { domain: string; weight: number }[], unknownShare: number, tag: string, seed = 17): string[] {
  const total = domains.reduce((s, d) => s + d.weight, 0);
  let state = seed;
  const next = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const unknownEvery = unknownShare > 0 ? 1 / unknownShare : Infinity;
  const emails = Array.from({ length: n }, (_, i) => {
    let pick = next() * total;
    const d = domains.find((x) => (pick -= x.weight) < 0) ?? domains[domains.length - 1]!;
    const unknown = Math.floor((i + 1) / unknownEvery) > Math.floor(i / unknownEvery);
    return `${unknown ? "nobody" : "user"}-${tag}-${i}@${d.domain}`;
  });
  for (let i = emails.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [emails[i], emails[j]] = [emails[j]!, emails[i]!];
  }
  return emails;
}

/** Answers by reason, as "reason × n" sorted by count. */
export function reasonCounts(rows: { reason: string }[]): string {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.reason || "(no answer yet)", (counts.get(r.reason || "(no answer yet)") ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} × ${v}`).join(", ") || "none";
}

export async function removeBundleDir(): Promise<void> {
  const file = await bundle;
  if (file) await rm(join(file, ".."), { recursive: true, force: true });
  bundle = undefined;
}
