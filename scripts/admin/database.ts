/** The database the admin CLI works on: DATABASE_URL, or the local file `npm start` serves. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_BUSY_TIMEOUT_MS, applyMigrations, LOCAL_DATA_DIR, localServerTokenFile, openDatabase, type NodeDatabase } from "../lib/database.ts";
import { ensurePrivateDatabaseFile, ensurePrivateDir } from "../lib/private-files.ts";

/**
 * `narrowed`: the local folder and files whose permissions were wider than their owner's alone and
 * have been narrowed (an older version created them with the umask's mode).
 */
export async function openAdminDatabase(env: NodeJS.ProcessEnv = process.env, dataDir = LOCAL_DATA_DIR): Promise<{ db: NodeDatabase; url: string; narrowed: string[] }> {
  const localUrl = `file:${join(dataDir, "dev.db")}`;
  const url = env.DATABASE_URL?.trim() || localUrl;
  if (url !== localUrl) return { db: openDatabase(url, env.DATABASE_AUTH_TOKEN || localServerToken(url, dataDir), ADMIN_BUSY_TIMEOUT_MS), url, narrowed: [] };
  // So the CLI works before `npm start` ever ran. Other databases are migrated by whoever owns them.
  const narrowed = [...ensurePrivateDir(dataDir), ...ensurePrivateDatabaseFile(url.slice("file:".length))];
  const db = openDatabase(url, undefined, ADMIN_BUSY_TIMEOUT_MS);
  await applyMigrations(db);
  return { db, url, narrowed };
}

/** The token `npm start` left for the libSQL server it runs, when `url` is that server (loopback, plain HTTP). */
function localServerToken(url: string, dataDir: string): string | undefined {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (parsed?.protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname)) return undefined;
  try {
    return readFileSync(localServerTokenFile(parsed.port || 80, dataDir), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}
