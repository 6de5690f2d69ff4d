/**
 * Sessions in the database (docs/api.md "Sessions"): the statements behind a session's life, which
 * edge/identity/sessions.ts runs: opened (with the passkey that opened it, at sign-in or join), found and touched in one
 * round trip, stepped up, ended (one, a member's all, those a passkey opened), their one-time notes, and the cron's
 * clean-up. Only hashes of secrets are here.
 */
import { sql, type SQL } from "drizzle-orm";
import type * as schema from "../../db/schema.ts";
import { auditEvent } from "./audit.ts";
import { type Db } from "../../db/rows.ts";

/** The statements that open a session for `memberId` (for a batch), written only if `onlyIf` holds. */
export function sessionStatements(
  db: Db,
  s: { memberId: string; accountId: string; tokenHash: string; sessionId: string; maxMs: number; passkeyId: string; requestId: string | null; now: number },
  onlyIf: SQL,
) {
  return [
    db.run(sql`
      insert into sessions (id, token_hash, member_id, account_id, created_at, last_seen_at, expires_at, passkey_id, verified_at)
      select ${s.sessionId}, ${s.tokenHash}, ${s.memberId}, ${s.accountId}, ${s.now}, ${s.now}, ${s.now + s.maxMs}, ${s.passkeyId}, ${s.now} where ${onlyIf}`),
    db.run(
      auditEvent(
        { accountId: s.accountId, action: "session.signed_in", actor: s.memberId, target: s.sessionId, details: { passkey_id: s.passkeyId }, requestId: s.requestId, now: s.now },
        onlyIf,
      ),
    ),
  ] as const;
}

export type SessionRow = { id: string; member_id: string; account_id: string; last_seen_at: number; expires_at: number; role: string; status: string };

/**
 * The statements (for a batch: one round trip) that move a live session's last_seen_at to `now` and read it, with its
 * member's role and its account's status, as it is after.
 */
export function findSessionStatements(db: Db, tokenHash: string, now: number, idleMs: number) {
  return [
    db.run(sql`update sessions set last_seen_at = ${now} where token_hash = ${tokenHash} and expires_at > ${now} and last_seen_at > ${now - idleMs}`),
    db.all<SessionRow>(sql`
      select s.id, s.member_id, s.account_id, s.last_seen_at, s.expires_at, m.role, a.status
      from sessions s join members m on m.id = s.member_id join accounts a on a.id = s.account_id
      where s.token_hash = ${tokenHash}`),
  ] as const;
}

/**
 * The statements (for a batch) that end the sessions `which` selects (an SQL condition on `sessions`), each recorded
 * as `session.signed_out` with `details`, together with their one-time notes; if `onlyIf` holds.
 */
export function endSessionStatements(db: Db, which: SQL, requestId: string | null, now: number, onlyIf: SQL = sql`1`, details: Record<string, unknown> = {}) {
  return [
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select account_id, 'session.signed_out', member_id, id, ${JSON.stringify(details)}, ${requestId}, ${now} from sessions where ${which} and ${onlyIf}`),
    db.run(sql`delete from session_notes where session_id in (select id from sessions where ${which}) and ${onlyIf}`),
    db.all<{ id: string; member_id: string }>(sql`delete from sessions where ${which} and ${onlyIf} returning id, member_id`),
  ] as const;
}

/** Ends every session of a member ("sign out everywhere"), recorded as one event: how many ended. */
export async function endMemberSessions(db: Db, e: { accountId: string; memberId: string; requestId: string | null; now: number }): Promise<number> {
  const [, , ended] = await db.batch([
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select ${e.accountId}, 'session.signed_out', ${e.memberId}, ${e.memberId},
        json_object('everywhere', json('true'), 'sessions', (select count(*) from sessions where member_id = ${e.memberId})), ${e.requestId}, ${e.now}`),
    db.run(sql`delete from session_notes where session_id in (select id from sessions where member_id = ${e.memberId})`),
    db.run(sql`delete from sessions where member_id = ${e.memberId}`),
  ]);
  return ended.rowsAffected;
}

/** Whether the session proved presence (sign-in or step-up) after `since`. */
export async function verifiedSince(db: Db, sessionId: string, since: number): Promise<boolean> {
  const [row] = await db.all<{ id: string }>(sql`select id from sessions where id = ${sessionId} and verified_at > ${since}`);
  return row !== undefined;
}

/**
 * Records a step-up: the session's proof of presence is now, and the passkey's counter moves as at a sign-in (only
 * forward for a passkey that keeps one). False when the counter did not move or the session ended.
 */
export async function stepUp(db: Db, s: { sessionId: string; passkeyId: string; counter: number; now: number }): Promise<boolean> {
  const counterMoves = s.counter === 0 ? sql`counter = 0` : sql`counter < ${s.counter}`;
  const [verified] = await db.batch([
    db.run(sql`update sessions set verified_at = ${s.now} where id = ${s.sessionId} and exists (select 1 from passkeys where id = ${s.passkeyId} and ${counterMoves})`),
    db.run(sql`update passkeys set counter = ${s.counter}, last_used_at = ${s.now} where id = ${s.passkeyId} and exists (select 1 from sessions where id = ${s.sessionId} and verified_at = ${s.now})`),
  ]);
  return verified.rowsAffected === 1;
}

/** Keeps a sealed note for the session with this token hash: false when there is no such session. */
export async function insertNote(db: Db, n: { id: string; tokenHash: string; sealed: string; now: number }): Promise<boolean> {
  const rows = await db.all<{ id: string }>(sql`
    insert into session_notes (id, session_id, sealed, created_at)
    select ${n.id}, id, ${n.sealed}, ${n.now} from sessions where token_hash = ${n.tokenHash} returning id`);
  return rows.length > 0;
}

/** Takes (reads and deletes, in one statement) the session's note `id` made after `since`: its sealed text, or null. */
export async function takeSealedNote(db: Db, n: { id: string; tokenHash: string; since: number }): Promise<string | null> {
  const [row] = await db.all<{ sealed: string }>(sql`
    delete from session_notes where id = ${n.id} and created_at > ${n.since}
      and session_id = (select id from sessions where token_hash = ${n.tokenHash})
    returning sealed`);
  return row?.sealed ?? null;
}

/** For the cron: ended sessions with their notes, and notes made before `notesBefore`. */
export function deleteEndedSessionsStatements(db: Db, now: number, idleMs: number, notesBefore: number) {
  const ended = sql`expires_at <= ${now} or last_seen_at <= ${now - idleMs}`;
  return [
    db.run(sql`delete from session_notes where created_at <= ${notesBefore} or session_id in (select id from sessions where ${ended})`),
    db.run(sql`delete from sessions where ${ended}`),
  ] as const;
}
