/**
 * Over 400 lines until identity gets its own room (edge/identity/store/), where sessions and invites each get a file.
 *
 * Members, invites and sessions in the database (docs/api.md "Members and roles", "Sessions"). Each change
 * and its audit events go in one batch (one transaction), and every statement after the first is
 * conditioned on the first having happened, so a refused or raced change writes nothing at all. Used by the
 * Worker's routes and by the admin CLI (createInvite, actor "operator").
 */
import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import { INVITE_LIFETIME_MS, MAX_MEMBERS, type InviteStatus, type Member, type Passkey, type PendingInvite } from "../../shared/members.ts";
import type { Role } from "../../shared/roles.ts";
import { GRANTABLE_ROLES, inviteMakerHoldsAuthority } from "../identity/authority.ts";
import { generateSecret, hashToken, newId } from "../lib/tokens.ts";
import type * as schema from "./schema.ts";

type Db = LibSQLDatabase<typeof schema>;

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export type MemberRow = { id: string; account_id: string; name: string; role: Role; created_at: number; last_sign_in_at: number | null };
export type PasskeyRow = { id: string; member_id: string; credential_id: string; public_key: string; counter: number; transports: string; name: string; created_at: number; last_used_at: number | null };

export const MEMBER_COLUMNS = sql.raw("id, account_id, name, role, created_at, last_sign_in_at");
export const PASSKEY_COLUMNS = sql.raw("id, member_id, credential_id, public_key, counter, transports, name, created_at, last_used_at");

export function memberJson(row: MemberRow): Member {
  return { id: row.id, name: row.name, role: row.role, created_at: iso(row.created_at)!, last_sign_in_at: iso(row.last_sign_in_at) };
}

export function passkeyJson(row: PasskeyRow): Passkey {
  return { id: row.id, name: row.name, created_at: iso(row.created_at)!, last_used_at: iso(row.last_used_at) };
}

