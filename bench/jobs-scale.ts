/**
 * A bulk job at list-cleaning size: 100,000 addresses uploaded as one CSV to the whole local stack
 * (`npm start`: libSQL, the probe, the Worker with its queue under wrangler dev), checked against
 * fixture mail servers, until the job says `completed`. Then the results are downloaded as CSV and
 * checked line by line, and the database is asked whether every line became done exactly once.
 *
 *   npx tsx bench/jobs-scale.ts [--addresses 100000] [--domains 1000] [--delay-ms 5] [--seed 7]
 *
 * - The mail servers: test/fixtures/mta-fixture.ts on 0.0.0.0:25 (root: port 25), which answers on
 *   every 127.x.y.z; each domain's MX is its own address 127.2.x.y, so each is its own destination
 *   for the probe. Local parts starting with "user" exist, any other gets 550 5.1.1.
 * - DNS: test/fixtures/doh-server.ts serves the zone (one MX and one A record per domain).
 * - The list: half existing, half unknown mailboxes, spread evenly over the domains, shuffled, so
 *   every chunk of the job touches hundreds of domains (as a real export does).
 *
 * Peak memory is each process's VmHWM (its peak resident set) when the job has completed.
 */
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { VerificationJob } from "../shared/jobs.ts";
import type { Zone } from "../test/fixtures/doh-server.ts";
import { childCounters, startJobsStack } from "./child.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

const EDGE_PORT = 8797;
const PROBE_PORT = 8796;
const POLL_MS = 1_000;
/** The most the job may take before the benchmark gives up on it. */
const JOB_LIMIT_MS = 30 * 60_000;

export type JobsScaleResult = {
  addresses: number;
  domains: number;
  delayMs: number;
  seed: number;
  /** From the POST (upload included) to the answer that created the job, and to `completed`. */
  createMs: number;
  wallMs: number;
  /** Lines answered at each poll: [seconds since the POST, processed]. */
  progress: [number, number][];
  /** Peak resident set of each process, MiB. */
  peakRssMiB: Record<string, number>;
  csv: { rows: number; inOrder: boolean; right: number; wrong: string[] };
  database: { lines: number; done: number; processed: number; counted: number };
  smtp: { connections: number; transactions: number; rcpts: number; max_errors_in_a_session: number; clean_connections: number; clean_rcpts: number; quit: number; client_resets: number };
};

