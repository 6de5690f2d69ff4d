/**
 * Child processes for the benchmark runner: start one and wait for a line that says it is ready, run
 * one to completion and keep its output, and stop every one still running when the runner is
 * interrupted, so a Ctrl-C never leaves a server listening. Also the CPU time of live processes, read
 * from /proc, for the reports.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";

export const root = fileURLToPath(new URL("..", import.meta.url));

const running = new Set<ChildProcess>();

function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    const exits = [...running].map((child) => new Promise((resolve) => child.once("exit", resolve)));
    for (const child of running) child.kill("SIGTERM");
    // npm start needs a few seconds to stop wrangler; do not wait forever for a stuck child.
    setTimeout(() => process.exit(130), 10_000).unref();
    void Promise.all(exits).then(() => process.exit(130));
  });
}

/** A process's peak resident set (VmHWM) in MiB; 0 once it is gone. */
export async function vmHwmMiB(pid: number): Promise<number> {
  try {
    return Number(/VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Starts a long-running child (in `cwd`, the checkout by default) and resolves once its stdout matches `ready`; stderr is kept for errors. */
export function startChild(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; ready: RegExp; cwd?: string }): Promise<{ child: ChildProcess; stdout: string }> {
  const child = track(spawn(command, args, { cwd: options.cwd ?? root, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] }));
  let stdout = "";
  let stderr = "";
  // BENCH_CHILD_LOG=<file>: every child's output appended there too, to see what a stack did during a pass.
  const log = process.env.BENCH_CHILD_LOG;
  if (log) for (const s of [child.stdout!, child.stderr!]) s.on("data", (d: Buffer) => appendFileSync(log, d));
  child.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (options.ready.test(stdout)) resolve({ child, stdout });
    });
    child.once("exit", (code) => reject(new Error(`${command} ${args.join(" ")} exited (${code}) before it was ready:\n${stderr}`)));
  });
}

/** The counters of a fixture process that prints one JSON line of them on SIGUSR2. */
export function childCounters<T>(child: ChildProcess): Promise<T> {
  const line = new Promise<string>((resolve) => {
    const onData = (d: Buffer) => {
      const text = d.toString();
      if (text.includes("{")) {
        child.stdout!.off("data", onData);
        resolve(text.slice(text.indexOf("{")).split("\n")[0]!);
      }
    };
    child.stdout!.on("data", onData);
  });
  child.kill("SIGUSR2");
  return line.then((text) => JSON.parse(text) as T);
}

/** SIGTERM, then wait for the exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** Runs a command to completion; rejects with its stderr when it fails. */
export function runChild(command: string, args: string[], options: { env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const child = track(spawn(command, args, { cwd: root, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] }));
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => (code === 0 ? resolve(stdout) : reject(new Error(`${command} ${args.join(" ")} exited (${code}):\n${stderr}`))));
  });
}

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux architecture Node runs on

/** CPU seconds (user + system) a live process has used so far, from /proc/PID/stat; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    // Fields after the parenthesised command name, which may itself contain spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** A process and all its live descendants, each with its command line. */
export function processTree(pid: number): { pid: number; command: string }[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited while we looked
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) for (const [child, parent] of parentOf) if (parent === tree[i]) tree.push(child);
  return tree.map((p) => {
    let command = "";
    try {
      command = readFileSync(`/proc/${p}/cmdline`, "utf8").replace(/\0/g, " ").trim();
    } catch {
      // exited while we looked
    }
    return { pid: p, command };
  });
}

/**
 * A libSQL server (scripts/libsql-server.ts, a process of its own) on a new, migrated file in a
 * temporary folder: a benchmark's `npm start` gets it as DATABASE_URL, so it starts from an empty
 * database whatever a developer's `.data/` holds (a job left unfinished there would otherwise be
 * requeued by the stack's cron and run ahead of the benchmark's own). `authToken` goes with it, as
 * DATABASE_AUTH_TOKEN.
 */
export async function startFreshDatabase(opts: { file?: string } = {}): Promise<{ url: string; authToken: string; child: ChildProcess; close(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "bench-db-"));
  // `file`: a database a benchmark filled beforehand (bench/bulk-lookups.ts's million people); migrated here too, and removed on close.
  const file = opts.file ?? join(dir, "bench.db");
  const authToken = randomBytes(32).toString("base64url");
  const { child, stdout } = await startChild(process.execPath, ["--import", "tsx", join(root, "scripts/libsql-server.ts"), "--file", file, "--port", "0"], {
    env: { LIBSQL_AUTH_TOKEN: authToken },
    ready: /libSQL server on (\S+)/,
  });
  const url = /libSQL server on (\S+)/.exec(stdout)![1]!;
  const db = openDatabase(url, authToken);
  await applyMigrations(db);
  db.$client.close();
  return {
    url,
    authToken,
    child,
    close: async () => {
      await stopChild(child);
      await rm(dir, { recursive: true, force: true });
      if (opts.file) for (const suffix of ["", "-wal", "-shm"]) await rm(`${opts.file}${suffix}`, { force: true });
    },
  };
}

