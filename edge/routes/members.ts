/**
 * GET /v1/members, GET and POST /v1/invites, DELETE /v1/invites/{id}, PATCH and DELETE /v1/members/{id}
 * (docs/api.md "Members and roles"). Beyond the scopes, one rule (edge/identity/authority.ts): nobody grants, changes
 * or takes away a role stronger than their own. A key invites or promotes only to a role whose every scope it holds
 * and only with no cap and no expiry (a member has neither); making, changing or removing an owner takes an owner's
 * session; and an account always keeps at least one owner. Each write re-checks, in its own statement, that the
 * member's role is still the one the rule was checked against and that the caller still holds its authority, and an
 * invite works only while whoever made it could still make it. Removing a member ends their sessions (at once on this
 * Worker instance, within SESSION_CACHE_TTL_MS on every other), voids their pending invites, and says which keys they
 * made: revoked in the same transaction with `revoke_keys=true`.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { Invite, InviteCreateRequest, InviteList, Member, MemberList, MemberPatch, MemberRemoval, PendingInvite } from "../../shared/members.ts";
import { requestDatabase } from "../db/client.ts";
import { keyJson, keysMadeBy, revokeKeysStatements } from "../identity/store/keys.ts";
import { stopJobsOfGoneMakers } from "../jobs/makers.ts";
import { createInvite, getInvite, inviteJson, listInvites, revokeInvite } from "../identity/store/invites.ts";
import { changeRole, getMember, listMembers, memberJson, removeMember, type ChangeOutcome } from "../identity/store/members.ts";
import type { AppEnv } from "../env.ts";
import { AUTHORITY_MESSAGES, dominatesKey, roleRefusal, strongerThanCaller } from "../identity/authority.ts";
import { authorityHeld } from "../identity/store/authority.ts";
import { ApiError } from "../lib/errors.ts";
import { consoleOrigins, forgetMember, SESSION_CACHE_TTL_MS } from "../identity/sessions.ts";
import { forgetKey } from "../identity/authenticate.ts";
import { keyPower } from "./keys.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { access, SMALL_BODY_MAX_BYTES } from "./access.ts";

export const MEMBER_MESSAGES = {
  notFound: "No such member",
  inviteNotFound: "No such invite",
  ownerRequired: AUTHORITY_MESSAGES.ownerRequired,
  lastOwner: "An account keeps at least one owner: make another member owner first",
  roleChanged: "The member's role changed meanwhile: read it again and retry",
  authorityLost: "The calling key was revoked or the member's role changed meanwhile",
} as const;

/** Invites listed at most: pending ones, and those that ended within the week the cron keeps them. */
export const MAX_LISTED_INVITES = 200;

const json = <T,>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const MemberIdParam = z.object({ id: z.string().max(64).openapi({ param: { name: "id", in: "path" }, example: "mem_3kT9vQ2mXwPz8LbN" }) });
const InviteIdParam = z.object({ id: z.string().max(64).openapi({ param: { name: "id", in: "path" }, example: "inv_Q2mXwPz8LbN3kT9v" }) });
const RemoveQuery = z.object({
  revoke_keys: z
    .enum(["true", "false"], { message: "must be true or false" })
    .optional()
    .openapi({ param: { name: "revoke_keys", in: "query" }, description: "true: revoke, in the same transaction, the keys the member made (and the keys those made)" }),
});
const forbidden = errorResponse(
  `The caller lacks members:write (reason "missing_scope"); ${MEMBER_MESSAGES.ownerRequired} (reason "owner_required"); ` +
    `or the role (or a key to revoke) is stronger than the caller (reason "stronger_than_caller"); or the caller lost its authority meanwhile (reason "authority_lost")`,
);

const listRoute = createRoute({
  method: "get",
  path: "/v1/members",
  operationId: "listMembers",
  tags: ["Members"],
  summary: "The account's members and their roles",
  ...access({ who: { scope: "account:read" }, limits: ["account"] }),
  responses: { 200: json(MemberList, "The members, oldest first"), ...authenticatedErrorResponses },
});

