/**
 * Re-verification of stored addresses at scale (docs/operations.md "Personal data"): 100,000 people, one address
 * each, over 1,000 domains (the same list as bench/jobs-scale.ts: half existing mailboxes, half unknown, shuffled),
 * imported into the whole local stack (`npm start`), then re-verified by the cron as one internal refresh job
 * (EMAIL_REFRESH_BATCH = the list), until its answers are written back to the people. Meanwhile a client keeps
 * looking people up, and the lookups per second are compared with the same load before the refresh.
 * The refresh is timed alone first; the lookups are measured during a second refresh, cancelled after.
 *
 *   sudo npx tsx bench/people-refresh.ts [--addresses 100000] [--domains 1000] [--delay-ms 5] [--seed 7]
 *
 * Peak memory is each process's VmHWM (its peak resident set) at the end.
 */
import type { Client } from "@libsql/client";
import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { importPeople } from "../scripts/admin/people-import.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { childCounters, startJobsStack } from "./child.ts";
import { buildScaleList, scaleListArgs } from "./jobs-scale.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

const EDGE_PORT = 8795;
const PROBE_PORT = 8794;
const LIMIT_MS = 30 * 60_000;
const LOOKUP_CONCURRENCY = 4;
/** Keys the lookups take in turn, as many customers' traffic would: each key is rate-limited per 10 s. */
const LOOKUP_KEYS = 200;
const BASELINE_MS = 10_000;
const DURING_MS = 20_000;

export type PeopleRefreshResult = {
  addresses: number;
  domains: number;
  delayMs: number;
  seed: number;
  importMs: number;
  /** From the cron that started the refresh job to the cron that wrote its answers back. */
  wallMs: number;
  jobMs: number;
  right: number;
  wrong: string[];
  undeliverableAfterOneCheck: number;
  lookups: { baselinePerSecond: number; duringPerSecond: number; duringP50Ms: number; duringP99Ms: number; errors: number };
  peakRssMiB: Record<string, number>;
  smtp: { connections: number; transactions: number; rcpts: number; quit: number };
};


/** Fires the Worker's cron once, as `npm start` does every minute (wrangler dev's local endpoint). */
export const fireCron = (base: string) => fetch(`${base}/cdn-cgi/local/scheduled`).then((r) => r.body?.cancel());

/**
 * One re-verification of the stored addresses due, as the cron runs it: fires the cron, which starts a refresh job,
 * waits for that job to complete, then fires the cron until it has written every answer back (`unanswered`: an SQL
 * count, as `n`, of the rows still waiting for theirs). The refresh job's own time, from its row.
 */
export async function refreshAndWriteBack(client: Client, base: string, opts: { unanswered: string; limitMs: number; log?: (m: string) => void }): Promise<{ jobMs: number }> {
  const started = performance.now();
  const refreshJob = async () =>
    (await client.execute("select id, status, processed, total, completed_at, created_at from verification_jobs where account_id = 'acc_stored_email_refresh' order by created_at desc limit 1")).rows[0];
  await fireCron(base);
  let job = await refreshJob();
  if (!job) throw new Error("the cron started no refresh job");
  let polls = 0;
  while (job!.status !== "completed") {
    if (performance.now() - started > opts.limitMs) throw new Error(`the refresh job did not complete (${job!.processed}/${job!.total})`);
    if (++polls % 30 === 0) opts.log?.(`refresh: ${job!.processed}/${job!.total}`);
    await new Promise((r) => setTimeout(r, 1_000));
    job = await refreshJob();
  }
  const jobMs = Number(job!.completed_at) - Number(job!.created_at);
  // The next cron writes the answers back (the minute tick of npm start may have done it already).
  for (;;) {
    const [left] = (await client.execute(opts.unanswered)).rows;
    if (Number(left!.n) === 0) break;
    await fireCron(base);
    if (performance.now() - started > opts.limitMs) throw new Error("the answers were not written back");
    await new Promise((r) => setTimeout(r, 500));
  }
  return { jobMs };
}

