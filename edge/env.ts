/**
 * Worker bindings and their parsed form. Configuration names are docs/operations.md "Configuration"; values come from
 * wrangler.toml [vars], `wrangler secret put`, or `wrangler dev --var` (npm start).
 */
import { z } from "zod";
import type { JobMessage } from "../shared/jobs.ts";
import { probeSecretProblem } from "../shared/probe-contract.ts";
import type { Caller } from "./caller.ts";
import type { Database } from "./db/client.ts";
import { emptyToUndefined } from "../shared/config-values.ts";

/**
 * The parts of a Queues producer binding (workerd's Queue) that jobs use (edge/jobs/queue.ts puts their messages on
 * it): the verification jobs' queue and the lookup jobs' take the same messages (shared/jobs.ts JobMessage).
 */
export type JobsQueue = {
  send(body: JobMessage, options?: { delaySeconds?: number }): Promise<unknown>;
  sendBatch(messages: { body: JobMessage; delaySeconds?: number }[]): Promise<unknown>;
};

/** The part of the Rate Limiting binding we use (workerd's RateLimit). */
export type RateLimiter = { limit(options: { key: string }): Promise<{ success: boolean }> };

export type RateLimitBindings = {
  VERIFICATION_RATE_LIMITER?: RateLimiter;
  LOOKUP_RATE_LIMITER?: RateLimiter;
  BULK_LOOKUP_RATE_LIMITER?: RateLimiter;
  ACCOUNT_RATE_LIMITER?: RateLimiter;
  JOB_CREATION_RATE_LIMITER?: RateLimiter;
  JOB_READ_RATE_LIMITER?: RateLimiter;
  FEEDBACK_RATE_LIMITER?: RateLimiter;
  FAILED_AUTH_RATE_LIMITER?: RateLimiter;
};

export type Bindings = RateLimitBindings & {
  DATABASE_URL?: string;
  DATABASE_AUTH_TOKEN?: string;
  DATABASE_TIMEOUT_MS?: string;
  DOH_URL?: string;
  PROBE_URL?: string;
  PROBE_SECRET?: string;
  LOOKUP_COST?: string;
  /** The queue bulk jobs run on: this Worker is its producer and its consumer (wrangler.toml). */
  JOBS_QUEUE?: JobsQueue;
  /** The queue lookup jobs run on (docs/lookup-jobs.md): database work only, apart from the verification jobs' probe work. */
  LOOKUP_JOBS_QUEUE?: JobsQueue;
  LOOKUP_VERIFY_MAX_AGE_SECONDS?: string;
  LOOKUP_JOB_MAX_PAUSE_SECONDS?: string;
  JOB_MAX_RUNNING?: string;
  JOB_MAX_LINES_PER_DAY?: string;
  JOB_RETRY_DELAY_SECONDS?: string;
  JOB_RECEIVER_WAIT_MAX_SECONDS?: string;
  JOB_STALL_SECONDS?: string;
  JOB_IDLE_CHECK_MS?: string;
  JOB_RETENTION_SECONDS?: string;
  EMAIL_MAX_AGE_SECONDS?: string;
  EMAIL_RECHECK_SECONDS?: string;
  EMAIL_REFRESH_BATCH?: string;
  ACCESS_LOG_RETENTION_SECONDS?: string;
  AUDIT_RETENTION_SECONDS?: string;
  CALLBACK_ALLOW_PRIVATE_TARGETS?: string;
  SESSION_IDLE_SECONDS?: string;
  SESSION_MAX_SECONDS?: string;
  WEBAUTHN_ORIGINS?: string;
  /** Seals the accounts' webhook secrets at rest (docs/jobs.md "Callbacks"): base64 of 32 random bytes. */
  WEBHOOK_SECRET_KEY?: string;
  /** Keys the hashes by which bounce feedback names addresses (docs/api.md "POST /v1/email_feedback"): base64 of 32 random bytes. */
  FEEDBACK_HASH_KEY?: string;
  FEEDBACK_RETENTION_SECONDS?: string;
  FEEDBACK_REVERIFY_PER_HOUR?: string;
  PEOPLE_EVENTS_WINDOW_SECONDS?: string;
};

/** What a route adds to its request's access line (docs/operations.md "Logs"): never a query value, address or number. */
export type AccessLogFields = Record<string, string | number | boolean | null>;

