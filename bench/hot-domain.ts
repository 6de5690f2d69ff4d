/**
 * A hot domain, as a Gmail-heavy list looks to a verifier: N checks in flight for one domain behind
 * one MX address that answers every command 20 ms later, half of them unknown users, the server
 * enforcing Postfix's error limits (after 10 errors every reply waits 1 s, after 20 it disconnects).
 * Side by side, one after another, each against a fresh server: this API's probe, the probe as it
 * was before its scheduler (commit BEFORE_SCHEDULER: one SMTP conversation per check), and the npm
 * verifiers.
 *
 *   sudo npx tsx bench/hot-domain.ts [--reps 3] [--checks 500] [--delay-ms 20]
 *
 * The probes get the default smtp_timeout (10 s) and run as they ship (their bundles, plain Node);
 * the npm tools run as in bench/verify-compare.ts (their Node 22, a mount namespace whose resolver
 * is the fixture DNS). Needs root: the npm tools dial port 25 and resolve through port 53.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { ProbeRequest } from "../shared/probe-contract.ts";
import { childCounters, root, startChild, stopChild } from "./child.ts";
import { startUdpDnsServer } from "./dns-udp-server.ts";
import type { Peer } from "./peer-verify.ts";
import { ensurePeers, runPeerTool } from "./peers-run.ts";
import { buildProbeBundle, peakRssMiB, probeOnce, startProbeProcess, type ProbeSigning } from "./probe-process.ts";
import { median, spread } from "./stats.ts";
import { SYSTEM_DNS_HOST } from "./verify-fixtures.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

/** The last commit before the probe had a scheduler: one conversation per check, four at a time per destination. */
export const BEFORE_SCHEDULER = "c048eab";
const MX_ADDRESS = "127.0.2.1";
// A real-looking name: @emailcheck/email-validator-js refuses addresses under a reserved top-level domain such as .test.
const DOMAIN = "meadow-mail.com";
const DEADLINE_MS = 10_000;

/** RCPTs per second the "faster" row allows one destination: what the default pacing costs in wall time. */
const FASTER_RATE = 1_000;
export const HOT_TOOLS = [
  "This API's probe",
  `This API's probe, PROBE_DESTINATION_RCPT_RATE=${FASTER_RATE}`,
  `The probe before its scheduler (${BEFORE_SCHEDULER})`,
  "email-verify",
  "@emailcheck/email-validator-js",
] as const;
type HotTool = (typeof HOT_TOOLS)[number];

type Verdict = "deliverable" | "undeliverable" | "unknown";

export type HotRun = {
  tool: HotTool;
  rep: number;
  wallMs: number;
  right: number;
  timeouts: number;
  unknown: number;
  /** Counters from the SMTP server's side (test/fixtures/mta-fixture.ts summarize()). */
  server: { connections: number; max_open: number; transactions: number; rcpts: number; max_errors_in_a_session: number; quit: number; client_resets: number; server_closed: number };
  peakRssMiB: number;
};

export type HotDomainResult = { runs: HotRun[]; checks: number; delayMs: number; reps: number };

const emails = (n: number) => Array.from({ length: n }, (_, i) => (i % 2 === 0 ? `user${i}@${DOMAIN}` : `nobody${i}@${DOMAIN}`));
const truth = (email: string): Verdict => (email.startsWith("user") ? "deliverable" : "undeliverable");

const OUTCOME_VERDICT: Record<string, Verdict> = { accepted: "deliverable", mailbox_not_found: "undeliverable" };

async function startFixture(delayMs: number) {
  return startChild(
    process.execPath,
    ["--import", "tsx", join(root, "test/fixtures/mta-fixture.ts"), "--host", MX_ADDRESS, "--port", "25", "--delay-ms", String(delayMs), "--postfix-limits"],
    { ready: /listening/ },
  );
}

/** The fixture's counters: it prints one JSON line on SIGUSR2. */
const serverCounters = (fixture: Awaited<ReturnType<typeof startFixture>>) => childCounters<HotRun["server"]>(fixture.child);

async function runProbe(bundle: string, list: string[], env: Record<string, string> = {}, signing: ProbeSigning = "current"): Promise<{ wallMs: number; verdicts: Verdict[]; timeouts: number; peakRssMiB: number }> {
  const probe = await startProbeProcess(bundle, 25, env);
  try {
    const mx = [{ host: `mx.${DOMAIN}`, preference: 10, addresses: [MX_ADDRESS] }];
    const started = performance.now();
    const answers = await Promise.all(list.map((email) => probeOnce(probe.url, { email, mx, deadline_ms: DEADLINE_MS } satisfies ProbeRequest, signing)));
    const wallMs = performance.now() - started;
    const outcomes = answers.map((a) => a.outcome ?? `http_${a.status}`);
    return {
      wallMs,
      verdicts: outcomes.map((o) => OUTCOME_VERDICT[o] ?? "unknown"),
      timeouts: outcomes.filter((o) => o === "timeout").length,
      peakRssMiB: await peakRssMiB(probe.child.pid!),
    };
  } finally {
    await stopChild(probe.child);
  }
}

