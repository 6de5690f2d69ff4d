/**
 * Signing in to the console (docs/api.md "Passkeys", "Sessions"): accept an invite with a new passkey,
 * sign in with a passkey, sign out here or everywhere. The options and accept/sign-in calls take no
 * credential, so each is counted per client address (60 a minute, with the failed authentications'
 * limiter), bounded in size, and, like every request the cookie goes with, refused from another origin.
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import { ERROR_MESSAGES } from "../../shared/api.ts";
import { CreationOptions, InviteAcceptRequest, InviteOptionsRequest, MAX_MEMBERS, MemberResponse, RequestOptions, SignInRequest, WEBAUTHN_BODY_MAX_BYTES } from "../../shared/members.ts";
import { clientBucket, NO_CLIENT_ADDRESS } from "../identity/authenticate.ts";
import { limitRequestBody } from "../body-limit.ts";
import { requestDatabase } from "../db/client.ts";
import { findInviteQuery, inviteRefusal, type InviteRefusal } from "../identity/store/invites.ts";
import { findPasskeyForSignIn, joinByInvite, memberJson, recordFailedSignIn, signIn } from "../identity/store/members.ts";
import { memberWithPasskeys, passkeyRegistered } from "../identity/store/passkeys.ts";
import { stepUp } from "../identity/store/sessions.ts";
import { storeChallenge, takeChallenge } from "../identity/store/challenges.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { hashToken, looksLikeSecret, newId } from "../identity/tokens.ts";
import { FAILED_AUTHENTICATION_LIMIT, rateLimited, withinLimit } from "../rate-limits.ts";
import { clearSessionCookie, createSession, crossSiteRefusal, endAllSessions, endSession, forgetSession, readSessionToken, setSessionCookie } from "../identity/sessions.ts";
import { creationOptions, relyingParty, requestOptions, signedChallenge, verifyAssertion, verifyRegistration } from "../identity/passkeys.ts";
import { requireSession } from "../identity/scopes.ts";
import { requireCaller } from "../identity/authenticate.ts";
import { errorResponse, sessionErrorResponses } from "./responses.ts";

export const AUTH_MESSAGES = {
  inviteInvalid: "No such invite",
  inviteUsed: "The invite was already used",
  inviteExpired: "The invite has expired: ask for a new one",
  inviteRevoked: "The invite was revoked, or whoever made it can no longer grant its role: ask for a new one",
  challengeInvalid: "Invalid parameter credential: its challenge is unknown, used or expired (ask for new options)",
  passkeyTaken: "This passkey is already registered",
  joinRaced: `The invite was used meanwhile, or the account already holds ${MAX_MEMBERS} members`,
  signInFailed: "Sign-in failed: the passkey is not recognised or its signature did not verify",
} as const;

const json = <T,>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const body = <T,>(schema: T) => ({ body: { required: true, content: { "application/json": { schema } } } });

const publicErrors = {
  403: errorResponse('The request came from another origin (reason "cross_site_request")'),
  413: errorResponse(ERROR_MESSAGES.bodyTooLarge),
  429: errorResponse("Too many sign-in requests from this address", { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait" } }),
  503: errorResponse("Service temporarily unavailable: the database did not answer in time"),
};
const inviteErrors = {
  404: errorResponse(`${AUTH_MESSAGES.inviteInvalid} (reason "invite_invalid")`),
  410: errorResponse(
    `${AUTH_MESSAGES.inviteUsed} (reason "invite_used"); ${AUTH_MESSAGES.inviteExpired} (reason "invite_expired"); or ${AUTH_MESSAGES.inviteRevoked} (reason "invite_revoked")`,
  ),
};

/** Every /v1/auth call reads a body of at most WEBAUTHN_BODY_MAX_BYTES. */
const boundedBody = limitRequestBody(WEBAUTHN_BODY_MAX_BYTES);

/** Same-origin only: a browser sends an Authorization header cross-site only after a CORS preflight, which this API never grants. */
const sameOrigin: MiddlewareHandler<AppEnv> = async (c, next) => {
  const crossSite = c.req.header("authorization") === undefined ? crossSiteRefusal(c) : null;
  if (crossSite) throw crossSite;
  await next();
};

/** The calls that take no credential are counted per client address instead (60 a minute, with the failed authentications' limiter). */
const perClientAddress: MiddlewareHandler<AppEnv> = async (c, next) => {
  const client = clientBucket(c.req.header("cf-connecting-ip") ?? NO_CLIENT_ADDRESS);
  if (!(await withinLimit(c, FAILED_AUTHENTICATION_LIMIT, `sign-in:${client}`))) throw rateLimited("sign_in", FAILED_AUTHENTICATION_LIMIT);
  await next();
};

