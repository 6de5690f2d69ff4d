/**
 * The probe under load: checks per second and the probe process's peak RSS at several concurrency
 * levels, against an SMTP fixture that answers every command 20 ms later (one round trip away);
 * sequential round trips per check, cold and warm, with and without PIPELINING; how long a silent
 * server holds a request. The probe runs as it ships (the esbuild bundle, plain node, its default
 * limits unless a row says otherwise), in its own process, restarted per row so its peak RSS is that
 * row's.
 *
 *   npx tsx bench/probe-scale.ts [--levels 1,50,500,2000] [--checks 2000] [--delay-ms 20]
 *
 * In the "defaults" rows each check goes to its own domain on its own destination IP (127.1.x.y,
 * 2,000 of them, all answered by one fixture process listening on 0.0.0.0), like a list-cleaning job
 * over many domains. In the "one domain" rows every check goes to one domain behind one MX address,
 * like a list of Gmail addresses: there the probe's politeness (PROBE_DESTINATION_RCPT_RATE, 100
 * RCPTs a second per destination by default) sets the pace, by design.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { ProbeRequest } from "../shared/probe-contract.ts";
import { freePortOn } from "../test/fixtures/smtp-servers.ts";
import { root, startChild, stopChild } from "./child.ts";
import { buildProbeBundle, peakRssMiB, probeOnce, startProbeProcess } from "./probe-process.ts";
import { probeScaleMarkdown } from "./probe-scale-report.ts";
import { percentile } from "./stats.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

const DESTINATIONS = 2_000;
/** The "one domain" rows are run at these levels only: beyond, the per-destination RCPT rate makes every check wait past its deadline. */
const ONE_DOMAIN_LEVELS = [1, 50, 500];
const ONE_DOMAIN_ADDRESS = "127.2.1.1";

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

type RoundTrips = { cold: number; warm: number; coldMs: number; warmMs: number };

export type ProbeBenchResult = {
  rows: ScaleRow[];
  roundTrips: { pipelining: RoundTrips; noPipelining: RoundTrips };
  silent: { deadlineMs: number; heldMs: number }[];
  delayMs: number;
};

const destination = (i: number) => `127.1.${Math.floor(i / 250) % 256}.${(i % 250) + 1}`;

function request(i: number, deadlineMs: number, address = destination(i % DESTINATIONS)): ProbeRequest {
  return {
    email: `user${i}@d${i}.bench.test`,
    mx: [{ host: `mx.d${i}.bench.test`, preference: 10, addresses: [address] }],
    deadline_ms: deadlineMs,
  };
}

function oneDomainRequest(i: number, deadlineMs: number): ProbeRequest {
  return { email: `user${i}@one.bench.test`, mx: [{ host: "mx.one.bench.test", preference: 10, addresses: [ONE_DOMAIN_ADDRESS] }], deadline_ms: deadlineMs };
}

/** Enough checks for a steady state at each level without making concurrency 1 take minutes. */
const checksFor = (level: number, checks: number) => Math.min(Math.max(level * 20, 100), Math.max(checks, level * 2));


