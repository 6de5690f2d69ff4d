import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startLibsqlServer } from "../../scripts/libsql-server.ts";
import { applyMigrations, openDatabase } from "../../scripts/lib/database.ts";
import { startDohServer } from "../fixtures/doh-server.ts";
import { startProbeFixture } from "../fixtures/probe-fixture.ts";
import { startTestMailServers } from "../fixtures/test-mail.ts";
import { testZone } from "../fixtures/test-zone.ts";
import { loadProbeConfig } from "../../probe/config.ts";
import { startProbeServer } from "../../probe/server.ts";

export const PROBE_SECRET = "test-probe-secret-0123456789";

// The real servers the Worker talks to over loopback: libSQL (real engine), DoH (RFC 8484 wire
// format from a zone the tests control), the real probe service with SMTP servers behind the
// zone's MX hosts, and a probe stand-in that misbehaves on request (hangs, 500s, junk).
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "edge-tests-"));
  const db = await startLibsqlServer({ file: join(dir, "test.db") });
  const migrator = openDatabase(db.url);
  await applyMigrations(migrator);
  migrator.$client.close();
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
    }),
  );
  const probeFixture = await startProbeFixture(PROBE_SECRET);

  project.provide("databaseUrl", db.url);
  project.provide("dohUrl", doh.url);
  project.provide("probeUrl", probe.url);
  project.provide("probeFixtureUrl", probeFixture.url);
  project.provide("probeSecret", PROBE_SECRET);

  return async () => {
    await probeFixture.close();
    await probe.close();
    await mail.close();
    await doh.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  };
}
