/**
 * Longer than 400 lines on purpose: one process's whole life: the embedded libSQL server, its Host and token checks, the file lock and a clean stop.
 * A small libSQL server speaking Hrana over HTTP (JSON encoding, protocol v2 and v3) on top of the
 * native `libsql` engine, so `@libsql/client/web` — which is all the Worker can use — can talk to a
 * local file. It stands in for sqld / `turso dev`, which cannot be installed here; a DATABASE_URL
 * pointing at a real sqld or Turso works unchanged.
 *
 * Locking behaves like sqld's: writes are serialized (one write transaction at a time, first come
 * first served, waiting up to LOCK_WAIT_MS), a transaction holds the write lock only while it is
 * open, and reads never wait (WAL). `GET /stats` counts the Hrana requests served, so tests and
 * benchmarks can count database round trips.
 *
 * Every request needs `Authorization: Bearer <token>` (a random token per run unless one is given)
 * and a Host naming this server on a loopback name, and a POST needs `Content-Type: application/json`:
 * otherwise any local user, or a web page (a cross-site text/plain POST, or DNS rebinding), could run
 * SQL on the file.
 *
 * Usage: LIBSQL_AUTH_TOKEN=... npx tsx scripts/libsql-server.ts --file .data/dev.db [--port 8080] [--host 127.0.0.1]
 * (without LIBSQL_AUTH_TOKEN it makes a token and prints it; a token never goes on the command line,
 * which every user on the machine can read).
 */
import Database from "libsql";
import { randomBytes, timingSafeEqual, createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { z } from "zod";
import { isMainModule } from "./lib/main-module.ts";

type Db = InstanceType<typeof Database>;
type HranaValue =
  | { type: "null" }
  | { type: "integer"; value: string }
  | { type: "float"; value: number }
  | { type: "text"; value: string }
  | { type: "blob"; base64: string };
type Stmt = {
  sql?: string;
  sql_id?: number;
  args?: HranaValue[];
  named_args?: { name: string; value: HranaValue }[];
  want_rows?: boolean;
};
type Condition =
  | { type: "ok" | "error"; step: number }
  | { type: "not"; cond: Condition }
  | { type: "and" | "or"; conds: Condition[] }
  | { type: "is_autocommit" };
type BatchStep = { condition?: Condition | null; stmt: Stmt };
type StreamRequest =
  | { type: "close" }
  | { type: "execute"; stmt: Stmt }
  | { type: "batch"; batch: { steps: BatchStep[] } }
  | { type: "sequence"; sql?: string; sql_id?: number }
  | { type: "describe"; sql?: string; sql_id?: number }
  | { type: "store_sql"; sql_id: number; sql: string }
  | { type: "close_sql"; sql_id: number }
  | { type: "get_autocommit" };

class HranaError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** A stream (and any transaction it holds) is dropped after this long without a request. */
const STREAM_IDLE_MS = 10_000;
/** How long a write waits for the write lock before it fails with SQLITE_BUSY (sqld's busy timeout is 5 s too). */
const LOCK_WAIT_MS = 5_000;

/**
 * First come, first served ownership of the write lock among this server's connections. SQLite's
 * own busy handler cannot be used: Node runs SQLite calls synchronously, so a connection waiting
 * inside SQLite for a lock held by another of this server's connections would block the event loop
 * that has to release it. Connections therefore never wait inside SQLite (busy_timeout 0); they
 * queue here, and a lock held by another process is retried with back-off.
 */
class WriteLock {
  private holder: Db | null = null;
  private readonly waiting: { db: Db; grant: () => void }[] = [];

  holds(db: Db): boolean {
    return this.holder === db;
  }

  async acquire(db: Db, deadline: number): Promise<void> {
    if (this.holder === db) return;
    if (this.holder === null) {
      this.holder = db;
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const entry = { db, grant: () => {} };
    try {
      await new Promise<void>((resolve, reject) => {
        entry.grant = resolve;
        this.waiting.push(entry);
        timer = setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(entry), 1);
          reject(new HranaError("database is locked", "SQLITE_BUSY"));
        }, Math.max(0, deadline - Date.now()));
      });
    } finally {
      clearTimeout(timer);
    }
  }

  release(db: Db): void {
    if (this.holder !== db) return;
    const next = this.waiting.shift();
    this.holder = next?.db ?? null;
    next?.grant();
  }
}

