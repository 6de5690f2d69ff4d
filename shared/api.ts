/**
 * The public API's shapes (docs/api.md "API summary"). The handlers, the OpenAPI document and
 * the tests all use these; field names here are the contract and must not drift.
 * Longer than 400 lines on purpose: the one place every public shape, message and reason is stated, so the OpenAPI
 * document, the handlers and the docs cannot disagree; split, the contract would be read from several files.
 */
import { z } from "@hono/zod-openapi";
import { VERIFICATION_REASONS } from "./email/reasons.ts";
import { CONFIDENCE_LABELS } from "./people/confidence.ts";
import { SmtpOutcome } from "./smtp-outcome.ts";
import { IDENTIFIER_REQUIRED } from "./identifiers.ts";

/** The API's version: the latest release in CHANGELOG.md, as the OpenAPI document's info.version says it (test/node/changelog.test.ts). */
export const API_VERSION = "1.10.0";

/**
 * Every `reason` an error answer may carry: where a status has several causes, which one, for code to read
 * (docs/api.md "Error reasons"). The one list: the Worker's ApiError takes its reason from it, and the OpenAPI
 * document states it as an enum.
 */
export const ERROR_REASONS = [
  // 401
  "key_revoked",
  "key_expired",
  "session_expired",
  "sign_in_failed",
  // 402
  "daily_credit_cap",
  // 403
  "missing_scope",
  "session_required",
  "cross_site_request",
  "owner_required",
  "stronger_than_caller",
  "authority_lost",
  "step_up_required",
  // 404: a lookup whose inputs fit more than one person (never guessed between)
  "ambiguous_match",
  // 404 and 410: invite links
  "invite_invalid",
  "invite_used",
  "invite_expired",
  "invite_revoked",
  // 422: the finder's and the domain search's domain cannot hold a work address we could find
  "domain_has_no_mail",
  "webmail_domain",
  "disposable_domain",
  "company_unknown",
  // 409
  "conflicting_inputs",
  "last_owner",
  "role_changed",
] as const;
export type ErrorReason = (typeof ERROR_REASONS)[number];

export const ErrorBody = z
  .object({
    error: z.string().openapi({ example: "Unauthorized" }),
    reason: z
      .enum(ERROR_REASONS)
      .optional()
      .openapi({ description: "Where a status has several causes, which one, for code to read (docs/api.md \"Error reasons\")", example: "key_expired" }),
    scope: z.string().optional().openapi({ description: "With reason missing_scope: the scope the operation requires", example: "keys:write" }),
  })
  .openapi("Error");
export type ErrorBody = z.infer<typeof ErrorBody>;

export const ERROR_MESSAGES = {
  unauthorized: "Unauthorized",
  insufficientCredits: "Insufficient credits",
  dailyCreditCap: "Daily credit cap reached for this key",
  peopleParamRequired: IDENTIFIER_REQUIRED,
  profileNotFound: "No profile found for the given parameters",
  ambiguousMatch: "No profile found for the given parameters: they fit more than one person, and a lookup never guesses between people (add an identifier, an email or a phone)",
  conflictingInputs: "The given parameters name different people: check that they belong to one person",
  minConfidenceRange: "min_confidence must be an integer between 0 and 100",
  emailRequired: "The email_address parameter is required",
  smtpTimeoutRange: "smtp_timeout must be an integer between 1 and 60",
  notFound: "Not found",
  internal: "Internal server error",
  unavailable: "Service temporarily unavailable",
  rateLimited: "Rate limit exceeded",
  bodyTooLarge: "Request body too large",
  malformedJson: "Malformed JSON body",
  finderNameRequired: "Give full_name, or first_name and last_name: a given name of two letters or more and a family name",
  finderDomainRequired: "Give domain or company",
  finderDomainInvalid: "domain must be a registrable domain name (like acme.com), not an address, an IP or a public suffix",
  finderMaxDuration: "max_duration must be an integer between 1 and 20 (seconds)",
  finderNoMail: "The domain receives no mail (no MX, a null MX, or it does not exist): no address there can be found",
  finderWebmail: "The domain is a webmail provider's: its addresses are personal and not made from names by a pattern",
  finderDisposable: "The domain is a disposable-address service's",
  finderCompanyUnknown: "No domain is known for this company: give domain instead",
  finderNotFound: "No address found for this person at this domain",
  finderItemsRange: "items must be an array of 1 to 100 finds",
  domainLimitRange: "limit must be an integer between 1 and 100",
} as const;

