/**
 * A signed-in member's own passkeys (docs/api.md "Passkeys"): list, add, remove. A member always keeps
 * one: removing the last is refused, so nobody locks themselves out. Each change and its audit event in
 * one batch, the event conditioned on the change.
 */
import { sql } from "drizzle-orm";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import { MAX_PASSKEYS_PER_MEMBER } from "../../shared/members.ts";
import { newId } from "../lib/tokens.ts";
import { auditEvent, MEMBER_COLUMNS, PASSKEY_COLUMNS, type MemberRow, type PasskeyRow } from "./members.ts";
import type * as schema from "./schema.ts";

type Db = LibSQLDatabase<typeof schema>;

/** The member and their passkeys, oldest passkey first, in one round trip. */
export async function memberWithPasskeys(db: Db, memberId: string): Promise<{ member: MemberRow | undefined; passkeys: PasskeyRow[] }> {
  const [members, passkeys] = await db.batch([
    db.all<MemberRow>(sql`select ${MEMBER_COLUMNS} from members where id = ${memberId}`),
    db.all<PasskeyRow>(sql`select ${PASSKEY_COLUMNS} from passkeys where member_id = ${memberId} order by created_at, id`),
  ]);
  return { member: members[0], passkeys };
}

export type AddOutcome = { added: true; passkey: PasskeyRow } | { added: false; reason: "already_registered" | "too_many" };

export async function addPasskey(
  db: Db,
  p: { accountId: string; memberId: string; credentialId: string; publicKey: string; counter: number; transports: string[]; name: string; requestId: string | null; now: number },
): Promise<AddOutcome> {
  const id = newId("pk");
  const [existing, inserted] = await db.batch([
    db.all<{ id: string }>(sql`select id from passkeys where credential_id = ${p.credentialId}`),
    db.all<PasskeyRow>(sql`
      insert into passkeys (id, member_id, account_id, credential_id, public_key, counter, transports, name, created_at)
      select ${id}, id, account_id, ${p.credentialId}, ${p.publicKey}, ${p.counter}, ${JSON.stringify(p.transports)}, ${p.name}, ${p.now}
      from members where id = ${p.memberId}
        and (select count(*) from passkeys where member_id = ${p.memberId}) < ${MAX_PASSKEYS_PER_MEMBER}
        and not exists (select 1 from passkeys where credential_id = ${p.credentialId})
      returning ${PASSKEY_COLUMNS}`),
    db.run(
      auditEvent(
        { accountId: p.accountId, action: "passkey.added", actor: p.memberId, target: id, details: { member_id: p.memberId, name: p.name }, requestId: p.requestId, now: p.now },
        sql`exists (select 1 from passkeys where id = ${id})`,
      ),
    ),
  ]);
  if (inserted[0]) return { added: true, passkey: inserted[0] };
  return { added: false, reason: existing.length > 0 ? "already_registered" : "too_many" };
}

export type RemoveOutcome = "removed" | "not_found" | "last_passkey";

export async function removePasskey(db: Db, r: { accountId: string; memberId: string; passkeyId: string; requestId: string | null; now: number }): Promise<RemoveOutcome> {
  const allowed = sql`exists (select 1 from passkeys where id = ${r.passkeyId} and member_id = ${r.memberId})
    and (select count(*) from passkeys where member_id = ${r.memberId}) > 1`;
  const [, deleted, found] = await db.batch([
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select ${r.accountId}, 'passkey.removed', ${r.memberId}, id, json_object('member_id', member_id, 'name', name), ${r.requestId}, ${r.now}
      from passkeys where id = ${r.passkeyId} and ${allowed}`),
    db.run(sql`delete from passkeys where id = ${r.passkeyId} and member_id = ${r.memberId} and ${allowed}`),
    db.all<{ id: string }>(sql`select id from passkeys where id = ${r.passkeyId} and member_id = ${r.memberId}`),
  ]);
  if (deleted.rowsAffected === 1) return "removed";
  return found.length > 0 ? "last_passkey" : "not_found";
}
