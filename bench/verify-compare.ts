/**
 * Longer than 400 lines on purpose: one benchmark: running this API and every npm verifier on the same list and writing its tables.
 * Verification side by side with the npm verifiers a user would pick instead: the same 1,000
 * addresses (bench/verify-list.ts), the same DNS zone and the same SMTP servers
 * (bench/verify-fixtures.ts), the same number of addresses in flight, and each tool's own verdict
 * mapped to deliverable / undeliverable / unknown and compared with the truth.
 *
 *   npx tsx bench/verify-compare.ts [--reps 3] [--concurrency 50] [--sequential 100] [--seed 5] [--delay-ms 20] [--job-only]
 *     [--job-env NAME=VALUE ...]
 *
 * --job-env sets the Worker's and probe's environment for the bulk-job passes only (e.g. JOB_RECEIVER_WAIT_MAX_SECONDS=3600:
 * the list's lines at servers that refuse the probe itself by a blocklist answered `probe_refused` at once instead of
 * waiting for the block's end, docs/jobs.md "While our probe is blocked").
 *
 * Each repetition makes two passes per tool: the whole list with --concurrency addresses in flight,
 * then the first --sequential addresses one at a time (per-address latency on an idle machine).
 *
 * - This API: `npm start` (libSQL, the probe in-process, the Worker under wrangler dev) with DOH_URL
 *   at the fixture and PROBE_ALLOW_PRIVATE_TARGETS=true (the fixtures are on loopback); everything
 *   else default. The client calls GET /v1/email_verifications. The stack is restarted for each
 *   pass, so the Worker's DNS cache and the probe's catch-all cache start empty, as the npm tools'
 *   caches do in the new process each of their passes gets.
 * - The npm tools: bench/peer-verify.ts on Node 22, in a mount namespace whose /etc/resolv.conf
 *   names the fixture's classic DNS server (so their system resolver answers from the same zone
 *   without any change to them), dialling the fixture SMTP servers on port 25, their default.
 *
 * Needs root: the fixtures listen on port 25 and 53, and the mount namespace needs CAP_SYS_ADMIN.
 */
import { appendFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { JobResultsPage, VerificationJob } from "../shared/jobs.ts";
import { childCounters, cpuSeconds, processTree, runChild, startChild, startFreshDatabase, stopChild } from "./child.ts";
import type { Peer, PeerAnswer } from "./peer-verify.ts";
import { ensurePeers, NODE22, runPeerTool, withFixtureResolver } from "./peers-run.ts";
import { timedPool } from "./pool.ts";
import { median, percentile, spread } from "./stats.ts";
import { SYSTEM_DNS_HOST } from "./verify-fixtures.ts";
import { buildVerificationList, GREYLIST_REPLY, POLICY_REPLY, TRUTH, type AddressKind, type Truth, type VerificationList } from "./verify-list.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

export const OURS = "This API (Worker + probe)";
const TOOLS = [OURS, "email-verify", "@emailcheck/email-validator-js"] as const;
type Tool = (typeof TOOLS)[number];

/** One pass of one tool over the list (or its first `count` addresses) with `concurrency` in flight. */
export type ToolRun = {
  tool: Tool;
  rep: number;
  concurrency: number;
  count: number;
  wallMs: number;
  answers: PeerAnswer[];
  /** CPU seconds during the pass by the tool's processes, by part; and by the fixture process. */
  cpu: Record<string, number>;
  fixturesCpu: number;
  /** What the SMTP servers saw during the pass. */
  smtp: SmtpCounters;
  /** Single verifications with `concurrency` in flight, or the list as one bulk job (retries after `retryDelaySeconds`, 0: none). */
  mode: { kind: "calls" } | { kind: "job"; retryDelaySeconds: number };
};
type SmtpCounters = { connections: number; mail_from: number; rcpt_to: number };
export type VerifyComparison = {
  runs: ToolRun[];
  list: VerificationList;
  concurrency: number;
  sequentialCount: number;
  delayMs: number;
  reps: number;
  seed: number;
  versions: Record<string, string>;
};
type Pass = { wallMs: number; answers: PeerAnswer[]; cpu: Record<string, number> };

const EDGE_PORT = 8797;
const PROBE_PORT = 8796;
/** API keys the requests rotate over, so none of them reaches its rate limit. */
const BENCH_KEYS = 50;
/** The most a single verification may take before the harness records it as unanswered. */
const ANSWER_LIMIT_MS = 120_000;
/** The most a bulk job of the list may take before the benchmark gives up on it. */
const JOB_LIMIT_MS = 600_000;
/** The delay before temporary answers are asked again, for the job pass that retries them. */
export const JOB_RETRY_BENCH_SECONDS = 10;

/**
 * A fresh `npm start` (default configuration but for the settings the fixtures need, and `env`),
 * an account with BENCH_KEYS keys, `run` with them, then the CPU each part of the stack used during
 * `run`, and stop it.
 */
async function withOurStack<T extends { wallMs: number }>(dohUrl: string, env: Record<string, string>, run: (tokens: string[]) => Promise<T>): Promise<T & { cpu: Record<string, number> }> {
  const inherited = Object.fromEntries(Object.keys(process.env).filter((k) => /^(PROBE_|DATABASE_|JOB_)/.test(k)).map((k) => [k, undefined]));
  const database = await startFreshDatabase();
  const { child } = await startChild(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    env: {
      ...inherited,
      DATABASE_URL: database.url,
      DATABASE_AUTH_TOKEN: database.authToken,
      EDGE_PORT: String(EDGE_PORT),
      PROBE_PORT: String(PROBE_PORT),
      DOH_URL: dohUrl,
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      ...env,
    },
    ready: /Demo key:\s+\S+\s/,
  });
  try {
    // The Worker limits each key to 100 verifications per 10 s (docs/api.md "Rate limits"); a list-cleaning
    // customer at this pace spreads it over keys, or uses a bulk job. Here: keys in turn.
    const db = openDatabase(database.url, database.authToken);
    const account = await createAccount(db, "bench verification", 0);
    const tokens: string[] = [];
    for (let i = 0; i < BENCH_KEYS; i++) tokens.push((await createApiKey(db, account.id)).token);
    db.$client.close();
    const tree = [...processTree(child.pid!), { pid: database.child.pid!, command: "libsql-server" }];
    const cpuBefore = new Map(tree.map((p) => [p.pid, cpuSeconds(p.pid)]));
    const clientBefore = process.cpuUsage();
    const result = await run(tokens);
    const client = process.cpuUsage(clientBefore);
    const cpu: Record<string, number> = { client: (client.user + client.system) / 1e6, "npm start process (probe)": 0, "libSQL server": 0, workerd: 0, "wrangler (Node) and its helpers": 0 };
    for (const p of tree) {
      const part =
        p.pid === child.pid ? "npm start process (probe)" : p.pid === database.child.pid ? "libSQL server" : p.command.includes("workerd") ? "workerd" : "wrangler (Node) and its helpers";
      cpu[part]! += cpuSeconds(p.pid) - cpuBefore.get(p.pid)!;
    }
    return { ...result, cpu };
  } finally {
    await stopChild(child);
    await database.close();
  }
}

/** This API over the list: N single verifications in flight. */
function runOurs(dohUrl: string, emails: string[], concurrency: number): Promise<Pass> {
  return withOurStack(dohUrl, {}, async (tokens) => {
    let sent = 0;
    const { wallMs, results: answers } = await timedPool(emails, concurrency, async (email) => ({ email, ...(await verifyOnce(email, tokens[sent++ % BENCH_KEYS]!)) }));
    return { wallMs, answers };
  });
}

/**
 * This API over the list as one bulk job: POST, poll the job every 50 ms until it is completed, then
 * read the results (not timed). `retryDelaySeconds` 0 answers temporary results at once, as a single
 * verification does; above 0 they are asked again after that delay (docs/jobs.md "Bulk verification jobs").
 */
