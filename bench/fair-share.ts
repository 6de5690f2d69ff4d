/**
 * Fair shares between accounts (docs/jobs.md "Scheduling"), on the whole local stack as `npm start`
 * runs it: one mail server, one domain, and two accounts' bulk jobs against it.
 *
 *   npx tsx bench/fair-share.ts [--big 2000] [--small 300] [--delay-ms 20] [--head-start-ms 2000] [--postfix]
 *   npx tsx bench/fair-share.ts --singles 300 [--unknown-per-hour 25]
 *
 * --singles N (issue 36 item 6): N single checks at once from one account (its requests spread over keys, each
 * limited to 100 verifications per 10 s) at one company's own Postfix (Debian's defaults), half of them its users,
 * the probe's receiver budget at its defaults (the self-hosted row: 25 unknown users an hour; `--unknown-per-hour 0`
 * lifts the cap). The goal: every known user `valid`, only unknown users beyond the hourly cap `budget_spent`.
 * With the cap at work and the two kinds interleaved, a known user asked after the account's share of the cap was
 * refused cannot be asked without risking one more unknown: those are counted apart.
 *
 * --postfix: Debian's Postfix (test/interop/servers/postfix.ts, its default smtpd_soft_error_limit 10 and
 * smtpd_hard_error_limit 20) on 127.3.0.1:25 instead of the fixture, as many company servers run.
 *
 * 1. The big job alone (account A), then the small job alone (account B): their times alone.
 * 2. The big job again, and `--head-start-ms` later the small one, from another account.
 * The figures: the small job's time with the big one running, against twice its time alone plus
 * 5 s (the goal), and how much longer the big job took than alone, against the small job's time
 * alone (its share of the server).
 *
 * The mail server is test/fixtures/mta-fixture.ts on 0.0.0.0:25 (root: port 25): every reply after
 * `--delay-ms`; local parts starting with "user" exist, any other gets 550 5.1.1.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { VerificationJob } from "../shared/jobs.ts";
import type { Zone } from "../test/fixtures/doh-server.ts";
import { PROBE_SETTINGS } from "../probe/config.ts";
import { startPostfix } from "../test/interop/servers/postfix.ts";
import { childCounters, startJobsStack } from "./child.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

const EDGE_PORT = 8799;
/** The mail server's address (the fixture listens on every address; Postfix on this one). */
const MX_ADDRESS = "127.3.0.1";
const PROBE_PORT = 8798;
const POLL_MS = 200;
const JOB_LIMIT_MS = 15 * 60_000;
/** The probe's default pace for one mail server (the stack runs with the defaults): what the two jobs share. */
const RCPT_RATE = PROBE_SETTINGS.shape.PROBE_DESTINATION_RCPT_RATE.parse(undefined);
/** Between phases: longer than the probe's RCPT bucket takes to refill (its burst at PROBE_DESTINATION_RCPT_RATE), shorter than a session's idle time. */
const PAUSE_MS = 2_000;

export type FairShareResult = {
  postfix?: boolean;
  big: number;
  small: number;
  delayMs: number;
  headStartMs: number;
  /** Seconds from creation to `completed`. */
  bigAloneS: number;
  smallAloneS: number;
  bigSharedS: number;
  smallSharedS: number;
  /** smallSharedS / smallAloneS. */
  smallRatio: number;
  /** The goal for the small job: twice its time alone plus 5 s. */
  smallGoalS: number;
  /** bigSharedS - bigAloneS, against the small job's share. */
  bigGrowthS: number;
  /** The small job's share of the server: its RCPTs at the pace the probe holds one server to (PROBE_DESTINATION_RCPT_RATE). */
  smallShareS: number;
  rcptRate: number;
  /** Lines of the big job answered when the small one completed. */
  bigProcessedAtSmallDone: number;
  /** What the mail server saw in each phase. */
  smtp: Record<"bigAlone" | "smallAlone" | "shared", { rcpts: number; connections: number }>;
};

type Api = { create(emails: string[]): Promise<string>; get(id: string): Promise<VerificationJob> };

function api(token: string): Api {
  const base = `http://127.0.0.1:${EDGE_PORT}/v1/email_verification_jobs`;
  const headers = { authorization: `Bearer ${token}` };
  return {
    async create(emails) {
      const res = await fetch(base, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ email_addresses: emails }) });
      if (res.status !== 202) throw new Error(`job creation answered ${res.status}: ${await res.text()}`);
      return VerificationJob.parse(await res.json()).id;
    },
    async get(id) {
      return VerificationJob.parse(await (await fetch(`${base}/${id}`, { headers })).json());
    },
  };
}

