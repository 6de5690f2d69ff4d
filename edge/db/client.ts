import { createClient, type Client } from "@libsql/client/web";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import { drizzle } from "drizzle-orm/libsql/web";
import * as schema from "./schema.ts";

export type Database = LibSQLDatabase<typeof schema> & { $client: Client };

// One HTTP client per isolate and database: it is stateless apart from keep-alive.
const clients = new Map<string, Database>();

export function getDatabase(url: string, authToken: string | undefined): Database {
  const cacheKey = `${url}\u0000${authToken ?? ""}`;
  let db = clients.get(cacheKey);
  if (!db) {
    db = drizzle(createClient({ url, authToken }), { schema }) as Database;
    clients.set(cacheKey, db);
  }
  return db;
}
