/**
 * Runs one npm verifier over a list, as a user's program would: the tool's documented single-address
 * API, called for N addresses at a time. bench/verify-compare.ts starts it (with the tool's Node) in a
 * mount namespace whose /etc/resolv.conf names the fixture DNS server:
 *
 *   node --import tsx bench/peer-verify.ts --tool email-verify --list list.json --concurrency 50
 *
 * and reads one JSON object from stdout: per address the time the call took, the tool's answer in
 * short, and that answer mapped to deliverable / undeliverable / unknown (the mapping is here, next to
 * the call, and quoted in docs/benchmarks.md).
 *
 * The tools are loaded from bench/peers/node_modules (pinned there, never project dependencies), so
 * their types are declared here for the few fields read.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { timedPool } from "./pool.ts";
import type { Truth } from "./verify-list.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

export const PEERS = ["email-verify", "@emailcheck/email-validator-js"] as const;
export type Peer = (typeof PEERS)[number];

export type PeerAnswer = { email: string; ms: number; verdict: Truth; answer: string };
/**
 * cpuSeconds: this process's CPU during the run, the tool's work and the calling loop together;
 * peakRssMiB: its peak resident set size.
 */
export type PeerRun = { tool: Peer; concurrency: number; wallMs: number; cpuSeconds: number; peakRssMiB: number; answers: PeerAnswer[] };

/** email-verify 0.2.x: verify(email, options, callback(err, info)). */
type EmailVerifyModule = {
  verify(email: string, options: object, callback: (err: Error | null, info: { success: boolean; info: string; code: number }) => void): void;
  verifyCodes: Record<string, number>;
};

/** @emailcheck/email-validator-js 3.x: verifyEmail(params) -> result. */
type EmailValidatorModule = {
  verifyEmail(params: { emailAddress: string; verifySmtp?: boolean }): Promise<{
    validFormat: boolean;
    validMx: boolean | null;
    validSmtp: boolean | null;
    metadata?: { error?: string };
  }>;
};

/** A call that never returns (email-verify has no timeout by default) still ends the run. */
const HARNESS_LIMIT_MS = 120_000;

const peers = createRequire(new URL("./peers/package.json", import.meta.url));

/** One verification with a given tool, mapped to the three verdicts. */
function verifierFor(tool: Peer): (email: string) => Promise<{ verdict: Truth; answer: string }> {
  if (tool === "email-verify") {
    const mod = peers("email-verify") as EmailVerifyModule;
    const codes = mod.verifyCodes;
    // Default options: port 25, no timeout, sender name@example.org, EHLO mail.example.org.
    return (email) =>
      new Promise((resolve) => {
        mod.verify(email, {}, (err, info) => {
          const answer = `success=${info.success} code=${info.code}${err ? ` (${(err as NodeJS.ErrnoException).code ?? err.message})` : ""}`;
          // A finished conversation is its whole answer: success true or false. Before one: a domain
          // that does not resolve or has no MX is undeliverable; a connection error or timeout is unknown.
          if (info.code === codes.finishedVerification) resolve({ verdict: info.success ? "deliverable" : "undeliverable", answer });
          else if (info.code === codes.domainNotFound || info.code === codes.noMxRecords || info.code === codes.invalidEmailStructure)
            resolve({ verdict: "undeliverable", answer });
          else resolve({ verdict: "unknown", answer });
        });
      });
  }
  const mod = peers("@emailcheck/email-validator-js") as EmailValidatorModule;
  // verifySmtp is off by default, and without it there is no mailbox check to compare; the rest is default.
  return async (email) => {
    const r = await mod.verifyEmail({ emailAddress: email, verifySmtp: true });
    const answer = `validMx=${r.validMx} validSmtp=${r.validSmtp}${r.metadata?.error ? ` ${r.metadata.error}` : ""}`;
    // validSmtp is the tool's mailbox verdict (true / false / null = could not tell); a bad format or
    // a domain without MX is undeliverable.
    if (!r.validFormat || r.validMx === false) return { verdict: "undeliverable", answer };
    if (r.validSmtp === true) return { verdict: "deliverable", answer };
    if (r.validSmtp === false) return { verdict: "undeliverable", answer };
    return { verdict: "unknown", answer };
  };
}

async function run(tool: Peer, emails: string[], concurrency: number): Promise<PeerRun> {
  const verify = verifierFor(tool);
  const cpuBefore = process.cpuUsage();
  const { wallMs, results } = await timedPool(emails, concurrency, async (email) => {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<{ verdict: Truth; answer: string }>((resolve) => {
      timer = setTimeout(() => resolve({ verdict: "unknown", answer: `no answer within ${HARNESS_LIMIT_MS} ms` }), HARNESS_LIMIT_MS);
    });
    const result = await Promise.race([verify(email).catch((err: unknown) => ({ verdict: "unknown" as const, answer: `threw: ${String(err)}` })), limit]);
    clearTimeout(timer);
    return { email, ...result };
  });
  const cpu = process.cpuUsage(cpuBefore);
  return { tool, concurrency, wallMs, cpuSeconds: (cpu.user + cpu.system) / 1e6, peakRssMiB: process.resourceUsage().maxRSS / 1024, answers: results };
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: { tool: { type: "string" }, list: { type: "string" }, concurrency: { type: "string", default: "50" } },
  });
  const tool = values.tool as Peer;
  if (!PEERS.includes(tool) || !values.list) throw new Error(`Usage: peer-verify.ts --tool ${PEERS.join("|")} --list FILE [--concurrency N]`);
  const emails = JSON.parse(readFileSync(values.list, "utf8")) as string[];
  const result = await run(tool, emails, Number(values.concurrency));
  // A socket a tool left open (no timeout) must not keep the process alive after the run; exit once
  // the answer is written (a pipe takes 64 KiB at once: 2,000 answers are more, and exit cuts them off).
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}
