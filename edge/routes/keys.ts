/**
 * GET/POST /v1/keys, POST /v1/keys/{id}/roll, DELETE /v1/keys/{id} (docs/api.md "Keys and scopes").
 * A key never makes a key stronger than itself (edge/identity/authority.ts): a new key's scopes are among the
 * caller's, its daily credit cap no higher and its expiry no later than the caller's own, and a capped caller's
 * child spends the caller's cap too; a roll hands over a new secret for a key and a revocation takes one away, so
 * both are allowed only on keys the caller dominates the same way (a key may always revoke itself). Each write
 * re-checks in its own statement that the caller still holds its authority.
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ApiKeyCreateRequest, ApiKeyList, ApiKeyRollRequest, ApiKeyWithToken, ApiKey, KeyIdParam, MAX_KEY_LIFETIME_MS, MAX_KEYS_IN_OVERLAP, MAX_LIVE_KEYS, ROLL_OVERLAP } from "../../shared/keys.ts";
import { decodeScopes, scopeReach } from "../../shared/scopes.ts";
import { forgetKey } from "../identity/authenticate.ts";
import { requestDatabase } from "../db/client.ts";
import { createKey, getKey, keyJson, listKeys, revokeKey, rollKey, type KeyRow } from "../identity/store/keys.ts";
import type { AppEnv } from "../env.ts";
import { dominatesKey, strongerThanCaller, type KeyPower } from "../identity/authority.ts";
import { authorityHeld } from "../identity/store/authority.ts";
import { ApiError } from "../lib/errors.ts";
import { stopJobsOfGoneMakers } from "../jobs/makers.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { missingScope } from "../identity/scopes.ts";
import { access, SMALL_BODY_MAX_BYTES } from "./access.ts";

export const KEY_MESSAGES = {
  notFound: "No such key",
  tooMany: `An account holds at most ${MAX_LIVE_KEYS} live keys: revoke one first`,
  tooManyInOverlap: `An account holds at most ${MAX_KEYS_IN_OVERLAP} keys counting rolled keys still in their overlap: revoke one first`,
  expiresInPast: "Invalid parameter expires_at: must be in the future",
  expiresTooFar: "Invalid parameter expires_at: must be within ten years",
  capAboveCaller: "Invalid parameter daily_credit_cap: a key with a daily credit cap can only create keys with a cap no higher than its own",
  expiresAfterCaller: "Invalid parameter expires_at: a key that expires can only create keys that expire no later than it does",
  rollRevoked: "The key is revoked",
  rollExpired: "The key has expired",
  rollRolled: "The key was already rolled: roll its replacement",
  rollStronger: "A key can only roll keys whose scopes, daily credit cap and expiry it holds itself",
  authorityLost: "The calling key was revoked or the member's role changed meanwhile",
} as const;

const json = <T,>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });

const listRoute = createRoute({
  method: "get",
  path: "/v1/keys",
  operationId: "listKeys",
  tags: ["Keys"],
  summary: "The account's API keys (never their secrets)",
  description: "Live keys first, then revoked and expired ones, newest first (at most 200). Counts against the lookup rate limit.",
  ...access({ who: { scope: "account:read" }, limits: ["account"] }),
  responses: { 200: json(ApiKeyList, "The keys"), ...authenticatedErrorResponses },
});

const createKeyRoute = createRoute({
  method: "post",
  path: "/v1/keys",
  operationId: "createKey",
  tags: ["Keys"],
  summary: "Create an API key: its secret is in token, shown this once",
  description:
    `An account holds at most ${MAX_LIVE_KEYS} live keys. The new key's scopes must be among the calling key's, and its daily_credit_cap and expires_at ` +
    "no more generous than the calling key's own.",
  ...access({ who: { scope: "keys:write" }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { body: { required: true, content: { "application/json": { schema: ApiKeyCreateRequest } } } },
  responses: {
    201: json(ApiKeyWithToken, "The key, with its secret"),
    400: errorResponse("A field is missing or malformed (named), or the body is not JSON"),
    409: errorResponse(KEY_MESSAGES.tooMany),
    ...authenticatedErrorResponses,
    403: errorResponse("The calling key lacks keys:write, or a scope it asks to grant (reason missing_scope, scope named)"),
  },
});

const rollRoute = createRoute({
  method: "post",
  path: "/v1/keys/{id}/roll",
  operationId: "rollKey",
  tags: ["Keys"],
  summary: "Roll a key: a new secret now, the old one working for an overlap",
  description:
    `The new key has the old one's name, scopes, expiry and daily credit cap. The old key keeps working for overlap_seconds (default ${ROLL_OVERLAP.defaultSeconds}, ` +
    `at most ${ROLL_OVERLAP.maxSeconds}), then gets 401 key_expired; its replaced_by names the new key. A rolled key cannot be rolled again.`,
  ...access({ who: { scope: "keys:write" }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  // The body is optional and read by hand (optionalJson): none, or an empty one, means the defaults, whatever its
  // content type says. A reference rather than the schema, so the framework adds no validator that refuses an empty body.
  request: { params: KeyIdParam, body: { required: false, content: { "application/json": { schema: { $ref: "#/components/schemas/ApiKeyRollRequest" } } } } },
  responses: {
    201: json(ApiKeyWithToken, "The new key, with its secret"),
    400: errorResponse("overlap_seconds malformed or out of range, or the body is not JSON"),
    404: errorResponse(KEY_MESSAGES.notFound),
    409: errorResponse(`${KEY_MESSAGES.rollRevoked}; ${KEY_MESSAGES.rollExpired}; ${KEY_MESSAGES.rollRolled}; or too many keys`),
    ...authenticatedErrorResponses,
    403: errorResponse(`The calling key lacks keys:write (reason missing_scope); or ${KEY_MESSAGES.rollStronger} (reason "stronger_than_caller")`),
  },
});

const revokeRoute = createRoute({
  method: "delete",
  path: "/v1/keys/{id}",
  operationId: "revokeKey",
  tags: ["Keys"],
  summary: "Revoke a key",
  description:
    "From now on the key gets 401 with reason key_revoked: at once on this Worker instance, within 60 seconds on every other (each caches a key for at most that long). " +
    "Its unfinished jobs (lookup and verification jobs it made) are cancelled in the same transaction, cancel_reason key_revoked: nothing more is charged to it. " +
    "Idempotent: a revoked key is answered as it is. A key may revoke itself.",
  ...access({ who: { scope: "keys:write" }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { params: KeyIdParam },
  responses: {
    200: json(ApiKey, "The key, revoked"),
    404: errorResponse(KEY_MESSAGES.notFound),
    ...authenticatedErrorResponses,
    403: errorResponse('The calling key lacks keys:write (reason missing_scope); or the key is stronger than the caller (reason "stronger_than_caller"): only keys the caller dominates, or the caller itself'),
  },
});

/** A stored key's power, as the authority rule compares it. */
export function keyPower(row: KeyRow): KeyPower {
  return {
    scopes: decodeScopes(row.scopes),
    dailyCreditCap: row.daily_credit_cap === null ? null : Number(row.daily_credit_cap),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
  };
}