export type Variables = {
  requestId: string;
  accessLog: AccessLogFields;
  config: EdgeConfig;
  /** Who is calling: an API key or a member's session (edge/identity/authenticate.ts). */
  auth: Caller;
  /** Opened on first use by requestDatabase(); never shared across requests. */
  db?: Database;
};

export type AppEnv = { Bindings: Bindings; Variables: Variables };


/**
 * The probe's requests carry addresses and its answers verdicts: https, except over loopback, where
 * nothing leaves the machine (tests, `npm start`).
 */
function probeUrlIsSafe(raw: string): boolean {
  if (!URL.canParse(raw)) return true; // not a URL at all: the .url() check says so
  const url = new URL(raw);
  if (url.protocol === "https:") return true;
  if (url.protocol !== "http:") return false;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The Worker's settings: names, bounds and defaults (docs/operations.md lists them from here). */
export const EdgeConfigSchema = z.object({
  DATABASE_URL: z.string().url({ message: "DATABASE_URL must be a URL (libsql://, https:// or http://)" }),
  DATABASE_AUTH_TOKEN: z.preprocess(emptyToUndefined, z.string().optional()),
  /** How long one database request may take, answer included, before the request gets 503. */
  DATABASE_TIMEOUT_MS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(100).max(30_000).default(3_000)),
  DOH_URL: z.preprocess(emptyToUndefined, z.string().url().default("https://cloudflare-dns.com/dns-query")),
  /** One probe URL, or several separated by commas (docs/probe.md "Several probes"). */
  PROBE_URL: z.preprocess(
    (v) => (typeof v === "string" ? v.split(",").map((u) => u.trim()).filter((u) => u !== "") : []),
    z
      .array(
        z
          .string()
          .url({ message: "PROBE_URL must be a URL or a comma-separated list of URLs" })
          .refine(probeUrlIsSafe, { message: "PROBE_URL must be https (http only to a loopback address, for tests and npm start)" }),
      )
      .max(32),
  ),
  PROBE_SECRET: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .superRefine((secret, ctx) => {
        const problem = probeSecretProblem(secret);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      })
      .optional(),
  ),
  LOOKUP_COST: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(1_000_000).default(1)),
  /** Jobs an account may have queued or running at once; one more is 429. */
  JOB_MAX_RUNNING: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(1_000).default(3)),
  /** Lines an account may submit in jobs per rolling 24 hours, cancelled and all-invalid jobs included; past it, 429. */
  JOB_MAX_LINES_PER_DAY: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(1_000_000_000).default(1_000_000)),
  /** How long a job waits before it asks again about an address that got a temporary answer (0: never asks again). */
  JOB_RETRY_DELAY_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(43_200).default(300)),
  /**
   * The longest a job line waits on a receiver's budget (the probe holds it: docs/jobs.md "Waiting on a
   * receiver") before it is answered risky, receiver_budget_spent: every job ends within about this. Also how
   * long a block of our probe is waited out (docs/jobs.md "While our probe is blocked"): 4 h outlasts a harvest
   * gateway's 3 h block, not a blocklist listing's day, which is answered probe_refused at once (issue 36).
   */
  JOB_RECEIVER_WAIT_MAX_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(604_800).default(14_400)),
  /** A job with no progress for this long gets its remaining work put back on the queue by the cron. */
  JOB_STALL_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(86_400).default(120)),
  /** How often a delivery whose lines are being checked looks for accounts whose lines nobody holds (edge/jobs/verification/turns.ts). */
  JOB_IDLE_CHECK_MS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(100).max(600_000).default(1_000)),
  /** How long a finished job's lines and results are kept; a job may ask for less (retention_seconds). */
  JOB_RETENTION_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(31_536_000).default(2_592_000)),
  /**
   * A lookup job with verify_emails uses a verification of ours this recent instead of probing the address again
   * (docs/lookup-jobs.md "Verified addresses").
   */
  LOOKUP_VERIFY_MAX_AGE_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(31_536_000).default(604_800)),
  /** A lookup job paused for credits this long is cancelled (its data then follows the retention rules). */
  LOOKUP_JOB_MAX_PAUSE_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(60).max(31_536_000).default(604_800)),
  /** A stored email address is verified again once its last check is this old (docs/operations.md "Personal data"). */
  EMAIL_MAX_AGE_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(60).max(31_536_000).default(2_592_000)),
  /** Two mailbox_not_found answers at least this far apart make a stored address undeliverable; also when an inconclusive check is tried again. */
  EMAIL_RECHECK_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(1).max(2_592_000).default(86_400)),
  /** Stored addresses per re-verification batch: one batch at a time runs as an internal bulk job (0: no re-verification). */
  EMAIL_REFRESH_BATCH: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(100_000).default(2_000)),
  /** How long the access log (who received whom) and erasure notices are kept. */
  ACCESS_LOG_RETENTION_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(86_400).max(315_360_000).default(31_536_000)),
  /** How long the audit trail (GET /v1/audit-events) is kept; the cron deletes older events. */
  AUDIT_RETENTION_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(86_400).max(315_360_000).default(31_536_000)),
  /** Seals the accounts' webhook secrets at rest; without it no callback can be signed (each attempt fails, logged). */
  WEBHOOK_SECRET_KEY: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9+/]{43}=$/, "WEBHOOK_SECRET_KEY must be 32 bytes in base64 (make one with `openssl rand -base64 32`)")
      .optional(),
  ),
  /** Keys the hashes by which bounce feedback names addresses; without it POST /v1/email_feedback answers 500 (logged). */
  FEEDBACK_HASH_KEY: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9+/]{43}=$/, "FEEDBACK_HASH_KEY must be 32 bytes in base64 (make one with `openssl rand -base64 32`)")
      .optional(),
  ),
  /** How long bounce feedback is kept after it happened; at least the 90 days deliveries count for (shared/people/confidence.ts). */
  FEEDBACK_RETENTION_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(7_776_000).max(31_536_000).default(15_552_000)),
  /** Hard bounces per account per hour that move an address to the front of re-verification. */
  FEEDBACK_REVERIFY_PER_HOUR: z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(100_000).default(100)),
  /** People events go to the subscribed accounts whose last lookup of the person is at most this old (docs/api.md "People events"). */
  PEOPLE_EVENTS_WINDOW_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(86_400).max(31_536_000).default(7_776_000)),
  /** A console session ends once unused for this long (docs/api.md "Sessions"). */
  SESSION_IDLE_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(60).max(604_800).default(43_200)),
  /** A console session ends this long after sign-in, however much it is used. */
  SESSION_MAX_SECONDS: z.preprocess(emptyToUndefined, z.coerce.number().int().min(300).max(2_592_000).default(604_800)),
  /**
   * The console's origins, comma-separated (https://console.example.com): passkeys are made for the first one's host
   * (the WebAuthn relying party) and accepted from any of them; invite links point at the first. Unset: the origin
   * each request came to (npm start and tests, at http://localhost:8787).
   */
  WEBAUTHN_ORIGINS: z.preprocess(
    (v) => (typeof v === "string" ? v.split(",").map((u) => u.trim()).filter((u) => u !== "") : []),
    z
      .array(
        z
          .string()
          .url({ message: "WEBAUTHN_ORIGINS must be a comma-separated list of origins" })
          .refine((u) => URL.canParse(u) && new URL(u).origin === u, { message: "WEBAUTHN_ORIGINS must list bare origins (scheme://host[:port], no path)" }),
      )
      .max(8),
  ),
  /** true (tests only): job callbacks may also go to http URLs and private or loopback addresses. */
  CALLBACK_ALLOW_PRIVATE_TARGETS: z.preprocess(
    emptyToUndefined,
    z.enum(["true", "false"], { message: "CALLBACK_ALLOW_PRIVATE_TARGETS must be true or false" }).default("false").transform((v) => v === "true"),
  ),
});

export type EdgeConfig = z.infer<typeof EdgeConfigSchema>;

export class ConfigError extends Error {
  override name = "ConfigError";
}

// Bindings objects are stable for the life of an isolate, so each is parsed once.
const parsed = new WeakMap<object, EdgeConfig>();

export function loadConfig(env: Bindings): EdgeConfig {
  const hit = parsed.get(env);
  if (hit) return hit;
  const result = EdgeConfigSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ");
    throw new ConfigError(`Invalid worker configuration: ${problems}`);
  }
  if (result.data.PROBE_URL.length > 0 && !result.data.PROBE_SECRET) {
    throw new ConfigError("Invalid worker configuration: PROBE_SECRET is required when PROBE_URL is set");
  }
  parsed.set(env, result.data);
  return result.data;
}
