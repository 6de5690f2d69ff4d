/**
 * `npm start`'s `.data/`: owner-only permissions whatever the umask or an older version left, and the
 * libSQL server token it leaves there for the admin CLI.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openAdminDatabase } from "../../scripts/admin/database.ts";
import { localServerTokenFile } from "../../scripts/lib/database.ts";
import { ensurePrivateDatabaseFile, ensurePrivateDir, writePrivateFile } from "../../scripts/lib/private-files.ts";
import { startLibsqlServer, type LibsqlServer } from "../../scripts/libsql-server.ts";

let root: string;
const modeOf = (path: string) => statSync(path).mode & 0o777;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "local-data-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("owner-only .data", () => {
  it("creates the folder 0700 and the database file 0600, whatever the umask", () => {
    const dataDir = join(root, ".data");
    const previous = process.umask(0o000);
    try {
      expect(ensurePrivateDir(dataDir)).toEqual([]);
      expect(ensurePrivateDatabaseFile(join(dataDir, "dev.db"))).toEqual([]);
    } finally {
      process.umask(previous);
    }
    expect(modeOf(dataDir)).toBe(0o700);
    expect(modeOf(join(dataDir, "dev.db"))).toBe(0o600);
  });

  it("narrows a folder and database files an older version left readable by others, and says so", () => {
    const dataDir = join(root, ".data");
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const file = join(dataDir, "dev.db");
    for (const path of [file, `${file}-wal`, `${file}-shm`]) {
      writeFileSync(path, "");
      chmodSync(path, 0o644);
    }
    expect(ensurePrivateDir(dataDir)).toEqual([`${dataDir} was 0755, now 0700`]);
    expect(ensurePrivateDatabaseFile(file)).toEqual([`${file} was 0644, now 0600`, `${file}-wal was 0644, now 0600`, `${file}-shm was 0644, now 0600`]);
    for (const path of [file, `${file}-wal`, `${file}-shm`]) expect(modeOf(path)).toBe(0o600);
    expect(modeOf(dataDir)).toBe(0o700);
    // Already private: nothing to say.
    expect([...ensurePrivateDir(dataDir), ...ensurePrivateDatabaseFile(file)]).toEqual([]);
  });

  it("writes a secret into a new 0600 file, replacing one an older version left wider", () => {
    const file = join(root, "libsql-8080.token");
    writeFileSync(file, "old");
    chmodSync(file, 0o644);
    writePrivateFile(file, "new-token\n");
    expect(modeOf(file)).toBe(0o600);
    expect(readFileSync(file, "utf8")).toBe("new-token\n");
  });
});

describe("the admin CLI's database", () => {
  let server: LibsqlServer;
  beforeEach(async () => {
    server = await startLibsqlServer({ file: join(root, "served.db") });
  });
  afterEach(() => server.close());

  it("finds the token npm start left for its libSQL server", async () => {
    writePrivateFile(localServerTokenFile(server.port, root), `${server.authToken}\n`);
    const { db } = await openAdminDatabase({ DATABASE_URL: server.url }, root);
    try {
      expect((await db.$client.execute("select 1 as one")).rows[0]!.one).toBe(1);
    } finally {
      db.$client.close();
    }
  });

  it("prefers DATABASE_AUTH_TOKEN, and without either the server refuses it", async () => {
    writePrivateFile(localServerTokenFile(server.port, root), "stale-token\n");
    const given = await openAdminDatabase({ DATABASE_URL: server.url, DATABASE_AUTH_TOKEN: server.authToken }, root);
    expect((await given.db.$client.execute("select 1 as one")).rows[0]!.one).toBe(1);
    given.db.$client.close();
    const stale = await openAdminDatabase({ DATABASE_URL: server.url }, root);
    await expect(stale.db.$client.execute("select 1")).rejects.toThrow(/401|Unauthorized/);
    stale.db.$client.close();
  });

  it("creates its local file database owner-only when it runs first", async () => {
    const dataDir = join(root, "fresh", ".data");
    const { db, url, narrowed } = await openAdminDatabase({}, dataDir);
    db.$client.close();
    expect(url).toBe(`file:${join(dataDir, "dev.db")}`);
    expect(narrowed).toEqual([]);
    expect(modeOf(dataDir)).toBe(0o700);
    expect(modeOf(join(dataDir, "dev.db"))).toBe(0o600);
  });
});
