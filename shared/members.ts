/**
 * The shapes of members, passkeys, invites and sign-in (docs/api.md "Members and roles", "Passkeys",
 * "Sessions"): the handlers, the OpenAPI document, the typed client and the console all come from these.
 * WebAuthn's own JSON (the browser's PublicKeyCredential, serialised) is checked for shape and size here
 * and verified by @simplewebauthn/server in edge/webauthn.ts.
 */
import { z } from "@hono/zod-openapi";
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

/** A person's or a passkey's name: printable, trimmed, 1 to 100 characters. */
export const DisplayName = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(100, "must be at most 100 characters")
  .refine((s) => !/\p{Cc}/u.test(s), "must not contain control characters");

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

export const InviteOptionsRequest = z
  .object({ name: DisplayName.optional().openapi({ description: "Shown by the authenticator beside the passkey; the accept's name when absent" }) })
  .openapi("InviteOptionsRequest");

export const InviteAcceptRequest = z.object({ name: DisplayName, credential: RegistrationCredential }).openapi("InviteAcceptRequest");

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