/** An audit event, written only if `onlyIf` holds when the batch reaches it. */
export function auditEvent(
  e: { accountId: string; action: string; actor: string; target: string; details: Record<string, unknown>; requestId: string | null; now: number },
  onlyIf: SQL = sql`true`,
) {
  return sql`
    insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
    select ${e.accountId}, ${e.action}, ${e.actor}, ${e.target}, ${JSON.stringify(e.details)}, ${e.requestId}, ${e.now} where ${onlyIf}`;
}

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
function voidInvitesStatements(db: Db, v: { accountId: string; memberId: string; role: Role | null; why: string; requestId: string | null; now: number }, onlyIf: SQL) {
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

export type NewSession = { token: string; tokenHash: string; sessionId: string };

export async function newSession(): Promise<NewSession> {
  const token = generateSecret("cvs_");
  return { token, tokenHash: await hashToken(token), sessionId: newId("ses") };
}

/**
 * Uses the invite and makes its member, their first passkey and a session, all or nothing: the invite is
 * taken only if it is still unused and unexpired and the account has room, and the rest only if it was.
 */
export async function joinByInvite(
  db: Db,
  j: {
    invite: InviteRow;
    memberId: string;
    name: string;
    passkey: { credentialId: string; publicKey: string; counter: number; transports: string[]; name: string };
    session: NewSession;
    sessionMaxMs: number;
    /** The session this browser held before, if any: ended with the join, so one browser holds one session. */
    previousSessionHash: string | null;
    requestId: string | null;
    now: number;
  },
): Promise<MemberRow | null> {
  const { invite, memberId, now } = j;
  const previous = j.previousSessionHash;
  const passkeyId = newId("pk");
  const joined = sql`exists (select 1 from members where id = ${memberId})`;
  const audit = (action: string, target: string, details: Record<string, unknown>) =>
    db.run(auditEvent({ accountId: invite.account_id, action, actor: memberId, target, details, requestId: j.requestId, now }, joined));
  const results = await db.batch([
    db.run(sql`
      update invites as i set used_at = ${now}, used_by = ${memberId}
      where i.id = ${invite.id} and i.used_at is null and i.revoked_at is null and i.expires_at > ${now} and ${inviteMakerHoldsAuthority(now)}
        and (select count(*) from members where account_id = ${invite.account_id}) < ${MAX_MEMBERS}`),
    db.run(sql`
      insert into members (id, account_id, name, role, invite_id, created_at, last_sign_in_at)
      select ${memberId}, account_id, ${j.name}, role, id, ${now}, ${now} from invites where id = ${invite.id} and used_by = ${memberId}`),
    db.run(sql`
      insert into passkeys (id, member_id, account_id, credential_id, public_key, counter, transports, name, created_at, last_used_at)
      select ${passkeyId}, ${memberId}, ${invite.account_id}, ${j.passkey.credentialId}, ${j.passkey.publicKey}, ${j.passkey.counter},
        ${JSON.stringify(j.passkey.transports)}, ${j.passkey.name}, ${now}, ${now} where ${joined}`),
    audit("member.joined", memberId, { name: j.name, role: invite.role, invite_id: invite.id }),
    audit("passkey.added", passkeyId, { member_id: memberId, name: j.passkey.name }),
    ...sessionStatements(db, { memberId, accountId: invite.account_id, tokenHash: j.session.tokenHash, sessionId: j.session.sessionId, maxMs: j.sessionMaxMs, passkeyId, requestId: j.requestId, now }, joined),
    ...(previous === null ? [] : endSessionStatements(db, sql`token_hash = ${previous}`, j.requestId, now, joined)),
    db.all<MemberRow>(sql`select ${MEMBER_COLUMNS} from members where id = ${memberId}`),
  ]);
  return (results.at(-1) as MemberRow[])[0] ?? null;
}

export type SignInRow = PasskeyRow & { account_id: string; member_name: string; role: Role };

export function findPasskeyForSignIn(db: Db, credentialId: string) {
  return db.all<SignInRow>(sql`
    select p.id, p.member_id, p.credential_id, p.public_key, p.counter, p.transports, p.name, p.created_at, p.last_used_at,
      m.account_id, m.name as member_name, m.role
    from passkeys p join members m on m.id = p.member_id join accounts a on a.id = m.account_id
    where p.credential_id = ${credentialId} and a.status = 'active'`);
}

/**
 * Records a sign-in with `passkey` and opens its session, unless the member was removed meanwhile or the passkey's
 * signature counter has moved to `counter` or past it (a raced or cloned assertion: a counter that is kept must only
 * grow; authenticators that keep none say 0 every time). The session is written first, on that condition, and the
 * counter after it only if the session was: the batch is one transaction, so two raced sign-ins are decided in order.
 */
export async function signIn(db: Db, s: { passkey: SignInRow; counter: number; session: NewSession; sessionMaxMs: number; requestId: string | null; now: number }): Promise<MemberRow | null> {
  const { passkey, now } = s;
  const counterMoves = s.counter === 0 ? sql`counter = 0` : sql`counter < ${s.counter}`;
  const allowed = sql`exists (select 1 from members where id = ${passkey.member_id}) and exists (select 1 from passkeys where id = ${passkey.id} and ${counterMoves})`;
  const opened = sql`exists (select 1 from sessions where id = ${s.session.sessionId})`;
  const results = await db.batch([
    ...sessionStatements(
      db,
      { memberId: passkey.member_id, accountId: passkey.account_id, tokenHash: s.session.tokenHash, sessionId: s.session.sessionId, maxMs: s.sessionMaxMs, passkeyId: passkey.id, requestId: s.requestId, now },
      allowed,
    ),
    db.run(sql`update passkeys set counter = ${s.counter}, last_used_at = ${now} where id = ${passkey.id} and ${opened}`),
    db.run(sql`update members set last_sign_in_at = ${now} where id = ${passkey.member_id} and ${opened}`),
    db.all<MemberRow>(sql`select ${MEMBER_COLUMNS} from members where id = ${passkey.member_id} and ${opened}`),
  ]);
  return (results.at(-1) as MemberRow[])[0] ?? null;
}

/** Records a failed sign-in with a passkey the account knows (a bad signature, a counter that went back), for the account's audit trail. */
export async function recordFailedSignIn(db: Db, f: { passkey: SignInRow; why: string; requestId: string | null; now: number }): Promise<void> {
  await db.run(
    auditEvent({
      accountId: f.passkey.account_id,
      action: "session.sign_in_failed",
      actor: f.passkey.member_id,
      target: f.passkey.id,
      details: { why: f.why },
      requestId: f.requestId,
      now: f.now,
    }),
  );
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

/** Ends the session with this token hash, if any, and records it: the member and session it belonged to. */
export async function endSession(db: Db, tokenHash: string, requestId: string | null, now: number): Promise<{ member_id: string; id: string } | null> {
  const [, , ended] = await db.batch(endSessionStatements(db, sql`token_hash = ${tokenHash}`, requestId, now));
  return ended[0] ?? null;
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

export function listMembers(db: Db, accountId: string): Promise<MemberRow[]> {
  return db.all<MemberRow>(sql`select ${MEMBER_COLUMNS} from members where account_id = ${accountId} order by created_at, id`);
}

export async function getMember(db: Db, accountId: string, memberId: string): Promise<MemberRow | undefined> {
  return (await db.all<MemberRow>(sql`select ${MEMBER_COLUMNS} from members where id = ${memberId} and account_id = ${accountId}`))[0];
}

/** "The member is in the account, and is not its last owner": what a role change away from owner, or a removal, needs. */
const notLastOwner = (accountId: string, memberId: string) => sql`exists (
  select 1 from members where id = ${memberId} and account_id = ${accountId}
    and (role != 'owner' or (select count(*) from members where account_id = ${accountId} and role = 'owner') > 1))`;

type Change = { accountId: string; memberId: string; actor: string; requestId: string | null; now: number; onlyIf: SQL };

export type ChangeOutcome = { changed: true; member: MemberRow } | { changed: false; reason: "not_found" | "last_owner" | "role_changed" | "authority_lost" };

/** Why a guarded member change wrote nothing, read after it: the member gone, its role changed meanwhile, the caller's authority gone, or the last owner. */
function whyNot(db: Db, c: Change, from: Role) {
  return db.all<{ present: number; same_role: number; held: number }>(sql`
    select exists (select 1 from members where id = ${c.memberId} and account_id = ${c.accountId}) as present,
      exists (select 1 from members where id = ${c.memberId} and role = ${from}) as same_role, ${c.onlyIf} as held`);
}

function outcomeOf(member: MemberRow | undefined, why: { present: number; same_role: number; held: number } | undefined): ChangeOutcome {
  if (member) return { changed: true, member };
  if (!why || Number(why.present) !== 1) return { changed: false, reason: "not_found" };
  if (Number(why.same_role) !== 1) return { changed: false, reason: "role_changed" };
  if (Number(why.held) !== 1) return { changed: false, reason: "authority_lost" };
  return { changed: false, reason: "last_owner" };
}

/**
 * Gives the member `role` in place of `from`, the role the caller's rule was checked against: only if the member still
 * has `from` (so a change racing another is refused, not applied over it), the caller still holds its authority
 * (`onlyIf`), and the account keeps an owner. The member's pending invites their new role may not grant are voided
 * in the same transaction.
 */
export async function changeRole(db: Db, c: Change & { role: Role; from: Role }): Promise<ChangeOutcome> {
  const allowed = sql`exists (select 1 from members where id = ${c.memberId} and account_id = ${c.accountId} and role = ${c.from})
    and ${c.role === "owner" ? sql`1` : notLastOwner(c.accountId, c.memberId)} and ${c.onlyIf}`;
  const changed = sql`exists (select 1 from members where id = ${c.memberId} and role = ${c.role})`;
  const results = await db.batch([
    db.run(auditEvent({ accountId: c.accountId, action: "member.role_changed", actor: c.actor, target: c.memberId, details: { from: c.from, to: c.role }, requestId: c.requestId, now: c.now }, allowed)),
    db.all<MemberRow>(sql`update members set role = ${c.role} where id = ${c.memberId} and ${allowed} returning ${MEMBER_COLUMNS}`),
    ...voidInvitesStatements(db, { accountId: c.accountId, memberId: c.memberId, role: c.role, why: `its maker's role became ${c.role}`, requestId: c.requestId, now: c.now }, changed),
    whyNot(db, c, c.from),
  ]);
  return outcomeOf((results[1] as MemberRow[])[0], (results.at(-1) as { present: number; same_role: number; held: number }[])[0]);
}

/**
 * Removes the member with their passkeys, sessions and pending invites, unless they are the account's last owner, their
 * role is no longer `role` (what the caller's rule was checked against) or the caller lost its authority; with
 * `revokeKeys`, the keys they made go in the same transaction. Every statement checks the same condition, which only
 * the last one changes, so it is all or nothing.
 */
export async function removeMember(db: Db, c: Change & { name: string; role: Role; revokeKeys: (onlyIf: SQL) => readonly BatchItem<"sqlite">[] }): Promise<ChangeOutcome> {
  const allowed = sql`exists (select 1 from members where id = ${c.memberId} and account_id = ${c.accountId} and role = ${c.role}) and ${notLastOwner(c.accountId, c.memberId)} and ${c.onlyIf}`;
  const results = await db.batch([
    db.run(auditEvent({ accountId: c.accountId, action: "member.removed", actor: c.actor, target: c.memberId, details: { name: c.name, role: c.role }, requestId: c.requestId, now: c.now }, allowed)),
    ...voidInvitesStatements(db, { accountId: c.accountId, memberId: c.memberId, role: null, why: "its maker was removed", requestId: c.requestId, now: c.now }, allowed),
    ...c.revokeKeys(allowed),
    db.run(sql`delete from session_notes where session_id in (select id from sessions where member_id = ${c.memberId}) and ${allowed}`),
    db.run(sql`delete from sessions where member_id = ${c.memberId} and ${allowed}`),
    db.run(sql`delete from webauthn_challenges where member_id = ${c.memberId} and ${allowed}`),
    db.run(sql`delete from passkeys where member_id = ${c.memberId} and ${allowed}`),
    db.all<MemberRow>(sql`delete from members where id = ${c.memberId} and ${allowed} returning ${MEMBER_COLUMNS}`),
    whyNot(db, c, c.role),
  ]);
  return outcomeOf((results.at(-2) as MemberRow[])[0], (results.at(-1) as { present: number; same_role: number; held: number }[])[0]);
}

/** An invite is kept this long past its expiry, so a late click is told "expired" rather than "no such invite". */
export const ENDED_INVITE_KEPT_MS = 7 * 86_400_000;

/** A console note outlives no page load by more than this (edge/identity/session-notes.ts NOTE_LIFETIME_MS, which reads it). */
export const NOTE_KEPT_MS = 10 * 60_000;

/**
 * For the cron: deletes ended sessions and their notes, notes older than NOTE_KEPT_MS, expired challenges, and invites
 * ENDED_INVITE_KEPT_MS past their expiry.
 */
export async function deleteEndedSignInData(
  db: Db,
  now: number,
  sessionIdleMs: number,
): Promise<{ sessions_deleted: number; notes_deleted: number; challenges_deleted: number; invites_deleted: number }> {
  const ended = sql`expires_at <= ${now} or last_seen_at <= ${now - sessionIdleMs}`;
  const [notes, sessions, challenges, invites] = await db.batch([
    db.run(sql`delete from session_notes where created_at <= ${now - NOTE_KEPT_MS} or session_id in (select id from sessions where ${ended})`),
    db.run(sql`delete from sessions where ${ended}`),
    db.run(sql`delete from webauthn_challenges where expires_at <= ${now}`),
    db.run(sql`delete from invites where expires_at <= ${now - ENDED_INVITE_KEPT_MS}`),
  ]);
  return { sessions_deleted: sessions.rowsAffected, notes_deleted: notes.rowsAffected, challenges_deleted: challenges.rowsAffected, invites_deleted: invites.rowsAffected };
}
