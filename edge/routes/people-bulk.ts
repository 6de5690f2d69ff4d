/**
 * POST /v1/people/bulk (docs/api.md "POST /v1/people/bulk"): up to 100 lookups in one call, each answered as GET
 * /v1/people would answer it, in request order, in two database round trips (edge/people/bulk-store.ts).
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ERROR_MESSAGES, PEOPLE_INCLUDES } from "../../shared/api.ts";
import { BULK_LOOKUP_LIMITS, BULK_LOOKUP_MESSAGES, PeopleBulkRequest, PeopleBulkResponse, type PeopleBulkResult } from "../../shared/bulk-lookups.ts";
import { checkIdentifiers, type IdentifierCheck } from "../../shared/identifiers.ts";
import { limitRequestBody } from "../body-limit.ts";
import { balanceQuery } from "../money/credits.ts";
import { requestDatabase } from "../db/client.ts";
import { rowsAffected } from "../db/rows.ts";
import type { AppEnv } from "../env.ts";
import { takeDueActivity } from "../identity/key-activity.ts";
import { ApiError } from "../lib/errors.ts";
import { readIdempotencyKey, sha256Hex } from "../lib/idempotency.ts";
import { answerStatements, claimKeyStatements, matchItemsQuery, type BatchAnswer, type StoredItem } from "../people/bulk-store.ts";
import type { MatchStatus } from "../people/store.ts";
import { contactInfoFromSnapshot, parseMinConfidence, type PeopleInclude } from "../people/lookup.ts";
import { access } from "./access.ts";
import { authenticatedErrorResponses, creditHeaders, errorResponse } from "./responses.ts";

export const peopleBulkRoute = createRoute({
  method: "post",
  path: "/v1/people/bulk",
  operationId: "lookupPeople",
  tags: ["People"],
  summary: "Look up to 100 people in one call",
  description:
    `A JSON body {"requests": [{"params": {the identifiers, as GET /v1/people takes them}, "reference": "yours, echoed"}, ...], "include": [...]}: 1 to ${BULK_LOOKUP_LIMITS.maxItems} items, each validated and answered as GET /v1/people would (status 200 with data, or 400, 402 or 404 with error), in request order; one bad item never fails the others. ` +
    "Each found person costs LOOKUP_COST, charged in one guarded statement: when the balance (or the key's daily cap) covers k of them, the first k in request order are served; once nothing more can be paid for, every later item answers 402 whether or not it matches anyone (so nothing is told free of who is held), except a person the call already paid for; the same person asked twice is charged once. " +
    "Counts once per call against the key's bulk_lookup limit (10 calls per 10 s, so 1,000 lookups), apart from GET /v1/people's lookup limit; a refused call is not counted. An Idempotency-Key makes a retry within 24 hours with the same body return the first answer and charge nothing; the same key with another body is 409.",
  ...access({ who: { scope: "people:read" }, limits: ["bulk_lookup"], body: limitRequestBody(BULK_LOOKUP_LIMITS.maxBodyBytes, BULK_LOOKUP_MESSAGES.bodyTooLarge) }),
  request: {
    headers: z.object({ "idempotency-key": z.string().optional().openapi({ description: "1 to 255 printable ASCII characters; remembered 24 hours" }) }),
    body: {
      required: true,
      // By reference: the body is read by hand, so each problem has its own message and a bad item fails alone.
      content: { "application/json": { schema: { $ref: "#/components/schemas/PeopleBulkRequest" } } },
    },
  },
  responses: {
    200: {
      description: "One result per request, in request order",
      content: { "application/json": { schema: PeopleBulkResponse } },
      headers: { ...creditHeaders, "Idempotent-Replayed": { schema: { type: "string" as const }, description: "true when this is the first answer to an earlier call with the same Idempotency-Key" } },
    },
    400: errorResponse("The envelope is malformed (not JSON, not an object, requests not an array of 1 to 100 items, an unknown include), or a bad Idempotency-Key; an item's own problems are that item's 400", creditHeaders),
    409: errorResponse(`${BULK_LOOKUP_MESSAGES.idempotencyConflict}; ${BULK_LOOKUP_MESSAGES.idempotencyOtherCaller}; or ${BULK_LOOKUP_MESSAGES.stillAnswering} (with Retry-After)`),
    413: errorResponse(BULK_LOOKUP_MESSAGES.bodyTooLarge),
    ...authenticatedErrorResponses,
  },
});

type Item = { reference: string | null; check: IdentifierCheck };
type Envelope = { items: Item[]; include: Set<PeopleInclude>; minConfidence: number | null };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The body: the envelope's problems are a 400 for the whole call; an item's, that item's own 400. */
export function parseBulkBody(bytes: Uint8Array): Envelope {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ApiError(400, ERROR_MESSAGES.malformedJson);
  }
  if (!isObject(body)) throw new ApiError(400, BULK_LOOKUP_MESSAGES.notAnObject);
  const requests = body.requests;
  if (!Array.isArray(requests) || requests.length === 0) throw new ApiError(400, BULK_LOOKUP_MESSAGES.requestsRequired);
  if (requests.length > BULK_LOOKUP_LIMITS.maxItems) throw new ApiError(400, BULK_LOOKUP_MESSAGES.tooMany(requests.length));
  const include = new Set<PeopleInclude>();
  if (body.include !== undefined && body.include !== null) {
    if (!Array.isArray(body.include)) throw new ApiError(400, BULK_LOOKUP_MESSAGES.includeNotAList);
    for (const name of body.include) {
      if (typeof name !== "string" || !(PEOPLE_INCLUDES as readonly string[]).includes(name)) {
        throw new ApiError(400, `Unknown include "${String(name).slice(0, 40)}": expected ${PEOPLE_INCLUDES.join(", ")}`);
      }
      include.add(name as PeopleInclude);
    }
  }
  const minConfidence = parseMinConfidenceValue(body.min_confidence);
  const items = requests.map((request): Item => {
    if (!isObject(request)) return { reference: null, check: { ok: false, error: BULK_LOOKUP_MESSAGES.itemNotAnObject } };
    const raw = request.reference;
    const referenceOk = raw === undefined || raw === null || (typeof raw === "string" && raw.length <= BULK_LOOKUP_LIMITS.maxReferenceLength);
    const reference = typeof raw === "string" && referenceOk ? raw : null;
    if (!referenceOk) return { reference, check: { ok: false, error: BULK_LOOKUP_MESSAGES.badReference } };
    // No params is an empty query: GET /v1/people's "one of ... is required".
    if (request.params !== undefined && !isObject(request.params)) return { reference, check: { ok: false, error: BULK_LOOKUP_MESSAGES.paramsNotAnObject } };
    return { reference, check: checkIdentifiers((request.params as Record<string, unknown> | undefined) ?? {}) };
  });
  return { items, include, minConfidence };
}

