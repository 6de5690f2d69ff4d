/**
 * Members in the database (docs/api.md "Members and roles"): joining by invite (the member, their first passkey and a
 * session, all or nothing), signing in, listing, role changes and removals. Each change and its audit events go in
 * one batch (one transaction), and every statement after the first is conditioned on the first having happened, so
 * a refused or raced change writes nothing at all.
 */
import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { MAX_MEMBERS, type Member, type Passkey } from "../../../shared/members.ts";
import type { Role } from "../../../shared/roles.ts";
import { inviteMakerHoldsAuthority } from "./authority.ts";
import { newId } from "../tokens.ts";
import type * as schema from "../../db/schema.ts";
import { auditEvent } from "./audit.ts";
import { type InviteRow, voidInvitesStatements } from "./invites.ts";
import { endSessionStatements, sessionStatements } from "./sessions.ts";
import { type Db, iso } from "../../db/rows.ts";

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
    session: NewSessionSecret;
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
export async function signIn(db: Db, s: { passkey: SignInRow; counter: number; session: NewSessionSecret; sessionMaxMs: number; requestId: string | null; now: number }): Promise<MemberRow | null> {
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
 * `revokeKeys`, the keys they made go in the same transaction, and `after` runs once they are gone. Every statement of
 * its own checks the same condition, which only the last one changes, so it is all or nothing.
 */
export async function removeMember(
  db: Db,
  c: Change & { name: string; role: Role; revokeKeys: (onlyIf: SQL) => readonly BatchItem<"sqlite">[]; after?: readonly SQL[] },
): Promise<ChangeOutcome> {
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
    // The caller's statements that must see the member gone (the jobs they made stopped).
    ...(c.after ?? []).map((statement) => db.run(statement)),
    whyNot(db, c, c.role),
  ]);
  const removed = results.length - 2 - (c.after?.length ?? 0);
  return outcomeOf((results[removed] as MemberRow[])[0], (results.at(-1) as { present: number; same_role: number; held: number }[])[0]);
}

/** A new session's secret and id, as edge/identity/sessions.ts makes them. */
export type NewSessionSecret = { token: string; tokenHash: string; sessionId: string };