/**
 * The reason of our verdict on a stored address (email_details.verification.reason): the vocabulary of verification
 * results, and `catch_all_delivered`, a catch-all address that independent accounts recently delivered to.
 */
export const STORED_VERIFICATION_REASONS = [...VERIFICATION_REASONS, "catch_all_delivered"] as const;
export type StoredVerificationReason = (typeof STORED_VERIFICATION_REASONS)[number];

/** The values of GET /v1/people's `include`: additions a client asks for by name. */
export const PEOPLE_INCLUDES = ["email_details", "profile"] as const;

/** One returned address: when imports first and last carried it, and what our own engine last said of it (docs/api.md "email_details"). Never its source: that names a supplier. */
export const EmailDetail = z
  .object({
    email: z.string(),
    type: z.enum(["personal", "work"]).openapi({ description: "As personal_email_addresses and work_email_addresses split them" }),
    first_seen_at: z.string().openapi({ description: "When any source first reported the address (RFC 3339, UTC)", example: "2026-03-02T09:15:00.000Z" }),
    last_seen_at: z.string().openapi({ description: "When any source last reported it (RFC 3339, UTC)", example: "2026-11-20T09:15:00.000Z" }),
    sources: z.number().int().min(0).openapi({ description: "How many independent sources (suppliers) reported the address; which ones stays private", example: 2 }),
    confidence: z.number().int().min(0).max(100).openapi({
      description: "How far to trust the address, 0-100: the chance in percent that mail to it is delivered, by the rules of docs/api.md \"Confidence\"",
      example: 95,
    }),
    confidence_label: z.enum(CONFIDENCE_LABELS).openapi({ description: "high (80-100), medium (50-79) or low (0-49)", example: "high" }),
    verification: z
      .object({
        classification: z.enum(["valid", "risky", "invalid"]),
        smtp_outcome: SmtpOutcome.nullable().openapi({ description: "As details.smtp_outcome in a verification result" }),
        checked_at: z.string().openapi({ description: "RFC 3339, UTC", example: "2026-11-24T03:02:11.000Z" }),
        reason: z.enum(STORED_VERIFICATION_REASONS).optional().openapi({
          description:
            "Why the verdict is what it is (docs/api.md \"Reasons\"); catch_all_delivered: the server accepts any address, and independent accounts reported delivering to this one recently",
          example: "deliverable",
        }),
      })
      .nullable()
      .openapi({ description: "The last re-verification of the stored address by this service's own engine; null until the first" }),
  })
  .openapi("EmailDetail", {
    description: "When our imports first and last carried the address, and our own engine's last check of it. Not where it came from: its source names a supplier and stays private",
  });
export type EmailDetail = z.infer<typeof EmailDetail>;

export const PersonName = z
  .object({
    full: z.string().openapi({ example: "Ada King Lovelace" }),
    given: z.string().nullable().openapi({ example: "Ada" }),
    family: z.string().nullable().openapi({ example: "Lovelace" }),
    middle: z.string().nullable().openapi({ example: "King" }),
  })
  .openapi("PersonName", { description: "As our sources wrote it (Unicode NFC); particles such as \"van der\" stay in the family name" });
export type PersonName = z.infer<typeof PersonName>;

export const Employment = z
  .object({
    employer: z.string().openapi({ example: "Analytical Engines Ltd" }),
    domains: z.array(z.string()).openapi({ description: "The employer's domains our sources tie to this employment (A-labels, lower case)", example: ["analytical.example"] }),
    title: z.string().nullable().openapi({ example: "Head of Computation" }),
    start: z.string().nullable().openapi({ description: "YYYY, YYYY-MM or YYYY-MM-DD, as precise as the sources were", example: "1843-07" }),
    end: z.string().nullable().openapi({ description: "As start; null while current or unknown" }),
    current: z.boolean().nullable().openapi({ description: "Whether the person works there now; null when the sources did not say" }),
  })
  .openapi("Employment");
export type Employment = z.infer<typeof Employment>;

