/**
 * A dirty list at a mail server that defends itself against directory harvesting (docs/probe.md
 * "Unknown recipients"): `--lines` addresses at one company, half of them unknown users, behind one
 * MX address whose server blocks a client IP as Forcepoint does by default (more than half of at least
 * 20 recipients in 60 s unknown: 554 5.7.1 to everything from that IP for 3 hours). This API as a bulk
 * job (the whole local stack as `npm start` runs it, the probe at its default budget), then each npm
 * verifier with 50 addresses in flight, each against a fresh server. Reported: verdicts right, blocks
 * drawn (and when the first came), RCPTs refused by a block, wall time.
 *
 *   sudo npx tsx bench/harvest.ts [--lines 2000] [--scale 60]
 *
 * Time runs `--scale` times faster on both sides, so that a run takes minutes, not hours: the
 * server's window is 60 s / scale and its block 3 h / scale; the probe's PROBE_DESTINATION_WINDOW_SECONDS
 * is 60 / scale and its PROBE_DESTINATION_UNKNOWN_PER_HOUR 200 x scale (the same rate); everything
 * else is default. Wall times are also given multiplied back by the scale. Needs root: the mail
 * server listens on port 25 and the npm tools resolve through port 53.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { VerificationJob } from "../shared/jobs.ts";
import type { Zone } from "../test/fixtures/doh-server.ts";
import { childCounters, root, startChild, startJobsStack, stopChild } from "./child.ts";
import { startUdpDnsServer } from "./dns-udp-server.ts";
import { PEERS, type Peer } from "./peer-verify.ts";
import { ensurePeers, runPeerTool } from "./peers-run.ts";
import { SYSTEM_DNS_HOST } from "./verify-fixtures.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

const EDGE_PORT = 8793;
const PROBE_PORT = 8792;
const MX_ADDRESS = "127.0.3.1";
// A real-looking name: @emailcheck/email-validator-js refuses addresses under a reserved top-level domain such as .test.
const DOMAIN = "harbor-freight-mail.com";
const OURS = "This API (bulk job)";
const POLL_MS = 500;
const JOB_LIMIT_MS = 60 * 60_000;
/** Forcepoint's default directory-harvest policy, in real time. */
const FORCEPOINT = { windowMs: 60_000, minRecipients: 20, ratio: 0.5, blockMs: 3 * 3_600_000 };
/** The probe's defaults, in real time. */
const BUDGET = { windowSeconds: 60, perHour: 200 };

type Verdict = "deliverable" | "undeliverable" | "unknown";

export type HarvestRun = {
  tool: string;
  wallMs: number;
  right: number;
  /** Our answers that say policy_block (the npm tools do not say; see blockedReplies: one per check for them). */
  blockedAnswers: number | null;
  /** When the server imposed each block, ms after the tool started. */
  blocksAtMs: number[];
  /** RCPTs (and greetings) the server refused because a block was in force. */
  blockedReplies: number;
  rcpts: number;
  connections: number;
};

export type HarvestResult = { lines: number; scale: number; runs: HarvestRun[] };

const truth = (email: string): Verdict => (email.startsWith("user") ? "deliverable" : "undeliverable");

/** `lines` addresses at DOMAIN, every other one an unknown user, shuffled by a fixed permutation. */
function buildList(lines: number): string[] {
  const emails = Array.from({ length: lines }, (_, i) => `${i % 2 === 0 ? "user" : "nobody"}${i}@${DOMAIN}`);
  let seed = 17;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let i = emails.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [emails[i], emails[j]] = [emails[j]!, emails[i]!];
  }
  return emails;
}

function defenceArg(scale: number): string {
  return [FORCEPOINT.windowMs / scale, FORCEPOINT.minRecipients, FORCEPOINT.ratio, FORCEPOINT.blockMs / scale].map((n) => String(Math.round(n * 1000) / 1000)).join(",");
}

type ServerCounters = { connections: number; rcpts: number; harvest_blocks: number[]; harvest_blocked_replies: number };

