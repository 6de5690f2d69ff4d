/**
 * Members, invites and sessions in the database (docs/api.md "Members and roles", "Sessions"). Each change
 * and its audit events go in one batch (one transaction), and every statement after the first is
 * conditioned on the first having happened, so a refused or raced change writes nothing at all. Used by the
 * Worker's routes and by the admin CLI (createInvite, actor "operator").
 */
import { sql, type SQL } from "drizzle-orm";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import { INVITE_LIFETIME_MS, MAX_MEMBERS, type Member, type Passkey } from "../../shared/members.ts";
import type { Role } from "../../shared/roles.ts";
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
  i: { accountId: string; role: Role; createdBy: string; origin: string; requestId?: string | null; now?: number },
): Promise<CreatedInvite | null> {
  const now = i.now ?? Date.now();
  const id = newId("inv");
  const token = generateSecret("cvi_");
  const expiresAt = now + INVITE_LIFETIME_MS;
  const [inserted] = await db.batch([
    db.all<{ id: string }>(sql`
      insert into invites (id, account_id, token_hash, role, created_by, created_at, expires_at)
      select ${id}, id, ${await hashToken(token)}, ${i.role}, ${i.createdBy}, ${now}, ${expiresAt} from accounts where id = ${i.accountId}
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

export type InviteRow = { id: string; account_id: string; role: Role; expires_at: number; used_at: number | null; account_name: string };

/** Why an invite cannot be used now, or null when it can. */
export function inviteRefusal(invite: InviteRow | undefined, now: number): "invite_invalid" | "invite_used" | "invite_expired" | null {
  if (!invite) return "invite_invalid";
  if (invite.used_at !== null) return "invite_used";
  if (Number(invite.expires_at) <= now) return "invite_expired";
  return null;
}

export function findInviteQuery(db: Db, tokenHash: string) {
  return db.all<InviteRow>(sql`
    select i.id, i.account_id, i.role, i.expires_at, i.used_at, a.name as account_name
    from invites i join accounts a on a.id = i.account_id where i.token_hash = ${tokenHash} and a.status = 'active'`);
}

/** The statements that open a session for `memberId` (for a batch), written only if `onlyIf` holds. */
export function sessionStatements(
  db: Db,
  s: { memberId: string; accountId: string; tokenHash: string; sessionId: string; maxMs: number; passkeyId: string; requestId: string | null; now: number },
  onlyIf: SQL,
) {
  return [
    db.run(sql`
      insert into sessions (id, token_hash, member_id, account_id, created_at, last_seen_at, expires_at)
      select ${s.sessionId}, ${s.tokenHash}, ${s.memberId}, ${s.accountId}, ${s.now}, ${s.now}, ${s.now + s.maxMs} where ${onlyIf}`),
    db.run(
      auditEvent(
        { accountId: s.accountId, action: "session.signed_in", actor: s.memberId, target: s.sessionId, details: { passkey_id: s.passkeyId }, requestId: s.requestId, now: s.now },
        onlyIf,
      ),
    ),
  ];
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
    requestId: string | null;
    now: number;
  },
): Promise<MemberRow | null> {
  const { invite, memberId, now } = j;
  const passkeyId = newId("pk");
  const joined = sql`exists (select 1 from members where id = ${memberId})`;
  const audit = (action: string, target: string, details: Record<string, unknown>) =>
    db.run(auditEvent({ accountId: invite.account_id, action, actor: memberId, target, details, requestId: j.requestId, now }, joined));
  const results = await db.batch([
    db.run(sql`
      update invites set used_at = ${now}, used_by = ${memberId}
      where id = ${invite.id} and used_at is null and expires_at > ${now}
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

/** Records a sign-in with `passkey` and opens its session, unless the member was removed meanwhile. */
export async function signIn(db: Db, s: { passkey: SignInRow; counter: number; session: NewSession; sessionMaxMs: number; requestId: string | null; now: number }): Promise<MemberRow | null> {
  const { passkey, now } = s;
  const present = sql`exists (select 1 from members where id = ${passkey.member_id})`;
  const results = await db.batch([
    db.run(sql`update passkeys set counter = ${s.counter}, last_used_at = ${now} where id = ${passkey.id}`),
    db.run(sql`update members set last_sign_in_at = ${now} where id = ${passkey.member_id}`),
    ...sessionStatements(
      db,
      { memberId: passkey.member_id, accountId: passkey.account_id, tokenHash: s.session.tokenHash, sessionId: s.session.sessionId, maxMs: s.sessionMaxMs, passkeyId: passkey.id, requestId: s.requestId, now },
      present,
    ),
    db.all<MemberRow>(sql`select ${MEMBER_COLUMNS} from members where id = ${passkey.member_id}`),
  ]);
  return (results.at(-1) as MemberRow[])[0] ?? null;
}

/** Ends the session with this token hash, if any, and records it: the member and session it belonged to. */
export async function endSession(db: Db, tokenHash: string, requestId: string | null, now: number): Promise<{ member_id: string; id: string } | null> {
  const [, ended] = await db.batch([
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select account_id, 'session.signed_out', member_id, id, '{}', ${requestId}, ${now} from sessions where token_hash = ${tokenHash}`),
    db.all<{ id: string; member_id: string }>(sql`delete from sessions where token_hash = ${tokenHash} returning id, member_id`),
  ]);
  return ended[0] ?? null;
}

/** Ends every session of a member ("sign out everywhere"), recorded as one event: how many ended. */
export async function endMemberSessions(db: Db, e: { accountId: string; memberId: string; requestId: string | null; now: number }): Promise<number> {
  const [, ended] = await db.batch([
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select ${e.accountId}, 'session.signed_out', ${e.memberId}, ${e.memberId},
        json_object('everywhere', json('true'), 'sessions', (select count(*) from sessions where member_id = ${e.memberId})), ${e.requestId}, ${e.now}`),
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

type Change = { accountId: string; memberId: string; actor: string; requestId: string | null; now: number };

/** Gives the member `role`, unless that would leave the account without an owner: the member as it is after, or null. */
export async function changeRole(db: Db, c: Change & { role: Role; from: Role }): Promise<MemberRow | null> {
  const allowed = c.role === "owner" ? sql`exists (select 1 from members where id = ${c.memberId} and account_id = ${c.accountId})` : notLastOwner(c.accountId, c.memberId);
  const [, updated] = await db.batch([
    db.run(auditEvent({ accountId: c.accountId, action: "member.role_changed", actor: c.actor, target: c.memberId, details: { from: c.from, to: c.role }, requestId: c.requestId, now: c.now }, allowed)),
    db.all<MemberRow>(sql`update members set role = ${c.role} where id = ${c.memberId} and ${allowed} returning ${MEMBER_COLUMNS}`),
  ]);
  return updated[0] ?? null;
}

/**
 * Removes the member with their passkeys and sessions, unless they are the account's last owner. Every
 * statement checks the same condition, which only the last one changes, so it is all or nothing.
 */
export async function removeMember(db: Db, c: Change & { name: string; role: Role }): Promise<boolean> {
  const allowed = notLastOwner(c.accountId, c.memberId);
  const results = await db.batch([
    db.run(
      auditEvent(
        {
          accountId: c.accountId,
          action: "member.removed",
          actor: c.actor,
          target: c.memberId,
          details: { name: c.name, role: c.role },
          requestId: c.requestId,
          now: c.now,
        },
        allowed,
      ),
    ),
    db.run(sql`delete from sessions where member_id = ${c.memberId} and ${allowed}`),
    db.run(sql`delete from webauthn_challenges where member_id = ${c.memberId} and ${allowed}`),
    db.run(sql`delete from passkeys where member_id = ${c.memberId} and ${allowed}`),
    db.run(sql`delete from members where id = ${c.memberId} and ${allowed}`),
  ]);
  return results.at(-1)!.rowsAffected === 1;
}

/** An invite is kept this long past its expiry, so a late click is told "expired" rather than "no such invite". */
export const ENDED_INVITE_KEPT_MS = 7 * 86_400_000;

/** For the cron: deletes ended sessions, expired challenges, and invites ENDED_INVITE_KEPT_MS past their expiry. */
export async function deleteEndedSignInData(db: Db, now: number, sessionIdleMs: number): Promise<{ sessions_deleted: number; challenges_deleted: number; invites_deleted: number }> {
  const [sessions, challenges, invites] = await db.batch([
    db.run(sql`delete from sessions where expires_at <= ${now} or last_seen_at <= ${now - sessionIdleMs}`),
    db.run(sql`delete from webauthn_challenges where expires_at <= ${now}`),
    db.run(sql`delete from invites where expires_at <= ${now - ENDED_INVITE_KEPT_MS}`),
  ]);
  return { sessions_deleted: sessions.rowsAffected, challenges_deleted: challenges.rowsAffected, invites_deleted: invites.rowsAffected };
}
