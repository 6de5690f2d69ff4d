/**
 * Callbacks and clean-up: a callback attempt recorded, what a callback needs of its account, and creates that died
 * half way deleted a bounded number of lines at a time.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { rowsAffected, type RawRow } from "../../db/rows.ts";
import type { accounts } from "../../db/schema.ts";
import { LINES_PER_TRANSACTION } from "./job-creation.ts";
import { deleteFirstLines } from "./lines.ts";

/** A job still being written after this long was abandoned by a create that died; the cron deletes it. */
export const ABANDONED_CREATE_MS = 10 * 60_000;

/** Records a callback attempt: delivered, failed for good, or to be tried again at `nextAt`. */
export async function recordCallback(db: Database, jobId: string, outcome: { delivered: true } | { delivered: false; error: string; nextAt: number | null }): Promise<void> {
  if (outcome.delivered) {
    await db.run(sql`update verification_jobs set callback_state = 'delivered', callback_attempts = callback_attempts + 1, callback_next_at = null, callback_last_error = null where id = ${jobId}`);
    return;
  }
  await db.run(sql`update verification_jobs set callback_attempts = callback_attempts + 1, callback_last_error = ${outcome.error.slice(0, 200)},
      callback_state = ${outcome.nextAt === null ? "failed" : "pending"}, callback_next_at = ${outcome.nextAt}
    where id = ${jobId} and callback_state = 'pending'`);
}

/** What a callback needs of its account: whether it is active, and its stored (sealed) webhook secret. */
export async function callbackAccount(db: Database, accountId: string): Promise<{ active: boolean; storedSecret: string | null } | null> {
  const [row] = await db.all<Pick<RawRow<typeof accounts.$inferSelect>, "status" | "webhook_secret">>(sql`select status, webhook_secret from accounts where id = ${accountId}`);
  return row ? { active: row.status === "active", storedSecret: row.webhook_secret } : null;
}

/**
 * The cron's cleanup of creates that died half way: jobs still being written after
 * ABANDONED_CREATE_MS lose up to `maxLines` lines per call, a job its row once none is left.
 * Returns the jobs deleted whole.
 */
export async function deleteAbandonedJobs(db: Database, maxLines = LINES_PER_TRANSACTION): Promise<number> {
  const abandoned = await db.all<{ id: string }>(sql`select id from verification_jobs where creating = 1 and created_at < ${Date.now() - ABANDONED_CREATE_MS} limit 10`);
  let deleted = 0;
  for (const { id } of abandoned) {
    if (rowsAffected(await deleteFirstLines(db, id, maxLines)) > 0) continue;
    const [row] = await db.batch([db.run(sql`delete from verification_jobs where id = ${id} and creating = 1
      and not exists (select 1 from verification_job_items where job_id = ${id})`)]);
    deleted += rowsAffected(row);
  }
  return deleted;
}
