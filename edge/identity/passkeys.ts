/**
 * Passkeys (docs/api.md "Passkeys"), on @simplewebauthn/server, which runs on WebCrypto in the Worker.
 *
 * The relying party is the console's host: the first of WEBAUTHN_ORIGINS, or the host this request came
 * to (npm start: localhost). Each options call stores its challenge for CHALLENGE_TTL_MS; a verification
 * finds it by the challenge the browser signed (in clientDataJSON) and deletes it in the same statement, so
 * a challenge serves one verification at most, whether that verification succeeds or not.
 *
 * User verification (a PIN or biometric on the authenticator, not just a touch) is required in every ceremony: a
 * passkey stands in for a password and a second factor at once, and a found or stolen device must not sign in alone.
 */
import type { Context } from "hono";
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type RegistrationResponseJSON,
  type WebAuthnCredential,
} from "@simplewebauthn/server";
import { isoBase64URL } from "@simplewebauthn/server/helpers";
import type { AppEnv } from "../env.ts";
import { consoleOrigins } from "./sessions.ts";

import { CHALLENGE_TTL_MS } from "./store/challenges.ts";
export const RELYING_PARTY_NAME = "Contact verify console";

export type RelyingParty = { id: string; origins: string[] };

export function relyingParty(c: Context<AppEnv>): RelyingParty {
  const origins = consoleOrigins(c);
  return { id: new URL(origins[0]!).hostname, origins };
}

/** The challenge a browser's response signed, read from its clientDataJSON; null when it is not there. */
export function signedChallenge(clientDataJSON: string): string | null {
  try {
    const parsed: unknown = JSON.parse(isoBase64URL.toUTF8String(clientDataJSON));
    const challenge = (parsed as { challenge?: unknown }).challenge;
    return typeof challenge === "string" && challenge.length <= 256 ? challenge : null;
  } catch {
    return null;
  }
}

/** Options for making a passkey: discoverable (so sign-in needs no user name), for the member `memberId`. */
export function creationOptions(
  rp: RelyingParty,
  member: { id: string; userName: string; displayName: string },
  exclude: { credentialId: string; transports: string[] }[],
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return generateRegistrationOptions({
    rpName: RELYING_PARTY_NAME,
    rpID: rp.id,
    userID: Uint8Array.from(new TextEncoder().encode(member.id)),
    userName: member.userName,
    userDisplayName: member.displayName,
    timeout: CHALLENGE_TTL_MS,
    attestationType: "none",
    excludeCredentials: exclude.map((e) => ({ id: e.credentialId, transports: e.transports })),
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
  });
}

/** Options for an assertion: any discoverable passkey for this site (sign-in), or one of `allow` (a member's step-up). */
export function requestOptions(rp: RelyingParty, allow: { credentialId: string; transports: string[] }[] = []) {
  return generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: allow.map((a) => ({ id: a.credentialId, transports: a.transports })),
    userVerification: "required",
    timeout: CHALLENGE_TTL_MS,
  });
}

export type NewPasskey = { credentialId: string; publicKey: string; counter: number; transports: string[] };

/** The passkey a registration response makes, or the reason it is refused (a sentence for the 400). */
export async function verifyRegistration(rp: RelyingParty, response: RegistrationResponseJSON, challenge: string): Promise<NewPasskey | { refused: string }> {
  try {
    const result = await verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: rp.origins, expectedRPID: rp.id, requireUserVerification: true });
    if (!result.verified) return { refused: "the attestation did not verify" };
    const { credential } = result.registrationInfo;
    return { credentialId: credential.id, publicKey: isoBase64URL.fromBuffer(credential.publicKey), counter: credential.counter, transports: credential.transports ?? [] };
  } catch (error) {
    return { refused: error instanceof Error ? error.message : "the attestation did not verify" };
  }
}

export type StoredPasskey = { credentialId: string; publicKey: string; counter: number; transports: string[] };

/** The passkey's new signature counter when the assertion verifies; null when it does not. */
export async function verifyAssertion(rp: RelyingParty, response: AuthenticationResponseJSON, challenge: string, passkey: StoredPasskey): Promise<number | null> {
  const credential: WebAuthnCredential = {
    id: passkey.credentialId,
    publicKey: isoBase64URL.toBuffer(passkey.publicKey),
    counter: passkey.counter,
    transports: passkey.transports as WebAuthnCredential["transports"],
  };
  try {
    const result = await verifyAuthenticationResponse({ response, expectedChallenge: challenge, expectedOrigin: rp.origins, expectedRPID: rp.id, credential, requireUserVerification: true });
    return result.verified ? result.authenticationInfo.newCounter : null;
  } catch {
    return null;
  }
}
