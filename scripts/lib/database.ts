/** Node-side access to the database for the CLI, `npm start` and tests. */
import { createClient } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import { migrate } from "drizzle-orm/libsql/migrator";
import { fileURLToPath } from "node:url";
import * as schema from "../../edge/db/schema.ts";

export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../edge/db/migrations", import.meta.url));
/** The file `npm start` serves; the admin CLI opens it directly when DATABASE_URL is not set. */
export const LOCAL_DATABASE_FILE = fileURLToPath(new URL("../../.data/dev.db", import.meta.url));
export const DEFAULT_LOCAL_DATABASE_URL = `file:${LOCAL_DATABASE_FILE}`;

export type NodeDatabase = LibSQLDatabase<typeof schema> & { $client: ReturnType<typeof createClient> };

/**
 * How long a `file:` connection waits for another process's write lock (npm start's libSQL server
 * writes the same file) before SQLITE_BUSY; sqld's busy timeout is 5 s too. Remote URLs ignore it.
 */
const FILE_BUSY_TIMEOUT_MS = 5_000;

export function openDatabase(url: string, authToken?: string): NodeDatabase {
  return drizzle(createClient({ url, authToken, timeout: FILE_BUSY_TIMEOUT_MS }), { schema }) as NodeDatabase;
}

export async function applyMigrations(db: NodeDatabase): Promise<void> {
  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
}