type Stream = {
  db: Db;
  sql: Map<number, string>;
  /** The client's BEGIN [DEFERRED], run once the next statement shows whether the transaction writes. */
  pendingBegin: boolean;
  /** The transaction lost its connection to a lock conflict; everything but ROLLBACK fails until it is rolled back. */
  aborted: boolean;
};
type Server = { lock: WriteLock; open(): Db; retire(db: Db): void; lockWaitMs: number };
type StreamEntry = { stream: Stream; timer: NodeJS.Timeout };

/** `authToken`: the bearer token every request needs (the one given, or one made for this run). */
export type LibsqlServer = { url: string; port: number; authToken: string; stats(): LibsqlServerStats; close(): Promise<void> };
/** `requests`: Hrana HTTP requests served (pipeline and cursor), i.e. the database round trips clients made. */
export type LibsqlServerStats = { requests: number };

export async function startLibsqlServer(options: {
  file: string;
  host?: string;
  port?: number;
  /** Made at random (32 bytes) when not given; the returned server carries it. */
  authToken?: string;
  /** For tests of lock contention; LOCK_WAIT_MS otherwise. */
  lockWaitMs?: number;
}): Promise<LibsqlServer> {
  const host = options.host ?? "127.0.0.1";
  const idle: Db[] = [];
  const streams = new Map<string, StreamEntry>();
  const stats: LibsqlServerStats = { requests: 0 };

  const open = (): Db => {
    const db = new Database(options.file);
    db.pragma("journal_mode = WAL");
    db.pragma("busy_timeout = 0");
    db.pragma("foreign_keys = ON");
    return db;
  };
  const server: Server = {
    lock: new WriteLock(),
    open,
    // A connection that may hold half-run statements is closed, never reused.
    retire: (db) => {
      server.lock.release(db);
      db.close();
    },
    lockWaitMs: options.lockWaitMs ?? LOCK_WAIT_MS,
  };
  const acquire = () => idle.pop() ?? open();
  const release = (db: Db) => {
    if (db.inTransaction) db.exec("ROLLBACK");
    server.lock.release(db);
    if (idle.length < 8) idle.push(db);
    else db.close();
  };
  // Create the file and switch it to WAL before the first client arrives.
  release(open());

  const dropStream = (baton: string) => {
    const entry = streams.get(baton);
    if (!entry) return;
    streams.delete(baton);
    clearTimeout(entry.timer);
    release(entry.stream.db);
  };
  const keepStream = (stream: Stream): string => {
    const baton = randomBytes(18).toString("base64url");
    const timer = setTimeout(() => dropStream(baton), STREAM_IDLE_MS);
    timer.unref();
    streams.set(baton, { stream, timer });
    return baton;
  };

  const authToken = options.authToken || randomBytes(32).toString("base64url");
  const expectedAuth = createHash("sha256").update(`Bearer ${authToken}`).digest();
  const authorized = (req: IncomingMessage) => {
    const given = createHash("sha256").update(req.headers.authorization ?? "").digest();
    return timingSafeEqual(given, expectedAuth);
  };
  // Filled in once the port is known.
  let allowedHosts = new Set<string>();

  const httpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logInternalError(err);
      if (!res.headersSent) sendJson(res, 500, { message: "Internal server error" });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    // A DNS-rebound page reaches this port under its own host name: only this server's own names pass.
    if (!allowedHosts.has(req.headers.host?.toLowerCase() ?? "")) return refuse(res, 421, "The Host header must name this server on loopback");
    if (!authorized(req)) return refuse(res, 401, "Unauthorized");
    // A web page can POST text/plain across sites without asking; application/json it cannot.
    if (req.method === "POST" && !isJson(req.headers["content-type"])) return refuse(res, 415, "Content-Type must be application/json");
    const path = new URL(req.url ?? "/", "http://x").pathname.replace(/\/+$/, "");
    const version = /^\/(v2|v3)(\/pipeline|\/cursor)?$/.exec(path);
    if (req.method === "GET" && (path === "" || path === "/health")) return sendJson(res, 200, {});
    if (req.method === "GET" && path === "/stats") return sendJson(res, 200, stats);
    if (!version) return sendJson(res, 404, { message: "Not found" });
    if (req.method === "GET" && !version[2]) return sendJson(res, 200, {});
    if (req.method !== "POST" || !version[2]) return sendJson(res, 405, { message: "Method not allowed" });
    if (version[1] === "v2" && version[2] === "/cursor") return sendJson(res, 404, { message: "Not found" });
    stats.requests++;

    const raw = await readBody(req);
    if (raw === null) {
      // The rest of the body was not read, so this connection cannot carry another request.
      res.setHeader("connection", "close");
      return sendJson(res, 413, { message: "Request body too large" });
    }
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      return sendJson(res, 400, { message: "Malformed JSON" });
    }
    const parsed = (version[2] === "/cursor" ? CursorBody : PipelineBody).safeParse(json);
    if (!parsed.success) return sendJson(res, 400, { message: `Malformed request: ${z.prettifyError(parsed.error)}` });
    const body = parsed.data as { baton?: string | null; requests?: StreamRequest[]; batch?: { steps: BatchStep[] } };

    let stream: Stream;
    if (body.baton) {
      const existing = streams.get(body.baton);
      if (!existing) return sendJson(res, 400, { message: "Unknown or expired baton" });
      streams.delete(body.baton);
      clearTimeout(existing.timer);
      stream = existing.stream;
    } else {
      stream = { db: acquire(), sql: new Map(), pendingBegin: false, aborted: false };
    }

    if (version[2] === "/cursor") {
      const steps = body.batch?.steps ?? [];
      const baton = keepStream(stream);
      res.writeHead(200, { "content-type": "text/plain" });
      res.write(JSON.stringify({ baton, base_url: null }) + "\n");
      for (const entry of await runCursor(server, stream, steps)) res.write(JSON.stringify(entry) + "\n");
      res.end();
      return;
    }

    const results: unknown[] = [];
    let closed = false;
    for (const request of body.requests ?? []) {
      if (closed) {
        results.push({ type: "error", error: { message: "Stream is closed", code: "STREAM_CLOSED" } });
        continue;
      }
      if (request.type === "close") {
        closed = true;
        results.push({ type: "ok", response: { type: "close" } });
        continue;
      }
      try {
        results.push({ type: "ok", response: await runRequest(server, stream, request) });
      } catch (err) {
        results.push({ type: "error", error: toError(err) });
      }
    }
    let baton: string | null = null;
    if (closed) release(stream.db);
    else baton = keepStream(stream);
    sendJson(res, 200, { baton, base_url: null, results });
  }

  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (httpServer.address() as AddressInfo).port;
  allowedHosts = new Set(["127.0.0.1", "localhost", "[::1]", host.includes(":") ? `[${host}]` : host].map((name) => `${name}:${port}`));
  return {
    url: `http://${host}:${port}`,
    port,
    authToken,
    stats: () => ({ ...stats }),
    close: async () => {
      for (const baton of [...streams.keys()]) dropStream(baton);
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeAllConnections();
      });
      for (const db of idle.splice(0)) db.close();
    },
  };
}

