/**
 * The worker <-> probe contract. Both sides import these schemas; nothing re-declares them.
 *
 * The Worker resolves MX hosts and their addresses over DoH and hands them to the probe, so the
 * probe never does DNS of its own: one resolver, one cache, one set of semantics (docs/probe.md "The SMTP probe").
 */
import { z } from "zod";
import { ProbeOutcome } from "./smtp-outcome.ts";

export const PROBE_PATH = "/v1/probe";
export const PROBE_SIGNATURE_HEADER = "x-probe-signature";
export const PROBE_TIMESTAMP_HEADER = "x-probe-timestamp";
export const PROBE_NONCE_HEADER = "x-probe-nonce";
/**
 * On every answer of the probe: its self-audit's status ("ok" or "degraded": its reverse DNS, SPF or
 * a blocklist says receivers may refuse it). The Worker ranks a degraded probe last (edge/verification/probe-ranking.ts).
 */
export const PROBE_REPUTATION_HEADER = "x-probe-reputation";
/** Signatures older (or further in the future) than this are refused (docs/probe.md "The SMTP probe"). */
export const PROBE_MAX_SKEW_SECONDS = 300;
/** Request bodies above this are refused before parsing. */
export const PROBE_MAX_BODY_BYTES = 16 * 1024;

export const ProbeMxHost = z.object({
  host: z.string().min(1).max(253),
  preference: z.number().int().min(0).max(65535),
  /** IPv4/IPv6 literals, already resolved by the Worker; tried in order. */
  addresses: z.array(z.string().min(2).max(45)).max(16),
});
export type ProbeMxHost = z.infer<typeof ProbeMxHost>;

/**
 * An address to check, domain already in A-label (ASCII) form. A quoted local part may hold an "@"
 * ("a@b"@example.com): the domain is what follows the last one. No control characters: the address
 * goes into an SMTP command line as it is.
 */
const ProbeEmail = z
  .string()
  .min(3)
  .max(254)
  .regex(/^[^\x00-\x1f\x7f]+@[a-zA-Z0-9.-]+$/, "an address with an ASCII domain and no control characters");

export const ProbeRequest = z.object({
  email: ProbeEmail,
  /** MX hosts ordered by preference (lowest first); the probe fails over in this order. */
  mx: z.array(ProbeMxHost).min(1).max(10),
  /** Budget for the whole probe in milliseconds; the probe answers before it runs out. */
  deadline_ms: z.number().int().min(500).max(60_000),
  /** Whether to test a random address on the same domain (catch-all detection). */
  catch_all_check: z.boolean().default(true),
  /**
   * Whose check this is (the account's opaque digest, as a batch's): each customer has a lane of its
   * own in every receiver's budget, so one customer's checks cannot spend another's. Absent: the
   * lane of checks nobody named.
   */
  tenant: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .optional(),
});
export type ProbeRequest = z.input<typeof ProbeRequest>;
export type ProbeRequestParsed = z.output<typeof ProbeRequest>;

/** What the mail server said about the address (shared/smtp-outcome.ts holds the vocabulary). */
export { ProbeOutcome };

export const SmtpReplySummary = z.object({
  code: z.number().int().min(200).max(599),
  enhanced_code: z.string().max(16).nullable(),
  /** Reply text, joined over lines and truncated. */
  text: z.string().max(512),
});
export type SmtpReplySummary = z.infer<typeof SmtpReplySummary>;

export const ProbeAttempt = z.object({
  host: z.string(),
  address: z.string(),
  /** The last SMTP stage reached: connect, greeting, ehlo, starttls, mail, rcpt, catch_all, quit. */
  stage: z.string().max(16),
  outcome: ProbeOutcome,
  reply: SmtpReplySummary.nullable(),
  error: z.string().max(256).nullable(),
  tls: z.boolean(),
  /**
   * Sequential waits this answer depended on: TCP connect, each reply or pipelined group, the TLS
   * handshake. A check on a warm session with PIPELINING costs 1.
   */
  round_trips: z.number().int().min(0),
  /** The check ran on a session opened earlier (for other checks), not on one opened for it. */
  reused_session: z.boolean(),
  ms: z.number().int().min(0),
});
export type ProbeAttempt = z.infer<typeof ProbeAttempt>;