function runOursJob(dohUrl: string, emails: string[], retryDelaySeconds: number, jobEnv: Record<string, string> = {}): Promise<Pass> {
  return withOurStack(dohUrl, { JOB_RETRY_DELAY_SECONDS: String(retryDelaySeconds), ...jobEnv }, async (tokens) => {
    const api = `http://127.0.0.1:${EDGE_PORT}/v1/email_verification_jobs`;
    // Polling every 50 ms is faster than one key's job_reads limit allows: the account's keys in turn.
    let polls = 0;
    const headers = () => ({ authorization: `Bearer ${tokens[polls++ % tokens.length]!}` });
    const started = performance.now();
    const created = await fetch(api, { method: "POST", headers: { ...headers(), "content-type": "application/json" }, body: JSON.stringify({ email_addresses: emails }) });
    if (created.status !== 202) throw new Error(`job creation answered ${created.status}: ${await created.text()}`);
    const { id } = VerificationJob.parse(await created.json());
    for (;;) {
      const job = VerificationJob.parse(await (await fetch(`${api}/${id}`, { headers: headers() })).json());
      if (job.status === "completed") break;
      if (process.env.BENCH_CHILD_LOG && polls % 40 === 0) {
        const at = ((performance.now() - started) / 1000).toFixed(1);
        appendFileSync(process.env.BENCH_CHILD_LOG, `${JSON.stringify({ bench: "job", at, processed: job.processed, queue: job.queue ?? null })}\n`);
      }
      if (performance.now() - started > JOB_LIMIT_MS) throw new Error(`the job did not complete within ${JOB_LIMIT_MS / 1000} s (${job.processed}/${job.total})`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const wallMs = performance.now() - started;
    const answers: PeerAnswer[] = [];
    for (let cursor = ""; ; ) {
      const page = JobResultsPage.parse(await (await fetch(`${api}/${id}/results?limit=1000${cursor}`, { headers: headers() })).json());
      for (const r of page.results) {
        answers.push({ email: r.email, ms: 0, verdict: OUR_VERDICT[r.classification] ?? "unknown", answer: `${r.classification} smtp_outcome=${r.details?.smtp_outcome ?? null}` });
      }
      if (page.next_cursor === null) break;
      cursor = `&cursor=${page.next_cursor}`;
    }
    return { wallMs, answers };
  });
}

/** Our classification mapped to the three verdicts: valid, invalid, risky. */
const OUR_VERDICT: Record<string, Truth> = { valid: "deliverable", invalid: "undeliverable", risky: "unknown" };

async function verifyOnce(email: string, token: string): Promise<{ verdict: Truth; answer: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${EDGE_PORT}/v1/email_verifications?email_address=${encodeURIComponent(email)}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(ANSWER_LIMIT_MS),
    });
    const body = (await res.json()) as { classification?: string; details?: { smtp_outcome?: string | null } };
    if (!res.ok || !body.classification) return { verdict: "unknown", answer: `HTTP ${res.status}` };
    return { verdict: OUR_VERDICT[body.classification] ?? "unknown", answer: `${body.classification} smtp_outcome=${body.details?.smtp_outcome ?? null}` };
  } catch (err) {
    return { verdict: "unknown", answer: `request failed: ${String(err)}` };
  }
}

async function runPeer(tool: Tool, listFile: string, resolvConf: string, concurrency: number): Promise<Pass> {
  const run = await runPeerTool(tool as Peer, listFile, resolvConf, concurrency);
  return { wallMs: run.wallMs, answers: run.answers, cpu: { "tool process": run.cpuSeconds } };
}

