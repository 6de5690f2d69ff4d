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

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 500;

export const AUDIT_MESSAGES = {
  badCursor: "Invalid parameter cursor: not one this endpoint returned",
  badLimit: `Invalid parameter limit: must be an integer between 1 and ${MAX_LIMIT}`,
} as const;

const auditRoute = createRoute({
  method: "get",
  path: "/v1/audit-events",
  operationId: "listAuditEvents",
  tags: ["Account"],
  summary: "The audit trail: keys created, rolled, revoked and expired; members invited, joined, changed and removed; passkeys; sign-ins and sign-outs; by whom",
  description: "Newest first; next_cursor pages to older events. Events are kept AUDIT_RETENTION_SECONDS (a year by default). Counts against the lookup rate limit.",
  ...access({ who: { scope: "audit:read" }, limits: ["lookup"] }),
  request: { query: AuditQuery },
  responses: {
    200: { description: "A page of events", content: { "application/json": { schema: AuditPage } } },
    400: errorResponse(`${AUDIT_MESSAGES.badCursor}; or ${AUDIT_MESSAGES.badLimit}`),
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
    const rows = await auditPage(requestDatabase(c), c.get("auth").accountId, before, limit);
    const page = rows.slice(0, limit);
    const body: AuditPage = {
      events: page.map((r) => ({
        id: String(r.id),
        action: r.action as (typeof AUDIT_ACTIONS)[number],
        actor: r.actor,
        target: r.target,
        details: JSON.parse(r.details) as Record<string, unknown>,
        request_id: r.request_id,
        created_at: new Date(Number(r.created_at)).toISOString(),
      })),
      next_cursor: rows.length > limit ? paging.cursor(Number(page.at(-1)!.id)) : null,
    };
    return c.json(body, 200);
  });
}
