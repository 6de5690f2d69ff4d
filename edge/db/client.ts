import { createClient, type Client } from "@libsql/client/web";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import { drizzle } from "drizzle-orm/libsql/web";
import * as schema from "./schema.ts";

export type Database = LibSQLDatabase<typeof schema> & { $client: Client };

/**
 * A database handle for one request. It must not be shared across requests: the libSQL client
 * queues statements beyond its concurrency limit (20) and releases them from whichever request
 * finished first, and workerd cannot resume one request from another's I/O, so a shared client
 * hangs under load ("code had hung", seen with 50 connections). Creating one does no I/O.
 */
export function openRequestDatabase(url: string, authToken: string | undefined): Database {
  return drizzle(createClient({ url, authToken }), { schema }) as Database;
}

/** The request's database handle, opened on first use and kept on the context for the rest of it. */
export function requestDatabase(c: {
  get(key: "config"): { DATABASE_URL: string; DATABASE_AUTH_TOKEN?: string | undefined };
  get(key: "db"): Database | undefined;
  set(key: "db", value: Database): void;
}): Database {
  let db = c.get("db");
  if (!db) {
    const config = c.get("config");
    db = openRequestDatabase(config.DATABASE_URL, config.DATABASE_AUTH_TOKEN);
    c.set("db", db);
  }
  return db;
}