function withToken(row: KeyRow, token: string, now: number): ApiKeyWithToken {
  return { ...keyJson(row, now), token };
}

export function registerKeyRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.register("ApiKeyRollRequest", ApiKeyRollRequest);
  app.openapi(listRoute, async (c) => {
    const now = Date.now();
    const rows = await listKeys(requestDatabase(c), c.get("auth").accountId, now);
    return c.json({ keys: rows.map((r) => keyJson(r, now)) }, 200);
  });

  app.openapi(createKeyRoute, async (c) => {
    const caller = c.get("auth");
    const body = c.req.valid("json");
    const now = Date.now();
    // A scope and what it reaches (events:write reaches people:read: shared/scopes.ts SCOPE_REACH).
    const missing = scopeReach(body.scopes).find((s) => !caller.scopes.includes(s));
    if (missing) throw missingScope(missing, caller);
    const expiresAt = body.expires_at === undefined ? null : Date.parse(body.expires_at);
    if (expiresAt !== null && expiresAt <= now) throw new ApiError(400, KEY_MESSAGES.expiresInPast);
    if (expiresAt !== null && expiresAt > now + MAX_KEY_LIFETIME_MS) throw new ApiError(400, KEY_MESSAGES.expiresTooFar);
    const cap = body.daily_credit_cap ?? null;
    if (caller.dailyCreditCap !== null && (cap === null || cap > caller.dailyCreditCap)) throw new ApiError(400, KEY_MESSAGES.capAboveCaller);
    if (caller.expiresAt !== null && (expiresAt === null || expiresAt > caller.expiresAt)) throw new ApiError(400, KEY_MESSAGES.expiresAfterCaller);
    const outcome = await createKey(requestDatabase(c), {
      accountId: caller.accountId,
      name: body.name,
      scopes: body.scopes,
      expiresAt,
      dailyCreditCap: cap,
      makerCaps: caller.creditCaps,
      onlyIf: authorityHeld(caller, now),
      actor: caller.actor,
      requestId: c.get("requestId"),
      now,
      maxLiveKeys: MAX_LIVE_KEYS,
    });
    if (!outcome.created) {
      // The calling key's account exists (it was just authenticated): the bound refused, or the caller lost its authority meanwhile.
      if (outcome.reason === "authority_lost") throw new ApiError(403, KEY_MESSAGES.authorityLost, {}, { reason: "authority_lost" });
      throw new ApiError(409, KEY_MESSAGES.tooMany);
    }
    Object.assign(c.get("accessLog"), { created_key_id: outcome.key.id });
    return c.json(withToken(outcome.key, outcome.token, now), 201, { Location: `/v1/keys/${outcome.key.id}` });
  });

  app.openapi(rollRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const overlapSeconds = (await optionalJson(c, ApiKeyRollRequest)).overlap_seconds ?? ROLL_OVERLAP.defaultSeconds;
    const db = requestDatabase(c);
    const now = Date.now();
    // Checked against the stored key before anything is written; the roll itself re-checks its state.
    const target = await getKey(db, caller.accountId, id);
    if (!target) throw new ApiError(404, KEY_MESSAGES.notFound);
    if (!dominatesKey(caller, keyPower(target))) throw new ApiError(403, KEY_MESSAGES.rollStronger, {}, { reason: "stronger_than_caller" });
    const outcome = await rollKey(db, { accountId: caller.accountId, keyId: id, overlapSeconds, actor: caller.actor, requestId: c.get("requestId"), now, onlyIf: authorityHeld(caller, now) });
    if (!outcome.rolled) {
      if (outcome.reason === "authority_lost") throw new ApiError(403, KEY_MESSAGES.authorityLost, {}, { reason: "authority_lost" });
      const message = {
        not_found: KEY_MESSAGES.notFound,
        revoked: KEY_MESSAGES.rollRevoked,
        expired: KEY_MESSAGES.rollExpired,
        already_rolled: KEY_MESSAGES.rollRolled,
        too_many_keys: KEY_MESSAGES.tooManyInOverlap,
      }[outcome.reason];
      throw new ApiError(outcome.reason === "not_found" ? 404 : 409, message);
    }
    // This isolate forgets the old key at once, so its new expiry applies here now (elsewhere within KNOWN_KEY_TTL_MS).
    forgetKey(outcome.old.token_hash);
    Object.assign(c.get("accessLog"), { rolled_key_id: id, created_key_id: outcome.key.id });
    return c.json(withToken(outcome.key, outcome.token, now), 201, { Location: `/v1/keys/${outcome.key.id}` });
  });

  app.openapi(revokeRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const now = Date.now();
    const db = requestDatabase(c);
    const target = await getKey(db, caller.accountId, id);
    if (!target) throw new ApiError(404, KEY_MESSAGES.notFound);
    // Taking a key away is as strong as handing one out: a key may revoke itself, and otherwise only keys it dominates.
    if (id !== caller.keyId && target.revoked_at === null && !dominatesKey(caller, keyPower(target))) {
      throw strongerThanCaller("a key can only revoke itself or keys whose scopes, daily credit cap and expiry it holds itself");
    }
    // The jobs it made stop in the same transaction (cancelled, reason key_revoked): revoking a leaked key stops its spending.
    const then = stopJobsOfGoneMakers(caller.accountId, now);
    const row = await revokeKey(db, { accountId: caller.accountId, keyId: id, actor: caller.actor, requestId: c.get("requestId"), now, onlyIf: authorityHeld(caller, now), then });
    if (!row) throw new ApiError(404, KEY_MESSAGES.notFound);
    if (row.revoked_at === null) throw new ApiError(403, KEY_MESSAGES.authorityLost, {}, { reason: "authority_lost" });
    forgetKey(row.token_hash);
    Object.assign(c.get("accessLog"), { revoked_key_id: id });
    return c.json(keyJson(row, now), 200);
  });
}

/** The roll's body is optional: none, or an empty one, means the defaults; anything else must parse. */
async function optionalJson<T>(c: Context<AppEnv>, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } }): Promise<T> {
  const text = await c.req.text();
  if (text.trim() === "") return {} as T;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(400, "Malformed JSON body");
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ApiError(400, `Invalid parameter ${issue?.path.join(".") || "body"}: ${issue?.message ?? "malformed"}`);
  }
  return parsed.data;
}
