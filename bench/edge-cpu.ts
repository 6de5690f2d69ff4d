/**
 * The Worker's own CPU per request (issue 30), as an operator would measure it: the CPU time (user +
 * system, from /proc) of the workerd process(es) under `npm start`'s `wrangler dev` at WRANGLER_LOG=warn,
 * across --requests requests with --in-flight at once, after a warm-up, for /healthz (the floor: the
 * local dev proxy and workerd's HTTP work, nothing of ours), a /v1/people hit, a verification that
 * makes no probe call (an NXDOMAIN domain, answered by the DoH fixture and then from the isolate's cache),
 * /v1/account, and a verification whose DNS fails (SERVFAIL, never cached, so one DoH request each). Each repetition starts its own stack. Requests rotate over --keys API keys so no
 * key's rate limit is reached; any non-2xx is reported.
 *
 * CPU time is fairly robust to other load on the machine (it counts only what workerd ran); wall time is not.
 *
 * --profile takes a CPU profile of the Worker under the same load through the DevTools inspector
 * `wrangler dev` opens (Profiler.start / Profiler.stop) and prints the top frames by self time, mapped
 * through the bundle's source map to our sources and packages.
 *
 *   npx tsx bench/edge-cpu.ts [--reps 3] [--requests 3000] [--rounds 6] [--in-flight 10] [--keys 100] [--edge-port 8798]
 *   npx tsx bench/edge-cpu.ts --profile [--requests 3000] [--top 30] [--interval 100 (µs)] [--inspector-port 9239]
 */
import autocannon from "autocannon";
import type { ChildProcess } from "node:child_process";
import { parseArgs } from "node:util";
import { cpuSeconds, processTree } from "./child.ts";
import { startEdgeBenchStack } from "./edge-stack.ts";
import { profileMarkdown, SAMPLING_INTERVAL_US, takeProfile } from "./inspector-profile.ts";
import { median, spread } from "./stats.ts";

const { values } = parseArgs({
  options: {
    reps: { type: "string", default: "3" },
    requests: { type: "string", default: "3000" },
    rounds: { type: "string", default: "6" },
    "in-flight": { type: "string", default: "10" },
    // Enough that no key reaches its limit (100 per 10 s) at the rates one machine reaches, few enough that each
    // is used often: a key's entry in the isolate's cache lasts 60 s (edge/identity/authenticate.ts), so every key costs one more
    // database read a minute, a share of the requests that grows with the number of keys.
    keys: { type: "string", default: "100" },
    "edge-port": { type: "string", default: "8798" },
    "inspector-port": { type: "string", default: "9239" },
    profile: { type: "boolean", default: false },
    top: { type: "string", default: "30" },
    interval: { type: "string", default: String(SAMPLING_INTERVAL_US) },
  },
});
const reps = Number(values.reps);
const requests = Number(values.requests);
const rounds = Number(values.rounds);
const inFlight = Number(values["in-flight"]);
const keyCount = Number(values.keys);
const edgePort = Number(values["edge-port"]);
const inspectorPort = Number(values["inspector-port"]);
const base = `http://127.0.0.1:${edgePort}`;

const TARGETS = [
  { name: "GET /healthz", path: "/healthz", authenticated: false },
  { name: "GET /v1/people (hit)", path: "/v1/people?profnet_id=1001", authenticated: true },
  { name: "GET /v1/email_verifications (NXDOMAIN, no probe call)", path: "/v1/email_verifications?email_address=ana@nx.test", authenticated: true },
  { name: "GET /v1/account", path: "/v1/account", authenticated: true },
  // Not cached (a failure may be passing), so DoH is asked every time: one round trip, like the lookup's.
  { name: "GET /v1/email_verifications (SERVFAIL, DoH asked, no probe call)", path: "/v1/email_verifications?email_address=ana@servfail.test", authenticated: true },
] as const;

/** npm start with its keys, and the inspector where --profile reads the Worker. */
type Stack = Awaited<ReturnType<typeof startEdgeBenchStack>>;
const startStack = () => startEdgeBenchStack({ edgePort, keyCount, env: { EDGE_INSPECTOR_PORT: String(inspectorPort) } });

/**
 * The workerd processes under the stack, counted together: wrangler dev runs two, the dev proxy that
 * listens on EDGE_PORT and the runtime that runs the Worker (the one with the inspector).
 */
function workerdPids(stack: ChildProcess): { all: number[]; proxy: number[] } {
  const workerd = processTree(stack.pid!).filter((p) => /(^|\/)workerd\s/.test(p.command));
  if (workerd.length === 0) throw new Error("no workerd process under npm start");
  return { all: workerd.map((p) => p.pid), proxy: workerd.filter((p) => p.command.includes(`entry=127.0.0.1:${edgePort}`)).map((p) => p.pid) };
}

