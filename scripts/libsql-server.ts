/**
 * A small libSQL server speaking Hrana over HTTP (JSON encoding, protocol v2 and v3) on top of the
 * native `libsql` engine, so `@libsql/client/web` — which is all the Worker can use — can talk to a
 * local file. It stands in for sqld / `turso dev`, which cannot be installed here; a DATABASE_URL
 * pointing at a real sqld or Turso works unchanged.
 *
 * Usage: npx tsx scripts/libsql-server.ts --file .data/dev.db [--port 8080] [--host 127.0.0.1]
 */
import Database from "libsql";
import { randomBytes, timingSafeEqual, createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

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
/**
 * Node runs SQLite calls synchronously, so a connection waiting on a lock held by another stream
 * would block the very event loop that must release it. Connections therefore never wait inside
 * SQLite (busy_timeout 0). Instead, a statement that may take a lock waits (asynchronously) while
 * another of this server's connections holds an open transaction; a statement that is still busy
 * (another process holds the lock) is retried until this deadline.
 */
const LOCK_WAIT_MS = 5_000;

type Stream = { db: Db; sql: Map<number, string>; peers: Set<Db>; timer: NodeJS.Timeout };

export type LibsqlServer = { url: string; port: number; close(): Promise<void> };

export async function startLibsqlServer(options: {
  file: string;
  host?: string;
  port?: number;
  authToken?: string;
}): Promise<LibsqlServer> {
  const host = options.host ?? "127.0.0.1";
  const idle: Db[] = [];
  const streams = new Map<string, Stream>();

  const peers = new Set<Db>();
  const open = (): Db => {
    const db = new Database(options.file);
    db.pragma("journal_mode = WAL");
    db.pragma("busy_timeout = 0");
    db.pragma("foreign_keys = ON");
    peers.add(db);
    return db;
  };
  const acquire = () => idle.pop() ?? open();
  const release = (db: Db) => {
    if (db.inTransaction) db.exec("ROLLBACK");
    if (idle.length < 8) idle.push(db);
    else {
      peers.delete(db);
      db.close();
    }
  };
  // Create the file and switch it to WAL before the first client arrives.
  release(open());

  const dropStream = (baton: string) => {
    const stream = streams.get(baton);
    if (!stream) return;
    streams.delete(baton);
    clearTimeout(stream.timer);
    release(stream.db);
  };
  const keepStream = (stream: Omit<Stream, "timer">): string => {
    const baton = randomBytes(18).toString("base64url");
    const timer = setTimeout(() => dropStream(baton), STREAM_IDLE_MS);
    timer.unref();
    streams.set(baton, { ...stream, timer });
    return baton;
  };

  const expectedAuth = options.authToken ? createHash("sha256").update(`Bearer ${options.authToken}`).digest() : null;
  const authorized = (req: IncomingMessage) => {
    if (!expectedAuth) return true;
    const given = createHash("sha256").update(req.headers.authorization ?? "").digest();
    return timingSafeEqual(given, expectedAuth);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { message: String(err) });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = new URL(req.url ?? "/", "http://x").pathname.replace(/\/+$/, "");
    const version = /^\/(v2|v3)(\/pipeline|\/cursor)?$/.exec(path);
    if (req.method === "GET" && (path === "" || path === "/health")) return sendJson(res, 200, {});
    if (!version) return sendJson(res, 404, { message: "Not found" });
    if (!authorized(req)) return sendJson(res, 401, { message: "Unauthorized" });
    if (req.method === "GET" && !version[2]) return sendJson(res, 200, {});
    if (req.method !== "POST" || !version[2]) return sendJson(res, 405, { message: "Method not allowed" });
    if (version[1] === "v2" && version[2] === "/cursor") return sendJson(res, 404, { message: "Not found" });

    const raw = await readBody(req);
    if (raw === null) {
      // The rest of the body was not read, so this connection cannot carry another request.
      res.setHeader("connection", "close");
      return sendJson(res, 413, { message: "Request body too large" });
    }
    let body: { baton?: string | null; requests?: StreamRequest[]; batch?: { steps: BatchStep[] } };
    try {
      body = JSON.parse(raw);
    } catch {
      return sendJson(res, 400, { message: "Malformed JSON" });
    }

    let stream: Omit<Stream, "timer">;
    if (body.baton) {
      const existing = streams.get(body.baton);
      if (!existing) return sendJson(res, 400, { message: "Unknown or expired baton" });
      streams.delete(body.baton);
      clearTimeout(existing.timer);
      stream = existing;
    } else {
      stream = { db: acquire(), sql: new Map(), peers };
    }

    if (version[2] === "/cursor") {
      const steps = body.batch?.steps ?? [];
      const baton = keepStream(stream);
      res.writeHead(200, { "content-type": "text/plain" });
      res.write(JSON.stringify({ baton, base_url: null }) + "\n");
      for (const entry of await runCursor(stream, steps)) res.write(JSON.stringify(entry) + "\n");
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
        results.push({ type: "ok", response: await runRequest(stream, request) });
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
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: async () => {
      for (const baton of [...streams.keys()]) dropStream(baton);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      for (const db of idle.splice(0)) db.close();
    },
  };
}

async function runRequest(stream: Omit<Stream, "timer">, request: StreamRequest): Promise<unknown> {
  switch (request.type) {
    case "execute":
      return { type: "execute", result: await executeStmt(stream, request.stmt) };
    case "batch":
      return { type: "batch", result: await runBatch(stream, request.batch.steps) };
    case "sequence": {
      const sql = resolveSql(stream, request);
      await withWriteTurn(stream, sql, () => stream.db.exec(sql));
      return { type: "sequence" };
    }
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
      return { type: "get_autocommit", is_autocommit: !stream.db.inTransaction };
    default:
      throw new HranaError(`Unknown request type ${(request as { type: string }).type}`, "UNKNOWN_REQUEST");
  }
}

async function runBatch(stream: Omit<Stream, "timer">, steps: BatchStep[]) {
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
        return !stream.db.inTransaction;
    }
  };
  for (const step of steps) {
    if (step.condition && !evaluate(step.condition)) {
      step_results.push(null);
      step_errors.push(null);
      continue;
    }
    try {
      step_results.push(await executeStmt(stream, step.stmt));
      step_errors.push(null);
    } catch (err) {
      step_results.push(null);
      step_errors.push(toError(err));
    }
  }
  return { step_results, step_errors };
}

