/**
 * Invites in the database (docs/api.md "Members and roles"): made (the admin CLI's `accounts invite` too, actor
 * "operator"), found by their secret's hash, listed, revoked, and voided with the authority that made them (a removal,
 * a demotion, a key's revocation); each change with its audit event in one batch. Whether an invite still works is
 * decided in the statement that reads or uses it (edge/identity/authority.ts inviteMakerHoldsAuthority).
 */
import { sql, type SQL } from "drizzle-orm";
import { INVITE_LIFETIME_MS, type InviteStatus, type PendingInvite } from "../../../shared/members.ts";
import type { Role } from "../../../shared/roles.ts";
import { GRANTABLE_ROLES } from "../authority.ts";
import { inviteMakerHoldsAuthority } from "./authority.ts";
import { generateSecret, hashToken, newId } from "../tokens.ts";
import type * as schema from "../../db/schema.ts";
import { auditEvent } from "./audit.ts";
import { type Db, iso } from "../../db/rows.ts";

export type CreatedInvite = { id: string; role: Role; url: string; token: string; expires_at: string };

/**
 * Makes a one-time invite link for `role`, good for INVITE_LIFETIME_MS: `{origin}/console/invite#{token}`
 * (the secret in the fragment, which a browser never sends to a server). Null when the account does not exist.
 */
export async function createInvite(
  db: Db,
  i: { accountId: string; role: Role; createdBy: string; origin: string; requestId?: string | null; now?: number; onlyIf?: SQL },
): Promise<CreatedInvite | null> {
  const now = i.now ?? Date.now();
  const id = newId("inv");
  const token = generateSecret("cvi_");
  const expiresAt = now + INVITE_LIFETIME_MS;
  const [inserted] = await db.batch([
    db.all<{ id: string }>(sql`
      insert into invites (id, account_id, token_hash, role, created_by, created_at, expires_at)
      select ${id}, id, ${await hashToken(token)}, ${i.role}, ${i.createdBy}, ${now}, ${expiresAt} from accounts where id = ${i.accountId} and ${i.onlyIf ?? sql`1`}
      returning id`),
    db.run(
      auditEvent(
        { accountId: i.accountId, action: "member.invited", actor: i.createdBy, target: id, details: { role: i.role, expires_at: iso(expiresAt) }, requestId: i.requestId ?? null, now },
        sql`exists (select 1 from invites where id = ${id})`,
      ),
    ),
  ]);
  if (inserted.length === 0) return null;
  return { id, role: i.role, url: `${i.origin}/console/invite#${token}`, token, expires_at: iso(expiresAt)! };
}

export type InviteRow = {
  id: string;
  account_id: string;
  role: Role;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
  /** 1 while whoever made it still holds the authority to grant its role (edge/identity/authority.ts). */
  maker_holds: number;
  account_name: string;
};

export type InviteRefusal = "invite_invalid" | "invite_used" | "invite_expired" | "invite_revoked";

/** Why an invite cannot be used now, or null when it can. */
export function inviteRefusal(invite: InviteRow | undefined, now: number): InviteRefusal | null {
  if (!invite) return "invite_invalid";
  if (invite.used_at !== null) return "invite_used";
  if (invite.revoked_at !== null || Number(invite.maker_holds) !== 1) return "invite_revoked";
  if (Number(invite.expires_at) <= now) return "invite_expired";
  return null;
}

export function findInviteQuery(db: Db, tokenHash: string, now: number) {
  return db.all<InviteRow>(sql`
    select i.id, i.account_id, i.role, i.expires_at, i.used_at, i.revoked_at, ${inviteMakerHoldsAuthority(now)} as maker_holds, a.name as account_name
    from invites i join accounts a on a.id = i.account_id where i.token_hash = ${tokenHash} and a.status = 'active'`);
}

export type InviteListRow = {
  id: string;
  role: Role;
  created_by: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
  used_by: string | null;
  revoked_at: number | null;
  revoked_by: string | null;
  maker_holds: number;
};

/** An invite's state now: used, revoked (or void: its maker no longer holds the authority), expired, or pending. */
export function inviteStatus(row: Pick<InviteListRow, "used_at" | "revoked_at" | "maker_holds" | "expires_at">, now: number): InviteStatus {
  if (row.used_at !== null) return "used";
  if (row.revoked_at !== null || Number(row.maker_holds) !== 1) return "revoked";
  if (Number(row.expires_at) <= now) return "expired";
  return "pending";
}

