/**
 * The usage roll-up (usage_daily: one row per account, day and key; docs/api.md "GET /v1/usage"): the statements that
 * count into it, and the read that sums it, all here (the money room).
 */
import { sql, type SQL } from "drizzle-orm";
import { USAGE_FIELDS } from "../../shared/keys.ts";
import type { Database } from "../db/client.ts";
import { nameOf } from "../identity/store/names.ts";

/** The sums of each usage field over the days `from`..`to` (YYYY-MM-DD), by day or by key (each row naming its key or member). */
export function usageRows(db: Database, accountId: string, q: { from: string; to: string; groupBy: "day" | "key"; keyId: string | undefined }) {
  const group = q.groupBy === "day" ? sql.raw("day") : sql.raw("key_id");
  const sums = sql.raw(USAGE_FIELDS.map((f) => `sum(${f}) as ${f}`).join(", "));
  const named = q.groupBy === "key" ? sql`, ${nameOf(accountId, sql`usage_daily.key_id`)} as name` : sql``;
  return db.all<Record<string, unknown>>(sql`
    select ${group} as grp, ${sums} ${named} from usage_daily
    where account_id = ${accountId} and day between ${q.from} and ${q.to} ${q.keyId === undefined ? sql`` : sql`and key_id = ${q.keyId}`}
    group by ${group} order by ${group}`);
}

/** Counts `n` single verifications for a key on a day (edge/identity/key-activity.ts flushes them in batches). */
export const countVerificationsStatement = (accountId: string, keyId: string, day: string, n: number): SQL => sql`
  insert into usage_daily (account_id, key_id, day, verifications) values (${accountId}, ${keyId}, ${day}, ${n})
  on conflict (account_id, day, key_id) do update set verifications = verifications + excluded.verifications`;

/**
 * Counts a verification job's lines for the key that made it, once the job is visible: `visible` is the SQL condition
 * (in the same batch, right after the statement that made it visible), `lines` what to count.
 */
export const countJobLinesStatement = (keyId: string | null, day: string, jobs: SQL, visible: SQL): SQL => sql`
  insert into usage_daily (account_id, key_id, day, job_lines)
  select account_id, ${keyId}, ${day}, total from (${jobs}) where ${keyId} is not null and ${visible}
  on conflict (account_id, day, key_id) do update set job_lines = job_lines + excluded.job_lines`;