/** `min_confidence` for every item: an integer 0..100 (a JSON number or a decimal string, as the query's), or absent. */
function parseMinConfidenceValue(raw: unknown): number | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === "number") {
    if (!Number.isInteger(raw) || raw < 0 || raw > 100) throw new ApiError(400, ERROR_MESSAGES.minConfidenceRange);
    return raw;
  }
  if (typeof raw === "string") return parseMinConfidence(raw);
  throw new ApiError(400, ERROR_MESSAGES.minConfidenceRange);
}

const creditHeaderValues = (charged: number, remaining: number) => ({ "X-Credits-Charged": String(charged), "X-Credits-Remaining": String(remaining) });

/** A kept first answer, item by item, for a replay. */
function replayed(items: readonly Item[], stored: readonly StoredItem[], include: ReadonlySet<PeopleInclude>): PeopleBulkResult[] {
  return stored.map((s, i) => {
    const reference = items[i]?.reference ?? null;
    const status = Number(s.status) as PeopleBulkResult["status"];
    if (status === 200 && s.person) return { status, reference, data: contactInfoFromSnapshot(s.person, include) };
    const kept = ["daily_credit_cap", "ambiguous_match", "conflicting_inputs"] as const;
    const reason = kept.find((r) => r === s.reason);
    return { status, reference, error: s.error ?? "", ...(reason ? { reason } : {}) };
  });
}

