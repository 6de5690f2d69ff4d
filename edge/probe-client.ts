/**
 * Calls the probe service (docs/probe.md "The SMTP probe") with a signed request and a hard deadline. Any failure —
 * not configured, unreachable, an error status, a malformed answer, a missed deadline — comes back
 * as a reason string, never as a throw: the caller degrades to "no SMTP check performed". A probe
 * that refuses the request itself (401: PROBE_SECRET differs; 400: a request outside the contract)
 * is a configuration error: logged, and not failed over, since every probe would say the same.
 */
import {
  PROBE_PATH,
  PROBE_REPUTATION_HEADER,
  ProbeResponse,
  probeOrigin,
  signProbeRequest,
  type ProbeRequest,
} from "../shared/probe-contract.ts";
import type { ProbeCallFailure } from "../shared/smtp-outcome.ts";
import { readBodyWithin } from "../shared/bounded-body.ts";
import { writeLog } from "./log.ts";
import { TtlCache } from "../shared/ttl-cache.ts";
import { receiverFamily, receiverPolicy } from "../shared/email/receiver-policy.ts";
import { domainOf } from "../shared/email/syntax.ts";

export type ProbeCallResult =
  | { ok: true; response: ProbeResponse; ms: number }
  | { ok: false; reason: ProbeCallFailure; ms: number; status?: number };

/** What each refusal of the request itself says about our configuration. */
const CONFIGURATION_ERRORS: Record<number, string> = {
  401: "The probe refused the request's signature: the Worker's PROBE_SECRET is not the probe's, or PROBE_URL's origin is not one the probe answers at (its PROBE_ORIGIN)",
  400: "The probe refused the request as outside its contract: the Worker and the probe run different versions",
};

/** Time the probe's HTTP answer may take beyond its own deadline (network and JSON). */
const RESPONSE_GRACE_MS = 750;
const MAX_RESPONSE_BYTES = 64 * 1024;
/** A second probe is only worth asking when at least this much of the deadline is left. */
const MIN_FAILOVER_BUDGET_MS = 1_000;

/**
 * The probes in the order to ask them for one key (a domain, or at a fleetSpread family an address:
 * rankingKey), by rendezvous (highest random weight) hashing: each probe gets a score from a hash of
 * (probe, key) and the highest score goes first. A domain's catch-all cache, warm SMTP sessions and
 * per-destination limits therefore live on one probe, the fleet shares the domains evenly, and adding
 * or removing a probe moves only the keys whose first choice it is or becomes; the others keep their
 * probe. The rest of the order is where the key fails over to, and is just as stable.
 */
export function probeOrder(urls: readonly string[], key: string): string[] {
  if (urls.length <= 1) return [...urls];
  const scored = urls.map((url) => ({ url, score: rendezvousScore(url, key), degraded: degradedProbes.get(url) === true }));
  // A probe whose self-audit says receivers may refuse it goes last (still used when all are);
  // among the others, and among the degraded ones, the rendezvous order stands.
  scored.sort((a, b) => Number(a.degraded) - Number(b.degraded) || b.score - a.score || (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
  return scored.map((s) => s.url);
}

/**
 * What an address is ranked by (docs/probe.md "Several probes"): its domain, so a domain's warm
 * sessions, catch-all answer and per-destination budget live on one probe; or, at a family that
 * counts by our sending IP (fleetSpread: google, microsoft-eop), the address itself, so one big
 * domain's addresses spread over the healthy probes and N probes carry N budgets' worth of it.
 */
export function rankingKey(email: string, mx: readonly { host: string; preference: number }[]): string {
  return receiverPolicy(receiverFamily(mx)).fleetSpread ? email.toLowerCase() : domainOf(email);
}

/** The opaque tenant the probe shares each mail server and each receiver's budget by: a digest of the account, not its id. */
export async function probeTenant(accountId: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`tenant:${accountId}`)));
  return [...digest.slice(0, 12)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * What each probe's answers last said of its reputation (the PROBE_REPUTATION_HEADER it sends on every
 * answer; the probe audits itself every 15 minutes by default), kept per isolate for as long: a
 * probe not heard from since counts as healthy again. True: degraded.
 */
