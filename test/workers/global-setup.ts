import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startLibsqlServer } from "../../scripts/libsql-server.ts";
import { applyMigrations, openDatabase } from "../../scripts/lib/database.ts";
import { startDohServer } from "../fixtures/doh-server.ts";
import { testZone } from "../fixtures/test-zone.ts";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    dohUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "edge-tests-"));
  const db = await startLibsqlServer({ file: join(dir, "test.db") });
  const migrator = openDatabase(db.url);
  await applyMigrations(migrator);
  migrator.$client.close();
  const doh = await startDohServer({ zone: testZone });

  project.provide("databaseUrl", db.url);
  project.provide("dohUrl", doh.url);

  return async () => {
    await doh.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  };
}
