/** Node-side access to the database for the CLI, `npm start` and tests. */
import { readFileSync } from "node:fs";
import { createClient } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import { migrate } from "drizzle-orm/libsql/migrator";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as schema from "../../edge/db/schema.ts";

export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../edge/db/migrations", import.meta.url));
/** Where `npm start` keeps the local database, the demo key and the run's secrets (git-ignored, 0700). */
export const LOCAL_DATA_DIR = fileURLToPath(new URL("../../.data", import.meta.url));
/** The file `npm start` serves; the admin CLI opens it directly when DATABASE_URL is not set. */
export const LOCAL_DATABASE_FILE = join(LOCAL_DATA_DIR, "dev.db");

/**
 * The file (0600) in which `npm start` leaves the token of the libSQL server it runs on `port`, for
 * the admin CLI and other local tools; removed when `npm start` stops.
 */
/**
 * The local WEBHOOK_SECRET_KEY (docs/jobs.md "Callbacks"): made by `npm start` on its first run and kept
 * with the local database it seals secrets in, read by the admin CLI when the environment has none.
 */
export function localWebhookSecretKeyFile(dataDir = LOCAL_DATA_DIR): string {
  return join(dataDir, "webhook-secret-key");
}

/** A key from the environment, else the local one kept in `file`, else undefined. */
function keyFromEnvOrFile(given: string | undefined, file: string): string | undefined {
  if (given?.trim()) return given.trim();
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/** WEBHOOK_SECRET_KEY from the environment, else the local one, else undefined. */
export function webhookSecretKey(env: NodeJS.ProcessEnv = process.env, dataDir = LOCAL_DATA_DIR): string | undefined {
  return keyFromEnvOrFile(env.WEBHOOK_SECRET_KEY, localWebhookSecretKeyFile(dataDir));
}

/** The local FEEDBACK_HASH_KEY (docs/api.md "POST /v1/email_feedback"): made by `npm start` on its first run, as the webhook key is. */
export function localFeedbackHashKeyFile(dataDir = LOCAL_DATA_DIR): string {
  return join(dataDir, "feedback-hash-key");
}

/** FEEDBACK_HASH_KEY from the environment, else the local one, else undefined: the admin CLI finds a person's reports with it. */
export function feedbackHashKey(env: NodeJS.ProcessEnv = process.env, dataDir = LOCAL_DATA_DIR): string | undefined {
  return keyFromEnvOrFile(env.FEEDBACK_HASH_KEY, localFeedbackHashKeyFile(dataDir));
}

export function localServerTokenFile(port: string | number, dataDir = LOCAL_DATA_DIR): string {
  return join(dataDir, `libsql-${port}.token`);
}

export type NodeDatabase = LibSQLDatabase<typeof schema> & { $client: ReturnType<typeof createClient> };

/**
 * How long a `file:` connection waits for another process's write lock (npm start's libSQL server
 * writes the same file) before SQLITE_BUSY; sqld's busy timeout is 5 s too. Remote URLs ignore it.
 */
const FILE_BUSY_TIMEOUT_MS = 5_000;

/**
 * The admin CLI's wait (docs/operations.md "Admin CLI"): an operator's command beside a running stack waits its turn
 * for the write lock (the stack's start, a cron run, an import) rather than failing with "database is locked".
 */
export const ADMIN_BUSY_TIMEOUT_MS = 60_000;

export function openDatabase(url: string, authToken?: string, busyTimeoutMs = FILE_BUSY_TIMEOUT_MS): NodeDatabase {
  return drizzle(createClient({ url, authToken, timeout: busyTimeoutMs }), { schema }) as NodeDatabase;
}

export async function applyMigrations(db: NodeDatabase): Promise<void> {
  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
}