export function inviteJson(row: InviteListRow, now: number): PendingInvite {
  return {
    id: row.id,
    role: row.role,
    status: inviteStatus(row, now),
    created_by: row.created_by,
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at)!,
    used_at: iso(row.used_at),
    used_by: row.used_by,
    revoked_at: iso(row.revoked_at),
    revoked_by: row.revoked_by,
  };
}

const INVITE_LIST_COLUMNS = (now: number) =>
  sql`i.id, i.role, i.created_by, i.created_at, i.expires_at, i.used_at, i.used_by, i.revoked_at, i.revoked_by, ${inviteMakerHoldsAuthority(now)} as maker_holds`;

/** The account's invites, newest first: the pending ones and those that ended within ENDED_INVITE_KEPT_MS (the cron deletes older). */
export function listInvites(db: Db, accountId: string, now: number, limit: number): Promise<InviteListRow[]> {
  return db.all<InviteListRow>(sql`select ${INVITE_LIST_COLUMNS(now)} from invites i where i.account_id = ${accountId} order by i.created_at desc, i.id desc limit ${limit}`);
}

export async function getInvite(db: Db, accountId: string, inviteId: string, now: number): Promise<InviteListRow | undefined> {
  return (await db.all<InviteListRow>(sql`select ${INVITE_LIST_COLUMNS(now)} from invites i where i.id = ${inviteId} and i.account_id = ${accountId}`))[0];
}

/**
 * Revokes a pending invite (idempotent: an invite already revoked, used or expired is answered as it is), with its
 * audit event, if `onlyIf` (the revoker's authority) holds when it is written. The invite as it is after.
 */
export async function revokeInvite(
  db: Db,
  r: { accountId: string; inviteId: string; actor: string; requestId: string | null; now: number; onlyIf: SQL },
): Promise<InviteListRow | undefined> {
  const pending = sql`exists (select 1 from invites where id = ${r.inviteId} and account_id = ${r.accountId} and used_at is null and revoked_at is null and expires_at > ${r.now}) and ${r.onlyIf}`;
  const [, , rows] = await db.batch([
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select account_id, 'member.invite_revoked', ${r.actor}, id, json_object('role', role, 'created_by', created_by), ${r.requestId}, ${r.now}
      from invites where id = ${r.inviteId} and ${pending}`),
    db.run(sql`update invites set revoked_at = ${r.now}, revoked_by = ${r.actor} where id = ${r.inviteId} and ${pending}`),
    db.all<InviteListRow>(sql`select ${INVITE_LIST_COLUMNS(r.now)} from invites i where i.id = ${r.inviteId} and i.account_id = ${r.accountId}`),
  ]);
  return rows[0];
}

/**
 * The statements (for a batch) that void `memberId`'s pending invites a member of `role` may not grant (all of them
 * for a removal: `role` null), with an audit event each, if `onlyIf` holds: an invite never outlives the authority
 * that made it.
 */
export function voidInvitesStatements(db: Db, v: { accountId: string; memberId: string; role: Role | null; why: string; requestId: string | null; now: number }, onlyIf: SQL) {
  const grantable = v.role === null ? [] : GRANTABLE_ROLES.filter(([maker]) => maker === v.role).map(([, role]) => role);
  const which = sql`account_id = ${v.accountId} and created_by = ${v.memberId} and used_at is null and revoked_at is null
    ${grantable.length ? sql`and role not in (${sql.join(grantable.map((r) => sql`${r}`), sql`, `)})` : sql``} and ${onlyIf}`;
  return [
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select account_id, 'member.invite_revoked', 'system', id, json_object('role', role, 'created_by', created_by, 'why', ${v.why}), ${v.requestId}, ${v.now}
      from invites where ${which}`),
    db.run(sql`update invites set revoked_at = ${v.now}, revoked_by = 'system' where ${which}`),
  ];
}

/** An invite is kept this long past its expiry, so a late click is told "expired" rather than "no such invite". */
export const ENDED_INVITE_KEPT_MS = 7 * 86_400_000;

/** For the cron (with the sessions'): invites ENDED_INVITE_KEPT_MS past their expiry. */
export function deleteEndedInvitesStatement(db: Db, now: number) {
  return db.run(sql`delete from invites where expires_at <= ${now - ENDED_INVITE_KEPT_MS}`);
}
