/**
 * The shapes of keys, usage and the audit trail (docs/api.md "Keys and scopes", "Usage", "Audit trail"):
 * the handlers, the OpenAPI document and the typed client all come from these.
 */
import { z } from "@hono/zod-openapi";
import { DisplayName } from "./display-name.ts";
import { SCOPES, ScopeName } from "./scopes.ts";

/** Live keys an account may hold at once (not revoked, not expired, not rolled); one more is 409. */
export const MAX_LIVE_KEYS = 20;
/** With the rolled keys still in their overlap: a roll past this is 409. */
export const MAX_KEYS_IN_OVERLAP = 2 * MAX_LIVE_KEYS;
export const ROLL_OVERLAP = { defaultSeconds: 86_400, maxSeconds: 604_800 } as const;
/** How far ahead expires_at may be: ten years. */
export const MAX_KEY_LIFETIME_MS = 10 * 365 * 86_400_000;
export const MAX_DAILY_CREDIT_CAP = 1_000_000_000;

const rfc3339 = z.string().openapi({ description: "RFC 3339, UTC", example: "2026-11-25T21:40:00.000Z" });

export const ApiKey = z
  .object({
    id: z.string().openapi({ example: "key_3kT9vQ2mXwPz8LbN" }),
    name: z.string().openapi({ description: "Empty for keys made before names existed", example: "CRM sync" }),
    prefix: z.string().openapi({ description: "The token's first characters, to tell keys apart; never enough to use it", example: "cv_Xy3kP9q" }),
    scopes: z.array(ScopeName),
    created_at: rfc3339,
    created_by: z.string().openapi({ description: '"operator" (the admin CLI), or the id of the key or the member (console session) that created it', example: "key_9aB2cD4eF6gH8iJ0" }),
    last_used_at: rfc3339.nullable().openapi({ description: "Written at most once per five minutes per key, so up to that stale; null: never used" }),
    expires_at: rfc3339.nullable().openapi({ description: "From then on the key gets 401 with reason key_expired; null: never" }),
    revoked_at: rfc3339.nullable(),
    daily_credit_cap: z.number().int().nullable().openapi({ description: "Credits the key may spend per UTC day (past it, 402 with reason daily_credit_cap); null: only the balance limits it" }),
    status: z.enum(["active", "expired", "revoked"]).openapi({ description: "Derived from expires_at and revoked_at at the time of the answer" }),
    replaced_by: z.string().nullable().openapi({ description: "The key a roll made in this one's place; this one works until expires_at" }),
  })
  .openapi("ApiKey");
export type ApiKey = z.infer<typeof ApiKey>;

export const ApiKeyWithToken = ApiKey.extend({
  token: z.string().openapi({ description: "The secret, shown this once: only its hash is stored", example: "cv_Xy3kP9q…" }),
}).openapi("ApiKeyWithToken");
export type ApiKeyWithToken = z.infer<typeof ApiKeyWithToken>;

export const ApiKeyList = z
  .object({ keys: z.array(ApiKey).openapi({ description: "Live keys first, then the others, newest first" }) })
  .openapi("ApiKeyList");

export const ApiKeyCreateRequest = z
  .object({
    name: DisplayName,
    scopes: z
      .array(z.enum(SCOPES, { message: `must each be one of ${SCOPES.join(", ")}` }))
      .min(1, "must name at least one scope")
      .refine((s) => new Set(s).size === s.length, "must not repeat a scope"),
    expires_at: z.iso.datetime({ offset: true, message: "must be an RFC 3339 date-time, such as 2027-01-01T00:00:00Z" }).optional(),
    daily_credit_cap: z
      .number()
      .int("must be an integer")
      .min(1, "must be at least 1")
      .max(MAX_DAILY_CREDIT_CAP, `must be at most ${MAX_DAILY_CREDIT_CAP}`)
      .optional(),
  })
  .strict()
  .openapi("ApiKeyCreateRequest");
export type ApiKeyCreateRequest = z.infer<typeof ApiKeyCreateRequest>;

export const ApiKeyRollRequest = z
  .object({
    overlap_seconds: z
      .number()
      .int("must be an integer")
      .min(0, "must be at least 0")
      .max(ROLL_OVERLAP.maxSeconds, `must be at most ${ROLL_OVERLAP.maxSeconds} (7 days)`)
      .optional()
      .openapi({ description: `How long the old key keeps working; default ${ROLL_OVERLAP.defaultSeconds} (24 hours)` }),
  })
  .strict()
  .openapi("ApiKeyRollRequest");

export const KeyIdParam = z.object({ id: z.string().max(64).openapi({ param: { name: "id", in: "path" }, example: "key_3kT9vQ2mXwPz8LbN" }) });