export async function runVerifyComparison(opts: {
  reps: number;
  concurrency: number;
  /** Addresses (from the start of the list) for the one-at-a-time pass. */
  sequentialCount: number;
  /** Only this API's bulk-job passes (no npm tools, no loops): the receiver budget's cost on the list, quickly. */
  jobOnly?: boolean;
  /** Environment for the bulk-job passes only (the Worker's and the probe's). */
  jobEnv?: Record<string, string>;
  seed: number;
  delayMs: number;
  log?: (m: string) => void;
}): Promise<VerifyComparison> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) {
    throw new Error("The verification comparison needs root: its fixtures listen on ports 25 and 53 and the npm tools run in a mount namespace. Run `npm run bench` as root.");
  }
  const versions = await ensurePeers(log);
  versions["node (npm tools)"] = (await runChild(NODE22, ["--version"])).trim();
  const list = buildVerificationList(opts.seed);
  const emails = list.addresses.map((a) => a.email);
  const dir = await mkdtemp(join(tmpdir(), "bench-verify-"));
  const resolvConf = join(dir, "resolv.conf");
  await writeFile(resolvConf, `nameserver ${SYSTEM_DNS_HOST}\n`);
  const passes = [
    { concurrency: opts.concurrency, emails },
    { concurrency: 1, emails: emails.slice(0, opts.sequentialCount) },
  ];
  const listFiles = await Promise.all(
    passes.map(async (pass, i) => {
      const file = join(dir, `list-${i}.json`);
      await writeFile(file, JSON.stringify(pass.emails));
      return file;
    }),
  );
  // The fixtures resolve too (the SMTP servers look up each client's name): keep that on loopback.
  const fixtureCommand = [process.execPath, "--import", "tsx", "bench/verify-fixtures.ts", "--seed", String(opts.seed), "--delay-ms", String(opts.delayMs)];
  const [command, args] = withFixtureResolver(resolvConf, fixtureCommand);
  const fixtures = await startChild(command, args, { ready: /"doh_url"/ });
  try {
    const dohUrl = (JSON.parse(fixtures.stdout.trim().split("\n")[0]!) as { doh_url: string }).doh_url;
    const runs: ToolRun[] = [];
    for (let rep = 1; rep <= opts.reps; rep++) {
      // Rotate the order so no tool always runs first (or last) on a machine that drifts.
      const order = TOOLS.map((_, i) => TOOLS[(i + rep - 1) % TOOLS.length]!);
      const measured = async (tool: Tool, count: number, concurrency: number, mode: ToolRun["mode"], pass: () => Promise<Pass>) => {
        const fixturesBefore = cpuSeconds(fixtures.child.pid!);
        const smtpBefore = await childCounters<SmtpCounters>(fixtures.child);
        const r = await pass();
        const smtpAfter = await childCounters<SmtpCounters>(fixtures.child);
        const smtp = { connections: smtpAfter.connections - smtpBefore.connections, mail_from: smtpAfter.mail_from - smtpBefore.mail_from, rcpt_to: smtpAfter.rcpt_to - smtpBefore.rcpt_to };
        runs.push({ tool, rep, concurrency, count, ...r, fixturesCpu: cpuSeconds(fixtures.child.pid!) - fixturesBefore, smtp, mode });
      };
      for (const [i, pass] of (opts.jobOnly ? [] : passes).entries()) {
        for (const tool of order) {
          log(`verification: ${tool}, ${pass.emails.length} addresses, ${pass.concurrency} in flight, repetition ${rep}/${opts.reps}`);
          await measured(tool, pass.emails.length, pass.concurrency, { kind: "calls" }, () =>
            tool === OURS ? runOurs(dohUrl, pass.emails, pass.concurrency) : runPeer(tool, listFiles[i]!, resolvConf, pass.concurrency),
          );
        }
      }
      // The same list as one bulk job: temporary answers reported at once, like the loops above; once
      // (first repetition), with them asked again after a delay, as a job does by default.
      for (const retryDelaySeconds of rep === 1 ? [0, JOB_RETRY_BENCH_SECONDS] : [0]) {
        log(`verification: ${OURS}, ${emails.length} addresses as one bulk job, retry delay ${retryDelaySeconds} s, repetition ${rep}/${opts.reps}`);
        await measured(OURS, emails.length, 0, { kind: "job", retryDelaySeconds }, () => runOursJob(dohUrl, emails, retryDelaySeconds, opts.jobEnv));
      }
    }
    return { runs, list, concurrency: opts.concurrency, sequentialCount: opts.sequentialCount, delayMs: opts.delayMs, reps: opts.reps, seed: opts.seed, versions };
  } finally {
    await stopChild(fixtures.child);
    await rm(dir, { recursive: true, force: true });
  }
}

// ---- Report ----

const VERDICTS: Truth[] = ["deliverable", "undeliverable", "unknown"];
const KIND_LABEL: Record<AddressKind, string> = {
  mailbox_exists: "mailbox exists (RCPT 250)",
  mailbox_unknown: "unknown mailbox (550 5.1.1 user unknown)",
  nxdomain: "domain does not exist (NXDOMAIN)",
  catch_all: "catch-all server (any RCPT 250)",
  greylisted: "greylisted (450 4.2.0)",
  policy_blocked: "policy block (554 5.7.1 blocklist)",
  dead_mx: "dead MX (connection refused)",
};


type Scored = { correct: number; catchAllDeliverable: number; falseUndeliverable: number; falseDeliverable: number; confusion: Record<Truth, Record<Truth, number>>; byKind: Record<AddressKind, Record<Truth, number>> };