const inviteRoute = createRoute({
  method: "post",
  path: "/v1/invites",
  operationId: "createInvite",
  tags: ["Members"],
  summary: "Make a one-time invite link for a new member with a role",
  description:
    "The link works once, for 24 hours, and only while whoever made it could still make it; its secret is in the fragment and shown only in this answer. " +
    "A key may invite only to a role whose every scope it holds, and only if it has no daily credit cap and no expiry; inviting an owner takes an owner's session.",
  ...access({ who: { scope: "members:write" }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { body: { required: true, content: { "application/json": { schema: InviteCreateRequest } } } },
  responses: { 201: json(Invite, "The invite, with its link"), 400: errorResponse("role missing or unknown, or the body is not JSON"), ...authenticatedErrorResponses, 403: forbidden },
});

const inviteListRoute = createRoute({
  method: "get",
  path: "/v1/invites",
  operationId: "listInvites",
  tags: ["Members"],
  summary: "The account's invites: pending, and those that ended within the last week (never their secrets)",
  description: `Newest first, at most ${MAX_LISTED_INVITES}.`,
  ...access({ who: { scope: "account:read" }, limits: ["account"] }),
  responses: { 200: json(InviteList, "The invites"), ...authenticatedErrorResponses },
});

const inviteRevokeRoute = createRoute({
  method: "delete",
  path: "/v1/invites/{id}",
  operationId: "revokeInvite",
  tags: ["Members"],
  summary: "Revoke a pending invite: its link stops working at once",
  description: "Idempotent: an invite already revoked, used or expired is answered as it is. Revoking an owner's invite takes an owner's session.",
  ...access({ who: { scope: "members:write" }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { params: InviteIdParam },
  responses: { 200: json(PendingInvite, "The invite, as it is now"), 404: errorResponse(MEMBER_MESSAGES.inviteNotFound), ...authenticatedErrorResponses, 403: forbidden },
});

const patchRoute = createRoute({
  method: "patch",
  path: "/v1/members/{id}",
  operationId: "updateMember",
  tags: ["Members"],
  summary: "Change a member's role",
  description:
    `Takes effect on the member's sessions at once on this Worker instance, within ${SESSION_CACHE_TTL_MS / 1000} seconds on every other. ` +
    "The caller must be able to grant both the member's role and the new one; the member's pending invites their new role may not grant are voided.",
  ...access({ who: { scope: "members:write" }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { params: MemberIdParam, body: { required: true, content: { "application/json": { schema: MemberPatch } } } },
  responses: {
    200: json(Member, "The member"),
    400: errorResponse("role missing or unknown, or the body is not JSON"),
    404: errorResponse(MEMBER_MESSAGES.notFound),
    409: errorResponse(`${MEMBER_MESSAGES.lastOwner} (reason "last_owner"); or ${MEMBER_MESSAGES.roleChanged} (reason "role_changed")`),
    ...authenticatedErrorResponses,
    403: forbidden,
  },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/v1/members/{id}",
  operationId: "removeMember",
  tags: ["Members"],
  summary: "Remove a member: their passkeys go, their sessions end, their pending invites are voided",
  description:
    `Sessions end at once on this Worker instance, within ${SESSION_CACHE_TTL_MS / 1000} seconds on every other. The answer lists the keys the member made ` +
    "(and the keys those made) that were live: with revoke_keys=true they are revoked in the same transaction, else they keep working. The audit trail keeps the member's id and name.",
  ...access({ who: { scope: "members:write" }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { params: MemberIdParam, query: RemoveQuery },
  responses: {
    200: json(MemberRemoval, "The member removed, and the keys they made"),
    404: errorResponse(MEMBER_MESSAGES.notFound),
    409: errorResponse(`${MEMBER_MESSAGES.lastOwner} (reason "last_owner"); or ${MEMBER_MESSAGES.roleChanged} (reason "role_changed")`),
    ...authenticatedErrorResponses,
    403: forbidden,
  },
});

/** The answer for a guarded member change that wrote nothing. */
function changeRefused(outcome: Exclude<ChangeOutcome, { changed: true }>): ApiError {
  switch (outcome.reason) {
    case "not_found":
      return new ApiError(404, MEMBER_MESSAGES.notFound);
    case "role_changed":
      return new ApiError(409, MEMBER_MESSAGES.roleChanged, {}, { reason: "role_changed" });
    case "authority_lost":
      return new ApiError(403, MEMBER_MESSAGES.authorityLost, {}, { reason: "authority_lost" });
    case "last_owner":
      return new ApiError(409, MEMBER_MESSAGES.lastOwner, {}, { reason: "last_owner" });
  }
}

export function registerMemberRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(listRoute, async (c) => {
    const rows = await listMembers(requestDatabase(c), c.get("auth").accountId);
    return c.json({ members: rows.map(memberJson) }, 200);
  });

  app.openapi(inviteRoute, async (c) => {
    const caller = c.get("auth");
    const { role } = c.req.valid("json");
    const refused = roleRefusal(caller, role);
    if (refused) throw refused;
    const now = Date.now();
    const invite = await createInvite(requestDatabase(c), {
      accountId: caller.accountId,
      role,
      createdBy: caller.actor,
      origin: consoleOrigins(c)[0]!,
      requestId: c.get("requestId"),
      now,
      onlyIf: authorityHeld(caller, now),
    });
    // The caller's account was just authenticated, so it exists: nothing written means the caller's authority went meanwhile.
    if (!invite) throw new ApiError(403, MEMBER_MESSAGES.authorityLost, {}, { reason: "authority_lost" });
    const { id, url, expires_at } = invite;
    Object.assign(c.get("accessLog"), { invite_id: id });
    return c.json({ id, role, url, expires_at }, 201);
  });

  app.openapi(inviteListRoute, async (c) => {
    const now = Date.now();
    const rows = await listInvites(requestDatabase(c), c.get("auth").accountId, now, MAX_LISTED_INVITES);
    return c.json({ invites: rows.map((r) => inviteJson(r, now)) }, 200);
  });

  app.openapi(inviteRevokeRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const db = requestDatabase(c);
    const now = Date.now();
    const invite = await getInvite(db, caller.accountId, id, now);
    if (!invite) throw new ApiError(404, MEMBER_MESSAGES.inviteNotFound);
    const refused = roleRefusal(caller, invite.role);
    if (refused) throw refused;
    const after = await revokeInvite(db, { accountId: caller.accountId, inviteId: id, actor: caller.actor, requestId: c.get("requestId"), now, onlyIf: authorityHeld(caller, now) });
    Object.assign(c.get("accessLog"), { invite_id: id });
    return c.json(inviteJson(after!, now), 200);
  });

  app.openapi(patchRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const { role } = c.req.valid("json");
    const db = requestDatabase(c);
    const target = await getMember(db, caller.accountId, id);
    if (!target) throw new ApiError(404, MEMBER_MESSAGES.notFound);
    const refused = roleRefusal(caller, target.role) ?? roleRefusal(caller, role);
    if (refused) throw refused;
    if (target.role === role) return c.json(memberJson(target), 200);
    const now = Date.now();
    const outcome = await changeRole(db, { accountId: caller.accountId, memberId: id, role, from: target.role, actor: caller.actor, requestId: c.get("requestId"), now, onlyIf: authorityHeld(caller, now) });
    if (!outcome.changed) throw changeRefused(outcome);
    forgetMember(id);
    return c.json(memberJson(outcome.member), 200);
  });

  app.openapi(deleteRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const revoke = c.req.valid("query").revoke_keys === "true";
    const db = requestDatabase(c);
    const now = Date.now();
    const [target, made] = await Promise.all([getMember(db, caller.accountId, id), keysMadeBy(db, caller.accountId, id, now)]);
    if (!target) throw new ApiError(404, MEMBER_MESSAGES.notFound);
    const refused = roleRefusal(caller, target.role);
    if (refused) throw refused;
    // Taking keys away is as strong as handing them out: the caller must dominate each (a key may always revoke itself).
    const stronger = revoke ? made.find((k) => k.id !== caller.keyId && !dominatesKey(caller, keyPower(k))) : undefined;
    if (stronger) throw strongerThanCaller(`the member made the key ${stronger.id}, whose scopes, daily credit cap or expiry the caller does not hold`);
    const requestId = c.get("requestId");
    const outcome = await removeMember(db, {
      accountId: caller.accountId,
      memberId: id,
      name: target.name,
      role: target.role,
      actor: caller.actor,
      requestId,
      now,
      onlyIf: authorityHeld(caller, now),
      revokeKeys: (onlyIf) => (revoke && made.length > 0 ? revokeKeysStatements(db, { accountId: caller.accountId, keyIds: made.map((k) => k.id), actor: caller.actor, requestId, now, onlyIf }) : []),
      // The jobs they made (and, with revoke_keys, their keys made) stop with them.
      after: stopJobsOfGoneMakers(caller.accountId, now),
    });
    if (!outcome.changed) throw changeRefused(outcome);
    forgetMember(id);
    if (revoke) for (const k of made) forgetKey(k.token_hash);
    Object.assign(c.get("accessLog"), { removed_member_id: id });
    const keys = made.map((k) => keyJson(revoke ? { ...k, revoked_at: now } : k, now));
    return c.json({ member: memberJson(outcome.member), keys }, 200);
  });
}
