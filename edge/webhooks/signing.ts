/**
 * Callback signatures the Standard Webhooks way (standardwebhooks.com): headers `webhook-id`,
 * `webhook-timestamp` (seconds) and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
 * keyed with the base64-decoded part of the account's `whsec_` secret. WebCrypto only, so the Worker
 * and the admin CLI share it.
 */
const PREFIX = "whsec_";
const SECRET_BYTES = 32;

function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

function fromBase64(text: string): Uint8Array {
  const bin = atob(text);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

export function generateWebhookSecret(): string {
  return PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

export async function signWebhook(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Promise<{ "webhook-id": string; "webhook-timestamp": string; "webhook-signature": string }> {
  if (!secret.startsWith(PREFIX)) throw new Error("a webhook secret starts with whsec_");
  const key = await crypto.subtle.importKey("raw", fromBase64(secret.slice(PREFIX.length)), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`));
  return { "webhook-id": id, "webhook-timestamp": String(timestampSeconds), "webhook-signature": `v1,${toBase64(new Uint8Array(mac))}` };
}

/**
 * Webhook secrets at rest (docs/jobs.md "Callbacks"): sealed with AES-256-GCM under WEBHOOK_SECRET_KEY, a
 * Worker secret, as `v1.<iv>.<ciphertext>` (base64), the account id bound in as associated data so
 * a sealed value copied to another account does not open. A database dump alone does not sign
 * callbacks. A value stored before sealing (plain `whsec_…`) still opens, and is sealed on its next use.
 */
const SEALED_PREFIX = "v1.";
const KEY_BYTES = 32;

export class WebhookKeyError extends Error {
  override name = "WebhookKeyError";
}

/** The AES key from WEBHOOK_SECRET_KEY (base64 of 32 random bytes). */
async function sealingKey(keyBase64: string | undefined): Promise<Awaited<ReturnType<typeof crypto.subtle.importKey>>> {
  if (!keyBase64) throw new WebhookKeyError("WEBHOOK_SECRET_KEY is not set: webhook secrets cannot be read or made");
  let raw: Uint8Array;
  try {
    raw = fromBase64(keyBase64.trim());
  } catch {
    throw new WebhookKeyError("WEBHOOK_SECRET_KEY must be base64 (make one with `openssl rand -base64 32`)");
  }
  if (raw.byteLength !== KEY_BYTES) throw new WebhookKeyError("WEBHOOK_SECRET_KEY must be 32 bytes in base64 (make one with `openssl rand -base64 32`)");
  return crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
}

export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_PREFIX);
}

export async function sealWebhookSecret(secret: string, accountId: string, keyBase64: string | undefined): Promise<string> {
  const key = await sealingKey(keyBase64);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const data = new TextEncoder().encode(secret);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode(accountId) }, key, data);
  return `${SEALED_PREFIX}${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

/** The secret itself from what the database holds: sealed, or plain from before sealing. */
export async function openWebhookSecret(stored: string, accountId: string, keyBase64: string | undefined): Promise<string> {
  if (!isSealed(stored)) return stored;
  const [iv, sealed] = stored.slice(SEALED_PREFIX.length).split(".");
  const key = await sealingKey(keyBase64);
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64(iv ?? ""), additionalData: new TextEncoder().encode(accountId) },
      key,
      fromBase64(sealed ?? ""),
    );
    return new TextDecoder().decode(plain);
  } catch {
    throw new WebhookKeyError("A webhook secret does not open with WEBHOOK_SECRET_KEY: the key was changed, or the value was not sealed for this account");
  }
}
