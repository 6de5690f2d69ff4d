/**
 * The batch lookup's shapes (POST /v1/people/bulk, docs/api.md "POST /v1/people/bulk"): the request, its items and the
 * answer. The handler reads the body by hand (edge/routes/people-bulk.ts), so that each problem has the message the
 * docs give and one bad item never fails the others; these schemas state the same shapes to the OpenAPI document and
 * the tests.
 */
import { z } from "@hono/zod-openapi";
import { ContactInfo, ERROR_REASONS, PEOPLE_INCLUDES } from "./api.ts";

export const BULK_LOOKUP_LIMITS = {
  /** Items per call, as People Data Labs and Lusha take. */
  maxItems: 100,
  /** The body: 100 items of four 256-character identifiers and a reference come to under 200 KiB. */
  maxBodyBytes: 1024 * 1024,
  maxReferenceLength: 256,
} as const;

export const BULK_LOOKUP_MESSAGES = {
  bodyTooLarge: `Request body too large: a batch is at most ${BULK_LOOKUP_LIMITS.maxBodyBytes / 1024 / 1024} MiB`,
  notAnObject: 'The body must be a JSON object: {"requests": [{"params": {...}, "reference": "..."}, ...]}',
  requestsRequired: `requests must be an array of 1 to ${BULK_LOOKUP_LIMITS.maxItems} items`,
  tooMany: (n: number) => `Too many requests: a batch holds at most ${BULK_LOOKUP_LIMITS.maxItems} (${n.toLocaleString("en")} given)`,
  includeNotAList: `include must be an array of names, of: ${PEOPLE_INCLUDES.join(", ")}`,
  itemNotAnObject: 'Each request must be an object: {"params": {...}, "reference": "..."}',
  paramsNotAnObject: "params must be an object of identifiers",
  badReference: `reference must be a string of at most ${BULK_LOOKUP_LIMITS.maxReferenceLength} characters`,
  idempotencyConflict: "This Idempotency-Key was already used for a different request",
  idempotencyOtherCaller: "This Idempotency-Key was used by another key or member of this account: its answer is replayed only to whoever made that call",
  stillAnswering: "A request with this Idempotency-Key is still being answered; retry in a few seconds",
  erased: "This person was erased after this answer was first given; it is no longer disclosed (see GET /v1/people/erasures)",
} as const;

/** The identifiers of one item, as GET /v1/people takes them in its query (ids may also be JSON numbers here). */
export const PeopleBulkParams = z
  .object({
    profnet_id: z.union([z.string(), z.number().int()]).optional().openapi({ description: "Decimal positive integer up to 2^53-1 (a string or a number)", example: "12345" }),
    profnet_public_identifier: z.string().optional().openapi({ example: "ada-lovelace" }),
    codehost_id: z.union([z.string(), z.number().int()]).optional().openapi({ description: "Decimal positive integer up to 2^53-1 (a string or a number)" }),
    codehost_login: z.string().optional().openapi({ example: "octocat" }),
    email: z.string().optional(),
    phone: z.string().optional(),
    country: z.string().optional(),
    full_name: z.string().optional(),
    first_name: z.string().optional(),
    last_name: z.string().optional(),
    company_domain: z.string().optional(),
    company: z.string().optional(),
  })
  .openapi("PeopleBulkParams", { description: "As GET /v1/people's query parameters" });

export const PeopleBulkRequest = z
  .object({
    requests: z
      .array(
        z.object({
          params: PeopleBulkParams,
          reference: z.string().max(BULK_LOOKUP_LIMITS.maxReferenceLength).nullable().optional().openapi({ description: "Yours, echoed in the item's answer", example: "crm-contact-8812" }),
        }),
      )
      .min(1)
      .max(BULK_LOOKUP_LIMITS.maxItems)
      .openapi({ description: `1 to ${BULK_LOOKUP_LIMITS.maxItems} lookups, each validated as GET /v1/people validates its query` }),
    include: z.array(z.enum(PEOPLE_INCLUDES)).optional().openapi({ description: "Additions to every item's data, as GET /v1/people's include (no extra credit)", example: ["email_details"] }),
    min_confidence: z.union([z.number().int().min(0).max(100), z.string()]).nullable().optional().openapi({
      description: "As GET /v1/people's, for every item: addresses below this confidence (0-100) are left out, and an item whose person is left with none is a 404, not charged",
      example: 50,
    }),
  })
  .openapi("PeopleBulkRequest");
export type PeopleBulkRequest = z.infer<typeof PeopleBulkRequest>;

export const PeopleBulkResult = z
  .object({
    status: z.union([z.literal(200), z.literal(400), z.literal(402), z.literal(404), z.literal(409), z.literal(410)]).openapi({
      description: "What GET /v1/people would have answered for this item: 200 data; 400, 402, 404 or 409 error. 410: a replay (Idempotency-Key) of an answer whose person was erased since",
      example: 200,
    }),
    reference: z.string().nullable().openapi({ description: "The item's reference, echoed (null when it gave none)" }),
    data: ContactInfo.optional().openapi({ description: "With 200" }),
    error: z.string().optional().openapi({ description: "With any other status: the message GET /v1/people gives", example: "No profile found for the given parameters" }),
    reason: z.enum(ERROR_REASONS).optional().openapi({ description: "daily_credit_cap with a 402 the key's cap refused" }),
  })
  .openapi("PeopleBulkResult");
export type PeopleBulkResult = z.infer<typeof PeopleBulkResult>;

export const PeopleBulkResponse = z.object({ results: z.array(PeopleBulkResult).openapi({ description: "One per request, in request order" }) }).openapi("PeopleBulkResponse");
export type PeopleBulkResponse = z.infer<typeof PeopleBulkResponse>;