/** Hrana requests the libSQL server (scripts/libsql-server.ts) has served so far: the difference across a request is its database round trips. */
export async function databaseRequests(url: string, authToken: string): Promise<number> {
  return ((await (await fetch(`${url}/stats`, { headers: { authorization: `Bearer ${authToken}` } })).json()) as { requests: number }).requests;
}

/**
 * The whole local stack as `npm start` runs it (the Worker and its queue under `wrangler dev`, the
 * probe, a fresh libSQL server), with test/fixtures/mta-fixture.ts on 0.0.0.0:25 (it answers on every
 * 127.x.y.z; port 25 needs root) answering each command after `delayMs`, and test/fixtures/doh-server.ts
 * serving `zone`: what the bulk-job benchmarks run against. `stop()` ends all of it.
 */
type JobsStackOptions = { zone: unknown; delayMs: number; edgePort: number; probePort: number; env?: NodeJS.ProcessEnv; databaseFile?: string };
export type JobsStack<M> = Omit<Awaited<ReturnType<typeof startStack>>, "mta"> & { mta: M };

/** The whole local stack beside a fixture mail server on port 25 (`mtaArgs`: its flags), or none (null: the caller runs its own, e.g. a real Postfix). */
export function startJobsStack(opts: JobsStackOptions & { mtaArgs?: string[] }): Promise<JobsStack<ChildProcess>>;
export function startJobsStack(opts: JobsStackOptions & { mtaArgs: null }): Promise<JobsStack<null>>;
export function startJobsStack(opts: JobsStackOptions & { mtaArgs?: string[] | null }): Promise<JobsStack<ChildProcess | null>> {
  return startStack(opts);
}

async function startStack(opts: JobsStackOptions & { mtaArgs?: string[] | null }) {
  const dir = await mkdtemp(join(tmpdir(), "bench-stack-"));
  const zoneFile = join(dir, "zone.json");
  await writeFile(zoneFile, JSON.stringify(opts.zone));
  const mta =
    opts.mtaArgs === null
      ? null
      : await startChild(
          process.execPath,
          ["--import", "tsx", join(root, "test/fixtures/mta-fixture.ts"), "--host", "0.0.0.0", "--port", "25", "--delay-ms", String(opts.delayMs), ...(opts.mtaArgs ?? [])],
          { ready: /listening/ },
        );
  const doh = await startChild(process.execPath, ["--import", "tsx", join(root, "test/fixtures/doh-server.ts"), "--zone", zoneFile, "--port", "0"], { ready: /listening on \S+/ });
  const dohUrl = /listening on (\S+)/.exec(doh.stdout)![1]!;
  // Settings from the caller's environment would change what is measured.
  const inherited = Object.fromEntries(Object.keys(process.env).filter((k) => /^(PROBE_|DATABASE_|JOB_|EMAIL_|ACCESS_LOG_)/.test(k)).map((k) => [k, undefined]));
  const database = await startFreshDatabase({ file: opts.databaseFile });
  const { child: stack } = await startChild(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    env: {
      ...inherited,
      DATABASE_URL: database.url,
      DATABASE_AUTH_TOKEN: database.authToken,
      EDGE_PORT: String(opts.edgePort),
      PROBE_PORT: String(opts.probePort),
      DOH_URL: dohUrl,
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      // The fixture mail server does not defend against harvesting, and these benches measure
      // throughput: the unknown-recipient budget is off unless the caller sets it (bench/harvest.ts).
      PROBE_DESTINATION_UNKNOWN_RATIO: "1",
      PROBE_DESTINATION_UNKNOWN_PER_HOUR: "0",
      WRANGLER_LOG: "warn",
      ...opts.env,
    },
    ready: /Demo key:\s+\S+\s/,
  });
  return {
    mta: mta?.child ?? null,
    doh: doh.child,
    stack,
    database,
    /** Each process's peak resident set (VmHWM), MiB, by part of the stack. */
    async peakMemory(): Promise<Record<string, number>> {
      const peak: Record<string, number> = {};
      for (const p of processTree(stack.pid!)) {
        const part = p.pid === stack.pid ? "npm start process (probe)" : p.command.includes("workerd") ? "workerd" : "wrangler (Node)";
        peak[part] = Math.max(peak[part] ?? 0, await vmHwmMiB(p.pid));
      }
      peak["libSQL server"] = await vmHwmMiB(database.child.pid!);
      if (mta) peak["mail server fixture"] = await vmHwmMiB(mta.child.pid!);
      peak["DoH fixture"] = await vmHwmMiB(doh.child.pid!);
      return peak;
    },
    async stop() {
      await stopChild(stack);
      await database.close();
      await Promise.all([mta && stopChild(mta.child), stopChild(doh.child)]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
