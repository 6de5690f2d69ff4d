import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { createServer } from "node:net";
import http from "node:http";
import type { TestProject } from "vitest/node";
import { startLibsqlServer } from "../../scripts/libsql-server.ts";
import { applyMigrations, openDatabase } from "../../scripts/lib/database.ts";
import { startDatabaseProxy } from "../fixtures/database-proxy.ts";
import { startDohServer } from "../fixtures/doh-server.ts";
import { startProbeFixture } from "../fixtures/probe-fixture.ts";
import { startTestMailServers } from "../fixtures/test-mail.ts";
import { startWebhookReceiver } from "../fixtures/webhook-receiver.ts";
import { testZone } from "../fixtures/test-zone.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_PROBE_SECRET, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { loadProbeConfig } from "../../probe/config.ts";
import { startProbeServer } from "../../probe/http/server.ts";

// Loaded by Node itself: the module runner that loads this file would transform wrangler's 15 MB bundle first (about 20 s).
const { unstable_startWorker } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");

export const PROBE_SECRET = TEST_PROBE_SECRET;

// The real servers the Worker talks to over loopback: libSQL (real engine), DoH (RFC 8484 wire
// format from a zone the tests control), the real probe service with SMTP servers behind the
// zone's MX hosts, and a probe stand-in that misbehaves on request (hangs, 500s, junk). Besides the
// copy of the Worker the tests run in their own isolate, the same Worker is served over HTTP the way
// `wrangler dev` serves it, for behaviour that only shows on a real connection (chunked bodies).
// For database faults: a proxy in front of the libSQL server that hangs, resets or fails on
// request, and an address where nothing listens.
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "edge-tests-"));
  const db = await startLibsqlServer({ file: join(dir, "test.db") });
  const migrator = openDatabase(db.url, db.authToken);
  await applyMigrations(migrator);
  migrator.$client.close();
  const faultyDb = await startDatabaseProxy(db.url);
  // A second server on the same file, used by nothing but the round-trip counts, so they are exact.
  const countedDb = await startLibsqlServer({ file: join(dir, "test.db"), authToken: db.authToken });
  const doh = await startDohServer({ zone: testZone });
  const mail = await startTestMailServers();
  const probe = await startProbeServer(
    loadProbeConfig({
      PORT: "0",
      PROBE_LISTEN_HOST: "127.0.0.1",
      PROBE_SECRET,
      PROBE_HELO_NAME: "probe.edge-tests.example",
      PROBE_SMTP_PORT: String(mail.port),
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      // Every test shares this probe and its few loopback mail servers for the whole run: the
      // unknown-recipient budget (which would hold their lists for an hour) is tested on its own,
      // against a defending server, in test/node/probe-harvest.test.ts.
      PROBE_DESTINATION_UNKNOWN_RATIO: "1",
      PROBE_DESTINATION_UNKNOWN_PER_HOUR: "0",
      // A block at a self-hosted server lasts 2 s here, so a test sees lines wait for it and complete when it lifts.
      PROBE_RECEIVER_POLICY: JSON.stringify({ "self-hosted": { blockSeconds: 2 } }),
    }),
  );
  const probeFixture = await startProbeFixture(PROBE_SECRET);
  const webhooks = await startWebhookReceiver();
  // What the fixture mail servers saw, for tests that count RCPTs at the receiver (GET /?host=127.0.0.x).
  const mailStats = http.createServer((req, res) => {
    const host = new URL(req.url ?? "/", "http://x").searchParams.get("host") ?? "";
    const record = mail.records.get(host);
    res.writeHead(record ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(record ? { connections: record.connections, rcptTo: record.rcptTo } : { error: "no such server" }));
  });
  await new Promise<void>((resolve) => mailStats.listen(0, "127.0.0.1", resolve));
  const plain = (value: string) => ({ type: "plain_text" as const, value });
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_SEND_METRICS = "false";
  const httpWorker = await unstable_startWorker({
    config: fileURLToPath(new URL("../../wrangler.toml", import.meta.url)),
    bindings: {
      DATABASE_URL: plain(db.url),
      DATABASE_AUTH_TOKEN: plain(db.authToken),
      DOH_URL: plain(doh.url),
      PROBE_URL: plain(probe.url),
      PROBE_SECRET: plain(PROBE_SECRET),
      WEBHOOK_SECRET_KEY: plain(TEST_WEBHOOK_SECRET_KEY),
      FEEDBACK_HASH_KEY: plain(TEST_FEEDBACK_HASH_KEY),
    },
    dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, watch: false, logLevel: "warn" },
  });
  await httpWorker.ready;

  project.provide("databaseUrl", db.url);
  project.provide("databaseAuthToken", db.authToken);
  project.provide("faultyDatabaseUrl", faultyDb.url);
  project.provide("countedDatabaseUrl", countedDb.url);
  project.provide("refusedDatabaseUrl", `http://127.0.0.1:${await closedPort()}`);
  project.provide("dohUrl", doh.url);
  project.provide("probeUrl", probe.url);
  project.provide("probeFixtureUrl", probeFixture.url);
  project.provide("probeSecret", PROBE_SECRET);
  project.provide("workerHttpUrl", (await httpWorker.url).href);
  project.provide("webhookUrl", webhooks.url);
  project.provide("mailStatsUrl", `http://127.0.0.1:${(mailStats.address() as { port: number }).port}`);

  return async () => {
    await httpWorker.dispose();
    await webhooks.close();
    await new Promise<void>((resolve) => mailStats.close(() => resolve()));
    await probeFixture.close();
    await probe.close();
    await mail.close();
    await doh.close();
    await faultyDb.close();
    await countedDb.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  };
}

/** A port nothing listens on: bound once to get a free one, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