/** Looks up random people at a fixed concurrency until stopped; counts the answers per second and their latency. */
function lookupLoad(base: string, tokens: string[], profnetIds: number[]) {
  let stop = false;
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  let sent = 0;
  const workers = Array.from({ length: LOOKUP_CONCURRENCY }, async () => {
    while (!stop) {
      const id = profnetIds[Math.floor(Math.random() * profnetIds.length)]!;
      const t = performance.now();
      const res = await fetch(`${base}/v1/people?profnet_id=${id}`, { headers: { authorization: `Bearer ${tokens[sent++ % tokens.length]}` } }).catch(() => null);
      if (res?.status === 200) latencies.push(performance.now() - t);
      else errors++;
      await res?.body?.cancel();
    }
  });
  return async () => {
    stop = true;
    await Promise.all(workers);
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    return { perSecond: latencies.length / seconds, p50: at(0.5), p99: at(0.99), errors };
  };
}

export async function runPeopleRefresh(opts: { addresses: number; domains: number; delayMs: number; seed: number; log?: (m: string) => void }): Promise<PeopleRefreshResult> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("The re-verification benchmark needs root: its mail server listens on port 25, where the probe dials.");
  const { emails, zone } = buildScaleList(opts.addresses, opts.domains, opts.seed);
  const { mta, database, peakMemory, stop } = await startJobsStack({
    zone,
    delayMs: opts.delayMs,
    edgePort: EDGE_PORT,
    probePort: PROBE_PORT,
    // One refresh job for the whole list, next to one bulk job of the same list; no recheck wait for a temporary answer.
    env: { EMAIL_REFRESH_BATCH: String(opts.addresses), JOB_RETRY_DELAY_SECONDS: "0" },
  });
  const base = `http://127.0.0.1:${EDGE_PORT}`;
  const file = join(tmpdir(), `bench-people-${process.pid}.jsonl`);
  try {
    const db = openDatabase(database.url, database.authToken);
    const profnetIds = emails.map((_, i) => 5_000_000 + i);
    await writeFile(file, emails.map((email, i) => JSON.stringify({ profnet_id: profnetIds[i], email_addresses: [email] })).join("\n") + "\n");
    log(`people refresh: importing ${emails.length} people`);
    const importStarted = performance.now();
    const imported = await importPeople(db.$client, file, { batchSize: 1000 });
    const importMs = performance.now() - importStarted;
    if (imported.inserted !== emails.length) throw new Error(`import inserted ${imported.inserted} of ${emails.length}`);
    // npm start fires the cron every minute: nothing may start re-verifying before the measured run. A refresh
    // job a tick started during the import is dropped, and the addresses are held back until then.
    await db.$client.batch(
      [
        "update person_emails set next_check_at = 9000000000000",
        "delete from verification_job_items where job_id in (select id from verification_jobs where account_id = 'acc_stored_email_refresh')",
        "delete from verification_jobs where account_id = 'acc_stored_email_refresh'",
      ],
      "write",
    );
    const account = await createAccount(db, "bench lookups during refresh", 100_000_000);
    const tokens: string[] = [];
    for (let i = 0; i < LOOKUP_KEYS; i++) tokens.push((await createApiKey(db, account.id)).token);
    // Each key once first, so the runs below measure warm keys (one database round trip per lookup).
    for (const t of tokens) await (await fetch(`${base}/v1/people?profnet_id=${profnetIds[0]}`, { headers: { authorization: `Bearer ${t}` } })).body?.cancel();

    const cron = () => fireCron(base);

    // 1. The refresh alone: from the cron that starts it to the cron that has written every answer back.
    log("people refresh: the refresh alone");
    const started = performance.now();
    await db.$client.execute("update person_emails set next_check_at = 0");
    const { jobMs } = await refreshAndWriteBack(db.$client, base, { unanswered: "select count(*) as n from person_emails where checked_at is null", limitMs: LIMIT_MS, log });
    const wallMs = performance.now() - started;
    const smtp = await childCounters<PeopleRefreshResult["smtp"]>(mta);

    // 2. Lookups: alone, then while a second refresh of every address runs (cancelled once measured).
    log("people refresh: lookups alone, then during a second refresh");
    const baselineStop = lookupLoad(base, tokens, profnetIds);
    await new Promise((r) => setTimeout(r, BASELINE_MS));
    const baseline = await baselineStop();
    await db.$client.execute("update person_emails set next_check_at = 0");
    await cron();
    const duringStop = lookupLoad(base, tokens, profnetIds);
    await new Promise((r) => setTimeout(r, DURING_MS));
    const during = await duringStop();
    await db.$client.execute("update verification_jobs set status = 'cancelled', completed_at = unixepoch('subsec') * 1000 where account_id = 'acc_stored_email_refresh' and status in ('queued', 'running')");
    log(`people refresh: done in ${(wallMs / 1000).toFixed(1)} s`);

    // The answers of the first refresh (the second was cancelled before it wrote any back); the bench's people only (npm start seeds a few demo profiles, re-verified with them).
    const rows = (await db.$client.execute("select email, classification, reason, undeliverable_at from person_emails where person_id in (select id from people where profnet_id >= 5000000)")).rows;
    let right = 0;
    const wrong: string[] = [];
    for (const r of rows) {
      const expected = String(r.email).startsWith("user") ? "valid" : "invalid";
      if (r.classification === expected) right++;
      else if (wrong.length < 10) wrong.push(`${r.email}: ${r.classification} (${r.reason})`);
    }
    const undeliverableAfterOneCheck = rows.filter((r) => r.undeliverable_at !== null).length;

    const peakRssMiB = await peakMemory();
    db.$client.close();
    return {
      addresses: emails.length,
      domains: opts.domains,
      delayMs: opts.delayMs,
      seed: opts.seed,
      importMs,
      wallMs,
      jobMs,
      right,
      wrong,
      undeliverableAfterOneCheck,
      lookups: { baselinePerSecond: baseline.perSecond, duringPerSecond: during.perSecond, duringP50Ms: during.p50, duringP99Ms: during.p99, errors: baseline.errors + during.errors },
      peakRssMiB,
      smtp,
    };
  } finally {
    await rm(file, { force: true });
    await stop();
  }
}

