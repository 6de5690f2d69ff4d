/**
 * A bulk job of 1,000 addresses through the whole local stack as `npm start` runs it (the Worker
 * under wrangler dev with its queue and cron, the probe, the libSQL server) against a real Postfix
 * with its default error limits, and real DNS (unbound behind dnsdist). In the middle of the job
 * every process of the stack is killed at once (SIGKILL, no goodbye) and started again on the same
 * database: the job must still complete, with every line answered right, exactly once.
 *
 * Two things make it take about a minute. The lines the killed consumer had claimed wait out their
 * lease (30 s) before anyone may take them. And Postfix paces us: every transaction in which it
 * accepts a recipient takes one of its in_flow_delay tokens, which only delivered mail gives back,
 * so once they are used up each such transaction waits a second. Lines still waiting their turn at
 * the probe after 30 s come back unasked and go into the job's next message.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, createApiKey } from "../../scripts/admin/accounts.ts";
import { startLibsqlServer, type LibsqlServer } from "../../scripts/libsql-server.ts";
import { applyMigrations, openDatabase } from "../../scripts/lib/database.ts";
import { EmailVerificationResult } from "../../shared/api.ts";
import { JobResultsPage, VerificationJob } from "../../shared/jobs.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";
import { preflight } from "./preflight.ts";
import { startDohStack, type RunningDohStack } from "./servers/doh.ts";
import { startPostfix, type RunningPostfix } from "./servers/postfix.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const MX = "127.0.0.5";
const DOMAIN = "bulkjob.test";
const KNOWN = Array.from({ length: 500 }, (_, i) => `user${i}@${DOMAIN}`);
const EMAILS = KNOWN.flatMap((known, i) => [known, `nobody${i}@${DOMAIN}`]);

let postfix: RunningPostfix | undefined;
let doh: RunningDohStack | undefined;
let database: LibsqlServer | undefined;
let stack: ChildProcess | undefined;
let workDir = "";
let token = "";
let api = "";
/** The settings file `npm start` writes for its Worker (it holds the run's PROBE_SECRET); a killed stack cannot remove its own. */
let stackEnvFile = "";
/** The stacks' last lines of output (wrangler at info: one line per request and per queue delivery), shown when the test fails. */
const output: string[] = [];
const OUTPUT_LINES = 300;
const outputTail = () => output.join("").split("\n").slice(-OUTPUT_LINES).join("\n");

/** Restarted on the same port with the same token, as sqld keeps its own across a restart. */
async function startDatabase(restart?: { port: number; authToken: string }): Promise<LibsqlServer> {
  return startLibsqlServer({ file: join(workDir, "jobs.db"), ...restart });
}

/** `npm start`'s script with the test's database and resolver; resolves once the Worker answers. */
async function startStack(): Promise<void> {
  const edgePort = await freePortOn(["127.0.0.1"]);
  const probePort = await freePortOn(["127.0.0.1"]);
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      DATABASE_URL: database!.url,
      DATABASE_AUTH_TOKEN: database!.authToken,
      DOH_URL: doh!.url,
      EDGE_PORT: String(edgePort),
      PROBE_PORT: String(probePort),
      PROBE_HELO_NAME: "probe1.interop.example",
      // Postfix listens on loopback, which a production probe refuses to dial.
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      // A crash in the middle of a 1,000-line job, half unknown at one Postfix: the unknown-recipient
      // budget would stretch it to hours (200 an hour); it is tested in test/node/probe-harvest.test.ts.
      PROBE_DESTINATION_UNKNOWN_RATIO: "1",
      PROBE_DESTINATION_UNKNOWN_PER_HOUR: "0",
      JOB_STALL_SECONDS: "2",
      JOB_RETRY_DELAY_SECONDS: "2",
      WRANGLER_LOG: "info",
    },
  });
  stack = child;
  await new Promise<void>((resolve, reject) => {
    let startup = "";
    const onData = (d: Buffer) => {
      keepOutput(d.toString());
      startup += d.toString();
      if (/Demo key:/.test(startup)) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`npm start exited (${code}) before it was ready:\n${startup.slice(-3000)}`)));
  });
  api = `http://127.0.0.1:${edgePort}`;
  stackEnvFile = join(root, ".data", `worker-${edgePort}.env`);
}

/** The process and all its descendants (wrangler dev runs in a process group of its own). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

/** Every process of the stack at once (the libSQL server aside), with no chance to finish anything. */
async function killStack(): Promise<void> {
  if (!stack?.pid || stack.exitCode !== null) return;
  const exited = new Promise((resolve) => stack!.once("exit", resolve));
  const tree = processTree(stack.pid);
  for (const pid of tree) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await exited;
  // Until they are all gone, a Worker of the old stack could still take the job's work.
  const alive = (pid: number) => {
    try {
      return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "); // a zombie is gone but for its exit status
    } catch {
      return false;
    }
  };
  for (const pid of tree) while (alive(pid)) await new Promise((r) => setTimeout(r, 20));
  rmSync(stackEnvFile, { force: true });
}

