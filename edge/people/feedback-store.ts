/**
 * The statements on bounce feedback (email_feedback) and on the addresses it is about (docs/api.md "POST
 * /v1/email_feedback"): a call's reports written in one batch, with the stored addresses they name linked to them and a
 * hard bounce's address moved to the front of re-verification within the account's hourly bound; the cron's naming of
 * stored addresses and its deletion of old reports. The verdict reports add up to is read by the lookup
 * (edge/people/confidence-sql.ts).
 */
import { sql } from "drizzle-orm";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import type { Database } from "../db/client.ts";
import { deleteInBatches, rowsAffected } from "../db/rows.ts";
import type { FeedbackReport } from "./feedback.ts";

/** next_check_at of an address a hard bounce moved forward: before every other due address (0 is a new one's). */
export const REVERIFY_FIRST = -1;
const HOUR_MS = 3_600_000;

export type HashedReport = FeedbackReport & { hash: string };

/**
 * The batch (one transaction) that writes a call's reports:
 * 1. stored addresses the reports name as written get the reports' name for them (the cron names the rest);
 * 2. the reports, each hard bounce marked `reverify` when it is the first of its address in the call, its address is
 *    stored, deliverable and last checked before the bounce, the account has not moved that address forward in the
 *    past hour, and fewer than `perHour` of the account's bounces did so in the past hour;
 * 3. the addresses so marked are due first.
 * Counting and marking happen inside the transaction, so two calls at once cannot both spend the last of the bound.
 */
export function recordFeedbackStatements(db: Database, accountId: string, reports: HashedReport[], now: number, perHour: number) {
  const seen = new Set<string>();
  const items = reports.map((r) => {
    const first = r.outcome === "hard_bounce" && !seen.has(r.hash);
    if (first) seen.add(r.hash);
    return { hash: r.hash, email: r.email, outcome: r.outcome, at: r.occurredAt, reply: r.smtpReply, first: first ? 1 : 0 };
  });
  const json = JSON.stringify(items);
  const hourAgo = now - HOUR_MS;
  const movedThisHour = sql`(select count(*) from email_feedback where account_id = ${accountId} and reverify = 1 and received_at > ${hourAgo})`;
  return [
    // By the lower(email) index (the unary +: not by the address_hash index, over every address not named yet).
    db.run(sql`update person_emails set address_hash = (select value ->> 'hash' from json_each(${json}) where lower(value ->> 'email') = lower(person_emails.email) limit 1)
      where +address_hash is null and lower(email) in (select lower(value ->> 'email') from json_each(${json}))`),
    db.run(sql`insert into email_feedback (account_id, address_hash, outcome, occurred_at, received_at, smtp_reply, reverify)
      select ${accountId}, hash, outcome, at, ${now}, reply,
        coalesce(q and row_number() over (partition by q order by k) <= ${perHour} - ${movedThisHour}, 0)
      from (select key as k, value ->> 'hash' as hash, value ->> 'outcome' as outcome, value ->> 'at' as at, value ->> 'reply' as reply,
          (value ->> 'first' = 1
            and not exists (select 1 from email_feedback p where p.account_id = ${accountId} and p.reverify = 1 and p.received_at > ${hourAgo} and p.address_hash = value ->> 'hash')
            and exists (select 1 from person_emails e where e.address_hash = value ->> 'hash' and e.undeliverable_at is null and coalesce(e.checked_at, 0) < value ->> 'at')) as q
        from json_each(${json}))
      order by k`),
    db.run(sql`update person_emails set next_check_at = ${REVERIFY_FIRST}
      where address_hash in (select address_hash from email_feedback where account_id = ${accountId} and received_at = ${now} and reverify = 1)
        and undeliverable_at is null
        and coalesce(checked_at, 0) < (select max(f.occurred_at) from email_feedback f
          where f.account_id = ${accountId} and f.received_at = ${now} and f.reverify = 1 and f.address_hash = person_emails.address_hash)`),
  ] as const;
}

/** Stored addresses named per cron run (HMAC in the Worker, one update per slice). */
export const ADDRESSES_NAMED_PER_RUN = 20_000;
const NAMED_PER_WRITE = 2_000;

/**
 * Gives stored addresses without a name their name (`hash`), up to `limit` per run; returns how many. Each write finds
 * its rows by id (the unary + keeps SQLite from walking the address_hash index over every unnamed address for each of
 * the slice's rows instead: 40.7 s for 200 rows with 200,000 unnamed, against 14 ms for 2,000 this way; bench/background-statements.ts).
 */
export const nameStoredAddresses = (db: Database, hash: (email: string) => Promise<string>, limit = ADDRESSES_NAMED_PER_RUN): Promise<number> =>
  fillStoredAddresses(db, "address_hash", hash, limit);

/**
 * Gives stored addresses without their one key (shared/email/canonical-address.ts) that key, as nameStoredAddresses
 * names them: the rows the 0028 migration could not key in SQL (IDN domains, non-ASCII or quoted local parts), so
 * that a lookup by email finds them.
 */
export const keyStoredAddresses = (db: Database, limit = ADDRESSES_NAMED_PER_RUN): Promise<number> =>
  fillStoredAddresses(db, "address_key", async (email) => canonicalAddress(email), limit);

async function fillStoredAddresses(db: Database, column: "address_hash" | "address_key", value: (email: string) => Promise<string>, limit: number): Promise<number> {
  const col = sql.identifier(column);
  let filled = 0;
  for (let read = 0; read < limit; ) {
    const rows = await db.all<{ id: number; email: string }>(sql`select id, email from person_emails where ${col} is null limit ${Math.min(NAMED_PER_WRITE, limit - read)}`);
    read += rows.length;
    if (rows.length === 0) break;
    const values = await Promise.all(rows.map(async (r) => ({ id: Number(r.id), value: await value(r.email) })));
    const result = await db.run(sql`update person_emails set ${col} = u.value ->> 'value' from json_each(${JSON.stringify(values)}) u
      where person_emails.id = u.value ->> 'id' and +person_emails.${col} is null`);
    filled += rowsAffected(result);
    if (rows.length < NAMED_PER_WRITE) break;
  }
  return filled;
}

/** Deletes reports of things that happened before `before`, a bounded number per run; returns how many. */
export async function deleteOldFeedback(db: Database, before: number): Promise<number> {
  const deleteUpTo = (limit: number) => db.run(sql`delete from email_feedback where id in (select id from email_feedback where occurred_at < ${before} limit ${limit})`);
  return (await deleteInBatches(deleteUpTo, 5_000, 50_000)).deleted;
}