async function runRequest(server: Server, stream: Stream, request: StreamRequest): Promise<unknown> {
  switch (request.type) {
    case "execute":
      return { type: "execute", result: await executeStmt(server, stream, request.stmt) };
    case "batch":
      return { type: "batch", result: await runBatch(server, stream, request.batch.steps) };
    case "sequence":
      await runSequence(server, stream, resolveSql(stream, request));
      return { type: "sequence" };
    case "describe": {
      // Minimal: column names and types; parameter names and explain/readonly flags are not inspected.
      const stmt = stream.db.prepare(resolveSql(stream, request));
      const cols = stmt.reader ? stmt.columns().map((c) => ({ name: c.name, decltype: c.type ?? null })) : [];
      return { type: "describe", result: { params: [], cols, is_explain: false, is_readonly: false } };
    }
    case "store_sql":
      stream.sql.set(request.sql_id, request.sql);
      return { type: "store_sql" };
    case "close_sql":
      stream.sql.delete(request.sql_id);
      return { type: "close_sql" };
    case "get_autocommit":
      return { type: "get_autocommit", is_autocommit: isAutocommit(stream) };
    default:
      throw new HranaError(`Unknown request type ${(request as { type: string }).type}`, "UNKNOWN_REQUEST");
  }
}

function isAutocommit(stream: Stream): boolean {
  return !stream.db.inTransaction && !stream.pendingBegin && !stream.aborted;
}