export const USAGE_FIELDS = ["lookups_charged", "lookups_not_found", "lookups_refused_credits", "verifications", "job_lines", "credits_spent"] as const;
export const MAX_USAGE_DAYS = 366;

export const UsageQuery = z.object({
  from: z.string().optional().openapi({ description: "First day, YYYY-MM-DD (UTC); default 29 days before to", example: "2026-11-01" }),
  to: z.string().optional().openapi({ description: `Last day, YYYY-MM-DD (UTC), inclusive; default today. At most ${MAX_USAGE_DAYS} days from from`, example: "2026-11-30" }),
  group_by: z.enum(["day", "key"]).optional().openapi({ description: "day (default): one row per day with any use, all keys together; key: one row per key over the whole period" }),
  key_id: z.string().optional().openapi({ description: "Only this key's use (or a member's console use, by the member's id)", example: "key_3kT9vQ2mXwPz8LbN" }),
  format: z.enum(["json", "csv"]).optional().openapi({ description: "json (default), or csv (also chosen by Accept: text/csv)" }),
});

const counts = {
  lookups_charged: z.number().int(),
  lookups_not_found: z.number().int(),
  lookups_refused_credits: z.number().int().openapi({ description: "Lookups answered 402: the balance or the key's daily cap" }),
  verifications: z.number().int().openapi({ description: "Single verifications (written within about 30 seconds)" }),
  job_lines: z.number().int().openapi({ description: "Lines submitted in bulk jobs" }),
  credits_spent: z.number().int(),
};

export const UsageReport = z
  .object({
    from: z.string().openapi({ example: "2026-11-01" }),
    to: z.string().openapi({ example: "2026-11-30" }),
    group_by: z.enum(["day", "key"]),
    rows: z.array(
      z.object({
        day: z.string().optional().openapi({ description: "With group_by=day" }),
        key_id: z.string().optional().openapi({ description: "With group_by=key: the key's id, or a member's id for their use of the console" }),
        key_name: z.string().nullable().optional().openapi({ description: "With group_by=key: the key's name, or the member's; null for a key without a name", example: "CRM sync" }),
        ...counts,
      }),
    ),
    totals: z.object(counts),
  })
  .openapi("UsageReport");
export type UsageReport = z.infer<typeof UsageReport>;

export const AUDIT_ACTIONS = [
  "key.created",
  "key.rolled",
  "key.revoked",
  "key.expired",
  "member.invited",
  "member.joined",
  "member.role_changed",
  "member.removed",
  "member.invite_revoked",
  "passkey.added",
  "passkey.removed",
  "session.signed_in",
  "session.signed_out",
  "session.sign_in_failed",
  "account.disabled",
  "account.enabled",
  "account.webhook_secret_rotated",
  "account.people_events_url_set",
  "account.people_events_url_removed",
] as const;

export const AuditEvent = z
  .object({
    id: z.string().openapi({ description: "Increasing with time" }),
    action: z.enum(AUDIT_ACTIONS),
    actor: z.string().openapi({
      description: '"operator" (the admin CLI), "system" (the cron, for key.expired; an invite voided with its maker\'s authority), or the id of the key or member that acted',
    }),
    actor_name: z.string().nullable().openapi({ description: "The acting key's or member's name (a member since removed too); null for operator, system or a key without a name", example: "Olive Owner" }),
    target: z.string().nullable().openapi({ description: "What was acted on: a key, member, invite, passkey, session or account id" }),
    target_name: z.string().nullable().openapi({ description: "The name of the key, member or passkey acted on (one since removed too); null for anything else", example: "CRM sync" }),
    details: z.record(z.string(), z.unknown()).openapi({ description: "Names, scopes, prefixes, overlaps: never a secret" }),
    request_id: z.string().nullable(),
    created_at: rfc3339,
  })
  .openapi("AuditEvent");

export const AuditQuery = z.object({
  cursor: z.string().optional().openapi({ description: "next_cursor of the previous page" }),
  limit: z.string().optional().openapi({ description: "1..500, default 100" }),
  actor: z.string().optional().openapi({ description: "Only what this key or member did (its id), or operator, or system", example: "mem_Qx3m9TtGkZ0lJ2rA" }),
  target: z.string().optional().openapi({ description: "Only what was done to this key, member, invite, passkey, session or account (its id)", example: "key_3kT9vQ2mXwPz8LbN" }),
});

export const AuditPage = z
  .object({
    events: z.array(AuditEvent).openapi({ description: "Newest first" }),
    next_cursor: z.string().nullable().openapi({ description: "Pass as cursor for older events; null when there are none" }),
  })
  .openapi("AuditPage");
export type AuditPage = z.infer<typeof AuditPage>;
