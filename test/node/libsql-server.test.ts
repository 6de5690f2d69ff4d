/** The local libSQL server, tested against the real clients the Worker and the CLI use. */
import { createClient as createNodeClient, LibsqlError, type Client } from "@libsql/client";
import { createClient as createWebClient } from "@libsql/client/web";
import Database from "libsql";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startLibsqlServer, type LibsqlServer } from "../../scripts/libsql-server.ts";

let dir: string;
let server: LibsqlServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "libsql-server-"));
  server = await startLibsqlServer({ file: join(dir, "t.db") });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const clients: [string, () => Client][] = [
  ["@libsql/client", () => createNodeClient({ url: server.url })],
  ["@libsql/client/web", () => createWebClient({ url: server.url })],
];

describe.each(clients)("%s against the local server", (_name, makeClient) => {
  let c: Client;
  beforeEach(async () => {
    c = makeClient();
    await c.execute("drop table if exists t");
    await c.execute("create table t (id integer primary key, n integer, s text unique, b blob, f real)");
  });

  it("round-trips every value type with positional and named arguments", async () => {
    const big = 9007199254740991n;
    const ins = await c.execute({
      sql: "insert into t (n, s, b, f) values (?, ?, ?, ?) returning id",
      args: [big, "héllo ✓ 日本", new Uint8Array([0, 1, 255]), 1.25],
    });
    expect(ins.rowsAffected).toBe(1);
    expect(ins.lastInsertRowid).toBe(1n);
    await c.execute({ sql: "insert into t (n, s) values (:n, :s)", args: { n: -42, s: null } });
    const rs = await c.execute({ sql: "select n, s, b, f from t where id = $id", args: { id: 1 } });
    expect(rs.columns).toEqual(["n", "s", "b", "f"]);
    expect(rs.columnTypes).toEqual(["INTEGER", "TEXT", "BLOB", "REAL"]);
    const row = rs.rows[0]!;
    expect(row.n).toBe(Number(big));
    expect(row.s).toBe("héllo ✓ 日本");
    expect([...new Uint8Array(row.b as ArrayBuffer)]).toEqual([0, 1, 255]);
    expect(row.f).toBe(1.25);
    const second = await c.execute("select n, s, b from t where id = 2");
    expect(second.rows[0]).toMatchObject({ n: -42, s: null, b: null });
  });

  it("runs a write batch atomically: one failing statement rolls back the whole batch", async () => {
    await c.execute("insert into t (s) values ('taken')");
    await expect(
      c.batch(["insert into t (s) values ('new')", "insert into t (s) values ('taken')"], "write"),
    ).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_CONSTRAINT/) });
    expect((await c.execute("select count(*) as n from t")).rows[0]!.n).toBe(1);
    const ok = await c.batch(["insert into t (s) values ('a')", "select count(*) as n from t"], "write");
    expect(ok[1]!.rows[0]!.n).toBe(2);
  });

  it("commits and rolls back interactive transactions", async () => {
    const tx = await c.transaction("write");
    await tx.execute("insert into t (s) values ('rolled back')");
    expect((await tx.execute("select count(*) as n from t")).rows[0]!.n).toBe(1);
    await tx.rollback();
    expect((await c.execute("select count(*) as n from t")).rows[0]!.n).toBe(0);

    const tx2 = await c.transaction("write");
    await tx2.execute("insert into t (s) values ('kept')");
    await tx2.commit();
    expect((await c.execute("select s from t")).rows.map((r) => r.s)).toEqual(["kept"]);
  });

  it("keeps concurrent transactions from two clients apart", async () => {
    const other = makeClient();
    const [a, b] = await Promise.all([c.transaction("write"), other.transaction("write")].map((p) => p.catch((e) => e)));
    // Both can open; the second writer waits for the first rather than interleaving.
    const results = await Promise.all(
      [a, b].map(async (tx, i) => {
        if (tx instanceof Error) throw tx;
        await tx.execute({ sql: "insert into t (s) values (?)", args: [`tx${i}`] });
        await tx.commit();
      }),
    ).then(
      () => "ok",
      (e) => e,
    );
    expect(results).toBe("ok");
    expect((await c.execute("select s from t order by s")).rows.map((r) => r.s)).toEqual(["tx0", "tx1"]);
    other.close();
  });

  it("surfaces constraint and syntax errors as LibsqlError with SQLite codes", async () => {
    await c.execute("insert into t (s) values ('x')");
    const dup = await c.execute("insert into t (s) values ('x')").catch((e) => e);
    expect(dup).toBeInstanceOf(LibsqlError);
    expect(dup.code).toMatch(/^SQLITE_CONSTRAINT/);
    const bad = await c.execute("selec 1").catch((e) => e);
    expect(bad).toBeInstanceOf(LibsqlError);
    expect(bad.code).toBe("SQLITE_ERROR");
    expect(bad.message).toMatch(/syntax error/);
  });

  it("runs executeMultiple scripts", async () => {
    await c.executeMultiple("insert into t (s) values ('m1'); insert into t (s) values ('m2');");
    expect((await c.execute("select count(*) as n from t")).rows[0]!.n).toBe(2);
  });
});