export const ProbeResponse = z.object({
  outcome: ProbeOutcome,
  /** true: a random address was also accepted; false: it was rejected; null: not known. */
  catch_all: z.boolean().nullable(),
  /** Whether the catch-all answer came from the probe's per-domain cache. */
  catch_all_cached: z.boolean(),
  /** The reply that decided the outcome, when there was one. */
  reply: SmtpReplySummary.nullable(),
  mx_host: z.string().nullable(),
  mx_address: z.string().nullable(),
  tls: z.boolean().nullable(),
  pipelining: z.boolean().nullable(),
  attempts: z.array(ProbeAttempt).max(64),
  elapsed_ms: z.number().int().min(0),
  /** With outcome budget_spent: when the receiver's budget for this customer next has room, when known. */
  retry_after_ms: z.number().int().min(0).max(7 * 86_400_000).optional(),
});
export type ProbeResponse = z.infer<typeof ProbeResponse>;

/**
 * What a probe learned by being blocked or throttled (docs/probe.md "What is learned"), per
 * budget key (a family, or a family and an MX address), said after the addresses of a batch answer (ProbeBatchLearnedNotice) and handed by the
 * Worker to every probe (ProbeBatchRequest `learned`). The newest PROBE_MAX_LEARNED_RULES.
 */
export const LearnedRuleWire = z.object({
  key: z.string().min(1).max(300),
  harvest: z.boolean(),
  rate_factor: z.number().gt(0).max(1),
  blocks: z.number().int().min(0).max(1_000_000),
  throttles: z.number().int().min(0).max(1_000_000),
  at_ms: z.number().int().min(0),
});
export type LearnedRuleWire = z.infer<typeof LearnedRuleWire>;
export const PROBE_MAX_LEARNED_RULES = 200;
export const PROBE_BATCH_PATH = "/v1/probe/batch";
/** Batch bodies above this are refused before parsing. */
export const PROBE_MAX_BATCH_BODY_BYTES = 1024 * 1024;
/** Addresses in one batch, all groups together. */
export const PROBE_MAX_BATCH_ADDRESSES = 2_000;

/**
 * Many addresses at once, for bulk jobs: grouped by the MX hosts that serve them (usually one group
 * per domain), so a warm session to one mail server checks many of them. The probe answers with
 * NDJSON, one ProbeBatchLine per distinct address, in the order the answers come.
 */
export const ProbeBatchRequest = z
  .object({
    /** Budget for every address, from when the probe receives the batch. */
    deadline_ms: z.number().int().min(500).max(120_000),
    /**
     * How long an address may wait its turn at a server that paces us (answering the addresses ahead
     * of it, slowly) before it is handed back unasked, as a `deferred` line: the caller asks again in
     * a later batch instead of taking a timeout for an answer. Absent: addresses wait until the deadline.
     */
    queue_ms: z.number().int().min(0).max(120_000).optional(),
    catch_all_check: z.boolean().default(true),
    /** Who the work is for; the probe only uses it to share each destination fairly. */
    tenant: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .optional(),
    groups: z
      .array(z.object({ mx: z.array(ProbeMxHost).min(1).max(10), emails: z.array(ProbeEmail).min(1).max(PROBE_MAX_BATCH_ADDRESSES) }))
      .min(1)
      .max(PROBE_MAX_BATCH_ADDRESSES),
    /**
     * What other probes of the fleet learned by being blocked or throttled (their `learned` notices, kept by the
     * Worker): the probe keeps each rule that is stricter than its own (docs/probe.md "What is learned").
     */
    learned: z.array(LearnedRuleWire).max(PROBE_MAX_LEARNED_RULES).optional(),
  })
  .refine((b) => b.groups.reduce((n, g) => n + g.emails.length, 0) <= PROBE_MAX_BATCH_ADDRESSES, {
    message: `at most ${PROBE_MAX_BATCH_ADDRESSES} addresses in one batch`,
    path: ["groups"],
  });
export type ProbeBatchRequest = z.input<typeof ProbeBatchRequest>;

/**
 * An answer, or `deferred`: not asked within queue_ms because its server was still busy with others,
 * or because the receiver's budget holds it (then `retry_after_ms`, when the budget next has room,
 * and `waiting_on`, the receiver's family: the caller parks the line until then instead of asking again
 * at once).
 */