/** A call that takes no credential: signing in and joining. */
const publicCall = { security: [] as Record<string, string[]>[], middleware: [boundedBody, sameOrigin, perClientAddress] };
/** The signed-in member's own calls here: the session, from the console's origin. */
const sessionCall = (counted: boolean) => ({
  security: [{ sessionCookie: [] }] as Record<string, string[]>[],
  middleware: [boundedBody, sameOrigin, ...(counted ? [perClientAddress] : []), requireCaller, requireSession],
});

const inviteOptionsRoute = createRoute({
  method: "post",
  path: "/v1/auth/invites/options",
  operationId: "inviteRegistrationOptions",
  tags: ["Members"],
  summary: "Options for making the passkey an invite's new member will sign in with",
  description: "Pass them to navigator.credentials.create(). The challenge is good for one accept within five minutes. The invite's secret goes in the body, never in the URL.",
  ...publicCall,
  request: body(InviteOptionsRequest),
  responses: { 200: json(CreationOptions, "WebAuthn creation options"), ...inviteErrors, ...publicErrors },
});

const acceptRoute = createRoute({
  method: "post",
  path: "/v1/auth/invites/accept",
  operationId: "acceptInvite",
  tags: ["Members"],
  summary: "Join with the invite: the new member, their first passkey, and a session cookie",
  description:
    "Single use: the invite is spent by the first accept that succeeds, and only while whoever made it still holds the authority to grant its role. " +
    "Sets the session cookie (docs/api.md \"Sessions\"); a session this browser already held ends.",
  ...publicCall,
  request: body(InviteAcceptRequest),
  responses: {
    201: json(MemberResponse, "The new member, signed in"),
    400: errorResponse("A field is malformed (named), or the credential did not verify (Invalid parameter credential: why)"),
    ...inviteErrors,
    409: errorResponse(`${AUTH_MESSAGES.passkeyTaken}; or ${AUTH_MESSAGES.joinRaced}`),
    ...publicErrors,
  },
});

const signInOptionsRoute = createRoute({
  method: "post",
  path: "/v1/auth/sign-in/options",
  operationId: "signInOptions",
  tags: ["Members"],
  summary: "Options for signing in with a passkey",
  description: "Pass them to navigator.credentials.get(). allowCredentials is empty: the browser offers the passkeys it holds for this site.",
  ...publicCall,
  responses: { 200: json(RequestOptions, "WebAuthn request options"), ...publicErrors },
});

const signInRoute = createRoute({
  method: "post",
  path: "/v1/auth/sign-in",
  operationId: "signIn",
  tags: ["Members"],
  summary: "Sign in with a passkey: sets the session cookie",
  ...publicCall,
  request: body(SignInRequest),
  responses: {
    200: json(MemberResponse, "The member, signed in"),
    400: errorResponse("A field is malformed (named)"),
    401: errorResponse(`${AUTH_MESSAGES.signInFailed} (reason "sign_in_failed"), or the challenge is unknown, used or expired`),
    ...publicErrors,
  },
});

const stepUpOptionsRoute = createRoute({
  method: "post",
  path: "/v1/auth/step-up/options",
  operationId: "stepUpOptions",
  tags: ["Members"],
  summary: "Options for proving, with one of the member's passkeys, that they are at this session now",
  description: "Pass them to navigator.credentials.get(); allowCredentials lists the member's passkeys. Needed before adding a passkey when the session's last proof is older than five minutes.",
  ...sessionCall(true),
  responses: { 200: json(RequestOptions, "WebAuthn request options"), ...sessionErrorResponses },
});

const stepUpRoute = createRoute({
  method: "post",
  path: "/v1/auth/step-up",
  operationId: "stepUp",
  tags: ["Members"],
  summary: "Prove presence with one of the member's passkeys: the session may add a passkey for the next five minutes",
  ...sessionCall(true),
  request: body(SignInRequest),
  responses: {
    204: { description: "The session's proof of presence is now" },
    400: errorResponse("A field is malformed (named)"),
    ...sessionErrorResponses,
    401: errorResponse(`${AUTH_MESSAGES.signInFailed} (reason "sign_in_failed"): not one of this member's passkeys, or it did not verify`),
  },
});

