/**
 * `npm start`: the whole stack on loopback with no accounts and no internet.
 *   1. a libSQL HTTP server on a file in .data/ (unless DATABASE_URL points elsewhere), with a token
 *      made for this run, which the Worker gets and .data/libsql-<port>.token keeps for the admin CLI,
 *   2. migrations, and a demo account, key and sample profiles seeded once,
 *   3. the SMTP probe on 127.0.0.1:8788 with a secret generated for this run, and its metrics listener
 *      (GET /metrics and /status on PROBE_METRICS_LISTEN, 127.0.0.1:9788), as probe/main.ts runs it,
 *   4. the Worker under `wrangler dev` on 127.0.0.1:8787,
 * then prints the console's URL with a one-time owner link for the demo account (docs/console.md), the demo
 * key and a curl line, and stops every child on Ctrl-C or SIGTERM.
 * Configuration (docs/operations.md "Configuration") comes from the environment and overrides the defaults.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAccount, createApiKey } from "./admin/accounts.ts";
import { accounts } from "../edge/db/schema.ts";
import { createInvite } from "../edge/identity/store/invites.ts";
import { ConfigError, loadConfig, type Bindings } from "../edge/env.ts";
import { startLibsqlServer } from "./libsql-server.ts";
import {
  applyMigrations,
  feedbackHashKey,
  LOCAL_DATA_DIR,
  LOCAL_DATABASE_FILE,
  localFeedbackHashKeyFile,
  localServerTokenFile,
  localWebhookSecretKeyFile,
  openDatabase,
  webhookSecretKey,
} from "./lib/database.ts";
import { ensurePrivateDatabaseFile, ensurePrivateDir, writePrivateFile } from "./lib/private-files.ts";
import { startLocalProbe } from "./lib/local-probe.ts";
import { seedSamplePeople } from "./lib/samples.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const dataDir = LOCAL_DATA_DIR;
const demoKeyFile = join(dataDir, "demo-key.json");
const host = "127.0.0.1";
const edgePort = Number(process.env.EDGE_PORT ?? 8787);
const libsqlPort = Number(process.env.LIBSQL_PORT ?? 8080);

const log = (msg: string) => process.stderr.write(`[start] ${msg}\n`);
const stoppers: (() => Promise<void> | void)[] = [];
let stopping = false;

async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    for (const stop of stoppers.reverse()) {
      try {
        await stop();
      } catch (err) {
        log(`error while stopping: ${String(err)}`);
      }
    }
  }
  process.exit(code);
}
process.on("SIGINT", () => void stopAll(0));
process.on("SIGTERM", () => void stopAll(0));
// npm does not always pass SIGTERM on to its script; if whoever started us is gone, stop too.
const parentAtStart = process.ppid;
setInterval(() => {
  if (process.ppid !== parentAtStart) void stopAll(0);
}, 500).unref();

/** `identity` names the database for the saved demo key: the file for the local one, whatever port serves it. */
async function startDatabase(): Promise<{ url: string; authToken?: string; identity: string }> {
  if (process.env.DATABASE_URL) {
    log(`using DATABASE_URL ${new URL(process.env.DATABASE_URL).origin}`);
    return { url: process.env.DATABASE_URL, authToken: process.env.DATABASE_AUTH_TOKEN, identity: process.env.DATABASE_URL };
  }
  reportNarrowed(ensurePrivateDatabaseFile(LOCAL_DATABASE_FILE));
  const server = await startLibsqlServer({ file: LOCAL_DATABASE_FILE, host, port: libsqlPort });
  stoppers.push(() => server.close());
  const tokenFile = localServerTokenFile(server.port);
  writePrivateFile(tokenFile, `${server.authToken}\n`);
  stoppers.push(() => rmSync(tokenFile, { force: true }));
  log(`libSQL server on ${server.url} (file ${LOCAL_DATABASE_FILE}; its token, made for this run, is in ${tokenFile})`);
  return { url: server.url, authToken: server.authToken, identity: `file:${LOCAL_DATABASE_FILE}` };
}