export const ProbeBatchAnswer = z.object({ email: z.string(), result: ProbeResponse });
export const ProbeBatchDeferred = z.object({
  email: z.string(),
  deferred: z.literal(true),
  retry_after_ms: z.number().int().min(0).max(7 * 86_400_000).optional(),
  waiting_on: z.string().max(32).optional(),
  /**
   * Held because the receiver refuses this probe itself (a block, docs/probe.md "Blocks"), until `retry_after_ms`:
   * the caller lets the line wait for it, or hands it to another probe, and never answers it from the block.
   */
  refused: z.literal(true).optional(),
});
/** Notices in one batch answer at most (the probe keeps its newest). */
export const PROBE_MAX_BATCH_NOTICES = 50;
/**
 * How long a probe repeats an untrusted notice in its batch answers (longer than a job line's recheck takes to come
 * round), and so how far back the Worker believes one reaches: the probe keeps notices this long, the Worker takes back
 * answers no older than this.
 */
export const UNTRUSTED_NOTICE_WINDOW_MS = 2 * 3_600_000;
/**
 * After the addresses: what a receiver accepted in a span of time is not trusted (it was found accepting
 * everything, docs/probe.md "Receiver policy"): the caller sends its `valid` answers at these domains,
 * written in that span, back for a recheck. Wall-clock milliseconds.
 */
export const ProbeBatchNotice = z.object({
  untrusted: z.object({
    domains: z.array(z.string().min(1).max(253)).min(1).max(500),
    since_ms: z.number().int().min(0),
    until_ms: z.number().int().min(0),
  }),
});
export type ProbeBatchNotice = z.infer<typeof ProbeBatchNotice>;
/**
 * After the addresses: a receiver blocked this probe (docs/probe.md "Blocks"); what it refused at these domains in the
 * span, before the probe knew it for a block, was its refusal of us, not an answer: the caller takes back the
 * `policy_block` answers written in that span at those domains, and asks them again. Wall-clock milliseconds.
 */
export const ProbeBatchRefusedNotice = z.object({
  refused: z.object({
    domains: z.array(z.string().min(1).max(253)).min(1).max(500),
    since_ms: z.number().int().min(0),
    until_ms: z.number().int().min(0),
  }),
});
export type ProbeBatchRefusedNotice = z.infer<typeof ProbeBatchRefusedNotice>;
export const ProbeBatchLearnedNotice = z.object({ learned: z.array(LearnedRuleWire).min(1).max(PROBE_MAX_LEARNED_RULES) });
export const ProbeBatchLine = z.union([ProbeBatchAnswer, ProbeBatchDeferred, ProbeBatchNotice, ProbeBatchRefusedNotice, ProbeBatchLearnedNotice]);
export type ProbeBatchLine = z.infer<typeof ProbeBatchLine>;

const encoder = new TextEncoder();

/** WebCrypto's key type, named the same way in workerd's and Node's typings. */
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

async function hmacKey(secret: string, usage: "sign" | "verify"): Promise<HmacKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

