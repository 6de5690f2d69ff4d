/**
 * The database for one request (docs/api.md "Errors that are not the caller's"): a libSQL client over HTTP with a timeout on every call,
 * whose failures (no answer in time, a refused connection, an error status) become DatabaseUnavailableError, which the
 * app answers with 503 and Retry-After; and the Drizzle handle the stores use.
 */
import { createClient, type Client } from "@libsql/client/web";
import { createTableRelationsHelpers, extractTablesRelationalConfig, type ExtractTablesWithRelations, type RelationalSchemaConfig } from "drizzle-orm";
import { LibSQLDatabase } from "drizzle-orm/libsql/driver-core";
import { LibSQLSession } from "drizzle-orm/libsql/session";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import * as schema from "./schema.ts";

export type Database = LibSQLDatabase<typeof schema> & { $client: Client };

/**
 * A database call that failed: no answer within DATABASE_TIMEOUT_MS, a refused connection, an error
 * status or an error from the database itself. The app answers it with 503 and Retry-After
 * (docs/api.md "Errors"), never a hang or a 500. The original error is the cause, for the log.
 */
export class DatabaseUnavailableError extends Error {
  override name = "DatabaseUnavailableError";
  constructor(cause: unknown) {
    super("The database call failed", { cause });
  }
}

/** The client calls whose failures are database failures; anything else is passed through as it is. */
const DATABASE_CALLS = new Set<PropertyKey>(["execute", "batch", "executeMultiple", "migrate", "transaction"]);

function reportingFailures(client: Client): Client {
  return new Proxy(client, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (!DATABASE_CALLS.has(property)) return value.bind(target);
      return async (...args: unknown[]) => {
        try {
          return await value.apply(target, args);
        } catch (error) {
          throw new DatabaseUnavailableError(error);
        }
      };
    },
  });
}

/** Every request to the database gets `timeoutMs` to be answered in full, body included. */
function fetchWithin(timeoutMs: number): typeof fetch {
  return (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
}

/**
 * What drizzle() derives from the schema and its dialect, made once per isolate: drizzle() itself (its
 * driver-core construct(), which openRequestDatabase follows) walks every table again on each open, and
 * a database is opened once per request. Neither holds anything of a request.
 */
const dialect = new SQLiteAsyncDialect();
const relationalSchema: RelationalSchemaConfig<ExtractTablesWithRelations<typeof schema>> = (() => {
  const tables = extractTablesRelationalConfig<ExtractTablesWithRelations<typeof schema>>(schema, createTableRelationsHelpers);
  return { fullSchema: schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };
})();

/** The request's database handle, opened on first use and kept on the context for the rest of it. */
export function requestDatabase(c: {
  get(key: "config"): { DATABASE_URL: string; DATABASE_AUTH_TOKEN?: string | undefined; DATABASE_TIMEOUT_MS: number };
  get(key: "db"): Database | undefined;
  set(key: "db", value: Database): void;
}): Database {
  let db = c.get("db");
  if (!db) {
    const config = c.get("config");
    db = openRequestDatabase(config.DATABASE_URL, config.DATABASE_AUTH_TOKEN, config.DATABASE_TIMEOUT_MS);
    c.set("db", db);
  }
  return db;
}

/**
 * A database handle for one request. It must not be shared across requests: the libSQL client
 * queues statements beyond its concurrency limit (20) and releases them from whichever request
 * finished first, and workerd cannot resume one request from another's I/O, so a shared client
 * hangs under load ("code had hung", seen with 50 connections). Creating one does no I/O.
 */
export function openRequestDatabase(url: string, authToken: string | undefined, timeoutMs: number): Database {
  const client = reportingFailures(createClient({ url, authToken, fetch: fetchWithin(timeoutMs) }));
  const db = new LibSQLDatabase("async", dialect, new LibSQLSession(client, dialect, relationalSchema, {}, undefined), relationalSchema) as Database;
  db.$client = client;
  return db;
}