async function runOurs(emails: string[], scale: number, log: (m: string) => void): Promise<HarvestRun> {
  const zone: Zone = { [DOMAIN]: { MX: [{ preference: 10, exchange: `mx.${DOMAIN}` }] }, [`mx.${DOMAIN}`]: { A: [MX_ADDRESS] } };
  const { mta, database, stop } = await startJobsStack({
    zone,
    delayMs: 20,
    edgePort: EDGE_PORT,
    probePort: PROBE_PORT,
    mtaArgs: ["--harvest-defence", defenceArg(scale)],
    env: {
      PROBE_DESTINATION_UNKNOWN_RATIO: "0.3",
      PROBE_DESTINATION_WINDOW_SECONDS: String(Math.max(1, Math.round(BUDGET.windowSeconds / scale))),
      PROBE_DESTINATION_UNKNOWN_PER_HOUR: String(BUDGET.perHour * scale),
    },
  });
  try {
    const db = openDatabase(database.url, database.authToken);
    const account = await createAccount(db, "bench harvest", 0);
    const token = (await createApiKey(db, account.id)).token;
    db.$client.close();
    const api = `http://127.0.0.1:${EDGE_PORT}/v1/email_verification_jobs`;
    const headers = { authorization: `Bearer ${token}` };
    const startedAt = Date.now();
    const started = performance.now();
    const res = await fetch(api, { method: "POST", headers: { ...headers, "content-type": "text/csv" }, body: `email_address\r\n${emails.join("\r\n")}\r\n` });
    if (res.status !== 202) throw new Error(`job creation answered ${res.status}: ${await res.text()}`);
    const { id } = VerificationJob.parse(await res.json());
    for (let polls = 1; ; polls++) {
      const job = VerificationJob.parse(await (await fetch(`${api}/${id}`, { headers })).json());
      if (job.status === "completed") break;
      if (performance.now() - started > JOB_LIMIT_MS) throw new Error(`the job did not complete within ${JOB_LIMIT_MS / 60_000} min (${job.processed}/${job.total})`);
      if (polls % 20 === 0) log(`harvest: ${OURS}: ${job.processed}/${job.total} after ${((performance.now() - started) / 1000).toFixed(0)} s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const wallMs = performance.now() - started;
    const csv = (await (await fetch(`${api}/${id}/results?format=csv`, { headers })).text()).trimEnd().split(/\r?\n/);
    const columns = csv[0]!.split(",");
    const at = (name: string) => columns.indexOf(name);
    let right = 0;
    let blockedAnswers = 0;
    for (const row of csv.slice(1)) {
      const cells = row.split(",");
      const email = cells[at("email")]!;
      const classification = cells[at("classification")];
      if (classification === (truth(email) === "deliverable" ? "valid" : "invalid")) right++;
      if (cells[at("reason")] === "policy_block") blockedAnswers++;
    }
    const server = await childCounters<ServerCounters>(mta);
    return { tool: OURS, wallMs, right, blockedAnswers, blocksAtMs: server.harvest_blocks.map((t) => t - startedAt), blockedReplies: server.harvest_blocked_replies, rcpts: server.rcpts, connections: server.connections };
  } finally {
    await stop();
  }
}

async function runPeer(tool: Peer, listFile: string, resolvConf: string, emails: string[], scale: number): Promise<HarvestRun> {
  const fixture = await startChild(
    process.execPath,
    ["--import", "tsx", join(root, "test/fixtures/mta-fixture.ts"), "--host", MX_ADDRESS, "--port", "25", "--delay-ms", "20", "--harvest-defence", defenceArg(scale)],
    { ready: /listening/ },
  );
  try {
    const startedAt = Date.now();
    const peer = await runPeerTool(tool, listFile, resolvConf, 50);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const server = await childCounters<ServerCounters>(fixture.child);
    const byEmail = new Map(peer.answers.map((a) => [a.email, a]));
    return {
      tool,
      wallMs: peer.wallMs,
      right: emails.filter((e) => byEmail.get(e)?.verdict === truth(e)).length,
      blockedAnswers: null,
      blocksAtMs: server.harvest_blocks.map((t) => t - startedAt),
      blockedReplies: server.harvest_blocked_replies,
      rcpts: server.rcpts,
      connections: server.connections,
    };
  } finally {
    await stopChild(fixture.child);
  }
}

export async function runHarvest(opts: { lines: number; scale: number; log?: (m: string) => void }): Promise<HarvestResult> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("bench/harvest.ts needs root: the mail server listens on port 25 and the npm tools resolve through port 53.");
  await ensurePeers(log);
  const emails = buildList(opts.lines);
  const runs: HarvestRun[] = [];
  log(`harvest: ${OURS}, ${opts.lines} lines, time ${opts.scale}x faster`);
  runs.push(await runOurs(emails, opts.scale, log));
  const dir = await mkdtemp(join(tmpdir(), "bench-harvest-"));
  const dns = await startUdpDnsServer({ zone: { [DOMAIN]: { MX: [{ preference: 10, exchange: `mx.${DOMAIN}` }] }, [`mx.${DOMAIN}`]: { A: [MX_ADDRESS] } }, host: SYSTEM_DNS_HOST, port: 53 });
  try {
    const resolvConf = join(dir, "resolv.conf");
    await writeFile(resolvConf, `nameserver ${SYSTEM_DNS_HOST}\n`);
    const listFile = join(dir, "list.json");
    await writeFile(listFile, JSON.stringify(emails));
    for (const tool of PEERS) {
      log(`harvest: ${tool}, 50 in flight`);
      runs.push(await runPeer(tool, listFile, resolvConf, emails, opts.scale));
    }
  } finally {
    await dns.close();
    await rm(dir, { recursive: true, force: true });
  }
  return { lines: opts.lines, scale: opts.scale, runs };
}

export function harvestMarkdown(r: HarvestResult): string {
  const s = (ms: number) => (ms / 1000).toFixed(1);
  const real = (ms: number) => {
    const seconds = (ms * r.scale) / 1000;
    return seconds >= 3600 ? `${(seconds / 3600).toFixed(1)} h` : seconds >= 60 ? `${(seconds / 60).toFixed(0)} min` : `${seconds.toFixed(0)} s`;
  };
  const rows = r.runs.map(
    (x) =>
      `| ${x.tool} | ${x.right} of ${r.lines} | ${x.blocksAtMs.length}${x.blocksAtMs.length ? ` (first after ${s(x.blocksAtMs[0]!)} s, ${real(x.blocksAtMs[0]!)} real)` : ""} | ${x.blockedReplies} | ${x.blockedAnswers ?? "—"} | ${x.rcpts} | ${x.connections} | ${s(x.wallMs)} (${real(x.wallMs)} real) |`,
  );
  return [
    `${r.lines} addresses at one domain, half unknown users, shuffled; one MX address whose server blocks a client IP once more than half of at least`,
    `20 recipients in its window are unknown (Forcepoint's default), time ${r.scale}x faster on both sides: window ${FORCEPOINT.windowMs / r.scale / 1000} s, block`,
    `${FORCEPOINT.blockMs / r.scale / 1000} s; the probe's PROBE_DESTINATION_WINDOW_SECONDS=${Math.max(1, Math.round(BUDGET.windowSeconds / r.scale))} and PROBE_DESTINATION_UNKNOWN_PER_HOUR=${BUDGET.perHour * r.scale} (the default rate at that scale),`,
    `PROBE_DESTINATION_UNKNOWN_RATIO at its default 0.3. The npm verifiers run with 50 in flight as in section 2. "real": the time multiplied back by ${r.scale}.`,
    "",
    "| Tool | Verdicts right | Blocks drawn | Replies refused by a block | Answers policy_block | RCPT TO the server saw | Connections | Wall time, s |",
    "|---|---:|---|---:|---:|---:|---:|---|",
    ...rows,
  ].join("\n");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({ options: { lines: { type: "string", default: "2000" }, scale: { type: "string", default: "60" } } });
  const result = await runHarvest({ lines: Number(values.lines), scale: Number(values.scale), log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${harvestMarkdown(result)}\n`);
}
