/**
 * The whole verification path with real parts only: the Worker under `wrangler dev` asks real DNS
 * (unbound behind dnsdist, RFC 8484) for the MX, calls the probe (the bundle `npm run build:probe`
 * makes, as a separate process, as it runs in its container), and the probe talks SMTP to a real
 * Postfix. The assertions are on the public API's answer.
 */
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
// @ts-expect-error: a plain ES module without types, shared with the Dockerfile and npm run build:probe
import { buildProbe } from "../../probe/build.mjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, createApiKey } from "../../scripts/admin/accounts.ts";
import { startLibsqlServer } from "../../scripts/libsql-server.ts";
import { applyMigrations, openDatabase } from "../../scripts/lib/database.ts";
import { EmailVerificationResult } from "../../shared/api.ts";
import { ERRORS, WARNINGS } from "../../shared/email/verdict.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";
import { preflight } from "./preflight.ts";
import { startDohStack, type InteropZone, type RunningDohStack } from "./servers/doh.ts";
import { startPostfix, type RunningPostfix } from "./servers/postfix.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const MX = "127.0.0.2";
/** A second Postfix whose rule refuses our client by a blocklist: our block there is that server's alone. */
const BLOCKING_MX = "127.0.0.3";
const NOTHING_LISTENS = "127.0.0.9";
const SECRET = TEST_PROBE_SECRET;

const zone: InteropZone = {
  "known.test": { MX: [{ preference: 10, exchange: "mx.known.test" }] },
  "mx.known.test": { A: [MX] },
  "catchall.test": { MX: [{ preference: 10, exchange: "mx.known.test" }] },
  "blocked.test": { MX: [{ preference: 10, exchange: "mx.blocked.test" }] },
  "mx.blocked.test": { A: [BLOCKING_MX] },
  "aonly.test": { A: [MX] },
  "nullmx.test": { MX: [{ preference: 0, exchange: "." }] },
  "nomail.test": {},
  // The preferred MX refuses connections; the probe must move on to the backup.
  "failover.test": {
    MX: [
      { preference: 10, exchange: "mx-dead.failover.test" },
      { preference: 20, exchange: "mx.known.test" },
    ],
  },
  "mx-dead.failover.test": { A: [NOTHING_LISTENS] },
};

let postfix: RunningPostfix | undefined;
let blockingPostfix: RunningPostfix | undefined;
let doh: RunningDohStack | undefined;
let database: Awaited<ReturnType<typeof startLibsqlServer>> | undefined;
let workDir = "";
let metricsUrl = "";
const children: ChildProcess[] = [];
let api = "";
let token = "";

/** Starts a child process and resolves once `ready` matches its output; rejects if it exits first. */
function startChild(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = "";
    const onData = (d: Buffer) => {
      output += d.toString();
      if (ready.test(output)) resolve(child);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${command} exited (${code}) before it was ready:\n${output.slice(-2000)}`)));
  });
}

async function waitForHealth(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer within 60 s`);
}

