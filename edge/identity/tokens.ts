/**
 * API tokens: 256 random bits, shown once, stored as a SHA-256 hash (docs/api.md "Authentication").
 * Runs on WebCrypto so the Worker and the Node admin CLI share it.
 */
const TOKEN_PREFIX = "cv_";
const TOKEN_PATTERN = /^cv_[A-Za-z0-9_-]{43}$/;
/** Characters of the token kept in clear so a person can tell keys apart. */
const DISPLAY_PREFIX_LENGTH = 10;

export function base64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function generateToken(): { token: string; displayPrefix: string } {
  const token = TOKEN_PREFIX + base64url(crypto.getRandomValues(new Uint8Array(32)));
  return { token, displayPrefix: token.slice(0, DISPLAY_PREFIX_LENGTH) };
}

/** Cheap shape check so garbage never reaches the database. */
export function looksLikeToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

const encoder = new TextEncoder();
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** Every authenticated request hashes its token, so the hex is made from a table rather than 32 callbacks. */
export async function hashToken(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(token)));
  let hex = "";
  for (const b of digest) hex += HEX[b];
  return hex;
}

/**
 * The other secrets a browser holds for a while, made and stored the same way: a one-time invite
 * (cvi_, in the link's fragment) and a session (cvs_, in its cookie). Their hash is what is stored.
 */
export type SecretKind = "cvi_" | "cvs_";

export function generateSecret(kind: SecretKind): string {
  return kind + base64url(crypto.getRandomValues(new Uint8Array(32)));
}

export function looksLikeSecret(kind: SecretKind, value: string): boolean {
  return value.length === 47 && value.startsWith(kind) && /^[A-Za-z0-9_-]{43}$/.test(value.slice(4));
}

export function newId(kind: "acc" | "key" | "job" | "lkj" | "mem" | "pk" | "inv" | "ses" | "note"): string {
  return `${kind}_${base64url(crypto.getRandomValues(new Uint8Array(12)))}`;
}