function score(list: VerificationList, answers: PeerAnswer[]): Scored {
  const kindOf = new Map(list.addresses.map((a) => [a.email, a.kind]));
  const zero = () => ({ deliverable: 0, undeliverable: 0, unknown: 0 });
  const confusion = { deliverable: zero(), undeliverable: zero(), unknown: zero() };
  const byKind = Object.fromEntries(Object.keys(TRUTH).map((k) => [k, zero()])) as Record<AddressKind, Record<Truth, number>>;
  const s: Scored = { correct: 0, catchAllDeliverable: 0, falseUndeliverable: 0, falseDeliverable: 0, confusion, byKind };
  for (const a of answers) {
    const kind = kindOf.get(a.email)!;
    const truth = TRUTH[kind];
    confusion[truth][a.verdict]++;
    byKind[kind][a.verdict]++;
    if (truth === a.verdict) s.correct++;
    if (kind === "catch_all" && a.verdict === "deliverable") s.catchAllDeliverable++;
    if (a.verdict === "undeliverable" && truth !== "undeliverable") s.falseUndeliverable++;
    if (a.verdict === "deliverable" && truth === "undeliverable") s.falseDeliverable++;
  }
  return s;
}

/** How the comparison is set up, what was changed for each tool and how its answers were read. */
export function verifyMethodMarkdown(r: VerifyComparison): string {
  const count = (kind: AddressKind) => r.list.addresses.filter((a) => a.kind === kind).length;
  const domains = (kind: string) => r.list.domains.filter((d) => d.kind === kind).length;
  return [
    `- **The list** (bench/verify-list.ts, seed ${r.seed}): ${r.list.addresses.length} addresses over ${r.list.domains.length} domains, shuffled. ` +
      `${domains("mailboxes")} domains with real mailboxes (${count("mailbox_exists")} addresses exist, ${count("mailbox_unknown")} get \`550 5.1.1 ... User unknown\`), ` +
      `${domains("catch_all")} catch-all, ${domains("greylisted")} greylisting (\`${GREYLIST_REPLY.slice(0, 24)}...\`), ` +
      `${domains("policy_blocked")} refusing the client as listed (\`${POLICY_REPLY.slice(0, 60)}...\`), ` +
      `${domains("dead_mx")} whose MX address has nothing listening (connection refused), ${domains("nxdomain")} that do not exist (NXDOMAIN).`,
    `- **The servers** (bench/verify-fixtures.ts): one SMTP server per live domain (test/fixtures/smtp-servers.ts, the smtp-server package) on 127.0.1.N:25, ` +
      `offering PIPELINING and STARTTLS; greeting, MAIL and RCPT answers each wait ${r.delayMs} ms, and smtp-server pauses 100 ms before its greeting ` +
      `(its early-talker check), so one plain conversation takes about 170 ms. The zone is served over DoH (test/fixtures/doh-server.ts) to the Worker and ` +
      `over classic UDP DNS (bench/dns-udp-server.ts on ${SYSTEM_DNS_HOST}:53) to everything that uses the system resolver: the npm tools and the SMTP ` +
      `fixtures run in a private mount namespace whose /etc/resolv.conf names that server; the machine's own resolver is never touched.`,
    `- **The load**: the same loop drives every tool, ${r.concurrency} addresses in flight, each a call of the tool's single-address API ` +
      `(GET /v1/email_verifications for this API, with ${BENCH_KEYS} API keys in turn so that none reaches its rate limit; \`verify()\` and \`verifyEmail()\` for the npm tools) timed from call to answer. ` +
      `Then the first ${r.sequentialCount} addresses one at a time. Every pass starts cold: a new \`npm start\` (empty DNS and catch-all caches) ` +
      `or a new Node process (empty in-memory caches).`,
    "",
    "| Tool | Settings changed from its defaults | Why |",
    "|---|---|---|",
    `| ${OURS} | \`DOH_URL\` = the fixture; \`PROBE_ALLOW_PRIVATE_TARGETS=true\`; \`EDGE_PORT=${EDGE_PORT}\`, \`PROBE_PORT=${PROBE_PORT}\`; \`DATABASE_URL\` = a libSQL server on a fresh file | The fixture zone; the MX addresses are loopback addresses, which the probe refuses to dial by default; ports and a database apart from a developer's own \`npm start\`. Everything else (smtp_timeout 10 s, catch-all check, probe limits) is default. |`,
    "| `email-verify` | none: port 25, no timeout, sender `name@example.org`, EHLO `mail.example.org` | - |",
    "| `@emailcheck/email-validator-js` | `verifySmtp: true` | Off by default; without it the tool checks no mailbox at all. Everything else default: `timeout` 4000 ms, ports 25 -> 587 -> 465, in-memory cache. |",
    "",
    "| Tool | Read as deliverable | Read as undeliverable | Read as unknown |",
    "|---|---|---|---|",
    `| ${OURS} | \`classification: "valid"\` | \`"invalid"\` | \`"risky"\` |`,
    "| `email-verify` | a finished conversation with `success: true` | a finished conversation with `success: false`; `Domain not found`, `No MX Records`, `Invalid Email Structure` | `SMTP connection error`, `Connection Timed Out` |",
    "| `@emailcheck/email-validator-js` | `validSmtp: true` | `validSmtp: false`; `validMx: false`; `validFormat: false` | `validSmtp: null` |",
    "",
    "Truth: an existing mailbox is deliverable; an unknown mailbox or a domain that does not exist is undeliverable; catch-all, greylisting, a policy block " +
      "and a dead MX are unknown, because nothing reachable from outside says whether the mailbox exists. A catch-all server accepts every address, " +
      "including mailboxes that do not exist, so \"deliverable\" there is a guess: the main accuracy column counts it as wrong, and the next column counts it as right for readers who accept that guess.",
  ].join("\n");
}