const auth = () => ({ authorization: `Bearer ${token}` });

function keepOutput(text: string): void {
  output.push(text);
  if (output.length > OUTPUT_LINES * 2) output.splice(0, output.length - OUTPUT_LINES);
}

/**
 * The job as GET answers it. A request that gets no answer in 15 s is asked again (as a client would),
 * twice; a third failure fails the test with what the stack printed last.
 */
async function job(id: string): Promise<VerificationJob> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${api}/v1/email_verification_jobs/${id}`, { headers: auth(), signal: AbortSignal.timeout(15_000) });
      return VerificationJob.parse(await res.json());
    } catch (err) {
      if (attempt === 3) throw new Error(`GET job ${id} failed ${attempt} times: ${String(err)}\n--- the stack's last output ---\n${outputTail()}`);
    }
  }
}

beforeAll(async () => {
  await preflight();
  workDir = await mkdtemp(join(tmpdir(), "interop-jobs-"));
  [postfix, doh, database] = await Promise.all([
    startPostfix({ address: MX, hostname: `mx.${DOMAIN}`, mailboxes: KNOWN, tls: true }),
    startDohStack({ [DOMAIN]: { MX: [{ preference: 10, exchange: `mx.${DOMAIN}` }] }, [`mx.${DOMAIN}`]: { A: [MX] } }),
    startDatabase(),
  ]);
  const db = openDatabase(database.url, database.authToken);
  await applyMigrations(db);
  const account = await createAccount(db, "interop jobs", 0);
  token = (await createApiKey(db, account.id)).token;
  db.$client.close();
  await startStack();
});

afterAll(async () => {
  await killStack();
  await Promise.all([postfix?.close(), doh?.close(), database?.close()]);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe("a bulk job through the whole stack, against Postfix", () => {
  it("1,000 addresses, the stack killed and restarted in the middle: completed, every line right, exactly once", { timeout: 240_000 }, async () => {
    const res = await fetch(`${api}/v1/email_verification_jobs`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json", "idempotency-key": "interop-1000" },
      body: JSON.stringify({ email_addresses: EMAILS, smtp_timeout: 5 }),
    });
    expect(res.status).toBe(202);
    const { id } = VerificationJob.parse(await res.json());

    // Let it get going, then take everything down mid-job.
    const started = Date.now();
    let before = await job(id);
    while (before.processed < 100 && Date.now() - started < 60_000) {
      await new Promise((r) => setTimeout(r, 50));
      before = await job(id);
    }
    expect(before.processed).toBeGreaterThan(0);
    expect(before.processed).toBeLessThan(EMAILS.length);
    await killStack();
    const restart = { port: database!.port, authToken: database!.authToken };
    await database!.close();
    database = await startDatabase(restart);
    await startStack();

    // The stack fires its cron at start and every minute; fire it more often here, to save the wait.
    let done = await job(id);
    const deadline = Date.now() + 150_000;
    while (done.status !== "completed" && Date.now() < deadline) {
      void fetch(`${api}/cdn-cgi/local/scheduled`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.body?.cancel(), () => {});
      await new Promise((r) => setTimeout(r, 2_000));
      done = await job(id);
    }
    expect(done, done.status === "completed" ? "" : `--- the stack's last output ---\n${outputTail()}`).toMatchObject({
      status: "completed",
      total: 1000,
      processed: 1000,
      counts: { valid: 500, risky: 0, invalid: 500 },
    });

    const results: EmailVerificationResult[] = [];
    let cursor = "";
    for (;;) {
      const page = JobResultsPage.parse(await (await fetch(`${api}/v1/email_verification_jobs/${id}/results?limit=1000${cursor}`, { headers: auth() })).json());
      results.push(...page.results);
      if (page.next_cursor === null) break;
      cursor = `&cursor=${page.next_cursor}`;
    }
    expect(results.map((r) => r.email)).toEqual(EMAILS);
    const wrong = results.filter((r, i) => r.classification !== (i % 2 === 0 ? "valid" : "invalid"));
    expect(wrong.map((r) => `${r.email}: ${r.classification} ${r.details?.smtp_outcome}`)).toEqual([]);

    // Each line became done once: the counters, moved only by that transition, add up to the lines.
    const db = openDatabase(database!.url, database!.authToken);
    const [row] = (await db.$client.execute({ sql: "select count(*) as n, sum(state = 'done') as done from verification_job_items where job_id = ?", args: [id] })).rows;
    db.$client.close();
    expect(row).toMatchObject({ n: 1000, done: 1000 });

    const log = await readFile(postfix!.logFile, "utf8");
    expect(log).not.toMatch(/too many errors/);
  });
});