async function loadRow(
  bundle: string,
  smtpPort: number,
  concurrency: number,
  checks: number,
  env: Record<string, string>,
  config: string,
  makeRequest: (i: number, deadlineMs: number) => ProbeRequest = request,
): Promise<ScaleRow> {
  const probe = await startProbeProcess(bundle, smtpPort, env);
  try {
    // Warm-up: JIT and HTTP connections, not counted (to other destinations than the measured ones).
    await Promise.all(Array.from({ length: Math.min(concurrency, 50) }, (_, i) => probeOnce(probe.url, request(1_000_000 + i, 10_000, `127.3.0.${i + 1}`))));
    const latencies: number[] = [];
    const outcomes: Record<string, number> = {};
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < checks) {
          const i = next++;
          const r = await probeOnce(probe.url, makeRequest(i, 10_000));
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

/** The first check to a destination (a session to open) and the next one (a warm session). */
async function coldAndWarm(bundle: string, smtpPort: number, address: string): Promise<RoundTrips> {
  const probe = await startProbeProcess(bundle, smtpPort);
  try {
    // Two addresses at one domain: the second also finds the catch-all answer known.
    const once = async (local: string) =>
      (await probeOnce(probe.url, { ...request(2_000_001, 10_000, address), email: `${local}@d2000001.bench.test` })).response!.attempts[0]!;
    const cold = await once("user1");
    const warm = await once("user2");
    return { cold: cold.round_trips, warm: warm.round_trips, coldMs: cold.ms, warmMs: warm.ms };
  } finally {
    await stopChild(probe.child);
  }
}

export async function runProbeBench(opts: { levels: number[]; checks: number; delayMs: number; log?: (msg: string) => void }): Promise<ProbeBenchResult> {
  const log = opts.log ?? (() => {});
  const dir = await mkdtemp(join(tmpdir(), "probe-bench-"));
  const bundle = await buildProbeBundle(dir);
  const smtpPort = await freePortOn(["0.0.0.0"]);
  const plainPort = await freePortOn(["0.0.0.0"]);
  const silentPort = await freePortOn(["0.0.0.0"]);
  const fixture = (port: number, ...flags: string[]) =>
    startChild(
      process.execPath,
      ["--import", "tsx", join(root, "test/fixtures/mta-fixture.ts"), "--host", "0.0.0.0", "--port", String(port), "--delay-ms", String(opts.delayMs), ...flags],
      { ready: /listening/ },
    );
  const { child: smtp } = await fixture(smtpPort);
  const { child: noPipe } = await fixture(plainPort, "--no-pipelining");
  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(silentPort, "0.0.0.0", r));
  try {
    const rows: ScaleRow[] = [];
    for (const level of opts.levels) {
      log(`probe scale: concurrency ${level}`);
      rows.push(await loadRow(bundle, smtpPort, level, checksFor(level, opts.checks), {}, "defaults"));
    }
    for (const level of opts.levels.filter((l) => l > 500)) {
      log(`probe scale: concurrency ${level}, PROBE_MAX_CONCURRENCY=${level}`);
      rows.push(await loadRow(bundle, smtpPort, level, checksFor(level, opts.checks), { PROBE_MAX_CONCURRENCY: String(level) }, `PROBE_MAX_CONCURRENCY=${level}`));
    }
    for (const level of opts.levels.filter((l) => ONE_DOMAIN_LEVELS.includes(l))) {
      log(`probe scale: concurrency ${level}, one domain`);
      rows.push(await loadRow(bundle, smtpPort, level, checksFor(level, opts.checks), {}, "one domain, one MX address", oneDomainRequest));
    }

    log("probe: round trips, cold and warm, with and without PIPELINING");
    const roundTrips = {
      pipelining: await coldAndWarm(bundle, smtpPort, "127.2.0.1"),
      noPipelining: await coldAndWarm(bundle, plainPort, "127.2.0.2"),
    };

    log("probe: a silent server");
    const silentProbe = await startProbeProcess(bundle, silentPort);
    const held: ProbeBenchResult["silent"] = [];
    try {
      for (const deadlineMs of [1_000, 5_000, 10_000]) {
        const r = await probeOnce(silentProbe.url, request(3_000_000 + deadlineMs, deadlineMs, "127.3.1.1"));
        held.push({ deadlineMs, heldMs: Math.round(r.ms) });
      }
    } finally {
      await stopChild(silentProbe.child);
    }
    return { rows, roundTrips, silent: held, delayMs: opts.delayMs };
  } finally {
    await Promise.all([stopChild(smtp), stopChild(noPipe)]);
    silent.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (isMainModule(import.meta.url)) {
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
  console.log(probeScaleMarkdown([result]));
}