function reportNarrowed(narrowed: string[]): void {
  for (const line of narrowed) log(`narrowed to owner-only access (it holds the database and this run's secrets): ${line}`);
}

/** Seeds the demo account once; its token is kept in .data/ (git-ignored) so every start can print it. */
async function ensureDemo(url: string, authToken: string | undefined, identity: string): Promise<{ token: string; accountId: string }> {
  const db = openDatabase(url, authToken);
  try {
    await applyMigrations(db);
    if (existsSync(demoKeyFile)) {
      const saved = JSON.parse(readFileSync(demoKeyFile, "utf8")) as { token: string; account: string; database: string };
      const known = await db.select({ id: accounts.id }).from(accounts).limit(1);
      if (saved.database === identity && known.length > 0) return { token: saved.token, accountId: saved.account };
    }
    const account = await createAccount(db, "demo", 1000);
    const key = await createApiKey(db, account.id, { name: "Demo key" });
    await seedSamplePeople(db);
    writePrivateFile(demoKeyFile, JSON.stringify({ token: key.token, account: account.id, database: identity }));
    log(`seeded demo account ${account.id} with 1000 credits and sample profiles`);
    return { token: key.token, accountId: account.id };
  } finally {
    db.$client.close();
  }
}

function startWorker(vars: Record<string, string | undefined>): ChildProcess {
  // Settings go through a private env file, not --var: command lines are visible to every user
  // on the machine (ps), and PROBE_SECRET and DATABASE_AUTH_TOKEN are secrets.
  const envFile = join(dataDir, `worker-${edgePort}.env`);
  const lines = Object.entries(vars).flatMap(([name, value]) => (value ? [`${name}=${JSON.stringify(value)}`] : []));
  writePrivateFile(envFile, lines.join("\n") + "\n");
  stoppers.push(() => rmSync(envFile, { force: true }));
  // Log level info unless WRANGLER_LOG (wrangler's own setting) says otherwise: the Worker's access
  // lines (console.info, docs/operations.md "Logs") reach this terminal, beside wrangler's own line per request
  // (method, path and status, never the query string). WRANGLER_LOG=warn keeps only problems.
  const logLevel = process.env.WRANGLER_LOG || "info";
  const args = ["dev", "--ip", host, "--port", String(edgePort), "--log-level", logLevel, "--env-file", envFile];
  // The DevTools inspector wrangler dev opens (9229, or the next free port, unless EDGE_INSPECTOR_PORT says which).
  if (process.env.EDGE_INSPECTOR_PORT) args.push("--inspector-port", process.env.EDGE_INSPECTOR_PORT);
  const child = spawn(join(root, "node_modules/.bin/wrangler"), args, {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
    detached: true,
    env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
  });
  stoppers.push(
    () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        // wrangler runs workerd as its own child: signal the whole group.
        process.kill(-child.pid!, "SIGTERM");
        setTimeout(() => {
          if (child.exitCode === null) process.kill(-child.pid!, "SIGKILL");
        }, 5000).unref();
      }),
  );
  child.once("exit", (code) => {
    if (!stopping) {
      log(`wrangler dev exited (${code}); stopping`);
      void stopAll(code ?? 1);
    }
  });
  return child;
}