async function runBatch(server: Server, stream: Stream, steps: BatchStep[]) {
  const step_results: unknown[] = [];
  const step_errors: unknown[] = [];
  const evaluate = (cond: Condition): boolean => {
    switch (cond.type) {
      case "ok":
        return step_results[cond.step] != null;
      case "error":
        return step_errors[cond.step] != null;
      case "not":
        return !evaluate(cond.cond);
      case "and":
        return cond.conds.every(evaluate);
      case "or":
        return cond.conds.some(evaluate);
      case "is_autocommit":
        return isAutocommit(stream);
    }
  };
  for (const step of steps) {
    if (step.condition && !evaluate(step.condition)) {
      step_results.push(null);
      step_errors.push(null);
      continue;
    }
    try {
      step_results.push(await executeStmt(server, stream, step.stmt));
      step_errors.push(null);
    } catch (err) {
      step_results.push(null);
      step_errors.push(toError(err));
    }
  }
  return { step_results, step_errors };
}

/** A batch run for the v3 cursor endpoint: the same semantics, reported as cursor entries. */
async function runCursor(server: Server, stream: Stream, steps: BatchStep[]): Promise<unknown[]> {
  const { step_results, step_errors } = await runBatch(server, stream, steps);
  const entries: unknown[] = [];
  steps.forEach((_, i) => {
    const result = step_results[i] as { cols: unknown; rows: unknown[]; affected_row_count: number; last_insert_rowid: string | null } | null;
    const error = step_errors[i];
    if (error) entries.push({ type: "step_error", step: i, error });
    else if (result) {
      entries.push({ type: "step_begin", step: i, cols: result.cols });
      for (const row of result.rows) entries.push({ type: "row", row });
      entries.push({ type: "step_end", affected_row_count: result.affected_row_count, last_insert_rowid: result.last_insert_rowid });
    }
  });
  return entries;
}

function resolveSql(stream: Stream, ref: { sql?: string; sql_id?: number }): string {
  if (typeof ref.sql === "string") return ref.sql;
  const stored = ref.sql_id === undefined ? undefined : stream.sql.get(ref.sql_id);
  if (stored === undefined) throw new HranaError("SQL text or a known sql_id is required", "SQL_NOT_FOUND");
  return stored;
}

function decodeValue(v: HranaValue): unknown {
  switch (v.type) {
    case "null":
      return null;
    case "integer":
      // BigInt's own error would quote the value, and the value is the client's data.
      if (!/^-?\d+$/.test(String(v.value))) throw new HranaError("An integer value must be a decimal string", "INVALID_ARGUMENT");
      return BigInt(v.value);
    case "float":
      return Number(v.value);
    case "text":
      return v.value;
    case "blob":
      return Buffer.from(v.base64, "base64");
  }
}

function encodeValue(v: unknown): HranaValue {
  if (v === null || v === undefined) return { type: "null" };
  if (typeof v === "bigint") return { type: "integer", value: v.toString() };
  if (typeof v === "number") return { type: "float", value: v };
  if (typeof v === "string") return { type: "text", value: v };
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return { type: "blob", base64: Buffer.from(v).toString("base64") };
  return { type: "text", value: String(v) };
}

const EMPTY_RESULT = { cols: [], rows: [], affected_row_count: 0, last_insert_rowid: null };

