/**
 * The name bounce feedback knows an address by (docs/api.md "POST /v1/email_feedback"): HMAC-SHA256 under
 * FEEDBACK_HASH_KEY of "email:" and the address's canonical form (shared/email/canonical-address.ts), so every spelling
 * of one mailbox has one name, and a copy of the database alone cannot tell which address a report was about. The
 * Worker names reports and stored addresses by it; the admin CLI finds a person's reports by it at erasure and in an
 * access report. WebCrypto, so both run the same code.
 */
import { canonicalAddress } from "../email/canonical-address.ts";

const KEY_FORMAT = /^[A-Za-z0-9+/]{43}=$/;

export const FEEDBACK_HASH_KEY_FORMAT_MESSAGE = "FEEDBACK_HASH_KEY must be 32 bytes in base64 (make one with `openssl rand -base64 32`)";

/** A hasher for one key: the key is imported once, each address hashed with it. */
export async function addressHasher(keyBase64: string): Promise<(email: string) => Promise<string>> {
  if (!KEY_FORMAT.test(keyBase64)) throw new Error(FEEDBACK_HASH_KEY_FORMAT_MESSAGE);
  const raw = Uint8Array.from(atob(keyBase64), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return async (email) => {
    const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`email:${canonicalAddress(email)}`));
    return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("");
  };
}