export function peopleRefreshMarkdown(r: PeopleRefreshResult): string {
  return [
    `${r.addresses.toLocaleString("en")} stored people, one address each, over ${r.domains.toLocaleString("en")} domains (the list of the bulk job above: half existing mailboxes, half unknown, shuffled; seed ${r.seed}), ` +
      `re-verified by the cron as one internal refresh job (\`EMAIL_REFRESH_BATCH\` ${r.addresses.toLocaleString("en")}) on \`npm start\`, every mail server answering each command after ${r.delayMs} ms, ` +
      `first alone, then again while a client looks people up ${LOOKUP_CONCURRENCY} at a time over ${LOOKUP_KEYS} warm keys (${BASELINE_MS / 1000} s before it, ${DURING_MS / 1000} s during it). ` +
      "Under `wrangler dev` the lookups share one workerd process with the queue consumer running the refresh; on Cloudflare they run in other isolates.",
    "",
    "| Figure | Value |",
    "|---|---|",
    `| Import of the people (\`people import\`, batches of 1,000) | ${(r.importMs / 1000).toFixed(1)} s |`,
    `| Cron to answers written back to every person | ${(r.wallMs / 1000).toFixed(1)} s (the refresh job itself: ${(r.jobMs / 1000).toFixed(1)} s, ${Math.round(r.addresses / (r.jobMs / 1000))} addresses/s) |`,
    `| Verdicts stored | ${r.right.toLocaleString("en")} of ${r.addresses.toLocaleString("en")} right${r.wrong.length ? ` (wrong: ${r.wrong.join("; ")})` : ""}; ${r.undeliverableAfterOneCheck} made undeliverable by this first check (the second comes \`EMAIL_RECHECK_SECONDS\` later) |`,
    `| SMTP | ${r.smtp.connections.toLocaleString("en")} connections (${(r.addresses / Math.max(1, r.smtp.connections)).toFixed(1)} addresses each), ${r.smtp.transactions.toLocaleString("en")} transactions, ${r.smtp.rcpts.toLocaleString("en")} RCPT TO, ${r.smtp.quit.toLocaleString("en")} QUIT |`,
    `| Lookups per second (${LOOKUP_CONCURRENCY} at a time) | ${r.lookups.baselinePerSecond.toFixed(0)} before, ${r.lookups.duringPerSecond.toFixed(0)} during the refresh (p50 ${r.lookups.duringP50Ms.toFixed(1)} ms, p99 ${r.lookups.duringP99Ms.toFixed(1)} ms; ${r.lookups.errors} not 200) |`,
    ...Object.entries(r.peakRssMiB).map(([part, mib]) => `| Peak memory: ${part} | ${mib.toFixed(0)} MiB |`),
  ].join("\n");
}

if (isMainModule(import.meta.url)) {
  console.log(peopleRefreshMarkdown(await runPeopleRefresh({ ...scaleListArgs(), log: (m) => process.stderr.write(`${m}\n`) })));
}
