/**
 * The one rule every door that grants authority obeys (docs/api.md "Keys and scopes", "Members and roles"): no key
 * or member grants, or takes away, more than it holds. The doors are key creation, roll and revocation, invites and
 * their revocation, and role changes and removals. A key's power is its scopes, its daily credit cap and its expiry;
 * a member's is their role's scopes with no cap and no expiry, for as long as they are a member. So a key grants a key
 * only within its own scopes, cap and expiry, and a role only if it holds every scope of that role with no cap and no
 * expiry (an invite outlives an expiring key, and a member has no cap); a member grants keys within their role's
 * scopes and roles within them, owners only by an owner.
 *
 * The checks here run before a write on what the request read; what must still be true when the write happens (the
 * caller's key not revoked meanwhile, its role not changed, an invite's maker still able to make it) is put in the
 * statement itself (edge/identity/store/authority.ts), so a race cannot slip between the check and the write.
 */
import { ROLE_SCOPES, ROLES, type Role } from "../../shared/roles.ts";
import { scopeReach, type Scope } from "../../shared/scopes.ts";
import type { Caller } from "../caller.ts";
import { ApiError } from "../lib/errors.ts";

/** What a key can do: the shape both a caller and a stored key have. */
export type KeyPower = { scopes: readonly Scope[]; dailyCreditCap: number | null; expiresAt: number | null };

/** Whether `caller` holds everything `target` could do: its scopes and what they reach (scopeReach), a cap no higher, an expiry no later. */
export function dominatesKey(caller: Caller, target: KeyPower): boolean {
  if (!scopeReach(target.scopes).every((s) => caller.scopes.includes(s))) return false;
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

/** Every (maker's role, invite's role) pair a member may make: what an invite's maker must still hold when it is accepted. */
export const GRANTABLE_ROLES: readonly (readonly [Role, Role])[] = ROLES.flatMap((maker) =>
  ROLES.filter((role) => ROLE_SCOPES[maker].includes("members:write") && (role !== "owner" || maker === "owner") && ROLE_SCOPES[role].every((s) => ROLE_SCOPES[maker].includes(s))).map(
    (role) => [maker, role] as const,
  ),
);