function toHex(buf: ArrayBuffer | Uint8Array): string {
  return Array.from(buf instanceof Uint8Array ? buf : new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
}

function fromHex(hex: string): Uint8Array | null {
  if (!/^[0-9a-f]{64}$/.test(hex)) return null;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** 16 random bytes, hex: unique per request, so the probe can refuse a request it has seen. */
const NONCE = /^[0-9a-f]{32}$/;

/**
 * What is signed (v3): the probe's origin (scheme, host and port of the URL the Worker calls, as `new URL(url).origin`
 * spells it), the method, the path, the timestamp, the nonce and the body's SHA-256, one per line. A captured request
 * cannot be sent to another probe (each checks the origin against its own), to another path or with another method,
 * and, since the probe remembers nonces for the skew window, not twice.
 */
async function canonical(origin: string, method: string, path: string, timestamp: string, nonce: string, body: string): Promise<Uint8Array> {
  const bodyHash = toHex(await crypto.subtle.digest("SHA-256", encoder.encode(body)));
  return encoder.encode(`v3\n${origin}\n${method.toUpperCase()}\n${path}\n${timestamp}\n${nonce}\n${bodyHash}`);
}

/** The origin a request to this probe URL is signed for. */
export const probeOrigin = (url: string | URL) => new URL(url).origin;

/** The headers that sign one request to the probe at `origin`. */
export async function signProbeRequest(
  secret: string,
  request: { origin: string; method: string; path: string; body: string },
  nowSeconds = Math.floor(Date.now() / 1000),
  nonce = toHex(crypto.getRandomValues(new Uint8Array(16))),
): Promise<Record<string, string>> {
  const key = await hmacKey(secret, "sign");
  const timestamp = String(nowSeconds);
  const mac = await crypto.subtle.sign("HMAC", key, await canonical(request.origin, request.method, request.path, timestamp, nonce, request.body));
  return {
    [PROBE_TIMESTAMP_HEADER]: timestamp,
    [PROBE_NONCE_HEADER]: nonce,
    [PROBE_SIGNATURE_HEADER]: `v3=${toHex(mac)}`,
  };
}

export type ProbeSignatureHeaders = { timestamp: string | null | undefined; nonce: string | null | undefined; signature: string | null | undefined };
/** Headers that passed the checks made before the body is read. */
export type CheckedProbeHeaders = { timestamp: string; timestampSeconds: number; nonce: string; mac: Uint8Array };

/**
 * The checks that need no body: every header present and well formed, the timestamp within the
 * skew window. The probe makes them before it reads a byte of the body. Null: refuse.
 */
export function checkProbeHeaders(headers: ProbeSignatureHeaders, nowSeconds = Math.floor(Date.now() / 1000)): CheckedProbeHeaders | null {
  const { timestamp, nonce, signature } = headers;
  if (!timestamp || !nonce || !signature || !/^\d{1,12}$/.test(timestamp) || !NONCE.test(nonce)) return null;
  const ts = Number(timestamp);
  if (Math.abs(nowSeconds - ts) > PROBE_MAX_SKEW_SECONDS) return null;
  if (!signature.startsWith("v3=")) return null;
  const mac = fromHex(signature.slice(3));
  return mac ? { timestamp, timestampSeconds: ts, nonce, mac } : null;
}

/**
 * Checks a signature in constant time (WebCrypto's verify compares the MAC itself) over one of the receiving
 * probe's own origins (those it answers at: usually one), the method, path, timestamp, nonce and body. Returns
 * false for a missing, malformed, stale or wrong signature, or one made for another probe. Whether the nonce was
 * seen before is the receiver's to remember (probe/http/replay-guard.ts).
 */
export async function verifyProbeSignature(
  secret: string,
  request: { origins: readonly string[]; method: string; path: string; body: string },
  headers: ProbeSignatureHeaders | CheckedProbeHeaders,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<boolean> {
  const checked = "mac" in headers ? headers : checkProbeHeaders(headers, nowSeconds);
  if (!checked) return false;
  const key = await hmacKey(secret, "verify");
  for (const origin of request.origins) {
    const data = await canonical(origin, request.method, request.path, checked.timestamp, checked.nonce, request.body);
    if (await crypto.subtle.verify("HMAC", key, checked.mac, data)) return true;
  }
  return false;
}

/**
 * Why a PROBE_SECRET is too weak to sign with, or null. It must hold at least 32 random bytes, as
 * `openssl rand -base64 32` (44 characters), `openssl rand -hex 32` (64) or Node's
 * `randomBytes(32).toString("base64url")` (43) give: at least 43 characters, not a repetition of a
 * shorter string, and about 160 bits by the spread of its characters (a Shannon estimate: a random
 * hex string of 64 characters scores about 245, base64 of 32 bytes about 215; "a" repeated scores 0).
 */
export function probeSecretProblem(secret: string): string | null {
  const how = "make one with `openssl rand -base64 32`";
  if (secret.length < 43) return `PROBE_SECRET must hold at least 32 random bytes (43 or more characters): ${how}`;
  for (let period = 1; period <= secret.length / 2; period++) {
    if (secret.length % period === 0 && secret.slice(0, period).repeat(secret.length / period) === secret) {
      return `PROBE_SECRET repeats a shorter string, so it is not random: ${how}`;
    }
  }
  const counts = new Map<string, number>();
  for (const ch of secret) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= n * Math.log2(n / secret.length);
  if (bits < 160) return `PROBE_SECRET is too regular to be random: ${how}`;
  return null;
}