async function executeStmt(server: Server, stream: Stream, stmt: Stmt) {
  const sql = resolveSql(stream, stmt);
  const positional = (stmt.args ?? []).map(decodeValue);
  // The engine matches a plain name against :name, @name and $name alike.
  const named = Object.fromEntries((stmt.named_args ?? []).map((a) => [a.name.replace(/^[:@$]/, ""), decodeValue(a.value)]));
  const params: unknown[] = stmt.named_args?.length ? [...positional, named] : positional;

  return runWithLocking(server, stream, sql, () => {
    const prepared = stream.db.prepare(sql);
    if (prepared.reader) {
      prepared.safeIntegers(true);
      prepared.raw(true);
      const cols = prepared.columns().map((c) => ({ name: c.name, decltype: c.type ?? null }));
      const rows = (prepared.all(...params) as unknown[][]).map((row) => row.map(encodeValue));
      // RETURNING makes a write look like a reader: report what it changed.
      const isWrite = /^\s*(insert|update|delete|replace)\b/i.test(sql);
      const [changes, lastRowid] = isWrite
        ? // all(), not get(): a statement left mid-step would block COMMIT ("SQL statements in progress").
          (stream.db.prepare("select changes(), last_insert_rowid()").raw(true).all()[0] as [number, number])
        : [0, null];
      return { cols, rows, affected_row_count: Number(changes), last_insert_rowid: lastRowid == null ? null : String(lastRowid) };
    }
    const info = prepared.run(...params);
    return {
      cols: [],
      rows: [],
      affected_row_count: Number(info.changes ?? 0),
      last_insert_rowid: info.lastInsertRowid == null ? null : String(info.lastInsertRowid),
    };
  });
}

type StatementKind = "begin" | "begin_write" | "commit" | "rollback" | "read" | "write";

