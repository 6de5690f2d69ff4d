/**
 * What a member of an account may do (docs/api.md "Members and roles"): one table from role to the
 * scopes a session of that role holds. The Worker checks a session's scopes from it exactly as it
 * checks a key's; the console reads the same table to hide controls a role may not use.
 *
 * Beyond scopes, one rule about owners (edge/routes/members.ts): making, changing or removing an
 * owner takes an owner's session, and an account always keeps at least one owner.
 */
import { z } from "@hono/zod-openapi";
import { SCOPES, type Scope } from "./scopes.ts";

export const ROLES = ["owner", "admin", "developer", "viewer"] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  owner: SCOPES,
  admin: SCOPES,
  // Builds with the API: looks up, verifies, runs jobs and makes keys (never stronger than its own
  // scopes), but neither invites nor reads the audit trail of other people's actions.
  developer: ["people:read", "verifications:write", "jobs:write", "jobs:read", "account:read", "keys:write", "feedback:write", "events:write"],
  // Reads the account, its usage and keys, and job results; changes nothing and spends no credits.
  viewer: ["account:read", "jobs:read"],
};

export const RoleName = z.enum(ROLES).openapi({ description: 'A member\'s role (docs/api.md "Members and roles")', example: "developer" });

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