beforeAll(async () => {
  await preflight();
  workDir = await mkdtemp(join(tmpdir(), "interop-full-"));
  [postfix, blockingPostfix, doh, database] = await Promise.all([
    startPostfix({
      address: MX,
      hostname: "mx.known.test",
      mailboxes: ["alice@known.test", "full@known.test", "grey@known.test", "ana@aonly.test", "ana@failover.test"],
      catchAllDomains: ["catchall.test"],
      recipientRules: {
        "grey@known.test": "450 4.2.0 Greylisted, see http://postgrey.schweikert.ch/help/known.test.html",
        "full@known.test": "552 5.2.2 Mailbox full",
      },
      tls: true,
    }),
    startPostfix({
      address: BLOCKING_MX,
      hostname: "mx.blocked.test",
      catchAllDomains: ["blocked.test"],
      recipientRules: { "blocked.test": "554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org" },
      tls: true,
    }),
    startDohStack(zone),
    startLibsqlServer({ file: join(workDir, "interop.db") }),
  ]);
  const db = openDatabase(database.url, database.authToken);
  await applyMigrations(db);
  const account = await createAccount(db, "interop", 0);
  token = (await createApiKey(db, account.id)).token;
  db.$client.close();

  // The probe exactly as it ships: the bundle, run by plain node, configured by its environment.
  const bundle = join(workDir, "probe.mjs");
  await buildProbe(bundle, { logLevel: "silent" });
  const probePort = await freePortOn(["127.0.0.1"]);
  metricsUrl = `http://127.0.0.1:${await freePortOn(["127.0.0.1"])}/metrics`;
  await startChild(
    process.execPath,
    [bundle],
    {
      PORT: String(probePort),
      PROBE_LISTEN_HOST: "127.0.0.1",
      PROBE_SECRET: SECRET,
      PROBE_HELO_NAME: "probe1.interop.example",
      // Postfix listens on loopback, which a production probe refuses to dial.
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      PROBE_CONNECT_TIMEOUT_MS: "1000",
      PROBE_METRICS_LISTEN: new URL(metricsUrl).host,
    },
    /probe listening/,
  );

  const edgePort = await freePortOn(["127.0.0.1"]);
  const vars = { DATABASE_URL: database.url, DATABASE_AUTH_TOKEN: database.authToken, DOH_URL: doh.url, PROBE_URL: `http://127.0.0.1:${probePort}`, PROBE_SECRET: SECRET };
  // In a file, as npm start passes them: a --var would put the database token on a command line every user can read (ps).
  const envFile = join(workDir, "worker.env");
  await writeFile(envFile, Object.entries(vars).map(([name, value]) => `${name}=${JSON.stringify(value)}\n`).join(""), { mode: 0o600 });
  const args = ["dev", "--ip", "127.0.0.1", "--port", String(edgePort), "--log-level", "warn", "--persist-to", join(workDir, "wrangler"), "--env-file", envFile];
  const wrangler = spawn(join(root, "node_modules/.bin/wrangler"), args, {
    cwd: root,
    env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "ignore", "inherit"],
    detached: true,
  });
  children.push(wrangler);
  api = `http://127.0.0.1:${edgePort}`;
  await waitForHealth(`${api}/healthz`);
});

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
    }
  }
  await Promise.all([postfix?.close(), blockingPostfix?.close(), doh?.close(), database?.close()]);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

