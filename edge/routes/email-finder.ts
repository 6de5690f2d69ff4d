/** GET /v1/email_finder and POST /v1/email_finder/bulk (docs/api.md, the sections of those names). */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import {
  EmailFinderBatchRequest,
  EmailFinderBatchResult,
  EmailFinderQuery,
  EmailFinderResult,
  ERROR_MESSAGES,
  FINDER_LIMITS,
  FinderPending,
  type EmailFinderResult as Result,
  type ErrorReason,
} from "../../shared/api.ts";
import { limitRequestBody } from "../body-limit.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { readFindQuery, readMaxDuration } from "../finder/query.ts";
import { settleFind, type Caller } from "../finder/settle.ts";
import { ApiError } from "../lib/errors.ts";
import { balanceQuery } from "../money/credits.ts";
import { parseMinConfidence } from "../people/lookup.ts";
import { access } from "./access.ts";
import { authenticatedErrorResponses, creditHeaders, errorResponse } from "./responses.ts";

export const emailFinderRoute = createRoute({
  method: "get",
  path: "/v1/email_finder",
  operationId: "findEmail",
  tags: ["People"],
  summary: "Find a person's work address from their name and a domain or company",
  description:
    "In this order: an address we hold for the person at the domain (no probe); else an address made from the domain's patterns, learned from the name and address pairs we hold there; " +
    "checked with at most one RCPT (rarely two) where the receiver refuses unknown addresses and allows checking. " +
    "LOOKUP_COST credits only when the answer is confirmed (confirmed: true); pattern-only answers, misses and the same find by the same account within 30 days are free (docs/api.md \"GET /v1/email_finder\").",
  ...access({ who: { scope: "people:read" }, limits: ["lookup"] }),
  request: { query: EmailFinderQuery },
  responses: {
    200: { description: "An address, with its evidence", content: { "application/json": { schema: EmailFinderResult } }, headers: creditHeaders },
    202: { description: "Still checking past max_duration: make the same call again after Retry-After", content: { "application/json": { schema: FinderPending } }, headers: creditHeaders },
    400: errorResponse(`${ERROR_MESSAGES.finderNameRequired}; ${ERROR_MESSAGES.finderDomainRequired}; ${ERROR_MESSAGES.finderDomainInvalid}; ${ERROR_MESSAGES.finderMaxDuration}; or ${ERROR_MESSAGES.minConfidenceRange}`, creditHeaders),
    402: errorResponse(`${ERROR_MESSAGES.insufficientCredits}; or ${ERROR_MESSAGES.dailyCreditCap} (reason daily_credit_cap)`, creditHeaders),
    404: errorResponse(`${ERROR_MESSAGES.finderNotFound}; or (reason ambiguous_match) the name fits more than one person we hold at the domain`, creditHeaders),
    422: errorResponse(`${ERROR_MESSAGES.finderNoMail} (domain_has_no_mail); ${ERROR_MESSAGES.finderWebmail} (webmail_domain); ${ERROR_MESSAGES.finderDisposable} (disposable_domain); ${ERROR_MESSAGES.finderCompanyUnknown} (company_unknown)`, creditHeaders),
    ...authenticatedErrorResponses,
  },
});

export const emailFinderBulkRoute = createRoute({
  method: "post",
  path: "/v1/email_finder/bulk",
  operationId: "findEmails",
  tags: ["People"],
  summary: "Find up to 100 work addresses in one call",
  description: "Each item as GET /v1/email_finder takes it, charged as it is; items still checking when the call's time is up come back pending: post the same items again for them.",
  ...access({ who: { scope: "people:read" }, limits: ["bulk_lookup"], body: limitRequestBody(256 * 1024, ERROR_MESSAGES.bodyTooLarge) }),
  request: { body: { required: true, content: { "application/json": { schema: EmailFinderBatchRequest } } } },
  responses: {
    200: { description: "One result per item, in order", content: { "application/json": { schema: EmailFinderBatchResult } }, headers: creditHeaders },
    400: errorResponse(`${ERROR_MESSAGES.finderItemsRange}, or the body is not JSON`, creditHeaders),
    ...authenticatedErrorResponses,
  },
});

