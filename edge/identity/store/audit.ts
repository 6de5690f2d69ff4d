/**
 * The audit trail in the database (docs/api.md "GET /v1/audit-events"): the one insert every identity change writes in
 * its own batch, conditioned on the change having happened; the page the API reads; and the cron's retention.
 */
import { sql, type SQL } from "drizzle-orm";
import { deleteInBatches } from "../../db/rows.ts";
import { nameOf } from "./names.ts";

/** An audit event, written only if `onlyIf` holds when the batch reaches it. */
export function auditEvent(
  e: { accountId: string; action: string; actor: string; target: string; details: Record<string, unknown>; requestId: string | null; now: number },
  onlyIf: SQL = sql`true`,
) {
  return sql`
    insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
    select ${e.accountId}, ${e.action}, ${e.actor}, ${e.target}, ${JSON.stringify(e.details)}, ${e.requestId}, ${e.now} where ${onlyIf}`;
}


export type AuditRow = {
  id: number;
  action: string;
  actor: string;
  target: string | null;
  details: string;
  request_id: string | null;
  created_at: number;
  actor_name: string | null;
  target_name: string | null;
};

/** Which events a page holds: by who acted and what was acted on (ids), each when given. */
export type AuditFilter = { actor?: string; target?: string };

/**
 * A page of the account's events, newest first, older than `before` (an event id) when given, narrowed by `filter`; one
 * more than `limit`, to know whether another page follows. Each with its actor's and target's names (names.ts).
 */
export function auditPage(db: { all<T>(q: SQL): Promise<T[]> }, accountId: string, before: number | null, limit: number, filter: AuditFilter = {}): Promise<AuditRow[]> {
  return db.all<AuditRow>(sql`
    select id, action, actor, target, details, request_id, created_at,
      ${nameOf(accountId, sql`audit_events.actor`)} as actor_name,
      ${nameOf(accountId, sql`audit_events.target`)} as target_name
    from audit_events
    where account_id = ${accountId} ${before === null ? sql`` : sql`and id < ${before}`}
      ${filter.actor === undefined ? sql`` : sql`and actor = ${filter.actor}`}
      ${filter.target === undefined ? sql`` : sql`and target = ${filter.target}`}
    order by id desc limit ${limit + 1}`);
}

/** For the cron: deletes events older than the retention, a bounded number per run, 5,000 per statement. */
export async function deleteOldAuditEvents(db: { run(q: SQL): Promise<unknown> }, before: number, maxRows = 10_000): Promise<number> {
  const deleteUpTo = (limit: number) => db.run(sql`delete from audit_events where id in (select id from audit_events where created_at < ${before} order by id limit ${limit})`);
  return (await deleteInBatches(deleteUpTo, 5_000, maxRows)).deleted;
}
