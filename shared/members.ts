/**
 * The shapes of members, passkeys, invites and sign-in (docs/api.md "Members and roles", "Passkeys",
 * "Sessions"): the handlers, the OpenAPI document, the typed client and the console all come from these.
 * WebAuthn's own JSON (the browser's PublicKeyCredential, serialised) is checked for shape and size here
 * and verified by @simplewebauthn/server in edge/identity/passkeys.ts.
 */
import { z } from "@hono/zod-openapi";
import { DisplayName } from "./display-name.ts";
import { ApiKey } from "./keys.ts";
import { RoleName } from "./roles.ts";
import { ScopeName } from "./scopes.ts";

/** How long an invite link works: once, within a day. */
export const INVITE_LIFETIME_MS = 86_400_000;
/** Passkeys a member may hold; one more is 409. */
export const MAX_PASSKEYS_PER_MEMBER = 10;
/** Members an account may hold (pending invites not counted); one more accept is 409. */
export const MAX_MEMBERS = 100;
/** Request bodies of the sign-in and passkey endpoints: an attestation with a certificate chain fits easily. */
export const WEBAUTHN_BODY_MAX_BYTES = 64 * 1024;

const rfc3339 = z.string().openapi({ description: "RFC 3339, UTC", example: "2026-11-25T21:40:00.000Z" });
const base64url = (max: number) => z.string().min(1).max(max).regex(/^[A-Za-z0-9_-]+$/, "must be base64url");


export const Member = z
  .object({
    id: z.string().openapi({ example: "mem_3kT9vQ2mXwPz8LbN" }),
    name: z.string().openapi({ example: "Ada Lovelace" }),
    role: RoleName,
    created_at: rfc3339,
    last_sign_in_at: rfc3339.nullable(),
  })
  .openapi("Member");
export type Member = z.infer<typeof Member>;

export const MemberList = z.object({ members: z.array(Member) }).openapi("MemberList");

export const Passkey = z
  .object({
    id: z.string().openapi({ example: "pk_9aB2cD4eF6gH8iJ0" }),
    name: z.string().openapi({ example: "Laptop" }),
    created_at: rfc3339,
    last_used_at: rfc3339.nullable(),
  })
  .openapi("Passkey");
export type Passkey = z.infer<typeof Passkey>;

export const Me = z
  .object({ member: Member, account_id: z.string(), scopes: z.array(ScopeName).openapi({ description: "What this session may do: its role's scopes (shared/roles.ts)" }), passkeys: z.array(Passkey) })
  .openapi("Me");

export const InviteCreateRequest = z.object({ role: RoleName }).openapi("InviteCreateRequest");

export const Invite = z
  .object({
    id: z.string().openapi({ example: "inv_Q2mXwPz8LbN3kT9v" }),
    role: RoleName,
    url: z.string().openapi({ description: "The one-time link, shown this once: its secret is in the fragment, which browsers never send to a server", example: "https://console.example.com/console/invite#cvi_…" }),
    expires_at: rfc3339,
  })
  .openapi("Invite");
export type Invite = z.infer<typeof Invite>;

export const MemberPatch = z.object({ role: RoleName }).openapi("MemberPatch");

export const INVITE_STATUSES = ["pending", "used", "expired", "revoked"] as const;
export type InviteStatus = (typeof INVITE_STATUSES)[number];

/** An invite as GET /v1/invites lists it: never its secret, which only its first answer carried. */
export const PendingInvite = z
  .object({
    id: z.string().openapi({ example: "inv_Q2mXwPz8LbN3kT9v" }),
    role: RoleName,
    status: z.enum(INVITE_STATUSES).openapi({
      description: "pending: it can still be accepted; used; expired; revoked: revoked by a member or key, or void because whoever made it no longer holds the authority to grant its role (removed, demoted, revoked)",
    }),
    created_by: z.string().openapi({ description: '"operator", or the id of the member or key that made it' }),
    created_at: rfc3339,
    expires_at: rfc3339,
    used_at: rfc3339.nullable(),
    used_by: z.string().nullable().openapi({ description: "The member it made" }),
    revoked_at: rfc3339.nullable(),
    revoked_by: z.string().nullable().openapi({ description: 'Who revoked it; "system" when it was voided with its maker\'s authority' }),
  })
  .openapi("PendingInvite");
export type PendingInvite = z.infer<typeof PendingInvite>;

export const InviteList = z.object({ invites: z.array(PendingInvite).openapi({ description: "Newest first: pending ones, and those that ended within the last week" }) }).openapi("InviteList");

/** The answer to removing a member: who was removed, and the keys they made (and the keys those made), revoked or still live. */
export const MemberRemoval = z
  .object({
    member: Member,
    keys: z.array(ApiKey).openapi({ description: "The keys the member made, and the keys those keys made, that were live before the removal: revoked with it when revoke_keys=true, else still working" }),
  })
  .openapi("MemberRemoval");

export const RegistrationCredential = z
  .object({
    id: base64url(1366),
    rawId: base64url(1366),
    type: z.literal("public-key"),
    response: z.object({
      clientDataJSON: base64url(4096),
      attestationObject: base64url(32_768),
      transports: z.array(z.string().max(32)).max(8).optional(),
    }),
    authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
    clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  })
  .openapi("RegistrationCredential", { description: "The browser's PublicKeyCredential from navigator.credentials.create(), as JSON (RegistrationResponseJSON)" });

export const AuthenticationCredential = z
  .object({
    id: base64url(1366),
    rawId: base64url(1366),
    type: z.literal("public-key"),
    response: z.object({
      clientDataJSON: base64url(4096),
      authenticatorData: base64url(4096),
      signature: base64url(1024),
      userHandle: base64url(128).optional(),
    }),
    authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
    clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  })
  .openapi("AuthenticationCredential", { description: "The browser's PublicKeyCredential from navigator.credentials.get(), as JSON (AuthenticationResponseJSON)" });

/** An invite link's secret, sent in the body (never in a URL, where access logs in front of the Worker would keep it). */
export const InviteToken = z.string().min(1).max(100).openapi({ description: "The invite link's fragment (cvi_…)", example: "cvi_…" });

export const InviteOptionsRequest = z.object({ token: InviteToken }).openapi("InviteOptionsRequest");

export const InviteAcceptRequest = z.object({ token: InviteToken, name: DisplayName, credential: RegistrationCredential }).openapi("InviteAcceptRequest");

export const SignInRequest = z.object({ credential: AuthenticationCredential }).openapi("SignInRequest");

export const PasskeyCreateRequest = z
  .object({ credential: RegistrationCredential, name: DisplayName.optional().openapi({ description: 'Default "Passkey"' }) })
  .openapi("PasskeyCreateRequest");

export const MemberResponse = z.object({ member: Member }).openapi("MemberResponse");

/** WebAuthn options as @simplewebauthn/server makes them; passed to the browser as they are. */
export const CreationOptions = z
  .record(z.string(), z.unknown())
  .openapi("PublicKeyCredentialCreationOptions", { description: "PublicKeyCredentialCreationOptionsJSON: hand to navigator.credentials.create() (e.g. with PublicKeyCredential.parseCreationOptionsFromJSON)" });
export const RequestOptions = z
  .record(z.string(), z.unknown())
  .openapi("PublicKeyCredentialRequestOptions", { description: "PublicKeyCredentialRequestOptionsJSON: hand to navigator.credentials.get(); allowCredentials is empty (discoverable passkeys)" });
