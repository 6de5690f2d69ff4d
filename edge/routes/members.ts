/**
 * GET /v1/members, POST /v1/invites, PATCH and DELETE /v1/members/{id} (docs/api.md "Members and roles").
 * Beyond the scopes, one rule about owners: making, changing or removing an owner takes an owner's
 * session (a key or an admin may not), and an account always keeps at least one owner. Removing a member
 * ends their sessions: at once on this Worker instance, within SESSION_CACHE_TTL_MS on every other.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { Invite, InviteCreateRequest, Member, MemberList, MemberPatch } from "../../shared/members.ts";
import type { Role } from "../../shared/roles.ts";
import type { Caller } from "../auth.ts";
import { requestDatabase } from "../db/client.ts";
import { changeRole, createInvite, getMember, listMembers, memberJson, removeMember } from "../db/members.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { scoped } from "../scopes.ts";
import { consoleOrigins, forgetMember, SESSION_CACHE_TTL_MS } from "../sessions.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";

export const MEMBER_MESSAGES = {
  notFound: "No such member",
  ownerRequired: "Only an owner can invite, promote, change or remove an owner",
  lastOwner: "An account keeps at least one owner: make another member owner first",
} as const;

const json = <T,>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const MemberIdParam = z.object({ id: z.string().max(64).openapi({ param: { name: "id", in: "path" }, example: "mem_3kT9vQ2mXwPz8LbN" }) });
const ownerForbidden = errorResponse(`The caller lacks members:write (reason "missing_scope"), or ${MEMBER_MESSAGES.ownerRequired} (reason "owner_required")`);

const listRoute = createRoute({
  method: "get",
  path: "/v1/members",
  operationId: "listMembers",
  tags: ["Members"],
  summary: "The account's members and their roles",
  ...scoped("account:read"),
  responses: { 200: json(MemberList, "The members, oldest first"), ...authenticatedErrorResponses },
});

const inviteRoute = createRoute({
  method: "post",
  path: "/v1/invites",
  operationId: "createInvite",
  tags: ["Members"],
  summary: "Make a one-time invite link for a new member with a role",
  description: "The link works once, for 24 hours; its secret is in the fragment and shown only in this answer. Inviting an owner takes an owner's session.",
  ...scoped("members:write"),
  request: { body: { required: true, content: { "application/json": { schema: InviteCreateRequest } } } },
  responses: { 201: json(Invite, "The invite, with its link"), 400: errorResponse("role missing or unknown, or the body is not JSON"), ...authenticatedErrorResponses, 403: ownerForbidden },
});

const patchRoute = createRoute({
  method: "patch",
  path: "/v1/members/{id}",
  operationId: "updateMember",
  tags: ["Members"],
  summary: "Change a member's role",
  description: `Takes effect on the member's sessions at once on this Worker instance, within ${SESSION_CACHE_TTL_MS / 1000} seconds on every other.`,
  ...scoped("members:write"),
  request: { params: MemberIdParam, body: { required: true, content: { "application/json": { schema: MemberPatch } } } },
  responses: {
    200: json(Member, "The member"),
    400: errorResponse("role missing or unknown, or the body is not JSON"),
    404: errorResponse(MEMBER_MESSAGES.notFound),
    409: errorResponse(MEMBER_MESSAGES.lastOwner),
    ...authenticatedErrorResponses,
    403: ownerForbidden,
  },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/v1/members/{id}",
  operationId: "removeMember",
  tags: ["Members"],
  summary: "Remove a member: their passkeys go, and their sessions end",
  description: `Sessions end at once on this Worker instance, within ${SESSION_CACHE_TTL_MS / 1000} seconds on every other. The audit trail keeps the member's id and name.`,
  ...scoped("members:write"),
  request: { params: MemberIdParam },
  responses: {
    204: { description: "Removed" },
    404: errorResponse(MEMBER_MESSAGES.notFound),
    409: errorResponse(MEMBER_MESSAGES.lastOwner),
    ...authenticatedErrorResponses,
    403: ownerForbidden,
  },
});

/** Owners are made, changed and removed only by an owner's session. */
function requireOwnerFor(caller: Caller, ...roles: Role[]): void {
  if (roles.includes("owner") && caller.role !== "owner") throw new ApiError(403, MEMBER_MESSAGES.ownerRequired, {}, { reason: "owner_required" });
}

export function registerMemberRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(listRoute, async (c) => {
    const rows = await listMembers(requestDatabase(c), c.get("auth").accountId);
    return c.json({ members: rows.map(memberJson) }, 200);
  });

  app.openapi(inviteRoute, async (c) => {
    const caller = c.get("auth");
    const { role } = c.req.valid("json");
    requireOwnerFor(caller, role);
    const invite = await createInvite(requestDatabase(c), { accountId: caller.accountId, role, createdBy: caller.actor, origin: consoleOrigins(c)[0]!, requestId: c.get("requestId") });
    // The caller's account was just authenticated, so it exists.
    const { id, url, expires_at } = invite!;
    Object.assign(c.get("accessLog"), { invite_id: id });
    return c.json({ id, role, url, expires_at }, 201);
  });

  app.openapi(patchRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const { role } = c.req.valid("json");
    const db = requestDatabase(c);
    const target = await getMember(db, caller.accountId, id);
    if (!target) throw new ApiError(404, MEMBER_MESSAGES.notFound);
    requireOwnerFor(caller, target.role, role);
    if (target.role === role) return c.json(memberJson(target), 200);
    const updated = await changeRole(db, { accountId: caller.accountId, memberId: id, role, from: target.role, actor: caller.actor, requestId: c.get("requestId"), now: Date.now() });
    if (!updated) {
      if (!(await getMember(db, caller.accountId, id))) throw new ApiError(404, MEMBER_MESSAGES.notFound);
      throw new ApiError(409, MEMBER_MESSAGES.lastOwner);
    }
    forgetMember(id);
    return c.json(memberJson(updated), 200);
  });

  app.openapi(deleteRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const db = requestDatabase(c);
    const target = await getMember(db, caller.accountId, id);
    if (!target) throw new ApiError(404, MEMBER_MESSAGES.notFound);
    requireOwnerFor(caller, target.role);
    const removed = await removeMember(db, { accountId: caller.accountId, memberId: id, name: target.name, role: target.role, actor: caller.actor, requestId: c.get("requestId"), now: Date.now() });
    if (!removed) {
      if (!(await getMember(db, caller.accountId, id))) throw new ApiError(404, MEMBER_MESSAGES.notFound);
      throw new ApiError(409, MEMBER_MESSAGES.lastOwner);
    }
    forgetMember(id);
    Object.assign(c.get("accessLog"), { removed_member_id: id });
    return c.body(null, 204);
  });
}
