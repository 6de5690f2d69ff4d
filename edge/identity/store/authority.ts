/**
 * The part of the authority rule (edge/identity/authority.ts) that must hold when a write happens, as SQL conditions
 * every identity write puts in its own WHERE: so a key revoked, a role changed or an invite's maker removed between
 * the check and the write is caught by the write itself.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Caller } from "../../caller.ts";
import { GRANTABLE_ROLES } from "../authority.ts";

/**
 * The SQL condition "the caller still holds, now, the authority it was authenticated with": its key neither revoked
 * nor expired, or its session live with the same role. Part of every identity write's WHERE.
 */
export function authorityHeld(caller: Caller, now: number): SQL {
  if (caller.kind === "key") {
    // "Not revoked before this request": a key revoking itself in a statement that also checks this still holds.
    return sql`exists (select 1 from api_keys where id = ${caller.keyId} and (revoked_at is null or revoked_at >= ${now}) and (expires_at is null or expires_at > ${now}))`;
  }
  return sql`exists (select 1 from sessions s join members m on m.id = s.member_id
    where s.id = ${caller.sessionId} and m.role = ${caller.role} and s.expires_at > ${now})`;
}

/**
 * The SQL condition, on an `invites` row aliased `i`, "whoever made this invite still holds the authority to grant
 * its role": the operator always; a key while neither revoked nor expired (a key that may invite has no cap and no
 * expiry, and its scopes never change); a member while still in the account with a role that may grant it.
 */
export function inviteMakerHoldsAuthority(now: number): SQL {
  const pairs = sql.join(
    GRANTABLE_ROLES.map(([maker, role]) => sql`(${maker}, ${role})`),
    sql`, `,
  );
  return sql`(i.created_by = 'operator'
    or exists (select 1 from api_keys k where k.id = i.created_by and k.account_id = i.account_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > ${now}))
    or exists (select 1 from members m where m.id = i.created_by and m.account_id = i.account_id and (m.role, i.role) in (values ${pairs})))`;
}
