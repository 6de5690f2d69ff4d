/**
 * Outgoing webhooks (job callbacks, people events): where they may go, and one signed delivery attempt (send.ts runs
 * an attempt end to end). Only https URLs on the default
 * port, without userinfo, whose host is public (an IP literal checked at once, a name resolved over
 * DoH at delivery: DNS can change between the two, and every lookup must succeed and give only
 * public addresses), unless CALLBACK_ALLOW_PRIVATE_TARGETS=true (tests), which also allows http and
 * other ports. A delivery follows no redirects (a 3xx is a failure) and gives up after
 * CALLBACK_TIMEOUT_MS. docs/jobs.md "Callbacks" says what is left: the window between our lookup and the
 * runtime's own (DNS rebinding), and how a self-hosted runtime closes it.
 */
import { queryDoh } from "../../shared/doh.ts";
import { checkTarget } from "../../shared/targets.ts";
import { JOB_INPUT_ERRORS } from "../../shared/jobs.ts";
import { signWebhook } from "./signing.ts";

export const CALLBACK_TIMEOUT_MS = 5_000;
const MAX_URL_LENGTH = 2_048;
/** Delays before each retry of a failed delivery (Standard Webhooks' schedule): about 27 hours in all. */
export const CALLBACK_RETRY_DELAYS_SECONDS = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];

export type CallbackUrlCheck = { ok: true; url: string } | { ok: false; error: string };

const PRIVATE_NAMES = /(^|\.)(localhost|local|internal|home\.arpa)$/i;

export function checkCallbackUrl(raw: unknown, allowPrivate: boolean): CallbackUrlCheck {
  if (typeof raw !== "string" || raw.trim() === "") return { ok: false, error: JOB_INPUT_ERRORS.callbackNotAUrl };
  const text = raw.trim();
  if (text.length > MAX_URL_LENGTH) return { ok: false, error: `callback_url must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, error: JOB_INPUT_ERRORS.callbackNotAUrl };
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) return { ok: false, error: "callback_url must be an https URL" };
  // Credentials in a URL would be stored and sent in the clear; the signature authenticates us instead.
  if (url.username !== "" || url.password !== "") return { ok: false, error: "callback_url must not contain a user name or password" };
  // URL drops a port that is the scheme's default, so any port left is not 443.
  if (url.port !== "" && !allowPrivate) return { ok: false, error: "callback_url must use the default https port (443)" };
  // "localhost." is "localhost": one trailing dot (the root) is dropped before any check, and from the URL.
  if (url.hostname.endsWith(".") && !url.hostname.endsWith("..")) url.hostname = url.hostname.slice(0, -1);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (checkTargetLike(host)) {
    const target = checkTarget(host, allowPrivate);
    if (!target.ok) return { ok: false, error: `callback_url must point at a public address, not ${host} (${target.reason})` };
  } else if (!allowPrivate && (PRIVATE_NAMES.test(host) || !host.includes("."))) {
    return { ok: false, error: "callback_url must point at a public host name" };
  }
  return { ok: true, url: url.toString() };
}

/** An IP literal as a URL host holds one (dotted IPv4 or bracketed IPv6, which URL normalises to these). */
const checkTargetLike = (host: string) => /^[0-9.]+$/.test(host) || host.includes(":");

export type DeliveryResult = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/**
 * Every address the callback's host resolves to must be public; null when it is, else why not. A
 * failed lookup of either type refuses the delivery (it is retried on the usual schedule): the
 * runtime's fetch may well get an answer to the query we could not check.
 */
async function refusedAddress(host: string, dohUrl: string): Promise<string | null> {
  const answers = await Promise.all((["A", "AAAA"] as const).map((type) => queryDoh(dohUrl, host, type, { timeoutMs: 2_000 })));
  // NOERROR and NXDOMAIN are answers; a transport failure, SERVFAIL or REFUSED is not.
  const failed = (["A", "AAAA"] as const).filter((_, i) => {
    const a = answers[i]!;
    return a.failed || (a.rcode !== "NOERROR" && a.rcode !== "NXDOMAIN");
  });
  if (failed.length > 0) return `its host name's ${failed.join(" and ")} lookup failed`;
  const addresses = answers.flatMap((a) => (a.failed ? [] : (a.answers as string[])));
  if (addresses.length === 0) return "its host name has no address";
  for (const address of addresses) {
    const target = checkTarget(address, false);
    if (!target.ok) return `its host name resolves to a ${target.reason}`;
  }
  return null;
}

export async function deliverCallback(opts: {
  url: string;
  secret: string;
  eventId: string;
  body: string;
  dohUrl: string;
  allowPrivate: boolean;
}): Promise<DeliveryResult> {
  // Checked again: a URL stored before a rule was added must obey it too.
  const checked = checkCallbackUrl(opts.url, opts.allowPrivate);
  if (!checked.ok) return { ok: false, status: null, error: `callback refused: ${checked.error}` };
  const url = new URL(checked.url);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!opts.allowPrivate && !checkTargetLike(host)) {
    const refused = await refusedAddress(host, opts.dohUrl);
    if (refused) return { ok: false, status: null, error: `callback refused: ${refused}` };
  }
  const headers = {
    "content-type": "application/json",
    "user-agent": "contact-verify-api-webhooks/1",
    ...(await signWebhook(opts.secret, opts.eventId, Math.floor(Date.now() / 1000), opts.body)),
  };
  try {
    const res = await fetch(checked.url, { method: "POST", headers, body: opts.body, redirect: "manual", signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS) });
    await res.body?.cancel();
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    return { ok: false, status: res.status, error: res.status >= 300 && res.status < 400 ? "redirects are not followed" : `HTTP ${res.status}` };
  } catch (err) {
    const name = err instanceof Error ? err.name : "Error";
    return { ok: false, status: null, error: name === "TimeoutError" ? `no answer within ${CALLBACK_TIMEOUT_MS} ms` : `connection failed (${name})` };
  }
}