function callerOf(c: Context<AppEnv>): Caller {
  const config = c.get("config");
  const { accountId, actor: keyId, creditCaps } = c.get("auth");
  const db = requestDatabase(c);
  return {
    db,
    keyId,
    cost: config.LOOKUP_COST,
    creditCaps,
    ctx: { db, config, accountId, requestId: c.get("requestId"), now: Date.now() },
    waitUntil: (p) => {
      try {
        c.executionCtx.waitUntil(p);
      } catch {
        void p;
      }
    },
  };
}

const headers = (charged: number, remaining: number) => ({ "X-Credits-Charged": String(charged), "X-Credits-Remaining": String(remaining) });

export function registerEmailFinderRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(emailFinderRoute, async (c) => {
    const caller = callerOf(c);
    const query = c.req.valid("query");
    const fail = async (status: number, error: string, reason?: ErrorReason, balance?: number): Promise<never> => {
      const remaining = balance ?? Number((await balanceQuery(caller.db, caller.ctx.accountId))[0]?.credit_balance ?? 0);
      throw new ApiError(status as 400, error, headers(0, remaining), reason ? { reason } : {});
    };
    const read = readFindQuery(query);
    if (!read.ok) return fail(read.problem.status, read.problem.error, read.problem.reason);
    const duration = readMaxDuration(query.max_duration);
    if (duration === null) return fail(400, ERROR_MESSAGES.finderMaxDuration);
    let minConfidence: number | null;
    try {
      minConfidence = parseMinConfidence(query.min_confidence);
    } catch (err) {
      return fail(400, (err as Error).message);
    }
    const settled = await settleFind(caller, read.find, minConfidence, duration * 1000);
    // What was found and how, never the name, the domain or the address.
    const log = c.get("accessLog");
    if (settled.kind === "found") Object.assign(log, { finder_method: settled.result.method, finder_confirmed: settled.result.confirmed, credits_charged: settled.charged });
    else log.finder_outcome = settled.kind === "pending" ? "pending" : settled.status;
    if (settled.kind === "found") return c.json(settled.result, 200, headers(settled.charged, settled.balance));
    if (settled.kind === "pending") {
      const balance = Number((await balanceQuery(caller.db, caller.ctx.accountId))[0]?.credit_balance ?? 0);
      return c.json({ status: "pending" as const, retry_after_seconds: settled.retryAfter }, 202, { ...headers(0, balance), "Retry-After": String(settled.retryAfter) });
    }
    return fail(settled.status, settled.error, settled.reason, settled.balance);
  });

  app.openapi(emailFinderBulkRoute, async (c) => {
    const caller = callerOf(c);
    const body = c.req.valid("json");
    if (!Array.isArray(body.items) || body.items.length === 0 || body.items.length > FINDER_LIMITS.maxBatch) throw new ApiError(400, ERROR_MESSAGES.finderItemsRange);
    const deadline = Date.now() + FINDER_LIMITS.maxDuration * 1000;
    const results: EmailFinderBatchResultItem[] = new Array(body.items.length);
    let next = 0;
    let credits = 0;
    // Four finds at a time: each is a few round trips and at most one or two RCPTs, paced by the probe per receiver.
    const worker = async () => {
      while (next < body.items.length) {
        const position = next++;
        const read = readFindQuery(body.items[position]!);
        if (!read.ok) {
          results[position] = { position, status: "error", error: read.problem.error, ...(read.problem.reason ? { reason: read.problem.reason } : {}) };
          continue;
        }
        const left = deadline - Date.now();
        const settled = left < 500 ? ({ kind: "pending", retryAfter: 3 } as const) : await settleFind(caller, read.find, body.min_confidence ?? null, left);
        if (settled.kind === "found") {
          credits += settled.charged;
          results[position] = { position, status: "found", result: settled.result, charged: settled.charged };
        } else if (settled.kind === "pending") results[position] = { position, status: "pending" };
        else if (settled.status === 404 && settled.reason === undefined) results[position] = { position, status: "not_found" };
        else results[position] = { position, status: settled.status === 404 ? "not_found" : "error", error: settled.error, ...(settled.reason ? { reason: settled.reason } : {}) };
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    const balance = Number((await balanceQuery(caller.db, caller.ctx.accountId))[0]?.credit_balance ?? 0);
    c.get("accessLog").finds = body.items.length;
    return c.json({ results, credits_charged: credits }, 200, headers(credits, balance));
  });
}

type EmailFinderBatchResultItem = {
  position: number;
  status: "found" | "not_found" | "pending" | "error";
  result?: Result;
  error?: string;
  reason?: ErrorReason;
  charged?: number;
};
