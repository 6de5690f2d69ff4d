/**
 * GET /v1/audit-events (docs/api.md "Audit trail"): what was done to the account's keys and members, newest first,
 * cursor-paged. Kept AUDIT_RETENTION_SECONDS; the cron deletes older events.
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { AuditPage, AuditQuery, type AUDIT_ACTIONS } from "../../shared/keys.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { auditPage } from "../identity/store/audit.ts";
import { cursorPaging } from "../lib/paging.ts";
import { access } from "./access.ts";
import { ApiError } from "../lib/errors.ts";

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 500;

export const AUDIT_MESSAGES = {
  badCursor: "Invalid parameter cursor: not one this endpoint returned",
  badLimit: `Invalid parameter limit: must be an integer between 1 and ${MAX_LIMIT}`,
  badActor: "Invalid parameter actor: not a key or member id, operator or system",
  badTarget: "Invalid parameter target: not an id",
} as const;

/** An id of ours (key_…, mem_…, pk_…, ses_…, inv_…, acc_…), or operator and system: checked before the database is read. */
const ID = /^[A-Za-z0-9_-]{1,80}$/;

const auditRoute = createRoute({
  method: "get",
  path: "/v1/audit-events",
  operationId: "listAuditEvents",
  tags: ["Account"],
  summary: "The audit trail: keys created, rolled, revoked and expired; members invited, joined, changed and removed; passkeys; sign-ins and sign-outs; by whom",
  description:
    "Newest first; next_cursor pages to older events. actor and target narrow it to what a key or member did, or what was done to something; each event names its actor and target (actor_name, target_name) when they are a key, member or passkey. " +
    "Events are kept AUDIT_RETENTION_SECONDS (a year by default). Counts against the lookup rate limit.",
  ...access({ who: { scope: "audit:read" }, limits: ["account"] }),
  request: { query: AuditQuery },
  responses: {
    200: { description: "A page of events", content: { "application/json": { schema: AuditPage } } },
    400: errorResponse(`${AUDIT_MESSAGES.badCursor}; ${AUDIT_MESSAGES.badLimit}; ${AUDIT_MESSAGES.badActor}; or ${AUDIT_MESSAGES.badTarget}`),
    ...authenticatedErrorResponses,
  },
});

/** A cursor is the last event's id. */
const paging = cursorPaging({ tag: "a", fields: 1, defaultLimit: DEFAULT_LIMIT, maxLimit: MAX_LIMIT, badCursor: AUDIT_MESSAGES.badCursor, badLimit: AUDIT_MESSAGES.badLimit });

export function registerAuditRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(auditRoute, async (c) => {
    const query = c.req.valid("query");
    const before = paging.after(query.cursor)?.[0] ?? null;
    const limit = paging.limit(query.limit);
    const actor = query.actor?.trim() || undefined;
    const target = query.target?.trim() || undefined;
    if (actor !== undefined && !ID.test(actor)) throw new ApiError(400, AUDIT_MESSAGES.badActor);
    if (target !== undefined && !ID.test(target)) throw new ApiError(400, AUDIT_MESSAGES.badTarget);
    const rows = await auditPage(requestDatabase(c), c.get("auth").accountId, before, limit, { actor, target });
    const page = rows.slice(0, limit);
    const body: AuditPage = {
      events: page.map((r) => ({
        id: String(r.id),
        action: r.action as (typeof AUDIT_ACTIONS)[number],
        actor: r.actor,
        actor_name: r.actor_name,
        target: r.target,
        target_name: r.target_name,
        details: JSON.parse(r.details) as Record<string, unknown>,
        request_id: r.request_id,
        created_at: new Date(Number(r.created_at)).toISOString(),
      })),
      next_cursor: rows.length > limit ? paging.cursor(Number(page.at(-1)!.id)) : null,
    };
    return c.json(body, 200);
  });
}
