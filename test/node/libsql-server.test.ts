/** The local libSQL server, tested against the real clients the Worker and the CLI use. */
import { createClient as createNodeClient, LibsqlError, type Client } from "@libsql/client";
import { createClient as createWebClient } from "@libsql/client/web";
import Database from "libsql";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { startLibsqlServer, type LibsqlServer } from "../../scripts/libsql-server.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
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

const nodeClient = (s: LibsqlServer) => createNodeClient({ url: s.url, authToken: s.authToken });
const webClient = (s: LibsqlServer) => createWebClient({ url: s.url, authToken: s.authToken });
const bearer = (s: LibsqlServer) => ({ authorization: `Bearer ${s.authToken}` });

const clients: [string, () => Client][] = [
  ["@libsql/client", () => nodeClient(server)],
  ["@libsql/client/web", () => webClient(server)],
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

/** A request as any HTTP client could send it (fetch does not let its caller set Host); the body comes back as text. */
function send(s: LibsqlServer, init: { method?: string; path?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${s.url}${init.path ?? "/v2/pipeline"}`, { method: init.method ?? "POST", headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

const json = { "content-type": "application/json" };
/** A pipeline that would leave a mark: a table named `table`. */
const createTable = (table: string) => JSON.stringify({ requests: [{ type: "execute", stmt: { sql: `create table ${table} (x)` } }, { type: "close" }] });
const tableExists = async (table: string) =>
  (await webClient(server).execute({ sql: "select count(*) as n from sqlite_master where name = ?", args: [table] })).rows[0]!.n === 1;

describe("who may talk to the server", () => {
  it("refuses a request without the token, or with another one, with 401 and runs nothing", async () => {
    const before = server.stats().requests;
    for (const authorization of [undefined, "Bearer wrong", `Bearer ${server.authToken}x`, server.authToken, `Basic ${server.authToken}`]) {
      const res = await send(server, { headers: { ...json, ...(authorization === undefined ? {} : { authorization }) }, body: createTable("no_token") });
      expect(res.status, String(authorization)).toBe(401);
      expect(JSON.parse(res.body)).toEqual({ message: "Unauthorized" });
    }
    expect((await send(server, { method: "GET", path: "/stats" })).status).toBe(401);
    await expect(createNodeClient({ url: server.url }).execute("create table no_token (x)")).rejects.toThrow(/401|Unauthorized/);
    await expect(createWebClient({ url: server.url, authToken: "wrong" }).execute("create table no_token (x)")).rejects.toThrow(/401|Unauthorized/);
    expect(server.stats().requests).toBe(before);
    expect(await tableExists("no_token")).toBe(false);
  });

  it("makes a token of its own for each run, and takes one given", async () => {
    const other = await startLibsqlServer({ file: join(dir, "own-token.db") });
    const given = await startLibsqlServer({ file: join(dir, "own-token.db"), authToken: "s3cret-token" });
    try {
      expect(Buffer.from(other.authToken, "base64url")).toHaveLength(32);
      expect(other.authToken).not.toBe(server.authToken);
      expect(given.authToken).toBe("s3cret-token");
      expect((await webClient(given).execute("select 1 as one")).rows[0]!.one).toBe(1);
      await expect(createWebClient({ url: given.url, authToken: other.authToken }).execute("select 1")).rejects.toThrow(/401|Unauthorized/);
    } finally {
      await Promise.all([other.close(), given.close()]);
    }
  });

  it("refuses a POST that is not application/json with 415 and runs nothing, as a web page's text/plain POST", async () => {
    for (const contentType of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", undefined]) {
      const headers = { ...bearer(server), ...(contentType === undefined ? {} : { "content-type": contentType }) };
      const res = await send(server, { headers, body: createTable("plain_text") });
      expect(res.status, String(contentType)).toBe(415);
      expect(JSON.parse(res.body)).toEqual({ message: "Content-Type must be application/json" });
    }
    expect(await tableExists("plain_text")).toBe(false);
    const withCharset = await send(server, { headers: { ...bearer(server), "content-type": "Application/JSON; charset=utf-8" }, body: createTable("json_charset") });
    expect(withCharset.status).toBe(200);
    expect(await tableExists("json_charset")).toBe(true);
  });

  it("refuses a Host that does not name this server on loopback with 421 and runs nothing, as a DNS-rebound page", async () => {
    for (const host of [`evil.example:${server.port}`, "attacker.example", `127.0.0.1.evil.example:${server.port}`, `localhost:${server.port + 1}`, "127.0.0.1"]) {
      const res = await send(server, { headers: { ...bearer(server), ...json, host }, body: createTable("rebound") });
      expect(res.status, host).toBe(421);
      expect(JSON.parse(res.body)).toEqual({ message: "The Host header must name this server on loopback" });
    }
    expect(await tableExists("rebound")).toBe(false);
    for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`, `LOCALHOST:${server.port}`, `[::1]:${server.port}`]) {
      const res = await send(server, { headers: { ...bearer(server), ...json, host }, body: JSON.stringify({ requests: [{ type: "close" }] }) });
      expect(res.status, host).toBe(200);
    }
  });

  it("keeps its own failures to itself: a generic 500 or Hrana error, the detail on stderr", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const folder = join(dir, "vanishing");
    mkdirSync(folder);
    const s = await startLibsqlServer({ file: join(folder, "t.db") });
    try {
      const headers = { ...bearer(s), ...json };
      // A stream left open takes the one idle connection; the next request must open the file again, in a folder now gone.
      const open = await send(s, { headers, body: JSON.stringify({ requests: [{ type: "execute", stmt: { sql: "select 1" } }] }) });
      expect(open.status).toBe(200);
      rmSync(folder, { recursive: true });
      const failed = await send(s, { headers, body: JSON.stringify({ requests: [{ type: "execute", stmt: { sql: "select 1" } }] }) });
      expect(failed.status).toBe(500);
      expect(JSON.parse(failed.body)).toEqual({ message: "Internal server error" });
      expect(logged.mock.calls.map((args) => JSON.parse(String(args[0])))).toContainEqual(expect.objectContaining({ level: "error", service: "libsql-server", message: expect.stringMatching(/open/) }));

      // A request this server cannot run: a Hrana error that names nothing inside it.
      const noStatement = await send(server, { headers: { ...bearer(server), ...json }, body: JSON.stringify({ requests: [{ type: "execute" }, { type: "close" }] }) });
      expect(noStatement.status).toBe(200);
      expect(JSON.parse(noStatement.body).results[0]).toEqual({ type: "error", error: { message: "Internal server error", code: "INTERNAL_ERROR" } });
      const badInteger = await send(server, {
        headers: { ...bearer(server), ...json },
        body: JSON.stringify({ requests: [{ type: "execute", stmt: { sql: "select ?", args: [{ type: "integer", value: "12 secret" }] } }, { type: "close" }] }),
      });
      expect(JSON.parse(badInteger.body).results[0]).toEqual({ type: "error", error: { message: "An integer value must be a decimal string", code: "INVALID_ARGUMENT" } });
      expect(badInteger.body).not.toContain("secret");
    } finally {
      logged.mockRestore();
      await s.close();
    }
  });

  it("answers a body of the wrong shape with 400 saying what is wrong", async () => {
    for (const [path, body] of [
      ["/v2/pipeline", "null"],
      ["/v2/pipeline", '{"requests": 5}'],
      ["/v2/pipeline", '{"requests": [null]}'],
      ["/v3/cursor", '{"batch": {"steps": "select 1"}}'],
    ] as const) {
      const res = await send(server, { path, headers: { ...bearer(server), ...json }, body });
      expect(res.status, body).toBe(400);
      expect(JSON.parse(res.body).message).toMatch(/^Malformed request: /);
      expect(res.body).not.toMatch(/TypeError|Cannot read/);
    }
  });

  it("the command form takes its token from LIBSQL_AUTH_TOKEN, or makes one and prints it", async () => {
    const run = async (env: Record<string, string>) => {
      const child = spawn(process.execPath, ["--import", "tsx", "scripts/libsql-server.ts", "--file", join(dir, "cli.db"), "--port", "0"], {
        cwd: repoRoot,
        env: { ...process.env, LIBSQL_AUTH_TOKEN: "", ...env },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      const pattern = env.LIBSQL_AUTH_TOKEN ? /libSQL server on (\S+)/ : /libSQL server on (\S+)[^]*auth token \(made for this run\): (\S+)/;
      await vi.waitFor(() => expect(stdout).toMatch(pattern), { timeout: 30_000, interval: 50 });
      const [, url, printed] = pattern.exec(stdout)!;
      return { url: url!, printed, stop: () => new Promise((resolve) => child.once("exit", resolve).kill("SIGTERM")) };
    };
    const withGiven = await run({ LIBSQL_AUTH_TOKEN: "given-token-0123456789" });
    try {
      expect((await createWebClient({ url: withGiven.url, authToken: "given-token-0123456789" }).execute("select 1 as one")).rows[0]!.one).toBe(1);
      await expect(createWebClient({ url: withGiven.url }).execute("select 1")).rejects.toThrow(/401|Unauthorized/);
    } finally {
      await withGiven.stop();
    }
    const withMade = await run({});
    try {
      expect((await createWebClient({ url: withMade.url, authToken: withMade.printed }).execute("select 1 as one")).rows[0]!.one).toBe(1);
      await expect(createWebClient({ url: withMade.url }).execute("select 1")).rejects.toThrow(/401|Unauthorized/);
    } finally {
      await withMade.stop();
    }
  }, 60_000);
});