/** Seconds from `started` to the job's `completed`; `onPoll` sees every state on the way. */
async function completion(client: Api, id: string, started: number, onPoll: (job: VerificationJob) => void = () => {}): Promise<number> {
  for (;;) {
    const job = await client.get(id);
    onPoll(job);
    if (job.status === "completed") return (performance.now() - started) / 1000;
    if (performance.now() - started > JOB_LIMIT_MS) throw new Error(`job ${id} did not complete within ${JOB_LIMIT_MS / 60_000} min (${job.processed}/${job.total})`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

const list = (prefix: string, n: number, run: number) =>
  Array.from({ length: n }, (_, i) => `${i % 2 === 0 ? "user" : "nobody"}-${prefix}${run}-${i}@shared.fair.test`);

/** Postfix's "disconnect from" lines in its log: one per session, with the RCPTs it saw ("rcpt=5/7": accepted/all). */
async function postfixCounters(logFile: string): Promise<{ rcpts: number; connections: number }> {
  const sessions = (await readFile(logFile, "utf8")).split("\n").filter((l) => l.includes(" disconnect from "));
  const rcpts = sessions.reduce((n, l) => n + Number((/\brcpt=\d+\/(\d+)/.exec(l) ?? /\brcpt=(\d+)/.exec(l))?.[1] ?? 0), 0);
  return { rcpts, connections: sessions.length };
}

export async function runFairShare(opts: {
  big: number;
  small: number;
  delayMs: number;
  headStartMs: number;
  /** A real Postfix (Debian's, its default error limits) instead of the fixture; `delayMs` does not apply. */
  postfix?: boolean;
  log?: (m: string) => void;
}): Promise<FairShareResult> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("The fair-share benchmark needs root: its mail server listens on port 25, where the probe dials.");
  const zone: Zone = { "shared.fair.test": { MX: [{ preference: 10, exchange: "mx.shared.fair.test" }] }, "mx.shared.fair.test": { A: [MX_ADDRESS] } };
  const mailboxes = [1, 2].flatMap((run) => [...list("big", opts.big, run), ...list("small", opts.small, run)]).filter((e) => e.startsWith("user"));
  const postfix = opts.postfix ? await startPostfix({ address: MX_ADDRESS, hostname: "mx.shared.fair.test", mailboxes }) : null;
  const stackOptions = { zone, delayMs: opts.delayMs, edgePort: EDGE_PORT, probePort: PROBE_PORT };
  const stack = postfix ? await startJobsStack({ ...stackOptions, mtaArgs: null }) : await startJobsStack(stackOptions);
  const { database, stop } = stack;
  const rcpts = async () => (postfix ? await postfixCounters(postfix.logFile) : await childCounters<{ rcpts: number; connections: number }>(stack.mta!));
  try {
    const db = openDatabase(database.url, database.authToken);
    const clients: Api[] = [];
    for (const name of ["bench fair share A", "bench fair share B"]) {
      const account = await createAccount(db, name, 0);
      clients.push(api((await createApiKey(db, account.id)).token));
    }
    const [a, b] = clients as [Api, Api];

    log(`fair share: the big job alone (${opts.big} lines)`);
    const before = await rcpts();
    let started = performance.now();
    const bigAloneS = await completion(a, await a.create(list("big", opts.big, 1)), started);
    const afterBig = await rcpts();
    // Each phase starts as the first did: the probe's rate allowance for the server refilled.
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    log(`fair share: the small job alone (${opts.small} lines)`);
    started = performance.now();
    const smallAloneS = await completion(b, await b.create(list("small", opts.small, 1)), started);
    const afterSmall = await rcpts();
    await new Promise((r) => setTimeout(r, PAUSE_MS));

    log(`fair share: both, the small one ${opts.headStartMs} ms after the big one`);
    const bigStarted = performance.now();
    const bigId = await a.create(list("big", opts.big, 2));
    let bigProcessed = 0;
    const bigDone = completion(a, bigId, bigStarted, (job) => (bigProcessed = job.processed));
    await new Promise((r) => setTimeout(r, opts.headStartMs));
    const smallStarted = performance.now();
    const smallSharedS = await completion(b, await b.create(list("small", opts.small, 2)), smallStarted);
    const bigProcessedAtSmallDone = bigProcessed;
    const bigSharedS = await bigDone;
    const afterShared = await rcpts();
    const smtp = {
      bigAlone: { rcpts: afterBig.rcpts - before.rcpts, connections: afterBig.connections - before.connections },
      smallAlone: { rcpts: afterSmall.rcpts - afterBig.rcpts, connections: afterSmall.connections - afterBig.connections },
      shared: { rcpts: afterShared.rcpts - afterSmall.rcpts, connections: afterShared.connections - afterSmall.connections },
    };
    const result: FairShareResult = {
      ...opts,
      bigAloneS,
      smallAloneS,
      bigSharedS,
      smallSharedS,
      smallRatio: smallSharedS / smallAloneS,
      smallGoalS: 2 * smallAloneS + 5,
      bigGrowthS: bigSharedS - bigAloneS,
      smallShareS: smtp.smallAlone.rcpts / RCPT_RATE,
      rcptRate: RCPT_RATE,
      bigProcessedAtSmallDone,
      smtp,
    };
    delete (result as { log?: unknown }).log;
    return result;
  } finally {
    await stop();
    await postfix?.close();
  }
}

export type SinglesResult = {
  singles: number;
  /** The self-hosted row's hourly cap of unknown users in the run (0: lifted). */
  unknownPerHour: number;
  seconds: number;
  /** The known users' answers, by classification and reason. */
  known: Record<string, number>;
  /** The unknown users' answers, by classification and reason. */
  unknown: Record<string, number>;
  /** What Postfix saw. */
  smtp: { rcpts: number; connections: number };
};

/** `n` single checks at once from one account at one Postfix, half known users, the receiver budget at its defaults. */
export async function runSingles(opts: { singles: number; unknownPerHour?: number; log?: (m: string) => void }): Promise<SinglesResult> {
  const unknownPerHour = opts.unknownPerHour ?? 25;
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("The fair-share benchmark needs root: its mail server listens on port 25, where the probe dials.");
  const domain = "singles.fair.test";
  const zone: Zone = { [domain]: { MX: [{ preference: 10, exchange: `mx.${domain}` }] }, [`mx.${domain}`]: { A: [MX_ADDRESS] } };
  const emails = Array.from({ length: opts.singles }, (_, i) => `${i % 2 === 0 ? "user" : "nobody"}-${i}@${domain}`);
  const postfix = await startPostfix({ address: MX_ADDRESS, hostname: `mx.${domain}`, mailboxes: emails.filter((e) => e.startsWith("user")) });
  // The receiver budget at the self-hosted row's defaults (the stack turns it off for throughput benches).
  const env = { PROBE_DESTINATION_UNKNOWN_RATIO: "0.3", PROBE_DESTINATION_UNKNOWN_PER_HOUR: String(unknownPerHour) };
  const stack = await startJobsStack({ zone, delayMs: 0, edgePort: EDGE_PORT, probePort: PROBE_PORT, mtaArgs: null, env });
  try {
    const db = openDatabase(stack.database.url, stack.database.authToken);
    const account = await createAccount(db, "bench singles", 0);
    // A key may make 100 verifications per 10 s (docs/api.md "Rate limits"): the account's requests over enough keys.
    const tokens: string[] = [];
    for (let i = 0; i < Math.ceil(opts.singles / 50); i++) tokens.push((await createApiKey(db, account.id)).token);
    log(`singles: ${opts.singles} single checks at once at one Postfix, half known users, hourly cap ${unknownPerHour || "lifted"}`);
    const started = performance.now();
    const answers = await Promise.all(
      emails.map(async (email, i) => {
        const res = await fetch(`http://127.0.0.1:${EDGE_PORT}/v1/email_verifications?email_address=${encodeURIComponent(email)}`, { headers: { authorization: `Bearer ${tokens[i % tokens.length]!}` } });
        const body = (await res.json()) as { classification?: string; reason?: string };
        return { email, verdict: res.ok ? `${body.classification}/${body.reason}` : `http_${res.status}` };
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const tally = (known: boolean) => {
      const out: Record<string, number> = {};
      for (const a of answers.filter((x) => x.email.startsWith("user") === known)) out[a.verdict] = (out[a.verdict] ?? 0) + 1;
      return out;
    };
    return { singles: opts.singles, unknownPerHour, seconds, known: tally(true), unknown: tally(false), smtp: await postfixCounters(postfix.logFile) };
  } finally {
    await stack.stop();
    await postfix.close();
  }
}

export function singlesMarkdown(r: SinglesResult): string {
  const list = (t: Record<string, number>) => Object.entries(t).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} × ${v}`).join(", ");
  const knownValid = r.known["valid/deliverable"] ?? 0;
  const spent = (t: Record<string, number>) => t["risky/receiver_budget_spent"] ?? 0;
  const refused = r.unknown["invalid/mailbox_not_found"] ?? 0;
  const cap = r.unknownPerHour;
  return [
    `| ${r.singles} single checks at once, one Postfix, hourly cap ${cap > 0 ? `${cap} unknown users` : "lifted"} | answers | goal |`,
    `|---|---|---|`,
    `| ${r.singles / 2} known users | ${list(r.known)} | every one \`valid\`: ${knownValid === r.singles / 2 ? "met" : cap > 0 ? `${knownValid} (the rest asked after the cap was reached: see below)` : "**missed**"} |`,
    `| ${r.singles / 2} unknown users | ${list(r.unknown)} | only those beyond the hourly cap (${cap > 0 ? `${cap}, 80% of it for one account alone` : "none"}) \`budget_spent\`: ${cap > 0 ? `${refused} refused, ${spent(r.unknown)} held` : spent(r.unknown) === 0 ? "met" : "**missed**"} |`,
    ``,
    `All answered in ${r.seconds.toFixed(1)} s; Postfix saw ${r.smtp.rcpts} RCPT TO on ${r.smtp.connections} connections.` +
      (cap > 0 && spent(r.known) > 0 ? ` ${spent(r.known)} known users were answered \`budget_spent\`: asked after the account's share of the cap was refused, any further RCPT could have been the cap's next unknown user, and nothing tells a known user from an unknown one before it is asked.` : ""),
  ].join("\n");
}

export function fairShareMarkdown(r: FairShareResult): string {
  const s = (x: number) => `${x.toFixed(1)} s`;
  return [
    `| | alone | sharing the mail server | goal |`,
    `|---|---|---|---|`,
    `| small job (${r.small} lines, account B) | ${s(r.smallAloneS)} | ${s(r.smallSharedS)} (${r.smallRatio.toFixed(2)}× alone) | at most ${s(r.smallGoalS)} (2× alone + 5 s): ${r.smallSharedS <= r.smallGoalS ? "met" : "**missed**"} |`,
    `| big job (${r.big} lines, account A, ${r.headStartMs / 1000} s head start) | ${s(r.bigAloneS)} | ${s(r.bigSharedS)} (+${s(r.bigGrowthS)}) | grows by at most the small job's share of the server, its ${r.smtp.smallAlone.rcpts} RCPT TO at ${r.rcptRate} per second (PROBE_DESTINATION_RCPT_RATE): ${s(r.smallShareS)}: ${r.bigGrowthS <= r.smallShareS + 0.2 ? "met" : "**missed**"} (within the 0.2 s the jobs are polled at) |`,
    ``,
    `When the small job completed, the big one had ${r.bigProcessedAtSmallDone.toLocaleString("en")} of its ${r.big.toLocaleString("en")} lines answered. ${r.postfix ? "One mail server: Debian's Postfix with its default error limits (smtpd_soft_error_limit 10, smtpd_hard_error_limit 20); the probe's unknown-recipient budget off, as in every throughput bench" : `One mail server (every reply after ${r.delayMs} ms)`}, half of each list unknown mailboxes.`,
    `RCPT TO (connections) the mail server saw: big job alone ${r.smtp.bigAlone.rcpts} (${r.smtp.bigAlone.connections}), small job alone ${r.smtp.smallAlone.rcpts} (${r.smtp.smallAlone.connections}), both ${r.smtp.shared.rcpts} (${r.smtp.shared.connections}).`,
  ].join("\n");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      big: { type: "string", default: "2000" },
      small: { type: "string", default: "300" },
      "delay-ms": { type: "string", default: "20" },
      "head-start-ms": { type: "string", default: "2000" },
      postfix: { type: "boolean", default: false },
      singles: { type: "string" },
      "unknown-per-hour": { type: "string", default: "25" },
    },
  });
  if (values.singles !== undefined) {
    console.log(singlesMarkdown(await runSingles({ singles: Number(values.singles), unknownPerHour: Number(values["unknown-per-hour"]), log: (m) => console.error(m) })));
    process.exit(0);
  }
  const result = await runFairShare({
    big: Number(values.big),
    small: Number(values.small),
    delayMs: Number(values["delay-ms"]),
    headStartMs: Number(values["head-start-ms"]),
    postfix: values.postfix,
    log: (m) => console.error(m),
  });
  console.log(fairShareMarkdown(result));
}
