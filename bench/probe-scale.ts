/**
 * The probe under load: checks per second and the probe process's peak RSS at several concurrency
 * levels, against an SMTP fixture that answers every command 20 ms later (one round trip away);
 * sequential round trips per check with and without PIPELINING; how long a silent server holds a
 * request. The probe runs as it ships (the esbuild bundle, plain node, its default limits unless a
 * row says otherwise), in its own process, restarted per row so its peak RSS is that row's.
 *
 *   npx tsx bench/probe-scale.ts [--levels 1,50,500,2000] [--checks 2000] [--delay-ms 20]
 *
 * Each check goes to its own domain on its own destination IP (127.1.x.y, 2,000 of them, all
 * answered by one fixture process listening on 0.0.0.0), like a list-cleaning job over many domains.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { PROBE_PATH, ProbeResponse, signProbeRequest, type ProbeRequest } from "../shared/probe-contract.ts";
import { freePortOn } from "../test/fixtures/smtp-servers.ts";
import { root, startChild, stopChild } from "./child.ts";
import { percentile } from "./stats.ts";

const SECRET = "bench-probe-secret-0123456789";
const DESTINATIONS = 2_000;

export type ScaleRow = {
  concurrency: number;
  config: string;
  checks: number;
  seconds: number;
  checksPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  peakRssMiB: number;
  outcomes: Record<string, number>;
};

export type ProbeBenchResult = {
  rows: ScaleRow[];
  roundTrips: { pipelining: number; noPipelining: number; pipeliningMs: number; noPipeliningMs: number };
  silent: { deadlineMs: number; heldMs: number }[];
  delayMs: number;
};

/** Peak resident set size of a process so far (VmHWM), in MiB. */
async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

const destination = (i: number) => `127.1.${Math.floor(i / 250) % 256}.${(i % 250) + 1}`;

function request(i: number, deadlineMs: number, address = destination(i % DESTINATIONS)): ProbeRequest {
  return {
    email: `user${i}@d${i}.bench.test`,
    mx: [{ host: `mx.d${i}.bench.test`, preference: 10, addresses: [address] }],
    deadline_ms: deadlineMs,
  };
}

