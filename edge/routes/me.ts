/**
 * GET /v1/me and the signed-in member's own passkeys (docs/api.md "Passkeys"): a session only, since a
 * key has no member. A member may hold up to MAX_PASSKEYS_PER_MEMBER passkeys and always keeps one. Adding one
 * needs a recent proof of presence (a step-up, edge/routes/auth.ts); removing one ends the sessions it opened.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { RegistrationResponseJSON } from "@simplewebauthn/server";
import { CreationOptions, MAX_PASSKEYS_PER_MEMBER, Me, Passkey, PasskeyCreateRequest } from "../../shared/members.ts";
import { requestDatabase } from "../db/client.ts";
import { memberJson, passkeyJson } from "../identity/store/members.ts";
import { addPasskey, memberWithPasskeys, removePasskey } from "../identity/store/passkeys.ts";
import { storeChallenge, takeChallenge } from "../identity/store/challenges.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { clearSessionCookie, forgetMember, recentlyVerified, sessionExpired, STEP_UP_MAX_AGE_MS } from "../identity/sessions.ts";
import { creationOptions, relyingParty, signedChallenge, verifyRegistration } from "../identity/passkeys.ts";
import { errorResponse, sessionErrorResponses } from "./responses.ts";
import { AUTH_MESSAGES } from "./auth.ts";
import { access, SMALL_BODY_MAX_BYTES } from "./access.ts";

export const PASSKEY_MESSAGES = {
  notFound: "No such passkey",
  lastPasskey: "A member keeps at least one passkey: add another before removing this one",
  tooMany: `A member holds at most ${MAX_PASSKEYS_PER_MEMBER} passkeys: remove one first`,
  stepUpRequired: `Adding a passkey needs a passkey you already hold: confirm with it first (POST /v1/auth/step-up), then add within ${STEP_UP_MAX_AGE_MS / 60_000} minutes`,
} as const;

const stepUpRequired = () => new ApiError(403, PASSKEY_MESSAGES.stepUpRequired, {}, { reason: "step_up_required" });

const json = <T,>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const PasskeyIdParam = z.object({ id: z.string().max(64).openapi({ param: { name: "id", in: "path" }, example: "pk_9aB2cD4eF6gH8iJ0" }) });

const meRoute = createRoute({
  method: "get",
  path: "/v1/me",
  operationId: "getMe",
  tags: ["Members"],
  summary: "The signed-in member: role, scopes and passkeys",
  ...access({ who: "session", limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  responses: { 200: json(Me, "The member"), ...sessionErrorResponses },
});

const optionsRoute = createRoute({
  method: "post",
  path: "/v1/me/passkeys/options",
  operationId: "passkeyRegistrationOptions",
  tags: ["Members"],
  summary: "Options for adding a passkey",
  description: "Pass them to navigator.credentials.create(); the member's passkeys are excluded. The challenge is good for one add within five minutes.",
  ...access({ who: "session", limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  responses: { 200: json(CreationOptions, "WebAuthn creation options"), ...sessionErrorResponses, 403: errorResponse(`${PASSKEY_MESSAGES.stepUpRequired} (reason "step_up_required")`) },
});

const addRoute = createRoute({
  method: "post",
  path: "/v1/me/passkeys",
  operationId: "addPasskey",
  tags: ["Members"],
  summary: "Add a passkey",
  ...access({ who: "session", limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { body: { required: true, content: { "application/json": { schema: PasskeyCreateRequest } } } },
  responses: {
    201: json(Passkey, "The passkey"),
    400: errorResponse("A field is malformed (named), or the credential did not verify (Invalid parameter credential: why)"),
    409: errorResponse(`${AUTH_MESSAGES.passkeyTaken}; or ${PASSKEY_MESSAGES.tooMany}`),
    ...sessionErrorResponses,
    403: errorResponse(`${PASSKEY_MESSAGES.stepUpRequired} (reason "step_up_required")`),
  },
});

const removeRoute = createRoute({
  method: "delete",
  path: "/v1/me/passkeys/{id}",
  operationId: "removePasskey",
  tags: ["Members"],
  summary: "Remove one of the member's passkeys: the sessions it opened end",
  ...access({ who: "session", limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { params: PasskeyIdParam },
  responses: { 204: { description: "Removed" }, 404: errorResponse(PASSKEY_MESSAGES.notFound), 409: errorResponse(PASSKEY_MESSAGES.lastPasskey), ...sessionErrorResponses },
});

export function registerMeRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(meRoute, async (c) => {
    const caller = c.get("auth");
    const { member, passkeys } = await memberWithPasskeys(requestDatabase(c), caller.memberId!);
    // Removed after this isolate cached the session: the session ended with it.
    if (!member) throw sessionExpired();
    return c.json({ member: memberJson(member), account_id: caller.accountId, scopes: [...caller.scopes], passkeys: passkeys.map(passkeyJson) }, 200);
  });

  app.openapi(optionsRoute, async (c) => {
    const caller = c.get("auth");
    const db = requestDatabase(c);
    const now = Date.now();
    const [{ member, passkeys }, fresh] = await Promise.all([memberWithPasskeys(db, caller.memberId!), recentlyVerified(db, caller.sessionId!, now)]);
    if (!member) throw sessionExpired();
    if (!fresh) throw stepUpRequired();
    const exclude = passkeys.map((p) => ({ credentialId: p.credential_id, transports: JSON.parse(p.transports) as string[] }));
    const options = await creationOptions(relyingParty(c), { id: member.id, userName: member.name, displayName: member.name }, exclude);
    await storeChallenge(db, options.challenge, "add_passkey", { memberId: member.id }, now);
    return c.json({ ...options }, 200);
  });

  app.openapi(addRoute, async (c) => {
    const caller = c.get("auth");
    const { credential, name } = c.req.valid("json");
    const challenge = signedChallenge(credential.response.clientDataJSON);
    if (challenge === null) throw new ApiError(400, AUTH_MESSAGES.challengeInvalid);
    const db = requestDatabase(c);
    const now = Date.now();
    const [taken] = await takeChallenge(db, challenge, "add_passkey", now);
    if (!taken || taken.member_id !== caller.memberId) throw new ApiError(400, AUTH_MESSAGES.challengeInvalid);
    const verified = await verifyRegistration(relyingParty(c), credential as RegistrationResponseJSON, challenge);
    if ("refused" in verified) throw new ApiError(400, `Invalid parameter credential: ${verified.refused}`);
    const outcome = await addPasskey(db, { ...verified, accountId: caller.accountId, memberId: caller.memberId!, sessionId: caller.sessionId!, verifiedSince: now - STEP_UP_MAX_AGE_MS, name: name ?? "Passkey", requestId: c.get("requestId"), now });
    if (!outcome.added) {
      if (outcome.reason === "step_up_required") throw stepUpRequired();
      throw new ApiError(409, outcome.reason === "already_registered" ? AUTH_MESSAGES.passkeyTaken : PASSKEY_MESSAGES.tooMany);
    }
    return c.json(passkeyJson(outcome.passkey), 201);
  });

  app.openapi(removeRoute, async (c) => {
    const caller = c.get("auth");
    const { id } = c.req.valid("param");
    const outcome = await removePasskey(requestDatabase(c), { accountId: caller.accountId, memberId: caller.memberId!, passkeyId: id, requestId: c.get("requestId"), now: Date.now() });
    if (!outcome.removed) throw new ApiError(outcome.reason === "not_found" ? 404 : 409, outcome.reason === "not_found" ? PASSKEY_MESSAGES.notFound : PASSKEY_MESSAGES.lastPasskey);
    if (outcome.sessionsEnded.length > 0) forgetMember(caller.memberId!);
    // The passkey opened this very session: it ended with it.
    if (outcome.sessionsEnded.includes(caller.sessionId!)) clearSessionCookie(c);
    return c.body(null, 204);
  });
}