export const ContactInfo = z
  .object({
    profnet_id: z.number().int().nullable(),
    profnet_public_identifier: z.string().nullable(),
    codehost_id: z.number().int().nullable(),
    codehost_login: z.string().nullable(),
    email_addresses: z.array(z.string()).optional(),
    personal_email_addresses: z.array(z.string()).optional(),
    work_email_addresses: z.array(z.string()).optional(),
    phone_numbers: z.array(z.string().openapi({ example: "+14155550123", description: "E.164" })).optional(),
    codehost_username: z.string().nullable(),
    socialnet_username: z.string().nullable(),
    microblog_username: z.string().nullable(),
    email_details: z.array(EmailDetail).optional().openapi({
      description: "Only with include=email_details: one object per address of email_addresses, in the same order",
    }),
    name: PersonName.nullable().optional().openapi({ description: "Only with include=profile: the name our sources reported last; null when none did" }),
    employment: z.array(Employment).optional().openapi({ description: "Only with include=profile: the work history, current first, then newest start first" }),
  })
  .openapi("ContactInfo");
export type ContactInfo = z.infer<typeof ContactInfo>;

/** Query string values arrive as strings; validation of their content happens in the handler. */
export const PeopleQuery = z.object({
  profnet_id: z.string().optional().openapi({ description: "Decimal positive integer up to 2^53-1", example: "12345" }),
  profnet_public_identifier: z.string().optional().openapi({ example: "ada-lovelace" }),
  codehost_id: z.string().optional().openapi({ description: "Decimal positive integer up to 2^53-1" }),
  codehost_login: z.string().optional().openapi({ example: "octocat" }),
  email: z.string().optional().openapi({ description: "Any address we hold for the person, compared by its one key (case; Gmail's dots and +tags; IDN domains)", example: "ada@example.com" }),
  phone: z.string().optional().openapi({ description: "E.164, or a national form with country", example: "+442071838750" }),
  country: z.string().optional().openapi({ description: "ISO 3166-1 alpha-2, for a phone in national form", example: "GB" }),
  full_name: z.string().optional().openapi({ description: "With company_domain or company: a name, compared as docs/api.md \"Looking up by name\" says", example: "Ada Lovelace" }),
  first_name: z.string().optional().openapi({ description: "With last_name, instead of full_name", example: "Ada" }),
  last_name: z.string().optional().openapi({ example: "Lovelace" }),
  company_domain: z.string().optional().openapi({ description: "The domain of a current or past employer of the person named", example: "analytical.example" }),
  company: z.string().optional().openapi({ description: "An employer's name, instead of company_domain: resolved only to the domains our data ties to that employer", example: "Analytical Engines" }),
  include: z.string().optional().openapi({ description: `Comma-separated additions to the answer, of: ${PEOPLE_INCLUDES.join(", ")} (no extra credit)`, example: "email_details" }),
  min_confidence: z.string().optional().openapi({
    description: "0-100: addresses with a lower confidence are left out; a person left with none is a 404, not charged",
    example: "80",
  }),
});

/** What a customer's mail to an address did (docs/api.md "POST /v1/email_feedback"). */
export const FEEDBACK_OUTCOMES = ["hard_bounce", "soft_bounce", "delivered", "replied", "complaint"] as const;
/** Reports per call, and the longest smtp_reply kept. */
export const FEEDBACK_LIMITS = { maxReports: 1_000, maxSmtpReply: 1_000 } as const;

export const EmailFeedbackReport = z
  .object({
    email_address: z.string().openapi({ example: "ana@example.com" }),
    outcome: z.enum(FEEDBACK_OUTCOMES).openapi({ description: "hard_bounce: a permanent failure (5xx) naming the mailbox; soft_bounce: a temporary one; delivered; replied; complaint: marked as spam" }),
    occurred_at: z.string().openapi({ description: "When it happened, RFC 3339; not in the future, not older than the feedback is kept", example: "2026-11-26T14:03:00Z" }),
    smtp_reply: z.string().optional().openapi({ description: "The receiving server's reply, when there was one (at most 1,000 characters; addresses in it are not kept)", example: "550 5.1.1 User unknown" }),
  })
  .openapi("EmailFeedbackReport");

export const EmailFeedbackBody = z
  .union([EmailFeedbackReport, z.object({ feedback: z.array(EmailFeedbackReport).min(1).max(FEEDBACK_LIMITS.maxReports) })])
  .openapi("EmailFeedbackBody", { description: "One report, or {\"feedback\": [...]} with 1 to 1,000" });

export const EmailFeedbackReceipt = z
  .object({ received: z.number().int().openapi({ description: "Reports stored", example: 1 }) })
  .openapi("EmailFeedbackReceipt");