export function verifyComparisonMarkdown(r: VerifyComparison): string {
  const total = r.list.addresses.length;
  const pct = (n: number) => `${((100 * n) / total).toFixed(1)} %`;
  const full = (tool: Tool) => r.runs.filter((x) => x.tool === tool && x.count === total && x.mode.kind === "calls");
  const sequential = (tool: Tool) => r.runs.filter((x) => x.tool === tool && x.concurrency === 1 && x.count === r.sequentialCount);
  const first = (tool: Tool) => full(tool)[0]!;
  const scored = new Map(TOOLS.map((tool) => [tool, score(r.list, first(tool).answers)]));
  const latency = (runs: ToolRun[], q: number) => spread(runs.map((x) => percentile(x.answers.map((a) => a.ms).sort((a, b) => a - b), q)), 0);
  const cpuOf = (run: ToolRun) => Object.values(run.cpu).reduce((a, b) => a + b, 0);
  const repsLabel = r.reps > 1 ? "min / median / max" : "1 run";
  const lines: string[] = [];

  lines.push(
    `**The whole list, ${r.concurrency} addresses in flight** (${repsLabel} over ${r.reps} repetition${r.reps > 1 ? "s" : ""}):`,
    "",
    `| Tool | Runtime | Wall time, s | Addresses/s (median) | Per address p50, ms | Per address p99, ms | CPU s, tool and client (median) | CPU s, fixtures (median) | Correct verdicts | Correct if catch-all may be "deliverable" |`,
    "|---|---|---|---|---|---|---|---|---|---|",
  );
  for (const tool of TOOLS) {
    const runs = full(tool);
    const s = scored.get(tool)!;
    const runtime = tool === OURS ? `Worker: workerd under wrangler dev; probe and client: Node ${process.versions.node}` : `Node ${r.versions["node (npm tools)"]?.replace(/^v/, "")}`;
    const name = tool === OURS ? tool : `\`${tool}\` ${r.versions[tool]}`;
    lines.push(
      `| ${name} | ${runtime} | ${spread(runs.map((x) => x.wallMs / 1000), 2)} | ${median(runs.map((x) => total / (x.wallMs / 1000))).toFixed(0)} | ${latency(runs, 50)} | ${latency(runs, 99)} | ${median(runs.map(cpuOf)).toFixed(1)} | ${median(runs.map((x) => x.fixturesCpu)).toFixed(1)} | ${s.correct} (${pct(s.correct)}) | ${s.correct + s.catchAllDeliverable} (${pct(s.correct + s.catchAllDeliverable)}) |`,
    );
  }
  const ours = full(OURS);
  lines.push(
    "",
    `Where this API's CPU went (median seconds per pass): ${Object.keys(ours[0]!.cpu)
      .map((part) => `${part} ${median(ours.map((x) => x.cpu[part]!)).toFixed(1)}`)
      .join(", ")}.`,
  );

  lines.push(
    "",
    `**One address at a time**, the first ${r.sequentialCount} addresses of the list, a fresh process or stack per pass (${repsLabel}):`,
    "",
    "| Tool | Wall time, s | Per address p50, ms | Per address p99, ms |",
    "|---|---|---|---|",
  );
  for (const tool of TOOLS) {
    const runs = sequential(tool);
    lines.push(`| ${tool} | ${spread(runs.map((x) => x.wallMs / 1000), 2)} | ${latency(runs, 50)} | ${latency(runs, 99)} |`);
  }

  const changed = (tool: Tool) => {
    const base = new Map(first(tool).answers.map((a) => [a.email, a.verdict]));
    return full(tool)
      .slice(1)
      .reduce((n, x) => n + x.answers.filter((a) => base.get(a.email) !== a.verdict).length, 0);
  };
  lines.push("", "**What the wrong verdicts cost** (whole list, first repetition):", "");
  lines.push(
    "| Tool | Called undeliverable but not (a real customer dropped) | Called deliverable but undeliverable (a bounce) | Catch-all called deliverable | Verdicts that differed in later repetitions |",
    "|---|---|---|---|---|",
  );
  for (const tool of TOOLS) {
    const s = scored.get(tool)!;
    const catchAll = VERDICTS.reduce((n, v) => n + s.byKind.catch_all[v], 0);
    lines.push(`| ${tool} | ${s.falseUndeliverable} | ${s.falseDeliverable} | ${s.catchAllDeliverable} of ${catchAll} | ${r.reps > 1 ? changed(tool) : "-"} |`);
  }

  lines.push("", "**Confusion tables** (rows: truth; columns: the tool's verdict; whole list, first repetition):", "");
  for (const tool of TOOLS) {
    const c = scored.get(tool)!.confusion;
    lines.push(`${tool}:`, "", "| Truth \\ verdict | deliverable | undeliverable | unknown |", "|---|---|---|---|");
    for (const truth of VERDICTS) lines.push(`| ${truth} (${VERDICTS.reduce((n, v) => n + c[truth][v], 0)}) | ${VERDICTS.map((v) => c[truth][v]).join(" | ")} |`);
    lines.push("");
  }

  lines.push("**By kind of address** (verdicts deliverable / undeliverable / unknown; whole list, first repetition):", "");
  lines.push(`| Address kind | Truth | Count | ${TOOLS.join(" | ")} |`, `|---|---|---|${TOOLS.map(() => "---").join("|")}|`);
  for (const kind of Object.keys(KIND_LABEL) as AddressKind[]) {
    const count = r.list.addresses.filter((a) => a.kind === kind).length;
    const cells = TOOLS.map((tool) => VERDICTS.map((v) => scored.get(tool)!.byKind[kind][v]).join(" / "));
    lines.push(`| ${KIND_LABEL[kind]} | ${TRUTH[kind]} | ${count} | ${cells.join(" | ")} |`);
  }

  lines.push("", "**What each tool answered**, in short (whole list, first repetition; addresses per answer):", "");
  for (const tool of TOOLS) {
    const counts = new Map<string, number>();
    for (const a of first(tool).answers) {
      const key = `${a.verdict} <- ${a.answer.replace(/\S+@\S+/g, "").replace(/\s+/g, " ").trim()}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    lines.push(`- ${tool}: ${[...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} × \`${k}\``).join("; ")}`);
  }
  return lines.join("\n");
}

/** The list as one bulk job, next to the same list as single verifications in the same run. */
export function jobComparisonMarkdown(r: VerifyComparison): string {
  const total = r.list.addresses.length;
  const pct = (n: number) => `${((100 * n) / total).toFixed(1)} %`;
  const live = r.list.domains.filter((d) => d.kind !== "nxdomain" && d.kind !== "dead_mx").length;
  const jobRuns = (delay: number) => r.runs.filter((x) => x.mode.kind === "job" && x.mode.retryDelaySeconds === delay);
  const calls = (tool: Tool) => r.runs.filter((x) => x.tool === tool && x.count === total && x.mode.kind === "calls");
  const repsLabel = (n: number) => (n > 1 ? `${n} runs, min / median / max` : "1 run");
  const lines = [
    `**The whole list as one bulk job**: \`POST /v1/email_verification_jobs\` with the ${total} addresses as JSON, timed until \`GET\` on the job (every 50 ms) says \`completed\`; ` +
      `a fresh \`npm start\` per pass, as for the loops above. Reading the results afterwards is not timed. SMTP figures are what the fixture servers saw during the pass ` +
      `(${r.list.domains.length} domains in the list, ${live} with a live mail server).`,
    "",
    "| Pass | Wall time, s | Addresses/s (median) | SMTP connections (median) | Transactions: MAIL FROM (median) | RCPT TO (median) | Correct verdicts (first run) |",
    "|---|---|---|---|---|---|---|",
  ];
  const row = (label: string, runs: ToolRun[]) => {
    if (runs.length === 0) return;
    const s = score(r.list, runs[0]!.answers);
    lines.push(
      `| ${label} (${repsLabel(runs.length)}) | ${spread(runs.map((x) => x.wallMs / 1000), 2)} | ${median(runs.map((x) => total / (x.wallMs / 1000))).toFixed(0)} | ` +
        `${median(runs.map((x) => x.smtp.connections))} | ${median(runs.map((x) => x.smtp.mail_from))} | ${median(runs.map((x) => x.smtp.rcpt_to))} | ${s.correct} (${pct(s.correct)}) |`,
    );
  };
  row(`${OURS}: one job, temporary answers reported at once (\`JOB_RETRY_DELAY_SECONDS=0\`)`, jobRuns(0));
  row(`${OURS}: one job, temporary answers asked again after ${JOB_RETRY_BENCH_SECONDS} s`, jobRuns(JOB_RETRY_BENCH_SECONDS));
  for (const tool of TOOLS) row(`${tool}: single calls, ${r.concurrency} in flight`, calls(tool));
  const job = jobRuns(0);
  const peers = TOOLS.filter((t) => t !== OURS).map((t) => ({ tool: t, wall: median(calls(t).map((x) => x.wallMs)) }));
  const fastest = peers.reduce((a, b) => (b.wall < a.wall ? b : a));
  if (job.length > 0) {
    const jobWall = median(job.map((x) => x.wallMs));
    const connections = median(job.map((x) => x.smtp.connections));
    lines.push(
      "",
      `The job took ${(jobWall / fastest.wall).toFixed(2)}× the wall time of the fastest npm tool's ${r.concurrency}-in-flight loop (${fastest.tool}, median ${(fastest.wall / 1000).toFixed(2)} s; goal: at most 0.5×), ` +
        `with ${connections} SMTP connections for ${r.list.domains.length} domains (goal: fewer than domains × 3 = ${r.list.domains.length * 3}).`,
    );
  }
  return lines.join("\n");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      reps: { type: "string", default: "3" },
      concurrency: { type: "string", default: "50" },
      sequential: { type: "string", default: "100" },
      seed: { type: "string", default: "5" },
      "delay-ms": { type: "string", default: "20" },
      "job-only": { type: "boolean", default: false },
      "job-env": { type: "string", multiple: true },
    },
  });
  const result = await runVerifyComparison({
    reps: Number(values.reps),
    concurrency: Number(values.concurrency),
    sequentialCount: Number(values.sequential),
    seed: Number(values.seed),
    delayMs: Number(values["delay-ms"]),
    jobOnly: values["job-only"],
    jobEnv: Object.fromEntries(
      (values["job-env"] ?? []).map((p) => {
        const at = p.indexOf("=");
        if (at < 1) throw new Error(`--job-env: expected NAME=VALUE, got ${p}`);
        return [p.slice(0, at), p.slice(at + 1)];
      }),
    ),
    log: (m) => process.stderr.write(`${m}\n`),
  });
  if (values["job-only"]) {
    // No npm tool ran: each job pass's wall time and what the mail servers saw, nothing to compare with.
    for (const r of result.runs) {
      const right = score(result.list, r.answers).correct;
      console.log(`job, retry delay ${r.mode.kind === "job" ? r.mode.retryDelaySeconds : 0} s: ${(r.wallMs / 1000).toFixed(2)} s, ${right}/${r.count} right, SMTP ${JSON.stringify(r.smtp)}`);
    }
  } else {
    console.log(verifyComparisonMarkdown(result));
    console.log(`\n${jobComparisonMarkdown(result)}`);
  }
}