/** A small deterministic generator (mulberry32), so a seed gives the same list everywhere. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function buildScaleList(addresses: number, domains: number, seed: number): { emails: string[]; zone: Zone } {
  const zone: Zone = {};
  for (let d = 0; d < domains; d++) {
    const name = `d${d}.bulk.test`;
    zone[name] = { MX: [{ preference: 10, exchange: `mx.${name}` }] };
    zone[`mx.${name}`] = { A: [`127.2.${Math.floor(d / 250)}.${(d % 250) + 1}`] };
  }
  const emails = Array.from({ length: addresses }, (_, i) => `${i % 2 === 0 ? "user" : "nobody"}${i}@d${i % domains}.bulk.test`);
  const next = random(seed);
  for (let i = emails.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [emails[i], emails[j]] = [emails[j]!, emails[i]!];
  }
  return { emails, zone };
}


export async function runJobsScale(opts: { addresses: number; domains: number; delayMs: number; seed: number; log?: (m: string) => void }): Promise<JobsScaleResult> {
  const log = opts.log ?? (() => {});
  if (opts.domains > 250 * 250) throw new Error("at most 62,500 domains (one 127.2.x.y address each)");
  if (process.getuid?.() !== 0) throw new Error("The bulk job benchmark needs root: its mail server listens on port 25, where the probe dials.");
  const { emails, zone } = buildScaleList(opts.addresses, opts.domains, opts.seed);
  const { mta, database, peakMemory, stop } = await startJobsStack({ zone, delayMs: opts.delayMs, edgePort: EDGE_PORT, probePort: PROBE_PORT });
  try {
    const db = openDatabase(database.url, database.authToken);
    const account = await createAccount(db, "bench jobs at scale", 0);
    const token = (await createApiKey(db, account.id)).token;
    const api = `http://127.0.0.1:${EDGE_PORT}/v1/email_verification_jobs`;
    const headers = { authorization: `Bearer ${token}` };

    log(`bulk job: uploading ${emails.length} addresses over ${opts.domains} domains as CSV`);
    const csv = `email_address\r\n${emails.join("\r\n")}\r\n`;
    const started = performance.now();
    const res = await fetch(api, { method: "POST", headers: { ...headers, "content-type": "text/csv" }, body: csv });
    const createMs = performance.now() - started;
    if (res.status !== 202) throw new Error(`job creation answered ${res.status}: ${await res.text()}`);
    const { id } = VerificationJob.parse(await res.json());
    const progress: [number, number][] = [];
    let job: VerificationJob;
    for (;;) {
      job = VerificationJob.parse(await (await fetch(`${api}/${id}`, { headers })).json());
      progress.push([Math.round((performance.now() - started) / 100) / 10, job.processed]);
      if (job.status === "completed") break;
      if (performance.now() - started > JOB_LIMIT_MS) throw new Error(`the job did not complete within ${JOB_LIMIT_MS / 60_000} min (${job.processed}/${job.total})`);
      if (progress.length % 30 === 0) log(`bulk job: ${job.processed}/${job.total} after ${progress.at(-1)![0]} s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const wallMs = performance.now() - started;
    log(`bulk job: completed in ${(wallMs / 1000).toFixed(1)} s`);

    const peakRssMiB = await peakMemory();
    const smtp = await childCounters<JobsScaleResult["smtp"]>(mta);

    // The results as a user downloads them: one CSV row per input line, in input order.
    const download = await (await fetch(`${api}/${id}/results?format=csv`, { headers })).text();
    const rows = download.trimEnd().split(/\r?\n/).slice(1);
    let inOrder = rows.length === emails.length;
    let right = 0;
    const wrong: string[] = [];
    for (const [i, row] of rows.entries()) {
      const [email, classification] = row.split(",");
      if (email !== emails[i]) inOrder = false;
      const expected = email?.startsWith("user") ? "valid" : "invalid";
      if (classification === expected) right++;
      else if (wrong.length < 10) wrong.push(`${email}: ${classification}`);
    }
    const [counts] = (
      await db.$client.execute({
        sql: `select count(*) as lines, sum(i.state = 'done') as done, j.processed as processed, j.valid_count + j.risky_count + j.invalid_count as counted
              from verification_job_items i join verification_jobs j on j.id = i.job_id where i.job_id = ?`,
        args: [id],
      })
    ).rows as unknown as { lines: number; done: number; processed: number; counted: number }[];
    db.$client.close();
    return {
      addresses: emails.length,
      domains: opts.domains,
      delayMs: opts.delayMs,
      seed: opts.seed,
      createMs,
      wallMs,
      progress,
      peakRssMiB,
      csv: { rows: rows.length, inOrder, right, wrong },
      database: { lines: Number(counts!.lines), done: Number(counts!.done), processed: Number(counts!.processed), counted: Number(counts!.counted) },
      smtp,
    };
  } finally {
    await stop();
  }
}

export function jobsScaleMarkdown(r: JobsScaleResult): string {
  const exactlyOnce = r.database.lines === r.addresses && r.database.done === r.addresses && r.database.processed === r.addresses && r.database.counted === r.addresses;
  const half = r.progress.find(([, n]) => n >= r.addresses / 2)?.[0];
  return [
    `${r.addresses.toLocaleString("en")} addresses over ${r.domains.toLocaleString("en")} domains (half existing mailboxes, half unknown, shuffled; seed ${r.seed}), ` +
      `uploaded as one CSV (${((r.addresses * 30) / 2 ** 20).toFixed(1)} MB or so) to \`npm start\`, every mail server a destination of its own answering each command after ${r.delayMs} ms.`,
    "",
    "| Figure | Value |",
    "|---|---|",
    `| Upload and creation (POST answered 202) | ${(r.createMs / 1000).toFixed(2)} s |`,
    `| POST to \`completed\` | ${(r.wallMs / 1000).toFixed(1)} s (${Math.round(r.addresses / (r.wallMs / 1000))} addresses/s; half done after ${half ?? "-"} s) |`,
    `| Results CSV | ${r.csv.rows.toLocaleString("en")} rows, ${r.csv.inOrder ? "in input order" : "**not in input order**"}, ${r.csv.right.toLocaleString("en")} verdicts right${r.csv.wrong.length ? ` (wrong: ${r.csv.wrong.join("; ")})` : ""} |`,
    `| Exactly once | ${exactlyOnce ? "yes" : "**no**"}: ${r.database.lines.toLocaleString("en")} lines, ${r.database.done.toLocaleString("en")} done, job counters processed ${r.database.processed.toLocaleString("en")}, valid + risky + invalid ${r.database.counted.toLocaleString("en")} |`,
    `| SMTP | ${r.smtp.connections.toLocaleString("en")} connections (${(r.addresses / Math.max(1, r.smtp.connections)).toFixed(1)} addresses each), ${r.smtp.transactions.toLocaleString("en")} transactions, ${r.smtp.rcpts.toLocaleString("en")} RCPT TO, at most ${r.smtp.max_errors_in_a_session} refusals in a session, ${r.smtp.quit.toLocaleString("en")} QUIT, ${r.smtp.client_resets} resets |`,
    `| SMTP, by kind of connection | ${(r.smtp.connections - r.smtp.clean_connections).toLocaleString("en")} connections met refusals (${((r.smtp.rcpts - r.smtp.clean_rcpts) / Math.max(1, r.smtp.connections - r.smtp.clean_connections)).toFixed(1)} RCPT TO each, within the probe's refusal budget per session, PROBE_MAX_REJECTIONS_PER_SESSION); ${r.smtp.clean_connections.toLocaleString("en")} were refused nothing (${(r.smtp.clean_rcpts / Math.max(1, r.smtp.clean_connections)).toFixed(1)} RCPT TO each) |`,
    ...Object.entries(r.peakRssMiB).map(([part, mib]) => `| Peak memory: ${part} | ${mib.toFixed(0)} MiB |`),
  ].join("\n");
}

/** The command line of the list benchmarks (this one and people-refresh.ts): the list's size, the servers' delay, the seed. */
export function scaleListArgs(): { addresses: number; domains: number; delayMs: number; seed: number } {
  const { values } = parseArgs({
    options: {
      addresses: { type: "string", default: "100000" },
      domains: { type: "string", default: "1000" },
      "delay-ms": { type: "string", default: "5" },
      seed: { type: "string", default: "7" },
    },
  });
  return { addresses: Number(values.addresses), domains: Number(values.domains), delayMs: Number(values["delay-ms"]), seed: Number(values.seed) };
}

if (isMainModule(import.meta.url)) {
  console.log(jobsScaleMarkdown(await runJobsScale({ ...scaleListArgs(), log: (m) => process.stderr.write(`${m}\n`) })));
}
