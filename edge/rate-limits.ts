/**
 * Rate limits (docs/api.md "Rate limits"): per API key for each family of operation, and per client
 * address for failed authentication, counted by the Workers Rate Limiting binding.
 *
 * wrangler.toml's [[ratelimits]] (one set per environment) is what is enforced. RATE_LIMITS states
 * the same numbers so the Worker can tell clients (RateLimit-Policy, GET /v1/account), and
 * test/node/rate-limits-config.test.ts fails whenever the two disagree: change both together.
 */
import type { Context, MiddlewareHandler } from "hono";
import { ERROR_MESSAGES } from "../shared/api.ts";
import type { AppEnv, RateLimitBindings, RateLimiter } from "./env.ts";
import { ApiError } from "./lib/errors.ts";
import { describeError, writeLog } from "./log.ts";

export type RateLimitPolicy = {
  binding: keyof RateLimitBindings;
  /** Requests allowed per period, per key or per client address. */
  limit: number;
  /** The binding's period: 10 or 60 seconds. */
  periodSeconds: 10 | 60;
};

export type RateLimitFamily = "verification" | "lookup" | "bulk_lookup" | "account" | "job_creation" | "job_reads" | "feedback";

export const RATE_LIMITS = {
  verification: { binding: "VERIFICATION_RATE_LIMITER", limit: 100, periodSeconds: 10 },
  /** One person per call: GET /v1/people, and the erasures a lookup client reads back. */
  lookup: { binding: "LOOKUP_RATE_LIMITER", limit: 100, periodSeconds: 10 },
  /**
   * POST /v1/people/bulk, counted once per call, whatever its size (1 to 100 items): 10 calls per 10 s keep 1,000
   * lookups per 10 s going, while credits and the key's daily cap bound what they spend. A call is counted before its
   * body is read and a refused one is not counted (the binding counts only what it allows), so a batch is refused only
   * when 10 batches already went in this window, and spends nothing then. (Counting items against the binding would
   * take one call per item, and the binding cannot give back what a refused batch counted.)
   */
  bulk_lookup: { binding: "BULK_LOOKUP_RATE_LIMITER", limit: 10, periodSeconds: 10 },
  /** Reading and managing one's own account (account, usage, audit events, keys, members, invites, the session's own calls): apart from lookups, so a client that checks its balance before a batch never starves it. */
  account: { binding: "ACCOUNT_RATE_LIMITER", limit: 120, periodSeconds: 10 },
  job_creation: { binding: "JOB_CREATION_RATE_LIMITER", limit: 60, periodSeconds: 60 },
  /** A job's status and results: polling and paging, database reads only (no SMTP), so apart from verification. */
  job_reads: { binding: "JOB_READ_RATE_LIMITER", limit: 120, periodSeconds: 10 },
  /** Bounce feedback: a call carries up to 1,000 reports, so a few a second is plenty; apart from lookups, which it must not starve. */
  feedback: { binding: "FEEDBACK_RATE_LIMITER", limit: 60, periodSeconds: 60 },
} as const satisfies Record<RateLimitFamily, RateLimitPolicy>;

/** Failed authentications per client address. */
export const FAILED_AUTHENTICATION_LIMIT = {
  binding: "FAILED_AUTH_RATE_LIMITER",
  limit: 60,
  periodSeconds: 60,
} as const satisfies RateLimitPolicy;

/** The IETF httpapi RateLimit-Policy header's structured form: `"lookup";q=100;w=10`. */
function policyHeader(name: string, policy: RateLimitPolicy): string {
  return `"${name}";q=${policy.limit};w=${policy.periodSeconds}`;
}

/** The binding only says yes or no, so Retry-After is the whole period: the window has ended by then. */
export function rateLimited(name: string, policy: RateLimitPolicy): ApiError {
  return new ApiError(429, ERROR_MESSAGES.rateLimited, {
    "Retry-After": String(policy.periodSeconds),
    "RateLimit-Policy": policyHeader(name, policy),
  });
}

/**
 * Counts one request against `key` and says whether it is within the limit. A missing binding is
 * a deployment mistake (a 500 that names it); a binding that fails lets the request through with a
 * warning, since refusing everyone would be worse than limiting no one for a while.
 */
export async function withinLimit(c: Context<AppEnv>, policy: RateLimitPolicy, key: string): Promise<boolean> {
  const limiter = c.env[policy.binding];
  if (!limiter) throw new Error(`The ${policy.binding} binding is missing: declare it in wrangler.toml for this environment`);
  try {
    return (await limiter.limit({ key })).success;
  } catch (error) {
    writeLog("warn", { event: "rate_limiter_failed", request_id: c.get("requestId"), binding: policy.binding, error: describeError(error) });
    return true;
  }
}

/**
 * The per-key limit of one family, for a route that is already authenticated (a route may apply
 * several, as job creation does). Every response of the route states the policy; beyond it the
 * answer is 429 before any parameter is looked at.
 */
export function enforceRateLimit(family: RateLimitFamily): MiddlewareHandler<AppEnv> {
  const policy = RATE_LIMITS[family];
  return async (c, next) => {
    // A route limited twice (creating a job) states both policies, as a list.
    c.header("RateLimit-Policy", policyHeader(family, policy), { append: true });
    if (!(await withinLimit(c, policy, c.get("auth").actor))) throw rateLimited(family, policy);
    await next();
  };
}