const signOutRoute = createRoute({
  method: "post",
  path: "/v1/auth/sign-out",
  operationId: "signOut",
  tags: ["Members"],
  summary: "End this session and clear its cookie",
  description: "Always 204, with or without a live session.",
  security: [],
  // Always answered, so not counted per address; still bounded and same-origin.
  middleware: [boundedBody, sameOrigin],
  responses: { 204: { description: "Signed out" }, 403: publicErrors[403], 503: publicErrors[503] },
});

const signOutEverywhereRoute = createRoute({
  method: "post",
  path: "/v1/auth/sign-out-everywhere",
  operationId: "signOutEverywhere",
  tags: ["Members"],
  summary: "End every session of the signed-in member, this one included",
  ...sessionCall(false),
  responses: { 204: { description: "Every session ended" }, ...sessionErrorResponses },
});


function inviteError(reason: InviteRefusal): ApiError {
  if (reason === "invite_invalid") return new ApiError(404, AUTH_MESSAGES.inviteInvalid, {}, { reason });
  const message = { invite_used: AUTH_MESSAGES.inviteUsed, invite_expired: AUTH_MESSAGES.inviteExpired, invite_revoked: AUTH_MESSAGES.inviteRevoked }[reason];
  return new ApiError(410, message, {}, { reason });
}

const signInFailed = () => new ApiError(401, AUTH_MESSAGES.signInFailed, {}, { reason: "sign_in_failed" });