/** The answer to an item whose inputs fit several people or name different ones (GET /v1/people's 404 and 409). */
function unmatchedAnswer(status: "ambiguous" | "conflict"): { status: 404 | 409; error: string; reason: "ambiguous_match" | "conflicting_inputs" } {
  return status === "ambiguous"
    ? { status: 404, error: ERROR_MESSAGES.ambiguousMatch, reason: "ambiguous_match" }
    : { status: 409, error: ERROR_MESSAGES.conflictingInputs, reason: "conflicting_inputs" };
}

async function lookupPeople(c: Context<AppEnv>) {
  const config = c.get("config");
  const auth = c.get("auth");
  const db = requestDatabase(c);
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  let envelope: Envelope;
  let key: string | null;
  try {
    envelope = parseBulkBody(bytes);
    key = readIdempotencyKey(c.req.header("idempotency-key"));
  } catch (error) {
    // Still tell the caller where their balance stands; a bad request costs nothing.
    if (error instanceof ApiError) {
      const [row] = await balanceQuery(db, auth.accountId);
      Object.assign(error.headers, creditHeaderValues(0, Number(row?.credit_balance ?? 0)));
    }
    throw error;
  }
  const { items, include, minConfidence } = envelope;
  // The route's middleware counted the call once against bulk_lookup, before the body was read (docs/api.md "Rate limits").
  c.get("accessLog").lookups = items.length;

  const now = Date.now();
  const requestId = c.get("requestId");
  const token = crypto.randomUUID();
  const requestHash = await sha256Hex(bytes);
  const toMatch = items.flatMap((item, position) => (item.check.ok ? [{ position, ids: item.check.ids }] : []));

  // Round trip 1: the people matched, and with a key its claim (or its first answer).
  let batchId = requestId;
  const filter = { now, minConfidence };
  const match = matchItemsQuery(db, toMatch, filter);
  let matched: { position: number; person_id: number | null; status: MatchStatus; matched_by: string | null }[];
  if (key !== null) {
    const claim = claimKeyStatements(db, { batchId, accountId: auth.accountId, actor: auth.actor, key, requestHash, token, now });
    const [, , , rows, stored, balance, matches] = await db.batch([...claim, balanceQuery(db, auth.accountId), match]);
    const row = rows[0];
    if (!row) throw new Error("the Idempotency-Key's row was not read back");
    if (row.claim_token !== token) {
      // A replay discloses the people of the first answer: only to whoever made that call (and was charged and recorded for it).
      if (row.actor !== auth.actor) throw new ApiError(409, BULK_LOOKUP_MESSAGES.idempotencyOtherCaller);
      if (row.request_hash !== requestHash) throw new ApiError(409, BULK_LOOKUP_MESSAGES.idempotencyConflict);
      if (row.state !== "done") throw new ApiError(409, BULK_LOOKUP_MESSAGES.stillAnswering, { "Retry-After": "1" });
      const remaining = Number(balance[0]?.credit_balance ?? 0);
      return c.json({ results: replayed(items, stored, include) }, 200, { ...creditHeaderValues(0, remaining), "Idempotent-Replayed": "true" });
    }
    batchId = row.id;
    matched = matches;
  } else {
    matched = await match;
  }

  // Round trip 2: one transaction charges, records, counts, keeps and reads.
  const personAt = new Map(matched.map((m) => [Number(m.position), m.person_id === null ? null : Number(m.person_id)]));
  const matchOf = new Map(matched.map((m) => [Number(m.position), m]));
  // An item whose inputs fit several people (404 ambiguous_match) or name different ones (409): free, as a miss.
  const unmatched = new Map(
    matched.flatMap((m) => (m.person_id === null && (m.status === "ambiguous" || m.status === "conflict") ? [[Number(m.position), unmatchedAnswer(m.status)] as const] : [])),
  );
  const answer: BatchAnswer = {
    batchId,
    token,
    scratch: key === null ? { accountId: auth.accountId, actor: auth.actor, requestHash } : null,
    keep: key !== null,
    charge: { accountId: auth.accountId, keyId: auth.actor, cost: config.LOOKUP_COST, requestId, now, creditCaps: auth.creditCaps },
    found: toMatch.flatMap(({ position }) =>
      personAt.get(position) != null ? [[position, personAt.get(position)!, matchOf.get(position)?.matched_by ?? null] as [number, number, string | null]] : [],
    ),
    unmatched: [...unmatched].map(([position, a]) => [position, a.status, a.error, a.reason ?? null] as [number, number, string, string | null]),
    notFound: toMatch.flatMap(({ position }) => (personAt.get(position) == null ? [position] : [])),
    invalid: items.flatMap((item, position) => (item.check.ok ? [] : [[position, item.check.error] as [number, string]])),
    filter,
  };
  const { statements, reads, finish } = answerStatements(db, answer);
  const activity = takeDueActivity(now);
  let results: unknown[];
  try {
    const all = [...statements, ...reads, finish, balanceQuery(db, auth.accountId), ...activity.statements.map((s) => db.run(s))];
    results = await db.batch(all as [(typeof all)[number], ...(typeof all)[number][]]);
  } catch (error) {
    activity.restore();
    throw error;
  }
  const charged = results[key === null ? 1 : 0] as { request_id: string; balance_after: number }[];
  const people = results[statements.length] as { person_id: number; person: string }[];
  const row = (results[statements.length + 1] as { refusal: string | null; cut: number | null }[])[0];
  const balance = Number((results[statements.length + 3] as { credit_balance: number }[])[0]?.credit_balance ?? 0);
  // The claim was taken over (a call older than STALE_CLAIM_MS): nothing of this one was written.
  if (rowsAffected(results[statements.length + 2]) !== 1 || !row) throw new ApiError(409, BULK_LOOKUP_MESSAGES.stillAnswering, { "Retry-After": "1" });

  const served = new Map(people.map((p) => [Number(p.person_id), p.person]));
  const refusal: Partial<PeopleBulkResult> =
    row.refusal === "daily_credit_cap" ? { error: ERROR_MESSAGES.dailyCreditCap, reason: "daily_credit_cap" } : { error: ERROR_MESSAGES.insufficientCredits };
  // Past the cut (the call could pay for no more), an item that is not a 400 is a 402 whether or not it matched: nothing
  // is told free of who is held. A person the call already paid for is served again, free.
  const cut = row.cut === null ? null : Number(row.cut);
  const out = items.map((item, position): PeopleBulkResult => {
    const { reference } = item;
    if (!item.check.ok) return { status: 400, reference, error: item.check.error };
    const person = personAt.get(position);
    const snapshot = person == null ? undefined : served.get(person);
    if (snapshot !== undefined) return { status: 200, reference, data: contactInfoFromSnapshot(snapshot, include) };
    if (cut !== null && position > cut) return { status: 402, reference, ...(refusal as { error: string }) };
    const no = unmatched.get(position);
    if (no !== undefined) return { reference, ...no };
    // Matched nobody; or matched, then erased between the two round trips, and so found by nobody.
    return { status: 404, reference, error: ERROR_MESSAGES.profileNotFound };
  });
  return c.json({ results: out }, 200, creditHeaderValues(charged.length * config.LOOKUP_COST, balance));
}

export function registerPeopleBulkRoute(app: OpenAPIHono<AppEnv>): void {
  // The body is given by reference (peopleBulkRoute): its schema is registered here by name.
  app.openAPIRegistry.register("PeopleBulkRequest", PeopleBulkRequest);
  app.openapi(peopleBulkRoute, lookupPeople);
}
