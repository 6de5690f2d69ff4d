/**
 * Calls the probe service (README "The SMTP probe") with a signed request and a hard deadline. Any failure —
 * not configured, unreachable, an error status, a malformed answer, a missed deadline — comes back
 * as a reason string, never as a throw: the caller degrades to "no SMTP check performed".
 */
import {
  PROBE_PATH,
  ProbeResponse,
  signProbeRequest,
  type ProbeRequest,
} from "../shared/probe-contract.ts";
import { readBodyWithin } from "../shared/bounded-body.ts";

export type ProbeCallResult =
  | { ok: true; response: ProbeResponse; ms: number }
  | { ok: false; reason: "not_configured" | "unreachable" | "error_status" | "bad_response" | "deadline"; ms: number };

/** Time the probe's HTTP answer may take beyond its own deadline (network and JSON). */
const RESPONSE_GRACE_MS = 750;
const MAX_RESPONSE_BYTES = 64 * 1024;
/** A second probe is only worth asking when at least this much of the deadline is left. */
const MIN_FAILOVER_BUDGET_MS = 1_000;

/**
 * The probes in the order to ask them for one domain: a stable rotation by a hash of the domain,
 * so that one domain's catch-all cache and per-destination limits live on one probe while the
 * fleet shares the load. The others follow as fallbacks.
 */
export function probeOrder(urls: readonly string[], domain: string): string[] {
  if (urls.length <= 1) return [...urls];
  let hash = 0x811c9dc5; // FNV-1a, 32 bits
  for (let i = 0; i < domain.length; i++) hash = Math.imul(hash ^ domain.charCodeAt(i), 0x01000193) >>> 0;
  const start = hash % urls.length;
  return [...urls.slice(start), ...urls.slice(0, start)];
}

/**
 * Asks the domain's probe; when it cannot be reached or answers an error status (a busy probe
 * says 503), asks the next one with what is left of the deadline. A malformed answer or a missed
 * deadline ends the call: the deadline is the user's, not the fleet's.
 */
export async function callProbe(
  probeUrls: readonly string[],
  secret: string | undefined,
  request: ProbeRequest,
): Promise<ProbeCallResult> {
  if (probeUrls.length === 0 || !secret) return { ok: false, reason: "not_configured", ms: 0 };
  const started = Date.now();
  const domain = request.email.slice(request.email.lastIndexOf("@") + 1);
  let last: ProbeCallResult | null = null;
  for (const url of probeOrder(probeUrls, domain)) {
    const left = request.deadline_ms - (Date.now() - started);
    if (last && left < MIN_FAILOVER_BUDGET_MS) break;
    const result = await callOneProbe(url, secret, { ...request, deadline_ms: left });
    last = { ...result, ms: Date.now() - started };
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
    const headers = { "content-type": "application/json", ...(await signProbeRequest(secret, body)) };
    const res = await fetch(new URL(PROBE_PATH, probeUrl), { method: "POST", headers, body, signal: controller.signal });
    if (!res.ok) {
      await res.body?.cancel();
      return { ok: false, reason: "error_status", ms: elapsed() };
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
