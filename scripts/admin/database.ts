/** The database the admin CLI works on: DATABASE_URL, or the local file `npm start` serves. */
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { applyMigrations, DEFAULT_LOCAL_DATABASE_URL, LOCAL_DATABASE_FILE, openDatabase, type NodeDatabase } from "../lib/database.ts";

export async function openAdminDatabase(env: NodeJS.ProcessEnv = process.env): Promise<{ db: NodeDatabase; url: string }> {
  const url = env.DATABASE_URL?.trim() || DEFAULT_LOCAL_DATABASE_URL;
  if (url !== DEFAULT_LOCAL_DATABASE_URL) return { db: openDatabase(url, env.DATABASE_AUTH_TOKEN || undefined), url };
  // So the CLI works before `npm start` ever ran. Other databases are migrated by whoever owns them.
  await mkdir(dirname(LOCAL_DATABASE_FILE), { recursive: true });
  const db = openDatabase(url);
  await applyMigrations(db);
  return { db, url };
}