export async function runHotDomain(opts: { reps: number; checks: number; delayMs: number; log?: (m: string) => void }): Promise<HotDomainResult> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("bench/hot-domain.ts needs root: the fixture listens on port 25 and the npm tools resolve through port 53.");
  await ensurePeers(log);
  const dir = await mkdtemp(join(tmpdir(), "bench-hot-"));
  const dns = await startUdpDnsServer({
    zone: { [DOMAIN]: { MX: [{ preference: 10, exchange: `mx.${DOMAIN}` }] }, [`mx.${DOMAIN}`]: { A: [MX_ADDRESS] } },
    host: SYSTEM_DNS_HOST,
    port: 53,
  });
  try {
    const bundles = { current: await buildProbeBundle(dir), before: await buildProbeBundle(dir, BEFORE_SCHEDULER) };
    const resolvConf = join(dir, "resolv.conf");
    await writeFile(resolvConf, `nameserver ${SYSTEM_DNS_HOST}\n`);
    const list = emails(opts.checks);
    const listFile = join(dir, "list.json");
    await writeFile(listFile, JSON.stringify(list));
    const runs: HotRun[] = [];
    for (let rep = 1; rep <= opts.reps; rep++) {
      // Rotate the order so no tool always runs first on a machine that drifts.
      const order = HOT_TOOLS.map((_, i) => HOT_TOOLS[(i + rep - 1) % HOT_TOOLS.length]!);
      for (const tool of order) {
        log(`hot domain: ${tool}, ${opts.checks} checks in flight, repetition ${rep}/${opts.reps}`);
        const fixture = await startFixture(opts.delayMs);
        try {
          let r: { wallMs: number; verdicts: Verdict[]; timeouts: number; peakRssMiB: number };
          if (tool === HOT_TOOLS[0]) r = await runProbe(bundles.current, list);
          else if (tool === HOT_TOOLS[1]) r = await runProbe(bundles.current, list, { PROBE_DESTINATION_RCPT_RATE: String(FASTER_RATE) });
          // That commit's probe checks the v1 signature of its time.
          else if (tool === HOT_TOOLS[2]) r = await runProbe(bundles.before, list, {}, "v1");
          else {
            const peer = await runPeerTool(tool as Peer, listFile, resolvConf, opts.checks);
            const byEmail = new Map(peer.answers.map((a) => [a.email, a]));
            r = {
              wallMs: peer.wallMs,
              verdicts: list.map((e) => byEmail.get(e)!.verdict),
              timeouts: peer.answers.filter((a) => /time ?out|no answer within/i.test(a.answer)).length,
              peakRssMiB: peer.peakRssMiB,
            };
          }
          // The server's view once every session the tool left open has had a moment to end.
          await new Promise((resolve) => setTimeout(resolve, 500));
          runs.push({
            tool,
            rep,
            wallMs: r.wallMs,
            right: r.verdicts.filter((v, i) => v === truth(list[i]!)).length,
            timeouts: r.timeouts,
            unknown: r.verdicts.filter((v) => v === "unknown").length,
            server: await serverCounters(fixture),
            peakRssMiB: r.peakRssMiB,
          });
        } finally {
          await stopChild(fixture.child);
        }
      }
    }
    return { runs, checks: opts.checks, delayMs: opts.delayMs, reps: opts.reps };
  } finally {
    await dns.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export function hotDomainMarkdown(r: HotDomainResult): string {
  const label = r.reps > 1 ? " (min / median / max)" : "";
  const lines = [
    `| Tool | Verdicts right of ${r.checks} (median) | Timeouts (median) | Other unknown (median) | Wall time, s${label} | SMTP connections${label} | Checks per connection (median) | Most errors in one session (max) | Sessions ended with QUIT (median) | Client resets (median) | Peak RSS MiB${label} |`,
    "|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const tool of HOT_TOOLS) {
    const runs = r.runs.filter((x) => x.tool === tool);
    if (runs.length === 0) continue;
    const med = (f: (x: HotRun) => number) => median(runs.map(f));
    lines.push(
      `| ${tool} | ${med((x) => x.right)} | ${med((x) => x.timeouts)} | ${med((x) => x.unknown - x.timeouts)} | ${spread(runs.map((x) => x.wallMs / 1000), 2)} | ${spread(runs.map((x) => x.server.connections), 0)} | ${med((x) => r.checks / Math.max(1, x.server.connections)).toFixed(1)} | ${Math.max(...runs.map((x) => x.server.max_errors_in_a_session))} | ${med((x) => x.server.quit)} | ${med((x) => x.server.client_resets)} | ${spread(runs.map((x) => x.peakRssMiB), 0)} |`,
    );
  }
  return lines.join("\n");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: { reps: { type: "string", default: "3" }, checks: { type: "string", default: "500" }, "delay-ms": { type: "string", default: "20" } },
  });
  const result = await runHotDomain({
    reps: Number(values.reps),
    checks: Number(values.checks),
    delayMs: Number(values["delay-ms"]),
    log: (m) => process.stderr.write(`${m}\n`),
  });
  console.log(hotDomainMarkdown(result));
}