/** A batch run for the v3 cursor endpoint: the same semantics, reported as cursor entries. */
async function runCursor(stream: Omit<Stream, "timer">, steps: BatchStep[]): Promise<unknown[]> {
  const { step_results, step_errors } = await runBatch(stream, steps);
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

function resolveSql(stream: Omit<Stream, "timer">, ref: { sql?: string; sql_id?: number }): string {
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

async function executeStmt(stream: Omit<Stream, "timer">, stmt: Stmt) {
  const sql = resolveSql(stream, stmt);
  const positional = (stmt.args ?? []).map(decodeValue);
  // The engine matches a plain name against :name, @name and $name alike.
  const named = Object.fromEntries((stmt.named_args ?? []).map((a) => [a.name.replace(/^[:@$]/, ""), decodeValue(a.value)]));
  const params: unknown[] = stmt.named_args?.length ? [...positional, named] : positional;

  return withWriteTurn(stream, sql, () => {
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs a statement once no other connection of this server is inside a transaction (see LOCK_WAIT_MS). */
async function withWriteTurn<T>(stream: Omit<Stream, "timer">, sql: string, run: () => T): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  // Plain reads never take a write lock in WAL mode; anything else might.
  const mayLock = !/^\s*(select|explain)\b/i.test(sql);
  const othersInTransaction = () => [...stream.peers].some((db) => db !== stream.db && db.inTransaction);
  for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
    if (!mayLock || stream.db.inTransaction || !othersInTransaction() || Date.now() > deadline) {
      try {
        return run();
      } catch (err) {
        const busy = ((err as { code?: string }).code ?? "").startsWith("SQLITE_BUSY");
        if (!busy || stream.db.inTransaction || Date.now() > deadline) throw err;
      }
    }
    await sleep(delay);
  }
}

function toError(err: unknown): { message: string; code: string } {
  if (err instanceof HranaError) return { message: err.message, code: err.code };
  const e = err as { message?: string; code?: string };
  return { message: e.message ?? String(err), code: e.code ?? "SQLITE_ERROR" };
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { file: { type: "string" }, port: { type: "string", default: "8080" }, host: { type: "string", default: "127.0.0.1" } },
  });
  if (!values.file) {
    process.stderr.write("usage: tsx scripts/libsql-server.ts --file PATH [--port 8080] [--host 127.0.0.1]\n");
    process.exit(2);
  }
  const server = await startLibsqlServer({
    file: values.file,
    port: Number(values.port),
    host: values.host,
    authToken: process.env.LIBSQL_AUTH_TOKEN,
  });
  process.stderr.write(`libSQL server on ${server.url} (file ${values.file})\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