describe("server edges", () => {
  it("answers 413 for an oversized body and 404 for unknown paths", async () => {
    const big = await fetch(`${server.url}/v3/pipeline`, { method: "POST", headers: { ...bearer(server), ...json }, body: "x".repeat(11 * 1024 * 1024) });
    expect(big.status).toBe(413);
    expect((await fetch(`${server.url}/v3-protobuf`, { headers: bearer(server) })).status).toBe(404);
    expect((await fetch(`${server.url}/v3`, { headers: bearer(server) })).status).toBe(200);
  });

  it("rejects an unknown baton", async () => {
    const res = await fetch(`${server.url}/v3/pipeline`, {
      method: "POST",
      headers: { ...bearer(server), ...json },
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
    const setup = nodeClient(locking);
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
    const c = name === "@libsql/client" ? nodeClient(locking) : webClient(locking);
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
    const c = webClient(locking);
    const release = holdWriteLockElsewhere();
    const write = c.execute("insert into t (s) values ('waited')");
    setTimeout(release, 50);
    await expect(write).resolves.toMatchObject({ rowsAffected: 1 });
  });

  it("reads are answered while another client's write transaction is open", async () => {
    const writer = nodeClient(locking);
    const reader = webClient(locking);
    const tx = await writer.transaction("write");
    await tx.execute("insert into t (s) values ('uncommitted')");
    const seen = await reader.execute("select count(*) as n from t where s = 'uncommitted'");
    expect(seen.rows[0]!.n).toBe(0);
    await tx.commit();
    expect((await reader.execute("select count(*) as n from t where s = 'uncommitted'")).rows[0]!.n).toBe(1);
    writer.close();
  });

  it("serializes concurrent writers (batches, deferred batches that write, transactions) without refusing any", async () => {
    const before = Number((await webClient(locking).execute("select count(*) as n from t")).rows[0]!.n);
    const writers = Array.from({ length: 40 }, async (_, i) => {
      const c = i % 2 ? webClient(locking) : nodeClient(locking);
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
    const after = Number((await webClient(locking).execute("select count(*) as n from t")).rows[0]!.n);
    expect(after - before).toBe(40);
  });

  it("GET /stats counts one Hrana request per execute and per batch", async () => {
    const requests = async () => ((await (await fetch(`${locking.url}/stats`, { headers: bearer(locking) })).json()) as { requests: number }).requests;
    const c = webClient(locking);
    const start = await requests();
    await c.execute("select 1");
    expect(await requests()).toBe(start + 1);
    await c.batch(["select 1", "select 2", "select 3"], "deferred");
    expect(await requests()).toBe(start + 2);
    expect(locking.stats().requests).toBe(start + 2);
  });
});
