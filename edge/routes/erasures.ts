/**
 * GET /v1/people/erasures (docs/api.md, the section of that name): the people the calling account received in a
 * 200 lookup and that were erased since then, so it can delete its own copies (GDPR Article 19). An account
 * only ever sees erasures of people it received: the notices are written per receiving account at erasure.
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { ErasuresPage, ErasuresQuery } from "../../shared/api.ts";
import { requestDatabase } from "../db/client.ts";
import { iso } from "../db/rows.ts";
import { erasureNoticesPage } from "../people/store.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { cursorPaging } from "../lib/paging.ts";
import { access } from "./access.ts";

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;

export const ERASURE_MESSAGES = {
  badSince: "since must be an RFC 3339 date-time, such as 2026-11-01T00:00:00Z",
  badCursor: "cursor is not one this endpoint returned",
  badLimit: `limit must be an integer between 1 and ${MAX_LIMIT}`,
} as const;

export const erasuresRoute = createRoute({
  method: "get",
  path: "/v1/people/erasures",
  operationId: "listPeopleErasures",
  tags: ["People"],
  summary: "People you received that were erased since a date",
  description:
    "The people this account received in a 200 lookup and that were erased (at their request) at or after since, oldest first, cursor-paged: " +
    "each entry carries the four identifiers exactly as your lookups returned them (one entry per distinct set), so you can find and delete your copies. Only people this account received are listed. Kept as long as the access log (ACCESS_LOG_RETENTION_SECONDS, a year by default). " +
    "Counts against the lookup rate limit; costs no credits.",
  ...access({ who: { scope: "people:read" }, limits: ["lookup"] }),
  request: { query: ErasuresQuery },
  responses: {
    200: { description: "A page of erasures", content: { "application/json": { schema: ErasuresPage } } },
    400: errorResponse(`${ERASURE_MESSAGES.badSince}; ${ERASURE_MESSAGES.badCursor}; or ${ERASURE_MESSAGES.badLimit}`),
    ...authenticatedErrorResponses,
  },
});

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

function parseSince(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return 0;
  const value = raw.trim();
  const ms = RFC3339.test(value) ? Date.parse(value.replace(" ", "T")) : Number.NaN;
  if (!Number.isFinite(ms)) throw new ApiError(400, ERASURE_MESSAGES.badSince);
  return ms;
}

/** The cursor: the last notice's time and id, so a page resumes after it whatever is erased meanwhile. */
const paging = cursorPaging({ tag: "e", fields: 2, defaultLimit: DEFAULT_LIMIT, maxLimit: MAX_LIMIT, badCursor: ERASURE_MESSAGES.badCursor, badLimit: ERASURE_MESSAGES.badLimit });

export function registerErasuresRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(erasuresRoute, async (c) => {
    const query = c.req.valid("query");
    const since = parseSince(query.since);
    const after = paging.after(query.cursor);
    const limit = paging.limit(query.limit);
    const { notices: page, more } = await erasureNoticesPage(requestDatabase(c), c.get("auth").accountId, since, after, limit);
    const last = page.at(-1);
    return c.json(
      {
        erasures: page.map((r) => ({
          profnet_id: r.profnet_id === null ? null : Number(r.profnet_id),
          profnet_public_identifier: r.profnet_public_identifier,
          codehost_id: r.codehost_id === null ? null : Number(r.codehost_id),
          codehost_login: r.codehost_login,
          erased_at: iso(r.erased_at),
        })),
        next_cursor: more && last ? paging.cursor(Number(last.erased_at), Number(last.id)) : null,
      },
      200,
    );
  });
}