/** The account's subscription to people events (docs/api.md "People events"). */
export const PeopleEventsSubscription = z
  .object({
    url: z.string().nullable().openapi({ description: "Where the events are POSTed, signed the Standard Webhooks way with the account's whsec_ secret; null: not subscribed", example: "https://crm.example.com/hooks/people" }),
    window_seconds: z.number().int().openapi({ description: "Events are about people this account looked up this recently (PEOPLE_EVENTS_WINDOW_SECONDS)", example: 7_776_000 }),
  })
  .openapi("PeopleEventsSubscription");
export type PeopleEventsSubscription = z.infer<typeof PeopleEventsSubscription>;
export const PeopleEventsSubscriptionBody = z.object({ url: z.string().openapi({ description: "An https URL on the default port, on a public host" }) }).openapi("PeopleEventsSubscriptionBody");

/** The person an event is about, by the identifiers the account's lookup returned. */
const PeopleEventPerson = z
  .object({ profnet_id: z.number().int().nullable(), profnet_public_identifier: z.string().nullable(), codehost_id: z.number().int().nullable(), codehost_login: z.string().nullable() })
  .openapi("PeopleEventPerson");
const eventEnvelope = { timestamp: z.string().openapi({ description: "When the event was made (RFC 3339)" }) };

/** A people event's body (docs/api.md "People events"), POSTed to the account's subscription URL. */
export const PeopleEvent = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("person.address_undeliverable"), ...eventEnvelope, data: z.object({ person: PeopleEventPerson, email_address: z.string() }) }),
    z.object({ type: z.literal("person.address_added"), ...eventEnvelope, data: z.object({ person: PeopleEventPerson, email_address: z.string() }) }),
    z.object({
      type: z.literal("person.erased"),
      ...eventEnvelope,
      data: z.object({ person: PeopleEventPerson, erased_at: z.string(), delete: z.array(z.string()).openapi({ description: "What to delete of them: every field you received" }) }),
    }),
  ])
  .openapi("PeopleEvent");
export type PeopleEvent = z.infer<typeof PeopleEvent>;

/** GET /v1/people/erasures: people the calling account received and that were erased since then. */
export const ErasuresQuery = z.object({
  since: z.string().optional().openapi({ description: "RFC 3339; erasures at or after it (default: all kept)", example: "2026-11-01T00:00:00Z" }),
  cursor: z.string().optional().openapi({ description: "next_cursor of the previous page" }),
  limit: z.string().optional().openapi({ description: "1..1000, default 100" }),
});

export const ErasuresPage = z
  .object({
    erasures: z.array(
      z
        .object({
          profnet_id: z.number().int().nullable(),
          profnet_public_identifier: z.string().nullable(),
          codehost_id: z.number().int().nullable(),
          codehost_login: z.string().nullable(),
          erased_at: z.string().openapi({ description: "RFC 3339, UTC" }),
        })
        .openapi({ description: "The identifiers as your lookup returned them (one entry per distinct set you received), and when the person was erased" }),
    ),
    next_cursor: z.string().nullable().openapi({ description: "Pass as cursor for the next page; null when this page is the last one for now" }),
  })
  .openapi("ErasuresPage");
export type ErasuresPage = z.infer<typeof ErasuresPage>;

export const ScoreDetails = z
  .object({
    syntax_valid: z.boolean(),
    mx_verified: z.boolean(),
    smtp_verified: z.boolean(),
    smtp_failed_assumption: z.boolean(),
    dns_failed_assumption: z.boolean(),
    has_warnings: z.boolean(),
    accepts_any_email: z.boolean(),
  })
  .partial()
  .openapi("ScoreDetails");
export type ScoreDetails = z.infer<typeof ScoreDetails>;

export const ValidationChecks = z
  .object({
    syntax: z.boolean(),
    mx_record: z.boolean(),
    smtp_deliverable: z.boolean().nullable(),
    disposable: z.boolean(),
    typo_suggestion: z.string().nullable(),
    accepts_any_email: z.boolean().nullable(),
    role_account: z.boolean(),
    free_provider: z.boolean(),
  })
  .partial()
  .openapi("ValidationChecks");
export type ValidationChecks = z.infer<typeof ValidationChecks>;

export const SmtpReplyDetails = z.object({
  code: z.number().int(),
  enhanced_code: z.string().nullable(),
  text: z.string(),
});

