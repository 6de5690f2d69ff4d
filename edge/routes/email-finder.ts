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
import { requestDatabase, type Database } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { FIND_REPEAT_DAYS } from "../finder/find.ts";
import { readFindQuery, readMaxDuration, refusedDomain, type FindQuery, type QueryProblem } from "../finder/query.ts";
import { companyDomain, domainMail, finderHasher, receivesNoMail, runFind, type FinderContext } from "../finder/service.ts";
import { repeatQuery, settleFindStatements } from "../people/finder-store.ts";
import { ApiError } from "../lib/errors.ts";
import { balanceQuery } from "../money/credits.ts";
import { parseMinConfidence } from "../people/lookup.ts";
import { access } from "./access.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";

const DAY_MS = 86_400_000;

const creditHeaders = {
  "X-Credits-Charged": { schema: { type: "integer" as const }, description: "Credits this request cost" },
  "X-Credits-Remaining": { schema: { type: "integer" as const }, description: "Account balance after this request" },
};

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

/** A find settled: the answer as the caller gets it, what it cost, or why there is none. */
export type Settled =
  | { kind: "found"; result: Result; charged: number; balance: number }
  | { kind: "pending"; retryAfter: number }
  | { kind: "error"; status: number; error: string; reason?: ErrorReason; balance?: number };

type Caller = { db: Database; ctx: FinderContext; keyId: string; cost: number; creditCaps: AppEnv["Variables"]["auth"]["creditCaps"]; waitUntil(p: Promise<unknown>): void };

const problem = (p: QueryProblem): Settled => ({ kind: "error", status: p.status, error: p.error, ...(p.reason ? { reason: p.reason } : {}) });

/**
 * One find from its parsed query to what the caller is told, charged (one batch: the charge, the record of the find
 * for the 30-day repeat, the disclosure of a known person, the balance after). Past `deadlineMs` the find goes on in
 * the background and the caller is told to come back.
 */
export async function settleFind(caller: Caller, find: FindQuery, minConfidence: number | null, deadlineMs: number): Promise<Settled> {
  const { db, ctx } = caller;
  const domain = find.domain ?? (find.company === null ? null : await companyDomain(db, find.company));
  if (domain === null) return { kind: "error", status: 422, error: ERROR_MESSAGES.finderCompanyUnknown, reason: "company_unknown" };
  const refused = refusedDomain(domain);
  if (refused) return problem(refused);
  const hash = await finderHasher(ctx.config.FEEDBACK_HASH_KEY);
  const findKey = await hash(`${find.nameKey.replace(/ /g, ".")}@${domain}`);
  const [dns, [repeatRows, balanceRows]] = await Promise.all([
    domainMail(domain, ctx.config),
    db.batch([repeatQuery(db, ctx.accountId, findKey, ctx.now - FIND_REPEAT_DAYS * DAY_MS), balanceQuery(db, ctx.accountId)]),
  ]);
  const balance = Number(balanceRows[0]?.credit_balance ?? 0);
  if (receivesNoMail(dns)) return { kind: "error", status: 422, error: ERROR_MESSAGES.finderNoMail, reason: "domain_has_no_mail", balance };
  const repeat = repeatRows.length > 0;
  // A find that could be charged needs the credits before anything is asked of a receiver (402 wins, as on lookups).
  if (!repeat && balance < caller.cost) return { kind: "error", status: 402, error: ERROR_MESSAGES.insufficientCredits, balance };

  const work = runFind(ctx, { ...find, domain }, dns, minConfidence);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), deadlineMs)));
  const outcome = await Promise.race([work, late]);
  clearTimeout(timer);
  if (outcome === "late") {
    caller.waitUntil(work.catch(() => undefined));
    return { kind: "pending", retryAfter: 3 };
  }
  if (outcome.kind === "pending") return { kind: "pending", retryAfter: 3 };
  if (outcome.kind === "not_found") {
    return outcome.ambiguous
      ? { kind: "error", status: 404, error: ERROR_MESSAGES.ambiguousMatch, reason: "ambiguous_match", balance }
      : { kind: "error", status: 404, error: ERROR_MESSAGES.finderNotFound, balance };
  }
  const chargeable = outcome.result.confirmed && !repeat && caller.cost > 0;
  const now = Date.now();
  const charge = { accountId: ctx.accountId, keyId: caller.keyId, cost: caller.cost, requestId: ctx.requestId, now, creditCaps: caller.creditCaps };
  const [charged, , , balanceAfter, cap] = await db.batch(settleFindStatements(db, { charge, chargeable, findKey, personId: outcome.personId }));
  const after = Number(balanceAfter[0]?.credit_balance ?? 0);
  if (chargeable && charged.length === 0) {
    if (Number(cap[0]?.cap_exceeded ?? 0) === 1) return { kind: "error", status: 402, error: ERROR_MESSAGES.dailyCreditCap, reason: "daily_credit_cap", balance: after };
    return { kind: "error", status: 402, error: ERROR_MESSAGES.insufficientCredits, balance: after };
  }
  return { kind: "found", result: { ...outcome.result, repeat }, charged: chargeable ? caller.cost : 0, balance: after };
}

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