async function waitForHealth(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the Worker did not answer ${url} within ${timeoutMs} ms`);
}

/**
 * A key the local database needs for good: the environment's, else the one kept in .data/ beside it, made on the first
 * run. WEBHOOK_SECRET_KEY seals the webhook secrets (a new key would leave them unreadable); FEEDBACK_HASH_KEY names
 * addresses in bounce feedback (a new key would leave every report unfound).
 */
function ensureLocalKey(existing: string | undefined, file: string): string {
  if (existing) return existing;
  const key = randomBytes(32).toString("base64");
  writePrivateFile(file, `${key}\n`);
  return key;
}
const ensureWebhookSecretKey = () => ensureLocalKey(webhookSecretKey(process.env, dataDir), localWebhookSecretKeyFile(dataDir));
const ensureFeedbackHashKey = () => ensureLocalKey(feedbackHashKey(process.env, dataDir), localFeedbackHashKeyFile(dataDir));

/** The Worker's settings: the environment's, and what this run makes (the database's and the probe's URLs and secrets). */
function workerVars(made: { databaseUrl: string; databaseAuthToken?: string; probeUrl?: string; probeSecret?: string; webhookSecretKey: string; feedbackHashKey: string }): Record<string, string | undefined> {
  return {
    DATABASE_URL: made.databaseUrl,
    DATABASE_AUTH_TOKEN: made.databaseAuthToken,
    DATABASE_TIMEOUT_MS: process.env.DATABASE_TIMEOUT_MS,
    DOH_URL: process.env.DOH_URL,
    PROBE_URL: process.env.PROBE_URL ?? made.probeUrl,
    PROBE_SECRET: made.probeSecret ?? process.env.PROBE_SECRET,
    LOOKUP_COST: process.env.LOOKUP_COST,
    JOB_MAX_RUNNING: process.env.JOB_MAX_RUNNING,
    // A local try should not wait five minutes for a greylisted (or, offline, unresolvable) address.
    JOB_RETRY_DELAY_SECONDS: process.env.JOB_RETRY_DELAY_SECONDS ?? "30",
    JOB_STALL_SECONDS: process.env.JOB_STALL_SECONDS,
    JOB_RECEIVER_WAIT_MAX_SECONDS: process.env.JOB_RECEIVER_WAIT_MAX_SECONDS,
    JOB_RETENTION_SECONDS: process.env.JOB_RETENTION_SECONDS,
    EMAIL_MAX_AGE_SECONDS: process.env.EMAIL_MAX_AGE_SECONDS,
    EMAIL_RECHECK_SECONDS: process.env.EMAIL_RECHECK_SECONDS,
    EMAIL_REFRESH_BATCH: process.env.EMAIL_REFRESH_BATCH,
    ACCESS_LOG_RETENTION_SECONDS: process.env.ACCESS_LOG_RETENTION_SECONDS,
    AUDIT_RETENTION_SECONDS: process.env.AUDIT_RETENTION_SECONDS,
    CALLBACK_ALLOW_PRIVATE_TARGETS: process.env.CALLBACK_ALLOW_PRIVATE_TARGETS,
    WEBHOOK_SECRET_KEY: made.webhookSecretKey,
    FEEDBACK_HASH_KEY: made.feedbackHashKey,
    FEEDBACK_RETENTION_SECONDS: process.env.FEEDBACK_RETENTION_SECONDS,
    FEEDBACK_REVERIFY_PER_HOUR: process.env.FEEDBACK_REVERIFY_PER_HOUR,
  };
}

/**
 * The Worker's settings checked by the Worker's own parser (edge/env.ts) before anything starts: a bad one stops
 * `npm start` at once with the Worker's message, rather than a stack whose every request answers 500. What this
 * run would make is stood in for by values of the same form.
 */
function checkWorkerSettings(probeSecret: string): void {
  const vars = workerVars({
    databaseUrl: process.env.DATABASE_URL ?? `http://${host}:${libsqlPort}`,
    probeUrl: `http://${host}:${process.env.PROBE_PORT ?? 8788}`,
    probeSecret: process.env.PROBE_URL === undefined ? probeSecret : undefined,
    webhookSecretKey: webhookSecretKey(process.env, dataDir) ?? `${"A".repeat(43)}=`,
    feedbackHashKey: feedbackHashKey(process.env, dataDir) ?? `${"A".repeat(43)}=`,
  });
  loadConfig(Object.fromEntries(Object.entries(vars).filter(([, value]) => value !== undefined)) as unknown as Bindings);
}