const degradedProbes = new TtlCache<string, boolean>(256);
const REPUTATION_MEMORY_MS = 15 * 60_000;

/** Notes the reputation a probe's answer carried (any answer, an error status too); a missing header changes nothing. */
export function noteProbeReputation(probeUrl: string, headers: Headers): void {
  const status = headers.get(PROBE_REPUTATION_HEADER);
  if (status !== "ok" && status !== "degraded") return;
  const degraded = status === "degraded";
  if (degraded && degradedProbes.get(probeUrl) !== true) writeLog("warn", { event: "probe_reputation_degraded", probe: new URL(probeUrl).origin });
  degradedProbes.set(probeUrl, degraded, REPUTATION_MEMORY_MS);
}

/** Forgets what probes said of their reputation (tests). */
export function forgetProbeReputations(): void {
  degradedProbes.clear();
}

/** FNV-1a over "probe\nkey", then murmur3's 32-bit finalizer so that similar inputs spread. */
function rendezvousScore(url: string, key: string): number {
  const input = `${url}\n${key}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < input.length; i++) h = Math.imul(h ^ input.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Asks the address's probe (rankingKey); when it cannot be reached or answers an error status (a busy probe
 * says 503), asks the next one with what is left of the deadline. A malformed answer, a missed
 * deadline or a configuration error (401, 400) ends the call: the deadline is the user's, not the
 * fleet's, and a refusal of our request would come from every probe alike.
 */
export async function callProbe(
  probeUrls: readonly string[],
  secret: string | undefined,
  request: ProbeRequest,
  requestId?: string,
): Promise<ProbeCallResult> {
  if (probeUrls.length === 0 || !secret) return { ok: false, reason: "not_configured", ms: 0 };
  const started = Date.now();
  let last: ProbeCallResult | null = null;
  for (const url of probeOrder(probeUrls, rankingKey(request.email, request.mx))) {
    const left = request.deadline_ms - (Date.now() - started);
    if (last && left < MIN_FAILOVER_BUDGET_MS) break;
    const result = await callOneProbe(url, secret, { ...request, deadline_ms: left });
    last = { ...result, ms: Date.now() - started };
    const status = result.ok ? undefined : result.status;
    const configurationError = status === undefined ? undefined : CONFIGURATION_ERRORS[status];
    if (configurationError) {
      writeLog("error", { event: "probe_configuration_error", request_id: requestId ?? null, probe: new URL(url).origin, status, message: configurationError });
      break;
    }
    if (result.ok || (result.reason !== "unreachable" && result.reason !== "error_status")) break;
  }
  return last!;
}

async function callOneProbe(probeUrl: string, secret: string, request: ProbeRequest): Promise<ProbeCallResult> {
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const body = JSON.stringify(request);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), request.deadline_ms + RESPONSE_GRACE_MS);
  try {
    const headers = { "content-type": "application/json", ...(await signProbeRequest(secret, { origin: probeOrigin(probeUrl), method: "POST", path: PROBE_PATH, body })) };
    const res = await fetch(new URL(PROBE_PATH, probeUrl), { method: "POST", headers, body, signal: controller.signal });
    noteProbeReputation(probeUrl, res.headers);
    if (!res.ok) {
      await res.body?.cancel();
      return { ok: false, reason: "error_status", status: res.status, ms: elapsed() };
    }
    const text = await readBodyWithin(res.body, MAX_RESPONSE_BYTES);
    if (text === null) return { ok: false, reason: "bad_response", ms: elapsed() };
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { ok: false, reason: "bad_response", ms: elapsed() };
    }
    const parsed = ProbeResponse.safeParse(json);
    if (!parsed.success) return { ok: false, reason: "bad_response", ms: elapsed() };
    return { ok: true, response: parsed.data, ms: elapsed() };
  } catch {
    return { ok: false, reason: controller.signal.aborted ? "deadline" : "unreachable", ms: elapsed() };
  } finally {
    clearTimeout(timer);
  }
}