export function registerAuthRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(inviteOptionsRoute, async (c) => {
    const { token } = c.req.valid("json");
    if (!looksLikeSecret("cvi_", token)) throw inviteError("invite_invalid");
    const db = requestDatabase(c);
    const now = Date.now();
    const [invite] = await findInviteQuery(db, await hashToken(token), now);
    const refused = inviteRefusal(invite, now);
    if (refused || !invite) throw inviteError(refused ?? "invite_invalid");
    // The new member's id is fixed now: it is the passkey's user handle.
    const memberId = newId("mem");
    const label = `${invite.role} at ${invite.account_name}`;
    const options = await creationOptions(relyingParty(c), { id: memberId, userName: label, displayName: label }, []);
    await storeChallenge(db, options.challenge, "join", { inviteId: invite.id, memberId }, now);
    return c.json({ ...options }, 200);
  });

  app.openapi(acceptRoute, async (c) => {
    const { token, name, credential } = c.req.valid("json");
    if (!looksLikeSecret("cvi_", token)) throw inviteError("invite_invalid");
    const challenge = signedChallenge(credential.response.clientDataJSON);
    if (challenge === null) throw new ApiError(400, AUTH_MESSAGES.challengeInvalid);
    const db = requestDatabase(c);
    const now = Date.now();
    const [invites, taken] = await db.batch([findInviteQuery(db, await hashToken(token), now), takeChallenge(db, challenge, "join", now)]);
    const invite = invites[0];
    const refused = inviteRefusal(invite, now);
    if (refused || !invite) throw inviteError(refused ?? "invite_invalid");
    const challengeRow = taken[0];
    if (!challengeRow || challengeRow.invite_id !== invite.id || !challengeRow.member_id) throw new ApiError(400, AUTH_MESSAGES.challengeInvalid);

    const passkey = await verifyRegistration(relyingParty(c), credential as RegistrationResponseJSON, challenge);
    if ("refused" in passkey) throw new ApiError(400, `Invalid parameter credential: ${passkey.refused}`);
    if (await passkeyRegistered(db, passkey.credentialId)) throw new ApiError(409, AUTH_MESSAGES.passkeyTaken);

    const session = await createSession();
    const config = c.get("config");
    const previousToken = readSessionToken(c);
    const previousSessionHash = previousToken !== null && looksLikeSecret("cvs_", previousToken) ? await hashToken(previousToken) : null;
    const member = await joinByInvite(db, {
      invite,
      memberId: challengeRow.member_id,
      name,
      passkey: { ...passkey, name: "Passkey" },
      session,
      sessionMaxMs: config.SESSION_MAX_SECONDS * 1000,
      previousSessionHash,
      requestId: c.get("requestId"),
      now,
    });
    if (!member) {
      // Read again to say why: the maker's authority went (or the invite was revoked) meanwhile, else it was used or the account is full.
      const [after] = await findInviteQuery(db, await hashToken(token), Date.now());
      const refused = inviteRefusal(after, now);
      if (refused === "invite_revoked") throw inviteError(refused);
      throw new ApiError(409, AUTH_MESSAGES.joinRaced);
    }
    if (previousSessionHash !== null) forgetSession(previousSessionHash);
    setSessionCookie(c, session.token, config.SESSION_MAX_SECONDS);
    Object.assign(c.get("accessLog"), { member_id: member.id, account_id: member.account_id });
    return c.json({ member: memberJson(member) }, 201);
  });

  app.openapi(signInOptionsRoute, async (c) => {
    const options = await requestOptions(relyingParty(c));
    await storeChallenge(requestDatabase(c), options.challenge, "sign_in", {}, Date.now());
    return c.json({ ...options }, 200);
  });

  app.openapi(signInRoute, async (c) => {
    const { credential } = c.req.valid("json");
    const challenge = signedChallenge(credential.response.clientDataJSON);
    if (challenge === null) throw signInFailed();
    const db = requestDatabase(c);
    const now = Date.now();
    const [taken, found] = await db.batch([takeChallenge(db, challenge, "sign_in", now), findPasskeyForSignIn(db, credential.id)]);
    const passkey = found[0];
    if (!taken[0] || !passkey) throw signInFailed();
    const stored = { credentialId: passkey.credential_id, publicKey: passkey.public_key, counter: Number(passkey.counter), transports: JSON.parse(passkey.transports) as string[] };
    const counter = await verifyAssertion(relyingParty(c), credential as AuthenticationResponseJSON, challenge, stored);
    const requestId = c.get("requestId");
    if (counter === null) {
      await recordFailedSignIn(db, { passkey, why: "the assertion did not verify (signature, user verification, origin or counter)", requestId, now });
      throw signInFailed();
    }
    const session = await createSession();
    const config = c.get("config");
    const member = await signIn(db, { passkey, counter, session, sessionMaxMs: config.SESSION_MAX_SECONDS * 1000, requestId, now });
    if (!member) {
      await recordFailedSignIn(db, { passkey, why: "the member was removed, or another sign-in moved the passkey's counter past this one", requestId, now });
      throw signInFailed();
    }
    setSessionCookie(c, session.token, config.SESSION_MAX_SECONDS);
    Object.assign(c.get("accessLog"), { member_id: member.id, account_id: member.account_id });
    return c.json({ member: memberJson(member) }, 200);
  });

  app.openapi(stepUpOptionsRoute, async (c) => {
    const caller = c.get("auth");
    const db = requestDatabase(c);
    const { passkeys: own } = await memberWithPasskeys(db, caller.memberId!);
    const options = await requestOptions(
      relyingParty(c),
      own.map((p) => ({ credentialId: p.credential_id, transports: JSON.parse(p.transports) as string[] })),
    );
    await storeChallenge(db, options.challenge, "step_up", { memberId: caller.memberId! }, Date.now());
    return c.json({ ...options }, 200);
  });

  app.openapi(stepUpRoute, async (c) => {
    const caller = c.get("auth");
    const { credential } = c.req.valid("json");
    const challenge = signedChallenge(credential.response.clientDataJSON);
    if (challenge === null) throw signInFailed();
    const db = requestDatabase(c);
    const now = Date.now();
    const [taken, found] = await db.batch([takeChallenge(db, challenge, "step_up", now), findPasskeyForSignIn(db, credential.id)]);
    const passkey = found[0];
    // Only the signed-in member's own passkey, against a challenge handed to this member.
    if (!taken[0] || taken[0].member_id !== caller.memberId || !passkey || passkey.member_id !== caller.memberId) throw signInFailed();
    const stored = { credentialId: passkey.credential_id, publicKey: passkey.public_key, counter: Number(passkey.counter), transports: JSON.parse(passkey.transports) as string[] };
    const counter = await verifyAssertion(relyingParty(c), credential as AuthenticationResponseJSON, challenge, stored);
    if (counter === null || !(await stepUp(db, { sessionId: caller.sessionId!, passkeyId: passkey.id, counter, now }))) {
      await recordFailedSignIn(db, { passkey, why: "a step-up assertion did not verify", requestId: c.get("requestId"), now });
      throw signInFailed();
    }
    return c.body(null, 204);
  });

  app.openapi(signOutRoute, async (c) => {
    const token = readSessionToken(c);
    if (token !== null && looksLikeSecret("cvs_", token)) {
      const ended = await endSession(requestDatabase(c), await hashToken(token), c.get("requestId"), Date.now());
      if (ended) Object.assign(c.get("accessLog"), { member_id: ended.member_id });
    }
    clearSessionCookie(c);
    return c.body(null, 204);
  });

  app.openapi(signOutEverywhereRoute, async (c) => {
    const caller = c.get("auth");
    await endAllSessions(requestDatabase(c), { accountId: caller.accountId, memberId: caller.memberId!, requestId: c.get("requestId"), now: Date.now() });
    clearSessionCookie(c);
    return c.body(null, 204);
  });
}