export const VerificationDetails = z
  .object({
    domain: z.string().nullable().openapi({ description: "Domain in A-label (ASCII) form" }),
    mx_hosts: z.array(z.object({ host: z.string(), preference: z.number().int() })),
    implicit_mx: z.boolean(),
    smtp_host: z.string().nullable(),
    smtp_reply: SmtpReplyDetails.nullable(),
    smtp_outcome: SmtpOutcome.nullable().openapi({
      description: "What the mail server said about the address (accepted … refused_target), or probe_* when no probe answered; null when no SMTP check was due",
    }),
    smtp_tls: z.boolean().nullable(),
    dns_ms: z.number().int().nullable(),
    smtp_ms: z.number().int().nullable(),
    dns_cached: z.boolean().nullable(),
    catch_all_cached: z.boolean().nullable(),
    mx_provider: z.string().nullable().openapi({
      description: "The mailbox provider or security gateway behind the MX hosts (google, microsoft, yahoo, apple, zoho, fastmail, proton, yandex, mailru, gmx, ionos, ovh, proofpoint, mimecast, barracuda, cisco, trendmicro, …), from a table of MX host suffixes; null when none matches",
      example: "google",
    }),
    receiver_family: z.string().nullable().optional().openapi({
      description:
        "The receiver family whose policy the probe follows for these MX hosts (google, microsoft-eop, outlook-consumer, yahoo, a gateway, self-hosted: docs/probe.md \"Receiver policy\"); null when no SMTP check was due",
      example: "google",
    }),
    smtp_retry_at: z.string().nullable().optional().openapi({
      description: "With smtp_outcome budget_spent: when the receiving server's budget for this account next has room (RFC 3339, UTC), when known",
    }),
  })
  .openapi("VerificationDetails");
export type VerificationDetails = z.infer<typeof VerificationDetails>;

/**
 * Why a result is what it is, in one word (docs/api.md "Reasons"): the vocabulary of job summaries and result filters,
 * beside what each proves (shared/email/reasons.ts). verificationReason (shared/email/verdict.ts) picks it.
 */
export { VERIFICATION_REASONS };
export const VerificationReason = z.enum(VERIFICATION_REASONS).openapi("VerificationReason", {
  description: "Why the result is what it is, in one word; the vocabulary of job summaries and result filters (docs/api.md, Reasons)",
});
export type VerificationReason = z.infer<typeof VerificationReason>;

export const CLASSIFICATIONS = ["valid", "risky", "invalid"] as const;

export const EmailVerificationResult = z
  .object({
    email: z.string(),
    valid: z.boolean(),
    classification: z.enum(CLASSIFICATIONS),
    score: z.number().int().min(0).max(100),
    score_details: ScoreDetails,
    errors: z.array(z.string()),
    warnings: z.array(z.string()),
    checks: ValidationChecks,
    details: VerificationDetails.optional(),
    // Always sent; optional in the schema, as `details` is, so the contract's required fields stay as given.
    reason: VerificationReason.optional(),
  })
  .openapi("EmailVerificationResult");
export type EmailVerificationResult = z.infer<typeof EmailVerificationResult>;

export const EmailVerificationQuery = z.object({
  email_address: z.string().optional().openapi({ example: "ana@example.com" }),
  smtp_timeout: z.string().optional().openapi({ description: "Integer seconds 1..60, default 10", example: "10" }),
});

const RateLimitInfo = z.object({
  limit: z.number().int().openapi({ description: "Requests allowed per period", example: 100 }),
  period_seconds: z.number().int().openapi({ example: 10 }),
  per: z.enum(["key", "client_address"]).openapi({ description: "What is counted: each API key, or each client IP address" }),
});

const UsagePeriod = z.object({
  since: z.string().openapi({ description: "Start of the period (UTC), ISO 8601", example: "2026-11-23T00:00:00.000Z" }),
  lookups_charged: z.number().int().openapi({ description: "GET /v1/people requests that were charged" }),
  credits_spent: z.number().int(),
});

