/**
 * The statements of people events (docs/api.md "People events"): an account's subscription, the changes the triggers
 * recorded turned into events for the subscribed accounts that received the person lately (each address disclosed so
 * recorded in the access log), an event's delivery attempts, and what the cron sends again or deletes.
 * The delivery itself, signed and retried as job callbacks are: edge/people-events.ts.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { deleteInBatches, rowsAffected, type RawRow } from "../db/rows.ts";
import type { accounts, peopleEvents } from "../db/schema.ts";

/** The key_id an event's disclosure is logged under: not a lookup, so it never widens who receives events. */
export const EVENT_DISCLOSURE = "people_event";
/** Changes turned into events per cron run. */
export const CHANGES_PER_RUN = 2_000;

export async function peopleEventsUrl(db: Database, accountId: string): Promise<string | null> {
  const [row] = await db.all<{ people_events_url: string | null }>(sql`select people_events_url from accounts where id = ${accountId}`);
  return row?.people_events_url ?? null;
}

/**
 * Sets or clears the account's subscription; events not yet delivered go to the new URL, or nowhere. `audit` is the
 * caller's audit event (identity's), given the condition "this changes the URL" to be written under.
 */
export async function setPeopleEventsUrl(db: Database, accountId: string, url: string | null, audit: (changed: SQL) => SQL): Promise<void> {
  // The audit event first, while the row still says what the URL was: written only when this changes it.
  const changed = sql`coalesce((select people_events_url from accounts where id = ${accountId}), '') != ${url ?? ""}`;
  await db.batch([
    db.run(audit(changed)),
    db.run(sql`update accounts set people_events_url = ${url} where id = ${accountId}`),
    db.run(sql`delete from people_events where account_id = ${accountId} and ${url === null}`),
  ]);
}

const identifiers = (l: string) =>
  sql.raw(`json_object('profnet_id', ${l}.profnet_id, 'profnet_public_identifier', ${l}.profnet_public_identifier, 'codehost_id', ${l}.codehost_id, 'codehost_login', ${l}.codehost_login)`);

/**
 * Turns up to `limit` recorded changes into events, in one transaction: for each, every active account with a
 * subscription whose last lookup of the person is within `windowMs`, named by the identifiers that lookup returned; an
 * added address sent is a disclosure, logged as such. Returns the new events' ids, to put on the queue.
 */
export async function fanOutChanges(db: Database, now: number, windowMs: number, limit = CHANGES_PER_RUN): Promise<string[]> {
  const [bound] = await db.all<{ max_id: number | null }>(sql`select max(id) as max_id from (select id from person_changes order by id limit ${limit})`);
  if (bound?.max_id == null) return [];
  const maxId = Number(bound.max_id);
  const run = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const type = sql`(case c.kind when 'address_undeliverable' then 'person.address_undeliverable' else 'person.address_added' end)`;
  const [inserted] = await db.batch([
    db.all<{ id: string }>(sql`insert into people_events (id, account_id, person_id, type, body, created_at, next_at)
      select 'evt_' || ${run} || lower(hex(randomblob(8))), r.account_id, c.person_id, ${type},
        json_object('type', ${type}, 'timestamp', strftime('%Y-%m-%dT%H:%M:%fZ', ${now} / 1000.0, 'unixepoch'),
          'data', json_object('person', json(${identifiers("r")}), 'email_address', e.email)),
        ${now}, ${now}
      from person_changes c
      join person_emails e on e.id = c.email_id
      join person_access_log r on r.person_id = c.person_id and r.key_id <> ${EVENT_DISCLOSURE} and r.created_at > ${now - windowMs}
        and r.id = (select max(l.id) from person_access_log l where l.person_id = r.person_id and l.account_id = r.account_id and l.key_id <> ${EVENT_DISCLOSURE})
      join accounts a on a.id = r.account_id and a.people_events_url is not null and a.status = 'active'
      where c.id <= ${maxId}
      order by c.id
      returning id`),
    db.run(sql`insert into person_access_log (person_id, account_id, key_id, created_at, profnet_id, profnet_public_identifier, codehost_id, codehost_login)
      select person_id, account_id, ${EVENT_DISCLOSURE}, ${now}, body ->> '$.data.person.profnet_id', body ->> '$.data.person.profnet_public_identifier',
        body ->> '$.data.person.codehost_id', body ->> '$.data.person.codehost_login'
      from people_events where id like ${`evt_${run}%`} and type = 'person.address_added'`),
    db.run(sql`delete from person_changes where id <= ${maxId}`),
  ]);
  return inserted.map((r) => String(r.id));
}

export type EventForDelivery = Pick<RawRow<typeof peopleEvents.$inferSelect>, "id" | "account_id" | "body" | "attempts"> &
  Pick<RawRow<typeof accounts.$inferSelect>, "people_events_url" | "webhook_secret"> & { active: number };

/** A pending event with what its delivery needs of its account; null when there is none (delivered, given up, or erased). */
export async function pendingEvent(db: Database, id: string): Promise<EventForDelivery | null> {
  const [row] = await db.all<EventForDelivery>(sql`select e.id, e.account_id, e.body, e.attempts, a.people_events_url, a.webhook_secret, a.status = 'active' as active
    from people_events e join accounts a on a.id = e.account_id where e.id = ${id} and e.state = 'pending'`);
  return row ?? null;
}

/** Records an attempt: delivered (the event is deleted: it held personal data), to be tried again at `nextAt`, or given up (null). */
export async function recordEventAttempt(db: Database, id: string, outcome: { delivered: true } | { delivered: false; error: string; nextAt: number | null }, now = Date.now()): Promise<void> {
  if (outcome.delivered) {
    await db.run(sql`delete from people_events where id = ${id}`);
    return;
  }
  await db.run(sql`update people_events set attempts = attempts + 1, last_error = ${outcome.error.slice(0, 200)},
      state = ${outcome.nextAt === null ? "failed" : "pending"}, next_at = ${outcome.nextAt ?? now}
    where id = ${id} and state = 'pending'`);
}

/** Pending events whose attempt is overdue by `before` (a message lost, or an event the admin CLI wrote): to put on the queue again. */
export async function overdueEvents(db: Database, before: number, limit = 1_000): Promise<{ id: string; attempts: number }[]> {
  const rows = await db.all<{ id: string; attempts: number }>(sql`select id, attempts from people_events where state = 'pending' and next_at <= ${before} order by next_at limit ${limit}`);
  return rows.map((r) => ({ id: String(r.id), attempts: Number(r.attempts) }));
}

/** Deletes events given up before `before`; returns how many. */
export async function deleteFailedEvents(db: Database, before: number): Promise<number> {
  const deleteUpTo = (limit: number) => db.run(sql`delete from people_events where id in (select id from people_events where state = 'failed' and next_at < ${before} limit ${limit})`);
  return (await deleteInBatches(deleteUpTo, 5_000, 50_000)).deleted;
}

/** Moves an overdue event's next attempt to `at`, so that two cron runs do not both send it again; false when it is no longer overdue. */
export async function claimOverdueEvent(db: Database, id: string, before: number, at: number): Promise<boolean> {
  return rowsAffected(await db.run(sql`update people_events set next_at = ${at} where id = ${id} and state = 'pending' and next_at <= ${before}`)) === 1;
}