/** What a statement does to locking, from its first words (leading comments skipped). */
function statementKind(sql: string): StatementKind {
  const words = /^(?:\s|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*(\w+)(?:\s+(\w+))?/.exec(sql);
  const [first, second] = [words?.[1]?.toLowerCase(), words?.[2]?.toLowerCase()];
  if (first === "begin") return second === "immediate" || second === "exclusive" ? "begin_write" : "begin";
  if (first === "commit" || first === "end") return "commit";
  if (first === "rollback" && second !== "to") return "rollback";
  // PRAGMAs run as they are: several are no-ops inside a transaction (foreign_keys).
  if (first === "select" || first === "explain" || first === "values" || first === "pragma") return "read";
  return "write";
}

/**
 * Runs one statement with sqld's locking: a write first takes the write lock (queueing for it),
 * outside a transaction inside its own BEGIN IMMEDIATE ... COMMIT; a client's BEGIN [DEFERRED] waits
 * for its first statement to tell whether the transaction will write, so that a write never has to
 * upgrade a read lock (which fails at once under contention instead of queueing).
 */
async function runWithLocking<T>(server: Server, stream: Stream, sql: string, run: () => T): Promise<T | typeof EMPTY_RESULT> {
  const kind = statementKind(sql);
  if (stream.aborted) {
    if (kind !== "rollback") throw new HranaError("The transaction was rolled back after a lock conflict; roll it back", "SQLITE_BUSY");
    stream.aborted = false;
    return EMPTY_RESULT;
  }
  const inTransaction = stream.db.inTransaction || stream.pendingBegin;
  switch (kind) {
    case "begin":
      if (inTransaction) return guarded(server, stream, run);
      stream.pendingBegin = true;
      return EMPTY_RESULT;
    case "begin_write":
      if (inTransaction) return guarded(server, stream, run);
      await beginWrite(server, stream, sql);
      return EMPTY_RESULT;
    case "commit":
    case "rollback": {
      if (stream.pendingBegin) {
        stream.pendingBegin = false;
        return EMPTY_RESULT;
      }
      const result = guarded(server, stream, run);
      if (!stream.db.inTransaction) server.lock.release(stream.db);
      return result;
    }
    case "read":
      if (stream.pendingBegin) {
        stream.db.exec("BEGIN DEFERRED");
        stream.pendingBegin = false;
      }
      return guarded(server, stream, run);
    case "write":
      if (stream.pendingBegin) {
        await beginWrite(server, stream, "BEGIN IMMEDIATE");
        stream.pendingBegin = false;
        return guarded(server, stream, run);
      }
      if (stream.db.inTransaction) {
        // A transaction that has only read so far takes the lock now and keeps it until it ends.
        await server.lock.acquire(stream.db, Date.now() + server.lockWaitMs);
        return guarded(server, stream, run);
      }
      await beginWrite(server, stream, "BEGIN IMMEDIATE");
      try {
        const result = guarded(server, stream, run);
        stream.db.exec("COMMIT");
        return result;
      } finally {
        if (stream.db.inTransaction) stream.db.exec("ROLLBACK");
        server.lock.release(stream.db);
      }
  }
}

/** A script of statements (executeMultiple, migrations): run under the write lock, as it may write and may open transactions itself. */
async function runSequence(server: Server, stream: Stream, sql: string): Promise<void> {
  if (stream.aborted) throw new HranaError("The transaction was rolled back after a lock conflict; roll it back", "SQLITE_BUSY");
  if (stream.pendingBegin) {
    await beginWrite(server, stream, "BEGIN IMMEDIATE");
    stream.pendingBegin = false;
  }
  await server.lock.acquire(stream.db, Date.now() + server.lockWaitMs);
  try {
    guarded(server, stream, () => stream.db.exec(sql));
  } finally {
    if (!stream.db.inTransaction) server.lock.release(stream.db);
  }
}

/** BEGIN IMMEDIATE or EXCLUSIVE: the write lock first, then SQLite's, retried while another process holds it. */
async function beginWrite(server: Server, stream: Stream, sql: string): Promise<void> {
  const deadline = Date.now() + server.lockWaitMs;
  await server.lock.acquire(stream.db, deadline);
  for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
    try {
      // exec(), never a prepared statement: a prepared statement that fails with SQLITE_BUSY stays
      // half-run on its connection, and every later COMMIT there fails ("SQL statements in progress").
      stream.db.exec(sql);
      return;
    } catch (err) {
      if (!isLockConflict(err) || Date.now() + delay > deadline) {
        server.lock.release(stream.db);
        throw err;
      }
    }
    await sleep(delay);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function isLockConflict(err: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test((err as { code?: string }).code ?? "");
}

/**
 * Runs a statement; when it fails on a lock conflict (another process's lock, or a read snapshot
 * that went stale), the connection is replaced: the failed statement stays half-run on it (see
 * beginWrite), so it could never commit again. An open transaction is lost with it.
 */
function guarded<T>(server: Server, stream: Stream, run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (isLockConflict(err)) {
      stream.aborted = stream.db.inTransaction;
      server.retire(stream.db);
      stream.db = server.open();
    }
    throw err;
  }
}

/**
 * A statement's error as Hrana reports it: the engine's message and SQLite code, which clients show
 * (constraint and syntax errors). Anything else is this server failing, logged here, not told.
 */
function toError(err: unknown): { message: string; code: string } {
  if (err instanceof HranaError) return { message: err.message, code: err.code };
  const e = err as { message?: unknown; code?: unknown };
  if (typeof e.code === "string" && e.code.startsWith("SQLITE_") && typeof e.message === "string") return { message: e.message, code: e.code };
  logInternalError(err);
  return { message: "Internal server error", code: "INTERNAL_ERROR" };
}

function logInternalError(err: unknown) {
  const e = err instanceof Error ? err : new Error(String(err));
  console.error(JSON.stringify({ level: "error", service: "libsql-server", error: e.name, message: e.message.slice(0, 200) }));
}

/** The outer shape of the two POST bodies; each request and step inside is checked as it runs. */
const Baton = z.string().nullish();
const PipelineBody = z.object({ baton: Baton, requests: z.array(z.looseObject({ type: z.string() })).optional() });
const CursorBody = z.object({ baton: Baton, batch: z.object({ steps: z.array(z.looseObject({ stmt: z.looseObject({}) })) }).optional() });

function isJson(contentType: string | undefined): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "application/json";
}

/** An answer before the body is read: the body is never parsed, and the connection closes after it. */
function refuse(res: ServerResponse, status: number, message: string) {
  res.setHeader("connection", "close");
  sendJson(res, status, { message });
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** The body as text, or null when it exceeds the limit (read, never trusted from Content-Length). */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: { file: { type: "string" }, port: { type: "string", default: "8080" }, host: { type: "string", default: "127.0.0.1" } },
  });
  if (!values.file) {
    process.stderr.write("usage: [LIBSQL_AUTH_TOKEN=...] tsx scripts/libsql-server.ts --file PATH [--port 8080] [--host 127.0.0.1]\n");
    process.exit(2);
  }
  const given = process.env.LIBSQL_AUTH_TOKEN || undefined;
  const server = await startLibsqlServer({ file: values.file, port: Number(values.port), host: values.host, authToken: given });
  // On stdout: whoever started it with --port 0 reads the address from this line.
  process.stdout.write(`libSQL server on ${server.url} (file ${values.file})\n`);
  if (!given) process.stdout.write(`auth token (made for this run): ${server.authToken}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