async function verify(email: string) {
  const res = await fetch(`${api}/v1/email_verifications?${new URLSearchParams({ email_address: email, smtp_timeout: "5" })}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  return EmailVerificationResult.strict().parse(await res.json());
}

describe("Worker -> DoH (unbound + dnsdist) -> probe -> Postfix", () => {
  it("a real mailbox is valid, 95 points, over STARTTLS, and the domain is not catch-all", async () => {
    const r = await verify("alice@known.test");
    expect(r).toMatchObject({ classification: "valid", valid: true, score: 95, errors: [], warnings: [] });
    expect(r.checks).toMatchObject({ syntax: true, mx_record: true, smtp_deliverable: true, accepts_any_email: false });
    expect(r.score_details).toMatchObject({ syntax_valid: true, mx_verified: true, smtp_verified: true, has_warnings: false });
    expect(r.details).toMatchObject({ smtp_host: "mx.known.test", smtp_outcome: "accepted", smtp_tls: true, mx_hosts: [{ host: "mx.known.test", preference: 10 }] });
    expect(r.details!.smtp_reply).toEqual({ code: 250, enhanced_code: "2.1.5", text: "Ok" });
  });

  it("Postfix's 550 5.1.1 user unknown makes the address invalid", async () => {
    const r = await verify("bob@known.test");
    expect(r).toMatchObject({ classification: "invalid", valid: false, score: 0, errors: [ERRORS.mailboxNotFound] });
    expect(r.checks.smtp_deliverable).toBe(false);
    expect(r.details!.smtp_reply).toMatchObject({ code: 550, enhanced_code: "5.1.1" });
  });

  it("a catch-all domain is risky with 70 points (20 + 40 + 15 - 5)", async () => {
    const r = await verify("whoever@catchall.test");
    expect(r).toMatchObject({ classification: "risky", valid: true, score: 70, warnings: [WARNINGS.catchAll] });
    expect(r.checks).toMatchObject({ smtp_deliverable: true, accepts_any_email: true });
    expect(r.score_details).toMatchObject({ accepts_any_email: true, smtp_verified: true });
  });

  it("a greylisting 450 is an SMTP assumption: risky, 65 points, never invalid", async () => {
    const r = await verify("grey@known.test");
    expect(r).toMatchObject({ classification: "risky", valid: true, score: 65, warnings: [WARNINGS.smtpAssumed] });
    expect(r.checks.smtp_deliverable).toBeNull();
    expect(r.score_details.smtp_failed_assumption).toBe(true);
    expect(r.details).toMatchObject({ smtp_outcome: "temporary_failure", smtp_reply: { code: 450, enhanced_code: "4.2.0" } });
  });

  it("a 554 blocklist rule naming our client is our block, never an answer about the mailbox: risky, probe_refused (docs/probe.md \"Blocks\")", async () => {
    const r = await verify("someone@blocked.test");
    expect(r).toMatchObject({ classification: "risky", valid: true, warnings: [WARNINGS.probeRefused] });
    expect(r.details).toMatchObject({ smtp_outcome: "blocked" });
    // Asked again, the probe does not go back to a server that refused it: the same answer, with nothing sent.
    const again = await verify("other@blocked.test");
    expect(again).toMatchObject({ classification: "risky", warnings: [WARNINGS.probeRefused] });
    expect(again.details).toMatchObject({ smtp_outcome: "blocked" });
    // Postfix's own log: the first address was refused there; the second never reached it.
    const deadline = Date.now() + 10_000;
    let log = "";
    while (!log.includes("someone@blocked.test") && Date.now() < deadline) {
      log = await readFile(blockingPostfix!.logFile, "utf8").catch(() => "");
      if (!log.includes("someone@blocked.test")) await new Promise((r) => setTimeout(r, 200));
    }
    expect(log).toContain("someone@blocked.test");
    expect(log).not.toContain("other@blocked.test");
  });

  it("552 5.2.2 is a full mailbox: risky with its own warning", async () => {
    const r = await verify("full@known.test");
    expect(r).toMatchObject({ classification: "risky", valid: true, score: 65, warnings: [WARNINGS.mailboxFull] });
    expect(r.details!.smtp_outcome).toBe("mailbox_full");
  });

  it("the probe fails over from a refusing MX to the backup", async () => {
    const r = await verify("ana@failover.test");
    expect(r).toMatchObject({ classification: "valid", score: 95 });
    expect(r.details).toMatchObject({
      smtp_host: "mx.known.test",
      mx_hosts: [
        { host: "mx-dead.failover.test", preference: 10 },
        { host: "mx.known.test", preference: 20 },
      ],
    });
  });

  it("an A record without MX is an implicit MX: usable, with a warning", async () => {
    const r = await verify("ana@aonly.test");
    expect(r).toMatchObject({ classification: "risky", valid: true, score: 90, warnings: [WARNINGS.implicitMx] });
    expect(r.checks.smtp_deliverable).toBe(true);
    expect(r.details!.implicit_mx).toBe(true);
  });

  it.each([
    ["ana@nullmx.test", ERRORS.nullMx],
    ["ana@nope.test", ERRORS.nxdomain],
    ["ana@nomail.test", ERRORS.noMail],
  ])("%s is invalid from DNS alone", async (email, error) => {
    const r = await verify(email);
    expect(r).toMatchObject({ classification: "invalid", valid: false, score: 0, errors: [error] });
    expect(r.details!.smtp_outcome).toBeNull();
  });

  it("the shipped probe's /metrics counted what it did, by outcome and RCPT reply class", async () => {
    const text = await (await fetch(metricsUrl)).text();
    const sample = (name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
    expect(sample('probe_checks_total{outcome="accepted"}')).toBeGreaterThanOrEqual(1);
    expect(sample('probe_checks_total{outcome="mailbox_not_found"}')).toBeGreaterThanOrEqual(1);
    expect(sample('probe_rcpt_replies_total{class="5xx"}')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^probe_sessions_open \d+$/m);
  });
});
