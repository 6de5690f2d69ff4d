/**
 * The one rule every door that grants authority obeys (docs/api.md "Keys and scopes", "Members and roles"): no key
 * or member grants, or takes away, more than it holds. The doors are key creation, roll and revocation, invites and
 * their revocation, and role changes and removals. A key's power is its scopes, its daily credit cap and its expiry;
 * a member's is their role's scopes with no cap and no expiry, for as long as they are a member. So a key grants a key
 * only within its own scopes, cap and expiry, and a role only if it holds every scope of that role with no cap and no
 * expiry (an invite outlives an expiring key, and a member has no cap); a member grants keys within their role's
 * scopes and roles within them, owners only by an owner.
 *
 * The checks here run before a write on what the request read; `authorityHeld` is the part that must still be true
 * when the write happens (the caller's key not revoked meanwhile, the caller's role not changed), put in the
 * statement itself so a race cannot slip between the check and the write.
 */
import { sql, type SQL } from "drizzle-orm";
import { ROLE_SCOPES, ROLES, type Role } from "../../shared/roles.ts";
import type { Scope } from "../../shared/scopes.ts";
import type { Caller } from "../caller.ts";
import { ApiError } from "../lib/errors.ts";

/** What a key can do: the shape both a caller and a stored key have. */
export type KeyPower = { scopes: readonly Scope[]; dailyCreditCap: number | null; expiresAt: number | null };

/** Whether `caller` holds everything `target` could do: its scopes, a cap no higher, an expiry no later. */
export function dominatesKey(caller: Caller, target: KeyPower): boolean {
  if (!target.scopes.every((s) => caller.scopes.includes(s))) return false;
  if (caller.dailyCreditCap !== null && (target.dailyCreditCap === null || target.dailyCreditCap > caller.dailyCreditCap)) return false;
  if (caller.expiresAt !== null && (target.expiresAt === null || target.expiresAt > caller.expiresAt)) return false;
  return true;
}

/** Why `caller` may not grant (or change, or remove) someone of `role`, or null when it may. */
export function roleRefusal(caller: Caller, role: Role): ApiError | null {
  if (role === "owner" && caller.role !== "owner") return ownerRequired();
  const missing = ROLE_SCOPES[role].find((s) => !caller.scopes.includes(s));
  if (missing) return strongerThanCaller(`the role ${role} holds the scope ${missing}, which the caller lacks`);
  if (caller.kind === "key" && (caller.dailyCreditCap !== null || caller.creditCaps.length > 0)) {
    return strongerThanCaller(`a member of the role ${role} spends without a daily credit cap, and this key has one`);
  }
  if (caller.kind === "key" && caller.expiresAt !== null) return strongerThanCaller(`a member of the role ${role} does not expire, and this key does`);
  return null;
}

export const AUTHORITY_MESSAGES = {
  ownerRequired: "Only an owner can invite, promote, change or remove an owner",
  stronger: "A key or member can only grant, change or take away what it holds itself",
} as const;

export function ownerRequired(): ApiError {
  return new ApiError(403, AUTHORITY_MESSAGES.ownerRequired, {}, { reason: "owner_required" });
}

export function strongerThanCaller(why: string): ApiError {
  return new ApiError(403, `${AUTHORITY_MESSAGES.stronger}: ${why}`, {}, { reason: "stronger_than_caller" });
}

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

/** Every (maker's role, invite's role) pair a member may make: what an invite's maker must still hold when it is accepted. */
export const GRANTABLE_ROLES: readonly (readonly [Role, Role])[] = ROLES.flatMap((maker) =>
  ROLES.filter((role) => ROLE_SCOPES[maker].includes("members:write") && (role !== "owner" || maker === "owner") && ROLE_SCOPES[role].every((s) => ROLE_SCOPES[maker].includes(s))).map(
    (role) => [maker, role] as const,
  ),
);

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