/** Sends `count` requests, `inFlight` at a time, each with the next key; resolves with the non-2xx count. */
async function load(url: string, count: number, tokens: string[], authenticated: boolean): Promise<{ non2xx: number; errors: number; wallMs: number }> {
  let sent = 0;
  const requests = authenticated
    ? [{ setupRequest: (r: { headers: Record<string, string> }) => ({ ...r, headers: { ...r.headers, authorization: `Bearer ${tokens[sent++ % tokens.length]}` } }) }]
    : undefined;
  const started = performance.now();
  const r = await autocannon({ url, connections: inFlight, amount: count, requests });
  return { non2xx: r.non2xx, errors: r.errors, wallMs: performance.now() - started };
}

type CpuRow = { name: string; cpuMsPerRequest: number; beyondFloorMs: number; proxyMsPerRequest: number; non2xx: number; errors: number; requestsPerSecond: number };

/**
 * Warm-up for every target first, then the targets in turn, --rounds times, --requests / --rounds
 * requests each: load from the rest of the machine that comes and goes then falls on every target alike.
 */
async function measure(stack: Stack): Promise<CpuRow[]> {
  const pids = workerdPids(stack.stack);
  const cpu = (which: number[] = pids.all) => which.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  // Every key once (each is looked up in the database on its first use), then some more.
  for (const target of TARGETS) await load(`${base}${target.path}`, Math.max(keyCount, 1000), stack.tokens, target.authenticated);
  const totals = TARGETS.map(() => ({ cpuSeconds: 0, proxySeconds: 0, wallMs: 0, non2xx: 0, errors: 0 }));
  const perRound = Math.ceil(requests / rounds);
  for (let round = 0; round < rounds; round++) {
    for (const [i, target] of TARGETS.entries()) {
      const before = cpu();
      const proxyBefore = cpu(pids.proxy);
      const r = await load(`${base}${target.path}`, perRound, stack.tokens, target.authenticated);
      const total = totals[i]!;
      total.cpuSeconds += cpu() - before;
      total.proxySeconds += cpu(pids.proxy) - proxyBefore;
      total.wallMs += r.wallMs;
      total.non2xx += r.non2xx;
      total.errors += r.errors;
    }
  }
  const sent = perRound * rounds;
  const floor = (totals[0]!.cpuSeconds * 1000) / sent;
  return TARGETS.map((target, i) => {
    const total = totals[i]!;
    const cpuMsPerRequest = (total.cpuSeconds * 1000) / sent;
    return {
      name: target.name,
      cpuMsPerRequest,
      beyondFloorMs: cpuMsPerRequest - floor,
      proxyMsPerRequest: (total.proxySeconds * 1000) / sent,
      non2xx: total.non2xx,
      errors: total.errors,
      requestsPerSecond: sent / (total.wallMs / 1000),
    };
  });
}

function cpuMarkdown(runs: CpuRow[][]): string {
  const label = runs.length > 1 ? " (min / median / max)" : "";
  const lines = [
    `| Request | workerd CPU ms per request${label} | Beyond /healthz, ms${label} | Of which the dev proxy's process, ms (median) | Requests/s (median; wall clock, noisy) | non-2xx (all runs) | errors (all runs) |`,
    "|---|---|---|---|---|---|---|",
  ];
  for (const name of runs[0]!.map((row) => row.name)) {
    const rows = runs.map((run) => run.find((row) => row.name === name)!);
    const rps = median(rows.map((x) => x.requestsPerSecond));
    const beyond = name === TARGETS[0].name ? "(the floor)" : spread(rows.map((x) => x.beyondFloorMs), 2);
    lines.push(`| ${name} | ${spread(rows.map((x) => x.cpuMsPerRequest), 2)} | ${beyond} | ${median(rows.map((x) => x.proxyMsPerRequest)).toFixed(2)} | ${rps.toFixed(0)} | ${rows.reduce((n, x) => n + x.non2xx, 0)} | ${rows.reduce((n, x) => n + x.errors, 0)} |`);
  }
  return lines.join("\n");
}

if (values.profile) {
  const stack = await startStack();
  try {
    for (const target of TARGETS) {
      const url = `${base}${target.path}`;
      await load(url, Math.max(keyCount, 1000), stack.tokens, target.authenticated);
      const intervalUs = Number(values.interval);
      const profile = await takeProfile(inspectorPort, () => load(url, requests, stack.tokens, target.authenticated), intervalUs);
      console.log(`\n### ${target.name}: ${requests} requests, ${inFlight} in flight\n`);
      console.log(profileMarkdown(profile, { requests, top: Number(values.top), intervalUs }));
    }
  } finally {
    await stack.stop();
  }
} else {
  const runs: CpuRow[][] = [];
  for (let rep = 1; rep <= reps; rep++) {
    process.stderr.write(`[edge-cpu] repetition ${rep}/${reps}\n`);
    const stack = await startStack();
    try {
      runs.push(await measure(stack));
    } finally {
      await stack.stop();
    }
  }
  console.log(`\nworkerd CPU (user + system, /proc): ${Math.ceil(requests / rounds) * rounds} requests per row in ${rounds} rounds taking the rows in turn, ${inFlight} in flight, after a warm-up; ${keyCount} keys in turn; ${reps} runs, each its own npm start (WRANGLER_LOG=warn)\n`);
  console.log(cpuMarkdown(runs));
}
