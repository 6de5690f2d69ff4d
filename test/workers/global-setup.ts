import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startLibsqlServer } from "../../scripts/libsql-server.ts";
import { applyMigrations, openDatabase } from "../../scripts/lib/database.ts";
import { startDohServer } from "../fixtures/doh-server.ts";
import { startProbeFixture } from "../fixtures/probe-fixture.ts";
import { testZone } from "../fixtures/test-zone.ts";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    dohUrl: string;
    probeUrl: string;
    probeSecret: string;
  }
}

export const PROBE_SECRET = "test-probe-secret-0123456789";

// The real servers the Worker talks to over loopback: libSQL (real engine), DoH (RFC 8484 wire
// format from a zone the tests control) and a probe speaking the shared contract.
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "edge-tests-"));
  const db = await startLibsqlServer({ file: join(dir, "test.db") });
  const migrator = openDatabase(db.url);
  await applyMigrations(migrator);
  migrator.$client.close();
  const doh = await startDohServer({ zone: testZone });
  const probe = await startProbeFixture(PROBE_SECRET);

  project.provide("databaseUrl", db.url);
  project.provide("dohUrl", doh.url);
  project.provide("probeUrl", probe.url);
  project.provide("probeSecret", PROBE_SECRET);

  return async () => {
    await probe.close();
    await doh.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  };
}