async function probeOnce(url: string, body: ProbeRequest): Promise<{ status: number; response: ProbeResponse | null; ms: number }> {
  const payload = JSON.stringify(body);
  const started = performance.now();
  const res = await fetch(`${url}${PROBE_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(await signProbeRequest(SECRET, payload)) },
    body: payload,
  });
  const json = await res.json();
  const ms = performance.now() - started;
  return { status: res.status, response: res.ok ? ProbeResponse.parse(json) : null, ms };
}

async function startProbe(bundle: string, smtpPort: number, extraEnv: Record<string, string> = {}) {
  const port = await freePortOn(["127.0.0.1"]);
  const { child } = await startChild(process.execPath, [bundle], {
    env: {
      PORT: String(port),
      PROBE_LISTEN_HOST: "127.0.0.1",
      PROBE_SECRET: SECRET,
      PROBE_HELO_NAME: "probe1.bench.example",
      PROBE_SMTP_PORT: String(smtpPort),
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      ...extraEnv,
    },
    ready: /probe listening/,
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/** Enough checks for a steady state at each level without making concurrency 1 take minutes. */
const checksFor = (level: number, checks: number) => Math.min(Math.max(level * 20, 100), Math.max(checks, level * 2));


async function loadRow(bundle: string, smtpPort: number, concurrency: number, checks: number, env: Record<string, string>, config: string): Promise<ScaleRow> {
  const probe = await startProbe(bundle, smtpPort, env);
  try {
    // Warm-up: JIT and connection pools, not counted.
    await Promise.all(Array.from({ length: Math.min(concurrency, 50) }, (_, i) => probeOnce(probe.url, request(1_000_000 + i, 10_000))));
    const latencies: number[] = [];
    const outcomes: Record<string, number> = {};
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < checks) {
          const i = next++;
          const r = await probeOnce(probe.url, request(i, 10_000));
          latencies.push(r.ms);
          const key = r.response ? r.response.outcome : `http_${r.status}`;
          outcomes[key] = (outcomes[key] ?? 0) + 1;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    return {
      concurrency,
      config,
      checks,
      seconds,
      checksPerSecond: checks / seconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      peakRssMiB: await peakRssMiB(probe.child.pid!),
      outcomes,
    };
  } finally {
    await stopChild(probe.child);
  }
}

export async function runProbeBench(opts: { levels: number[]; checks: number; delayMs: number; log?: (msg: string) => void }): Promise<ProbeBenchResult> {
  const log = opts.log ?? (() => {});
  const dir = await mkdtemp(join(tmpdir(), "probe-bench-"));
  const bundle = join(dir, "probe.mjs");
  await build({ entryPoints: [join(root, "probe/main.ts")], bundle: true, platform: "node", format: "esm", target: "node20", outfile: bundle, logLevel: "silent" });
  const smtpPort = await freePortOn(["0.0.0.0"]);
  const plainPort = await freePortOn(["0.0.0.0"]);
  const silentPort = await freePortOn(["0.0.0.0"]);
  const tsx = ["--import", "tsx", join(root, "bench/smtp-latency-server.ts")];
  const { child: fixture } = await startChild(process.execPath, [...tsx, "--port", String(smtpPort), "--delay-ms", String(opts.delayMs)], { ready: /listening/ });
  const { child: noPipe } = await startChild(process.execPath, [...tsx, "--port", String(plainPort), "--delay-ms", String(opts.delayMs), "--no-pipelining"], {
    ready: /listening/,
  });
  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(silentPort, "0.0.0.0", r));
  try {
    const rows: ScaleRow[] = [];
    for (const level of opts.levels) {
      log(`probe scale: concurrency ${level}`);
      rows.push(await loadRow(bundle, smtpPort, level, checksFor(level, opts.checks), {}, "defaults"));
    }
    const over = opts.levels.filter((l) => l > 500);
    for (const level of over) {
      log(`probe scale: concurrency ${level}, PROBE_MAX_CONCURRENCY=${level}`);
      rows.push(await loadRow(bundle, smtpPort, level, checksFor(level, opts.checks), { PROBE_MAX_CONCURRENCY: String(level) }, `PROBE_MAX_CONCURRENCY=${level}`));
    }

    log("probe: round trips with and without PIPELINING");
    const withPipe = await startProbe(bundle, smtpPort);
    const withoutPipe = await startProbe(bundle, plainPort);
    let roundTrips: ProbeBenchResult["roundTrips"];
    try {
      const a = await probeOnce(withPipe.url, request(2_000_001, 10_000, "127.2.0.1"));
      const b = await probeOnce(withoutPipe.url, request(2_000_002, 10_000, "127.2.0.2"));
      roundTrips = {
        pipelining: a.response!.attempts[0]!.round_trips,
        noPipelining: b.response!.attempts[0]!.round_trips,
        pipeliningMs: a.response!.attempts[0]!.ms,
        noPipeliningMs: b.response!.attempts[0]!.ms,
      };
    } finally {
      await Promise.all([stopChild(withPipe.child), stopChild(withoutPipe.child)]);
    }

    log("probe: a silent server");
    const silentProbe = await startProbe(bundle, silentPort);
    const held: ProbeBenchResult["silent"] = [];
    try {
      for (const deadlineMs of [1_000, 5_000, 10_000]) {
        const r = await probeOnce(silentProbe.url, request(3_000_000 + deadlineMs, deadlineMs, "127.3.0.1"));
        held.push({ deadlineMs, heldMs: Math.round(r.ms) });
      }
    } finally {
      await stopChild(silentProbe.child);
    }
    return { rows, roundTrips, silent: held, delayMs: opts.delayMs };
  } finally {
    await Promise.all([stopChild(fixture), stopChild(noPipe)]);
    silent.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export function probeBenchMarkdown(r: ProbeBenchResult): string {
  const lines = [
    `| Concurrency | Probe config | Checks | Checks/s | p50 ms | p99 ms | Peak RSS MiB | Outcomes |`,
    `|---|---|---|---|---|---|---|---|`,
    ...r.rows.map(
      (row) =>
        `| ${row.concurrency} | ${row.config} | ${row.checks} | ${row.checksPerSecond.toFixed(0)} | ${row.p50Ms.toFixed(0)} | ${row.p99Ms.toFixed(0)} | ${row.peakRssMiB.toFixed(0)} | ${Object.entries(row.outcomes).map(([k, v]) => `${k} ${v}`).join(", ")} |`,
    ),
    "",
    `Sequential round trips per check (connect, greeting, EHLO, then MAIL/RCPT/RCPT/QUIT; ${r.delayMs} ms per reply, no STARTTLS offered): ` +
      `with PIPELINING ${r.roundTrips.pipelining} (${r.roundTrips.pipeliningMs} ms), without ${r.roundTrips.noPipelining} (${r.roundTrips.noPipeliningMs} ms).`,
    "",
    `A silent server (accepts TCP, never greets) holds a request for: ` + r.silent.map((s) => `deadline ${s.deadlineMs} ms -> ${s.heldMs} ms`).join("; ") + ".",
  ];
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      levels: { type: "string", default: "1,50,500,2000" },
      checks: { type: "string", default: "2000" },
      "delay-ms": { type: "string", default: "20" },
    },
  });
  const result = await runProbeBench({
    levels: values.levels.split(",").map(Number),
    checks: Number(values.checks),
    delayMs: Number(values["delay-ms"]),
    log: (m) => process.stderr.write(`${m}\n`),
  });
  console.log(probeBenchMarkdown(result));
}