async function main() {
  const started = Date.now();
  const probeSecret = process.env.PROBE_SECRET || randomBytes(32).toString("base64url");
  checkWorkerSettings(probeSecret);
  reportNarrowed(ensurePrivateDir(dataDir));
  const database = await startDatabase();
  const demo = await ensureDemo(database.url, database.authToken, database.identity);
  const token = demo.token;
  const extra = await startExtras(probeSecret);
  startWorker(
    workerVars({ databaseUrl: database.url, databaseAuthToken: database.authToken, probeUrl: extra.probeUrl, probeSecret: extra.probeSecret, webhookSecretKey: ensureWebhookSecretKey(), feedbackHashKey: ensureFeedbackHashKey() }),
  );
  const base = `http://${host}:${edgePort}`;
  await waitForHealth(`${base}/healthz`, 60_000);
  runCron(base);
  log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // Passkeys are bound to a host name, and browsers treat http://localhost (not 127.0.0.1) as secure.
  const consoleBase = `http://localhost:${edgePort}`;
  const ownerLink = await ownerInvite(database.url, database.authToken, demo.accountId, consoleBase);
  process.stdout.write(
    [
      "",
      `Console:   ${consoleBase}/console`,
      `Owner link (one use, makes the first passkey of the demo account): ${ownerLink}`,
      `API:       ${base}/v1  (OpenAPI: ${base}/v1/openapi.json)`,
      `Demo key:  ${token}`,
      "",
      "Try:",
      `  curl -s -H 'Authorization: Bearer ${token}' '${base}/v1/people?profnet_id=1001'`,
      `  curl -s -H 'Authorization: Bearer ${token}' '${base}/v1/email_verifications?email_address=ana@example.com'`,
      "",
      "Ctrl-C stops everything.",
      "",
    ].join("\n"),
  );
}

/** A fresh one-time invite for the demo account's owner, by the invite maker the API's own invites use. */
async function ownerInvite(url: string, authToken: string | undefined, accountId: string, origin: string): Promise<string> {
  const db = openDatabase(url, authToken);
  try {
    const invite = await createInvite(db, { accountId, role: "owner", createdBy: "operator", origin });
    if (!invite) throw new Error(`the demo account ${accountId} is missing from the database`);
    return invite.url;
  } finally {
    db.$client.close();
  }
}

/**
 * wrangler dev does not fire cron triggers by itself: the Worker's cron (which puts stalled job work
 * back on the queue, e.g. after this stack was stopped in the middle of a job) is fired here, once
 * now and then every minute, through the local endpoint wrangler dev provides for it.
 */
function runCron(base: string): void {
  const fire = () => void fetch(`${base}/cdn-cgi/local/scheduled`).then((r) => r.body?.cancel(), (err: unknown) => log(`cron trigger failed: ${String(err)}`));
  fire();
  setInterval(fire, 60_000).unref();
}

/**
 * The SMTP probe, in this process, unless PROBE_URL is set (to another probe, or empty for none).
 * Its secret is generated per start unless PROBE_SECRET is given; the Worker gets the same one.
 * It dials real port-25 servers, so on a machine without port-25 egress its answers are
 * "connection_failed" (an SMTP assumption), as they would be for a probe that cannot get out.
 */
async function startExtras(probeSecret: string): Promise<{ probeUrl?: string; probeSecret?: string }> {
  if (process.env.PROBE_URL !== undefined) return {};
  const probe = await startLocalProbe(process.env, host, probeSecret);
  stoppers.push(() => probe.close());
  log(`probe on ${probe.url} (HELO ${probe.service.config.heloName}), metrics on ${probe.metricsUrl ?? "nowhere (PROBE_METRICS_LISTEN=off)"}`);
  return { probeUrl: probe.url, probeSecret };
}

main().catch((err) => {
  // A setting the Worker would refuse: its own message, and nothing was started.
  log(err instanceof ConfigError ? err.message : `failed: ${err instanceof Error ? err.message : String(err)}`);
  void stopAll(1);
});
