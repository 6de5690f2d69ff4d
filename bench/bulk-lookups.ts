/**
 * The bulk lookups (issue 38) on the whole local stack as `npm start` runs it (the Worker and its queues under
 * `wrangler dev`, the probe, libSQL), over a database of `--people` people imported beforehand:
 *
 *   npx tsx bench/bulk-lookups.ts [--people 1000000] [--lines 100000] [--rounds 10] [--domains 1000] [--delay-ms 5] [--verify-lines N]
 *
 * 1. POST /v1/people/bulk against single GET /v1/people calls: per round, 100 identifiers (half found) as one batch,
 *    and as 100 single calls at 10 in flight; each call's latency, and the time per identifier.
 * 2. A lookup job of `--lines` lines (nine in ten find someone, each a different person), created as one CSV, polled
 *    once a second to `completed`: wall time, workerd's resident set (its processes summed, sampled every 500 ms) above
 *    what it was just before the job, and the credits charged against the lines found.
 *    Its floor, in the same run (bench/lookup-floor.ts): the same lines matched, answered and charged by plain
 *    set-based SQL on the same libSQL server; the goal is the job within 3× that floor and at most 15 s.
 * 3. The first `--verify-lines` of the list (default: all) again with verify_emails=true: every person's one address is at a domain of its own 127.2.x.y mail
 *    server (test/fixtures/mta-fixture.ts on port 25: local parts starting "user" exist, the others are refused), so the
 *    job's verification phase runs through the probe as a bulk verification job does.
 *
 * Needs root (port 25); other programs' port 25 stays apart when it runs in a network namespace of its own:
 * `unshare -n bash -c 'ip link set lo up; npx tsx bench/bulk-lookups.ts'`.
 */
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { copyFile, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { importPeople } from "../scripts/admin/people-import.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";
import { processTree, startJobsStack } from "./child.ts";
import { buildScaleList } from "./jobs-scale.ts";
import { lookupFloor } from "./lookup-floor.ts";
import { median, percentile } from "./stats.ts";

const EDGE_PORT = 8807;
const PROBE_PORT = 8806;
const JOB_LIMIT_MS = 30 * 60_000;
const BATCH = 100;
const IN_FLIGHT = 10;

export type LookupJobRun = {
  /** Turns, and the median time between two turns' answers over the first and the last tenth of them. */
  turns: number;
  firstTurnsGapMs: number;
  lastTurnsGapMs: number;
  lines: number;
  verifyEmails: boolean;
  createMs: number;
  wallMs: number;
  status: string;
  counts: Record<string, number>;
  charged: number;
  ledgerRows: number;
  workerdBeforeMiB: number;
  workerdPeakMiB: number;
  verdicts?: { valid: number; invalid: number; other: number };
};

export type LookupJobsResult = {
  people: number;
  importS: number;
  rounds: number;
  batch: { latenciesMs: number[]; found: number };
  singles: { latenciesMs: number[]; wallsMs: number[]; found: number; unavailable: number };
  job: LookupJobRun;
  /** The same lines by plain set-based SQL on the same server (bench/lookup-floor.ts). */
  floor: { ms: number; found: number; charged: number };
  verified: LookupJobRun;
};

/** Person n: two identifiers, one address at the fixture domain n % domains (half of them existing mailboxes), one phone. */
function personRow(n: number, domains: number): string {
  return JSON.stringify({
    profnet_public_identifier: `lp-${n}`,
    codehost_login: `lc-${n}`,
    email_addresses: [`${n % 2 === 0 ? "user" : "nobody"}${n}@d${n % domains}.bulk.test`],
    phone_numbers: [`+33 6 ${String(10_000_000 + n).slice(-8)}`],
  });
}

async function writePeople(path: string, people: number, domains: number): Promise<void> {
  const out = createWriteStream(path);
  for (let n = 0; n < people; n++) if (!out.write(`${personRow(n, domains)}\n`)) await once(out, "drain");
  out.end();
  await once(out, "finish");
}

/** Line i of the job: nine in ten a different person spread over the database, the tenth nobody. */
function jobLine(i: number, people: number): string {
  return i % 10 === 9 ? `lp-missing-${i}` : `lp-${(i * 9973) % people}`;
}

/** The resident set of workerd's processes under the stack, summed, MiB. */
async function workerdRssMiB(stackPid: number): Promise<number> {
  let kib = 0;
  for (const p of processTree(stackPid)) {
    if (!p.command.includes("workerd")) continue;
    try {
      kib += Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${p.pid}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return kib / 1024;
}

async function timed(f: () => Promise<Response>): Promise<{ ms: number; res: Response; body: string }> {
  const t = performance.now();
  const res = await f();
  const body = await res.text();
  return { ms: performance.now() - t, res, body };
}

export async function runLookupJobs(opts: { people: number; lines: number; verifyLines?: number; rounds: number; domains: number; delayMs: number; cache?: string; log?: (m: string) => void }): Promise<LookupJobsResult> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("The lookup jobs benchmark needs root: its mail server listens on port 25, where the probe dials.");
  if ((opts.lines - 1) * 9973 >= Number.MAX_SAFE_INTEGER || opts.people % 9973 === 0) throw new Error("--people must not be a multiple of 9973");
  const dir = await mkdtemp(join(tmpdir(), "bench-lookup-jobs-"));
  const dbFile = join(dir, "people.db");
  try {
    // The database, filled before the stack starts: the CLI's import into a file, then served by the libSQL server.
    let imported: { inserted: number; elapsed_ms: number };
    if (opts.cache && (await stat(opts.cache).catch(() => null))) {
      log(`lookup jobs: the people from ${opts.cache}`);
      await copyFile(opts.cache, dbFile);
      const cached = openDatabase(`file:${dbFile}`);
      const [row] = (await cached.$client.execute("select count(*) as n from people")).rows;
      cached.$client.close();
      imported = { inserted: Number(row!.n), elapsed_ms: Number.NaN };
    } else {
      log(`lookup jobs: writing and importing ${opts.people.toLocaleString("en")} people`);
      const file = join(dir, "people.jsonl");
      await writePeople(file, opts.people, opts.domains);
      const fileDb = openDatabase(`file:${dbFile}`);
      await applyMigrations(fileDb);
      imported = await importPeople(fileDb.$client, file, {});
      // The write-ahead log folded into the file, as a database that has run a while has it, not replayed at the first lookup.
      await fileDb.$client.execute("pragma wal_checkpoint(truncate)");
      fileDb.$client.close();
      await rm(file);
      log(`lookup jobs: imported ${imported.inserted} people in ${(imported.elapsed_ms / 1000).toFixed(1)} s`);
      if (opts.cache) await copyFile(dbFile, opts.cache);
    }
    if (imported.inserted !== opts.people) throw new Error(`the database holds ${imported.inserted} people, not ${opts.people}`);

    const { zone } = buildScaleList(0, opts.domains, 1);
    const stack = await startJobsStack({ zone, delayMs: opts.delayMs, edgePort: EDGE_PORT, probePort: PROBE_PORT, databaseFile: dbFile });
    try {
      const db = openDatabase(stack.database.url, stack.database.authToken);
      const account = await createAccount(db, "bench lookup jobs", 10_000_000);
      const singleKeys: string[] = [];
      for (let i = 0; i < 100; i++) singleKeys.push((await createApiKey(db, account.id)).token);
      const batchKeys: string[] = [];
      for (let i = 0; i <= opts.rounds; i++) batchKeys.push((await createApiKey(db, account.id)).token);
      const jobKey = (await createApiKey(db, account.id)).token;
      const base = `http://127.0.0.1:${EDGE_PORT}`;

      // 1. The batch against single calls. Round 0 warms every key (each key's first request reads it) and is not counted.
      const batchLatencies: number[] = [];
      const singleLatencies: number[] = [];
      const singleWalls: number[] = [];
      let batchFound = 0;
      let singleFound = 0;
      let unavailable = 0;
      for (let round = 0; round <= opts.rounds; round++) {
        const ids = Array.from({ length: BATCH }, (_, i) => (i % 2 === 0 ? `lp-${(round * 7919 + i * 104_729) % opts.people}` : `lp-nobody-${round}-${i}`));
        const sendBatch = () =>
          timed(() =>
            fetch(`${base}/v1/people/bulk`, {
            method: "POST",
            headers: { authorization: `Bearer ${batchKeys[round]}`, "content-type": "application/json" },
            body: JSON.stringify({ requests: ids.map((id, i) => ({ params: { profnet_public_identifier: id }, reference: String(i) })) }),
            }),
          );
        let batch = await sendBatch();
        for (let retry = 0; round === 0 && batch.res.status === 503 && retry < 10; retry++) {
          await new Promise((r) => setTimeout(r, 1_000));
          batch = await sendBatch();
        }
        if (batch.res.status === 503) {
          unavailable++;
          continue;
        }
        if (batch.res.status !== 200) throw new Error(`the batch answered ${batch.res.status}: ${batch.body.slice(0, 300)}`);
        const found = (JSON.parse(batch.body) as { results: { status: number }[] }).results.filter((r) => r.status === 200).length;
        const latencies: number[] = [];
        let next = 0;
        let foundSingles = 0;
        const wallStart = performance.now();
        await Promise.all(
          Array.from({ length: IN_FLIGHT }, async () => {
            for (let i = next++; i < ids.length; i = next++) {
              let one = await timed(() => fetch(`${base}/v1/people?profnet_public_identifier=${ids[i]}`, { headers: { authorization: `Bearer ${singleKeys[i]}` } }));
              // The warm-up round waits out a database still cold (503 past DATABASE_TIMEOUT_MS); a counted round counts them.
              for (let retry = 0; round === 0 && one.res.status === 503 && retry < 10; retry++) {
                await new Promise((r) => setTimeout(r, 1_000));
                one = await timed(() => fetch(`${base}/v1/people?profnet_public_identifier=${ids[i]}`, { headers: { authorization: `Bearer ${singleKeys[i]}` } }));
              }
              if (one.res.status === 503) {
                unavailable++;
                continue;
              }
              if (one.res.status !== 200 && one.res.status !== 404) throw new Error(`a single lookup answered ${one.res.status}: ${one.body.slice(0, 300)}`);
              if (one.res.status === 200) foundSingles++;
              latencies.push(one.ms);
            }
          }),
        );
        const wall = performance.now() - wallStart;
        if (round === 0) continue;
        batchLatencies.push(batch.ms);
        batchFound += found;
        singleLatencies.push(...latencies);
        singleWalls.push(wall);
        singleFound += foundSingles;
        // Each single key is used once a round: keep within its 100 lookups per 10 s whatever the pace.
      }
      log(`lookup jobs: batch p50 ${median(batchLatencies).toFixed(1)} ms, single p50 ${median(singleLatencies).toFixed(1)} ms`);

      // 2 and 3. The job, then the same list with verify_emails.
      const identifiers = Array.from({ length: opts.lines }, (_, i) => jobLine(i, opts.people));
      const runJob = async (verifyEmails: boolean): Promise<LookupJobRun> => {
        const lines = verifyEmails ? identifiers.slice(0, opts.verifyLines ?? opts.lines) : identifiers;
        const csv = `profnet_public_identifier\r\n${lines.join("\r\n")}\r\n`;
        const headers = { authorization: `Bearer ${jobKey}` };
        const workerdBeforeMiB = await workerdRssMiB(stack.stack.pid!);
        let workerdPeakMiB = workerdBeforeMiB;
        const sampler = setInterval(() => void workerdRssMiB(stack.stack.pid!).then((m) => (workerdPeakMiB = Math.max(workerdPeakMiB, m))), 500);
        try {
          log(`lookup jobs: creating a ${lines.length.toLocaleString("en")}-line job${verifyEmails ? " with verify_emails=true" : ""}`);
          const started = performance.now();
          const res = await fetch(`${base}/v1/lookup_jobs${verifyEmails ? "?verify_emails=true" : ""}`, { method: "POST", headers: { ...headers, "content-type": "text/csv" }, body: csv });
          const createMs = performance.now() - started;
          if (res.status !== 202) throw new Error(`the job's creation answered ${res.status}: ${await res.text()}`);
          const { id } = (await res.json()) as { id: string };
          let job: { status: string; processed: number; total: number; counts: Record<string, number>; credits: { charged: number } };
          for (let polls = 1; ; polls++) {
            const poll = await fetch(`${base}/v1/lookup_jobs/${id}`, { headers });
            if (!poll.ok) {
              // A busy machine: the read timed out at the database (503). The job goes on; so does the polling.
              log(`lookup jobs: a poll answered ${poll.status}: ${(await poll.text()).slice(0, 200)}`);
              await new Promise((r) => setTimeout(r, 1_000));
              continue;
            }
            job = (await poll.json()) as typeof job;
            if (job.status === "completed" || job.status === "cancelled" || job.status === "paused") break;
            if (performance.now() - started > JOB_LIMIT_MS) throw new Error(`the job did not complete within ${JOB_LIMIT_MS / 60_000} min (${job.processed}/${job.total})`);
            if (polls % 15 === 0) log(`lookup jobs: ${job.status}, ${job.processed}/${job.total} after ${((performance.now() - started) / 1000).toFixed(0)} s`);
            await new Promise((r) => setTimeout(r, 1_000));
          }
          const wallMs = performance.now() - started;
          log(`lookup jobs: ${job.status} in ${(wallMs / 1000).toFixed(1)} s`);
          const ledger = await db.$client.execute({ sql: "select count(*) as n from credit_ledger where request_id like ?", args: [`${id}:%`] });
          // When each turn (one transaction of up to 500 lines) answered its lines: whether turns slow down as the job goes on.
          const turnTimes = (await db.$client.execute({ sql: "select max(answered_at) as at from lookup_job_lines where job_id = ? and turn is not null group by turn order by at", args: [id] })).rows.map((r) => Number(r.at));
          const gaps = turnTimes.slice(1).map((t, i) => t - turnTimes[i]!);
          const tenth = Math.max(1, Math.floor(gaps.length / 10));
          let verdicts: LookupJobRun["verdicts"];
          if (verifyEmails) {
            // The CSV download's last column, lookup_email_verdicts: "<address> <verdict>; …".
            const download = await (await fetch(`${base}/v1/lookup_jobs/${id}/results?format=csv&status=found`, { headers })).text();
            verdicts = { valid: 0, invalid: 0, other: 0 };
            for (const row of download.split("\r\n").slice(1).filter(Boolean)) {
              for (const m of row.slice(row.lastIndexOf(",") + 1).matchAll(/\S+ (\w+)(;|$)/g)) {
                if (m[1] === "valid") verdicts.valid++;
                else if (m[1] === "invalid") verdicts.invalid++;
                else verdicts.other++;
              }
            }
          }
          return { turns: turnTimes.length, firstTurnsGapMs: gaps.length > 0 ? median(gaps.slice(0, tenth)) : 0, lastTurnsGapMs: gaps.length > 0 ? median(gaps.slice(-tenth)) : 0, lines: lines.length, verifyEmails, createMs, wallMs, status: job.status, counts: job.counts, charged: job.credits.charged, ledgerRows: Number(ledger.rows[0]!.n), workerdBeforeMiB, workerdPeakMiB, verdicts };
        } finally {
          clearInterval(sampler);
        }
      };
      const job = await runJob(false);
      const floor = await lookupFloor(db.$client, identifiers);
      log(`lookup jobs: the floor (plain set-based SQL) ${(floor.ms / 1000).toFixed(2)} s, ${floor.found} found, ${floor.charged} charged`);
      const verified = await runJob(true);
      db.$client.close();
      return {
        people: imported.inserted,
        importS: imported.elapsed_ms / 1000,
        rounds: opts.rounds,
        batch: { latenciesMs: batchLatencies, found: batchFound },
        singles: { latenciesMs: singleLatencies, wallsMs: singleWalls, found: singleFound, unavailable },
        job,
        floor,
        verified,
      };
    } finally {
      await stack.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function lookupJobsMarkdown(r: LookupJobsResult): string {
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const batchP50 = median(r.batch.latenciesMs);
  const singleP50 = median(r.singles.latenciesMs);
  const perIdBatch = batchP50 / BATCH;
  const perIdSingle = median(r.singles.wallsMs) / BATCH;
  const jobRow = (j: LookupJobRun) => {
    const found = j.counts.found ?? 0;
    return [
      `| Lines | ${j.lines.toLocaleString("en")}: ${Object.entries(j.counts).map(([k, v]) => `${k} ${v.toLocaleString("en")}`).join(", ")} (status \`${j.status}\`) |`,
      `| Upload and creation (POST answered 202) | ${(j.createMs / 1000).toFixed(2)} s |`,
      `| Turns | ${j.turns.toLocaleString("en")}; median time from one turn's answers to the next: ${j.firstTurnsGapMs.toFixed(0)} ms over the first tenth, ${j.lastTurnsGapMs.toFixed(0)} ms over the last |`,
      `| POST to \`${j.status}\` | ${(j.wallMs / 1000).toFixed(1)} s (${Math.round(j.lines / (j.wallMs / 1000)).toLocaleString("en")} lines/s) |`,
      `| Credits charged | ${j.charged.toLocaleString("en")} (${j.ledgerRows.toLocaleString("en")} ledger rows) for ${found.toLocaleString("en")} lines found: ${j.charged === found && j.ledgerRows === found ? "equal" : "**not equal**"} |`,
      `| workerd resident set (its processes summed) | ${j.workerdBeforeMiB.toFixed(0)} MiB before, at most ${j.workerdPeakMiB.toFixed(0)} MiB during: **+${(j.workerdPeakMiB - j.workerdBeforeMiB).toFixed(0)} MiB** |`,
      ...(j.verdicts ? [`| Verdicts in the results | ${j.verdicts.valid.toLocaleString("en")} valid, ${j.verdicts.invalid.toLocaleString("en")} invalid, ${j.verdicts.other.toLocaleString("en")} other (half the people's mailboxes exist) |`] : []),
    ].join("\n");
  };
  return [
    `A database of ${r.people.toLocaleString("en")} people (${Number.isNaN(r.importS) ? "a file imported by an earlier run" : `imported in ${r.importS.toFixed(1)} s`} before the stack started, by the CLI's import).`,
    "",
    `### Batch against single calls (${r.rounds} rounds of ${BATCH} identifiers, half found)`,
    "",
    "| | p50 | p90 | max | Time per identifier |",
    "|---|---:|---:|---:|---:|",
    `| \`POST /v1/people/bulk\`, ${BATCH} items | ${batchP50.toFixed(1)} ms | ${percentile(sorted(r.batch.latenciesMs), 90).toFixed(1)} ms | ${Math.max(...r.batch.latenciesMs).toFixed(1)} ms | ${perIdBatch.toFixed(2)} ms |`,
    `| \`GET /v1/people\`, ${BATCH} calls at ${IN_FLIGHT} in flight | ${singleP50.toFixed(1)} ms | ${percentile(sorted(r.singles.latenciesMs), 90).toFixed(1)} ms | ${Math.max(...r.singles.latenciesMs).toFixed(1)} ms | ${perIdSingle.toFixed(2)} ms (median wall time of the ${BATCH} / ${BATCH}) |`,
    "",
    `The batch's p50 is **${(batchP50 / singleP50).toFixed(2)}×** a single call's (goal: at most 3×); per identifier the batch is ${(perIdSingle / perIdBatch).toFixed(1)}× faster than single calls at ${IN_FLIGHT} in flight ` +
      `and ${((singleP50 * BATCH) / batchP50).toFixed(0)}× faster than single calls one at a time. Found: ${r.batch.found} of ${r.rounds * BATCH} in the batches, ${r.singles.found} in the single calls${r.singles.unavailable ? ` (**${r.singles.unavailable} calls answered 503**, not in the figures)` : ""}.`,
    "",
    `### A lookup job of ${r.job.lines.toLocaleString("en")} lines`,
    "",
    "| Figure | Value |",
    "|---|---|",
    jobRow(r.job),
    `| The floor: the same lines matched, answered and charged by plain set-based SQL on the same libSQL server | ${(r.floor.ms / 1000).toFixed(2)} s (${r.floor.found.toLocaleString("en")} found, ${r.floor.charged.toLocaleString("en")} charged): the job is **${(r.job.wallMs / r.floor.ms).toFixed(1)}×** it (goal: at most 3× and 15 s) |`,
    "",
    `### ${r.verified.lines === r.job.lines ? "The same job" : `The first ${r.verified.lines.toLocaleString("en")} lines`} with \`verify_emails=true\``,
    "",
    "| Figure | Value |",
    "|---|---|",
    jobRow(r.verified),
  ].join("\n");
}

export function lookupJobsArgs(plan: { people: number; lines: number; rounds: number; domains: number; delayMs: number }): string[] {
  return ["--people", String(plan.people), "--lines", String(plan.lines), "--rounds", String(plan.rounds), "--domains", String(plan.domains), "--delay-ms", String(plan.delayMs)];
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      people: { type: "string", default: "1000000" },
      lines: { type: "string", default: "100000" },
      rounds: { type: "string", default: "10" },
      domains: { type: "string", default: "1000" },
      "delay-ms": { type: "string", default: "5" },
      // Lines of the verify_emails job (the first of the list): its probing is the verification engine's, measured elsewhere.
      "verify-lines": { type: "string" },
      // A file to keep the imported people in and reuse on the next run with the same --people (minutes saved at a million).
      "database-cache": { type: "string" },
    },
  });
  const result = await runLookupJobs({
    people: Number(values.people),
    lines: Number(values.lines),
    verifyLines: values["verify-lines"] === undefined ? undefined : Number(values["verify-lines"]),
    rounds: Number(values.rounds),
    domains: Number(values.domains),
    delayMs: Number(values["delay-ms"]),
    cache: values["database-cache"],
    log: (m) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${m}\n`),
  });
  console.log(lookupJobsMarkdown(result));
  process.stderr.write(`${JSON.stringify(result, (k, v) => (k === "latenciesMs" || k === "wallsMs" ? undefined : v))}\n`);
}

/** The section in one sentence, for the report's headline. */
export function lookupJobsHeadline(r: LookupJobsResult): string {
  const ratio = median(r.batch.latenciesMs) / median(r.singles.latenciesMs);
  const job = (j: LookupJobRun) => `${(j.wallMs / 1000).toFixed(1)} s, workerd +${(j.workerdPeakMiB - j.workerdBeforeMiB).toFixed(0)} MiB, ${j.charged.toLocaleString("en")} credits for ${(j.counts.found ?? 0).toLocaleString("en")} lines found`;
  return `a batch of ${BATCH} takes ${ratio.toFixed(2)}× a single call's p50 (goal at most 3×); a ${r.job.lines.toLocaleString("en")}-line lookup job over ${r.people.toLocaleString("en")} people ${job(r.job)}, ${(r.job.wallMs / r.floor.ms).toFixed(1)}× its set-based floor of ${(r.floor.ms / 1000).toFixed(2)} s; with verify_emails (${r.verified.lines.toLocaleString("en")} lines) ${job(r.verified)}`;
}
