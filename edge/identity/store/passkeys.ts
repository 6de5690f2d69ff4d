/**
 * A signed-in member's own passkeys (docs/api.md "Passkeys"): list, add, remove. A member always keeps
 * one: removing the last is refused, so nobody locks themselves out. Removing a passkey ends the sessions it
 * opened (a lost device is signed out with its passkey); adding one needs the session's proof of presence to be
 * recent (a step-up: edge/identity/sessions.ts STEP_UP_MAX_AGE_MS), so a stolen cookie alone cannot enrol a passkey that outlives it. Each
 * change and its audit event in one batch, the event conditioned on the change.
 */
import { sql } from "drizzle-orm";
import { MAX_PASSKEYS_PER_MEMBER } from "../../../shared/members.ts";
import { newId } from "../tokens.ts";
import { auditEvent } from "./audit.ts";
import { MEMBER_COLUMNS, PASSKEY_COLUMNS, type MemberRow, type PasskeyRow } from "./members.ts";
import { endSessionStatements } from "./sessions.ts";
import type * as schema from "../../db/schema.ts";
import { type Db } from "../../db/rows.ts";

/** The member and their passkeys, oldest passkey first, in one round trip. */
export async function memberWithPasskeys(db: Db, memberId: string): Promise<{ member: MemberRow | undefined; passkeys: PasskeyRow[] }> {
  const [members, passkeys] = await db.batch([
    db.all<MemberRow>(sql`select ${MEMBER_COLUMNS} from members where id = ${memberId}`),
    db.all<PasskeyRow>(sql`select ${PASSKEY_COLUMNS} from passkeys where member_id = ${memberId} order by created_at, id`),
  ]);
  return { member: members[0], passkeys };
}

/** Whether a passkey with this credential id is registered, to any member. */
export async function passkeyRegistered(db: Db, credentialId: string): Promise<boolean> {
  return (await db.all<{ id: string }>(sql`select id from passkeys where credential_id = ${credentialId} limit 1`)).length > 0;
}

export type AddOutcome = { added: true; passkey: PasskeyRow } | { added: false; reason: "already_registered" | "too_many" | "step_up_required" };

export async function addPasskey(
  db: Db,
  p: {
    accountId: string;
    memberId: string;
    /** The session adding it, which must have proved presence after `verifiedSince` (a step-up). */
    sessionId: string;
    verifiedSince: number;
    credentialId: string;
    publicKey: string;
    counter: number;
    transports: string[];
    name: string;
    requestId: string | null;
    now: number;
  },
): Promise<AddOutcome> {
  const id = newId("pk");
  const fresh = sql`exists (select 1 from sessions where id = ${p.sessionId} and member_id = ${p.memberId} and verified_at > ${p.verifiedSince})`;
  const [existing, inserted, , verified] = await db.batch([
    db.all<{ id: string }>(sql`select id from passkeys where credential_id = ${p.credentialId}`),
    db.all<PasskeyRow>(sql`
      insert into passkeys (id, member_id, account_id, credential_id, public_key, counter, transports, name, created_at)
      select ${id}, id, account_id, ${p.credentialId}, ${p.publicKey}, ${p.counter}, ${JSON.stringify(p.transports)}, ${p.name}, ${p.now}
      from members where id = ${p.memberId} and ${fresh}
        and (select count(*) from passkeys where member_id = ${p.memberId}) < ${MAX_PASSKEYS_PER_MEMBER}
        and not exists (select 1 from passkeys where credential_id = ${p.credentialId})
      returning ${PASSKEY_COLUMNS}`),
    db.run(
      auditEvent(
        { accountId: p.accountId, action: "passkey.added", actor: p.memberId, target: id, details: { member_id: p.memberId, name: p.name }, requestId: p.requestId, now: p.now },
        sql`exists (select 1 from passkeys where id = ${id})`,
      ),
    ),
    db.all<{ fresh: number }>(sql`select ${fresh} as fresh`),
  ]);
  if (inserted[0]) return { added: true, passkey: inserted[0] };
  if (Number(verified[0]?.fresh) !== 1) return { added: false, reason: "step_up_required" };
  return { added: false, reason: existing.length > 0 ? "already_registered" : "too_many" };
}

export type RemoveOutcome = { removed: true; sessionsEnded: string[] } | { removed: false; reason: "not_found" | "last_passkey" };

/** Removes one of the member's passkeys and ends every session it opened, this one included when it did. */
export async function removePasskey(db: Db, r: { accountId: string; memberId: string; passkeyId: string; requestId: string | null; now: number }): Promise<RemoveOutcome> {
  const allowed = sql`exists (select 1 from passkeys where id = ${r.passkeyId} and member_id = ${r.memberId})
    and (select count(*) from passkeys where member_id = ${r.memberId}) > 1`;
  const [, , , ended, deleted, found] = await db.batch([
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select ${r.accountId}, 'passkey.removed', ${r.memberId}, id, json_object('member_id', member_id, 'name', name), ${r.requestId}, ${r.now}
      from passkeys where id = ${r.passkeyId} and ${allowed}`),
    ...endSessionStatements(db, sql`passkey_id = ${r.passkeyId} and member_id = ${r.memberId}`, r.requestId, r.now, allowed, { passkey_removed: r.passkeyId }),
    db.run(sql`delete from passkeys where id = ${r.passkeyId} and member_id = ${r.memberId} and ${allowed}`),
    db.all<{ id: string }>(sql`select id from passkeys where id = ${r.passkeyId} and member_id = ${r.memberId}`),
  ]);
  if (deleted.rowsAffected === 1) return { removed: true, sessionsEnded: ended.map((e) => e.id) };
  return { removed: false, reason: found.length > 0 ? "last_passkey" : "not_found" };
}