export const AccountInfo = z
  .object({
    account_id: z.string().openapi({ example: "acc_Jx3bq0V9oWm2Lr8c" }),
    name: z.string(),
    status: z.enum(["active", "disabled"]),
    credit_balance: z.number().int(),
    rate_limits: z.object({
      verification: RateLimitInfo,
      lookup: RateLimitInfo,
      bulk_lookup: RateLimitInfo.openapi({ description: "POST /v1/people/bulk: calls (of up to 100 lookups each) per period" }),
      account: RateLimitInfo.openapi({ description: "Reading and managing the account: account, usage, audit events, keys, members, invites" }),
      job_creation: RateLimitInfo,
      job_reads: RateLimitInfo,
      feedback: RateLimitInfo,
      failed_authentication: RateLimitInfo,
    }),
    usage: z.object({ today: UsagePeriod, this_month: UsagePeriod }),
    jobs: z
      .object({
        max_running: z.number().int().openapi({ description: "Jobs that may be queued or running at once (JOB_MAX_RUNNING)" }),
        running: z.number().int().openapi({
          description: "Jobs queued or running now, but for those whose remaining lines all wait on receiving servers' budgets (docs/jobs.md \"Waiting on a receiver\"): those hold no slot",
        }),
        max_lines_per_24h: z.number().int().openapi({ description: "Lines that may be submitted in jobs per rolling 24 hours (JOB_MAX_LINES_PER_DAY)" }),
        lines_last_24h: z.number().int().openapi({ description: "Lines submitted in the last 24 hours, cancelled and all-invalid jobs included" }),
      })
      .openapi({ description: "Bulk verification jobs: the account's limits and where it stands" }),
  })
  .openapi("Account");
export type AccountInfo = z.infer<typeof AccountInfo>;

/** The email finder's query (docs/api.md "GET /v1/email_finder"): a name and a domain or a company. */
export const FINDER_LIMITS = { maxNamePart: 100, maxFullName: 200, maxCompany: 200, maxDuration: 20, defaultDuration: 10, maxBatch: 100 } as const;

export const EmailFinderQuery = z.object({
  full_name: z.string().optional().openapi({ description: "The person's name as written (at most 200 characters)", example: "José Núñez" }),
  first_name: z.string().optional().openapi({ description: "With last_name, instead of full_name (each at most 100 characters)", example: "Ludwig" }),
  last_name: z.string().optional().openapi({ example: "van Beethoven" }),
  domain: z.string().optional().openapi({ description: "The company's domain (a URL or www. name is reduced to it)", example: "acme.com" }),
  company: z.string().optional().openapi({ description: "The employer's name, instead of domain: resolved to the domain our data ties to it most", example: "Acme Inc" }),
  max_duration: z.string().optional().openapi({ description: "Seconds, 1-20 (default 10): past it the answer is a 202 and the same call later gets the result", example: "10" }),
  min_confidence: z.string().optional().openapi({ description: "0-100: an address we hold below it is not a confirmed answer", example: "80" }),
});

export const FINDER_METHODS = ["known_address", "receiver_accepted", "pattern"] as const;

export const EmailFinderResult = z
  .object({
    email: z.string().openapi({ example: "jose.nunez@acme.com" }),
    domain: z.string().openapi({ example: "acme.com" }),
    first_name: z.string().nullable().openapi({ description: "The given name as read from the query", example: "José" }),
    last_name: z.string().nullable().openapi({ example: "Núñez" }),
    confidence: z.number().int().min(0).max(100).openapi({ description: "How far to trust the address, 0-100 (docs/api.md \"How the finder grades\")", example: 92 }),
    confidence_label: z.enum(CONFIDENCE_LABELS).openapi({ example: "high" }),
    method: z.enum(FINDER_METHODS).openapi({
      description: "known_address: an address we hold for this person at the domain; receiver_accepted: made from the domain's pattern and accepted by its mail server, which refuses unknown addresses; pattern: made from the pattern, not confirmed by the receiver (it accepts any address, forbids checking, or had no time for us)",
    }),
    confirmed: z.boolean().openapi({ description: "Whether the answer is charged-grade: a known address at or above min_confidence, or one a receiver that refuses unknown addresses accepted" }),
    accept_all: z.boolean().nullable().openapi({ description: "The domain's receiver accepts every address (catch-all); null: not known" }),
    evidence: z
      .object({
        pattern: z.string().nullable().openapi({ example: "{first}.{last}" }),
        share: z.number().min(0).max(1).nullable().openapi({ description: "The pattern's share of the known addresses at the domain that follow a pattern", example: 0.82 }),
        count: z.number().int().min(0).openapi({ description: "Known addresses at the domain that follow the pattern", example: 41 }),
        known_at_domain: z.number().int().min(0).openapi({ description: "Known name and address pairs at the domain read", example: 50 }),
        feedback: z.enum(["none", "delivered", "bounced"]).openapi({ description: "What customers' delivery reports say of this address (docs/api.md \"Confidence\": the caller's own, or independent accounts')" }),
      })
      .openapi({ description: "Why this address: the pattern behind it (null for a known address)" }),
    verification: z.object({
      status: z.enum(["valid", "risky", "invalid"]).nullable().openapi({ description: "Our verdict on the address; null: not checked" }),
      reason: z.string().nullable().openapi({ example: "deliverable" }),
      smtp_outcome: z.string().nullable(),
      date: z.string().nullable().openapi({ description: "When (RFC 3339, UTC)" }),
    }),
    sources: z
      .object({ count: z.number().int().min(0), first_seen_at: z.string(), last_seen_at: z.string() })
      .nullable()
      .openapi({ description: "For a known address: how many sources reported it and when; never which" }),
    mx_provider: z.string().nullable().openapi({ example: "google" }),
    receiver_family: z.string().nullable().openapi({ example: "google" }),
    repeat: z.boolean().openapi({ description: "The same account was charged for this find in the past 30 days: this one is free" }),
  })
  .openapi("EmailFinderResult");