describe("server edges", () => {
  it("requires the auth token when one is configured", async () => {
    const secured = await startLibsqlServer({ file: join(dir, "auth.db"), authToken: "s3cret-token" });
    try {
      const anonymous = createNodeClient({ url: secured.url });
      await expect(anonymous.execute("select 1")).rejects.toThrow();
      const wrong = createWebClient({ url: secured.url, authToken: "wrong" });
      await expect(wrong.execute("select 1")).rejects.toThrow();
      const right = createWebClient({ url: secured.url, authToken: "s3cret-token" });
      expect((await right.execute("select 1 as one")).rows[0]!.one).toBe(1);
    } finally {
      await secured.close();
    }
  });

  it("answers 413 for an oversized body and 404 for unknown paths", async () => {
    const big = await fetch(`${server.url}/v3/pipeline`, { method: "POST", body: "x".repeat(11 * 1024 * 1024) });
    expect(big.status).toBe(413);
    expect((await fetch(`${server.url}/v3-protobuf`)).status).toBe(404);
    expect((await fetch(`${server.url}/v3`)).status).toBe(200);
  });

  it("rejects an unknown baton", async () => {
    const res = await fetch(`${server.url}/v3/pipeline`, {
      method: "POST",
      body: JSON.stringify({ baton: "nope", requests: [{ type: "close" }] }),
    });
    expect(res.status).toBe(400);
  });

  it("closes, refusing new connections", async () => {
    const s = await startLibsqlServer({ file: join(dir, "close.db") });
    await s.close();
    await expect(fetch(`${s.url}/v3`)).rejects.toThrow();
  });
});

describe("locking, as sqld does it", () => {
  // A second server on its own file, so these tests own every lock on it.
  let locking: LibsqlServer;
  let file: string;
  beforeAll(async () => {
    file = join(dir, "locking.db");
    locking = await startLibsqlServer({ file, lockWaitMs: 300 });
    const setup = createNodeClient({ url: locking.url });
    await setup.execute("create table t (id integer primary key, s text)");
    setup.close();
  });
  afterAll(() => locking.close());

  /** Another process's connection holding the write lock, as the admin CLI's file connection does. */
  function holdWriteLockElsewhere() {
    const other = new Database(file);
    other.exec("BEGIN IMMEDIATE");
    return () => {
      other.exec("COMMIT");
      other.close();
    };
  }

  it.each(clients.map(([name]) => name))("%s: a write that gave up on a lock held elsewhere leaves the server working", async (name) => {
    const c = name === "@libsql/client" ? createNodeClient({ url: locking.url }) : createWebClient({ url: locking.url });
    const release = holdWriteLockElsewhere();
    const refused = await c.execute("insert into t (s) values ('refused') returning id").catch((e) => e);
    expect(refused).toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
    release();
    // Before: the refused statement stayed half-run on its pooled connection, and every COMMIT there failed
    // with "cannot commit transaction - SQL statements in progress".
    for (let i = 0; i < 10; i++) {
      const [inserted] = await c.batch(["insert into t (s) values ('after') returning id", "select count(*) as n from t"], "deferred");
      expect(inserted!.rows).toHaveLength(1);
      await c.batch(["select count(*) from t"], "read");
    }
    const tx = await c.transaction("write");
    await tx.execute("insert into t (s) values ('tx')");
    await tx.commit();
    c.close();
  });

  it("a write waits for a lock held elsewhere instead of failing", async () => {
    const c = createWebClient({ url: locking.url });
    const release = holdWriteLockElsewhere();
    const write = c.execute("insert into t (s) values ('waited')");
    setTimeout(release, 50);
    await expect(write).resolves.toMatchObject({ rowsAffected: 1 });
  });

  it("reads are answered while another client's write transaction is open", async () => {
    const writer = createNodeClient({ url: locking.url });
    const reader = createWebClient({ url: locking.url });
    const tx = await writer.transaction("write");
    await tx.execute("insert into t (s) values ('uncommitted')");
    const seen = await reader.execute("select count(*) as n from t where s = 'uncommitted'");
    expect(seen.rows[0]!.n).toBe(0);
    await tx.commit();
    expect((await reader.execute("select count(*) as n from t where s = 'uncommitted'")).rows[0]!.n).toBe(1);
    writer.close();
  });

  it("serializes concurrent writers (batches, deferred batches that write, transactions) without refusing any", async () => {
    const before = Number((await createWebClient({ url: locking.url }).execute("select count(*) as n from t")).rows[0]!.n);
    const writers = Array.from({ length: 40 }, async (_, i) => {
      const c = i % 2 ? createWebClient({ url: locking.url }) : createNodeClient({ url: locking.url });
      if (i % 4 === 0) {
        const tx = await c.transaction("write");
        await tx.execute({ sql: "insert into t (s) values (?)", args: [`tx${i}`] });
        await tx.execute("select count(*) from t");
        await tx.commit();
      } else {
        await c.batch([{ sql: "insert into t (s) values (?) returning id", args: [`b${i}`] }, "select count(*) from t"], i % 3 ? "deferred" : "write");
      }
      c.close();
    });
    const outcomes = await Promise.allSettled(writers);
    expect(outcomes.filter((o) => o.status === "rejected")).toEqual([]);
    const after = Number((await createWebClient({ url: locking.url }).execute("select count(*) as n from t")).rows[0]!.n);
    expect(after - before).toBe(40);
  });

  it("GET /stats counts one Hrana request per execute and per batch", async () => {
    const requests = async () => ((await (await fetch(`${locking.url}/stats`)).json()) as { requests: number }).requests;
    const c = createWebClient({ url: locking.url });
    const start = await requests();
    await c.execute("select 1");
    expect(await requests()).toBe(start + 1);
    await c.batch(["select 1", "select 2", "select 3"], "deferred");
    expect(await requests()).toBe(start + 2);
    expect(locking.stats().requests).toBe(start + 2);
  });
});
