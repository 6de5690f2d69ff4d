/**
 * One find from its parsed query to its answer, for whoever asks (docs/api.md "GET /v1/email_finder"): the single call
 * and its batch (edge/routes/email-finder.ts settleFind, which charges it) and a lookup job's find_emails phase
 * (edge/jobs/lookup/find-emails.ts, which charges it in the write that answers its line). No Hono Context: the caller
 * gives the database, the finder's context and its key.
 */
import { ERROR_MESSAGES, type EmailFinderResult as Result, type ErrorReason } from "../../shared/api.ts";
import type { Database } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { balanceQuery } from "../money/credits.ts";
import { FIND_REPEAT_DAYS, type FindOutcome } from "./find.ts";
import { refusedDomain, type FindQuery, type QueryProblem } from "./query.ts";
import { companyDomain, domainMail, findDataStatements, finderHasher, receivesNoMail, runFind, type FinderContext } from "./service.ts";
import { repeatQuery, settleFindStatements } from "../people/finder-store.ts";

const DAY_MS = 86_400_000;

/** A find settled: the answer as the caller gets it, what it cost, or why there is none. */
export type Settled =
  | { kind: "found"; result: Result; charged: number; balance: number }
  | { kind: "pending"; retryAfter: number }
  | { kind: "error"; status: number; error: string; reason?: ErrorReason; balance?: number };

export type Caller = { db: Database; ctx: FinderContext; keyId: string; cost: number; creditCaps: AppEnv["Variables"]["auth"]["creditCaps"]; waitUntil(p: Promise<unknown>): void };

/** A find answered and not charged yet: the answer, its keyed name (for the 30-day repeat), and whether it is one. */
export type Resolved = { kind: "resolved"; outcome: Extract<FindOutcome, { kind: "found" }>; domain: string; findKey: string; repeat: boolean };

type NotFound = Exclude<Settled, { kind: "found" }>;

const problem = (p: QueryProblem): NotFound => ({ kind: "error", status: p.status, error: p.error, ...(p.reason ? { reason: p.reason } : {}) });

/** The 30-day repeat window's start, for a find at `now`. */
export const repeatSince = (now: number) => now - FIND_REPEAT_DAYS * DAY_MS;

/**
 * One find up to its charge: the domain (a company resolved), refused domains, DNS, the repeat and the balance (a find
 * that could be charged needs the credits before anything is asked of a receiver: 402, as on lookups), then the find.
 * Past `deadlineMs` the find goes on in the background (waitUntil) and the answer is pending.
 */
export async function resolveFind(caller: Caller, find: FindQuery, minConfidence: number | null, deadlineMs: number): Promise<NotFound | Resolved> {
  const { db, ctx } = caller;
  const domain = find.domain ?? (find.company === null ? null : await companyDomain(db, find.company));
  if (domain === null) return { kind: "error", status: 422, error: ERROR_MESSAGES.finderCompanyUnknown, reason: "company_unknown" };
  const refused = refusedDomain(domain);
  if (refused) return problem(refused);
  const hash = await finderHasher(ctx.config.FEEDBACK_HASH_KEY);
  const findKey = await hash(`${find.nameKey.replace(/ /g, ".")}@${domain}`);
  const scoped = { ...find, domain };
  // One round trip beside DNS: the repeat, the balance and everything the find starts from.
  const [dns, [repeatRows, balanceRows, known, pairs, facts]] = await Promise.all([
    domainMail(domain, ctx.config),
    db.batch([repeatQuery(db, ctx.accountId, findKey, repeatSince(ctx.now)), balanceQuery(db, ctx.accountId), ...findDataStatements(db, scoped, ctx.now)]),
  ]);
  const balance = Number(balanceRows[0]?.credit_balance ?? 0);
  if (receivesNoMail(dns)) return { kind: "error", status: 422, error: ERROR_MESSAGES.finderNoMail, reason: "domain_has_no_mail", balance };
  const repeat = repeatRows.length > 0;
  if (!repeat && balance < caller.cost) return { kind: "error", status: 402, error: ERROR_MESSAGES.insufficientCredits, balance };

  const work = runFind(ctx, scoped, dns, minConfidence, { known, pairs, facts });
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
  return { kind: "resolved", outcome, domain, findKey, repeat };
}

/** Whether a resolved find is charged: confirmed, not a repeat, at a cost. */
export const chargeable = (caller: Pick<Caller, "cost">, resolved: Resolved) => resolved.outcome.result.confirmed && !resolved.repeat && caller.cost > 0;

/**
 * One find from its parsed query to what the caller is told, charged (one batch: the charge, the record of the find
 * for the 30-day repeat, the disclosure of a known person, the balance after).
 */
export async function settleFind(caller: Caller, find: FindQuery, minConfidence: number | null, deadlineMs: number): Promise<Settled> {
  const resolved = await resolveFind(caller, find, minConfidence, deadlineMs);
  if (resolved.kind !== "resolved") return resolved;
  const { db, ctx } = caller;
  const { outcome, findKey, repeat } = resolved;
  const charging = chargeable(caller, resolved);
  const now = Date.now();
  const charge = { accountId: ctx.accountId, keyId: caller.keyId, cost: caller.cost, requestId: ctx.requestId, now, creditCaps: caller.creditCaps };
  const [charged, , , balanceAfter, cap] = await db.batch(settleFindStatements(db, { charge, chargeable: charging, findKey, personId: outcome.personId }));
  const after = Number(balanceAfter[0]?.credit_balance ?? 0);
  if (charging && charged.length === 0) {
    if (Number(cap[0]?.cap_exceeded ?? 0) === 1) return { kind: "error", status: 402, error: ERROR_MESSAGES.dailyCreditCap, reason: "daily_credit_cap", balance: after };
    return { kind: "error", status: 402, error: ERROR_MESSAGES.insufficientCredits, balance: after };
  }
  return { kind: "found", result: { ...outcome.result, repeat }, charged: charging ? caller.cost : 0, balance: after };
}