export type EmailFinderResult = z.infer<typeof EmailFinderResult>;

export const FinderPending = z
  .object({
    status: z.literal("pending"),
    retry_after_seconds: z.number().int().min(1).openapi({ description: "Make the same call again after this long: the answer waits for it, at no new check" }),
  })
  .openapi("FinderPending");

export const DomainSearchQuery = z.object({
  include: z.string().optional().openapi({ description: "people: also list the people we hold at the domain (LOOKUP_COST credits per person listed)", example: "people" }),
  limit: z.string().optional().openapi({ description: "With include=people: how many, 1-100 (default 10)", example: "10" }),
});

export const DomainSearchResult = z
  .object({
    domain: z.string().openapi({ example: "acme.com" }),
    disposable: z.boolean(),
    webmail: z.boolean(),
    accept_all: z.boolean().nullable().openapi({ description: "Its receiver accepts every address; null: never tested" }),
    accept_all_checked_at: z.string().nullable().openapi({ description: "When we last tested it (RFC 3339, UTC)" }),
    mx_provider: z.string().nullable().openapi({ example: "google" }),
    receiver_family: z.string().nullable(),
    mx_hosts: z.array(z.object({ host: z.string(), preference: z.number().int() })),
    patterns: z.array(z.object({ pattern: z.string(), share: z.number(), count: z.number().int() })).openapi({ description: "The address patterns of the known addresses at the domain, highest share first" }),
    known_addresses: z.object({
      total: z.number().int(),
      personal: z.number().int().openapi({ description: "Addresses of named people (not role accounts)" }),
      generic: z.number().int().openapi({ description: "Role accounts (info@, sales@)" }),
    }),
    people: z
      .array(
        z.object({
          full_name: z.string().nullable(),
          first_name: z.string().nullable(),
          last_name: z.string().nullable(),
          title: z.string().nullable(),
          email: z.string(),
          confidence: z.number().int(),
        }),
      )
      .optional()
      .openapi({ description: "With include=people: each listed person is charged and recorded as a lookup is" }),
  })
  .openapi("DomainSearchResult");
export type DomainSearchResult = z.infer<typeof DomainSearchResult>;

export const EmailFinderBatchItem = z.object({
  full_name: z.string().optional(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  domain: z.string().optional(),
  company: z.string().optional(),
});
export const EmailFinderBatchRequest = z
  .object({
    items: z.array(EmailFinderBatchItem).openapi({ description: "1 to 100 finds, each as GET /v1/email_finder takes them" }),
    min_confidence: z.number().int().min(0).max(100).optional(),
  })
  .openapi("EmailFinderBatchRequest");
export const EmailFinderBatchResult = z
  .object({
    results: z.array(
      z.object({
        position: z.number().int(),
        status: z.enum(["found", "not_found", "pending", "error"]),
        result: EmailFinderResult.optional(),
        error: z.string().optional(),
        reason: z.enum(ERROR_REASONS).optional(),
        charged: z.number().int().optional(),
      }),
    ),
    credits_charged: z.number().int(),
  })
  .openapi("EmailFinderBatchResult");
