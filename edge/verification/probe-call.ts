/**
 * One verification's call to the probe service (docs/probe.md "The SMTP probe"): a signed request and a hard
 * deadline, to the probes in the address's ranking (probe-ranking.ts). Any failure —
 * not configured, unreachable, an error status, a malformed answer, a missed deadline — comes back
 * as a reason string, never as a throw: the caller degrades to "no SMTP check performed". A probe
 * that refuses the request itself (401: PROBE_SECRET differs; 400: a request outside the contract)
 * is a configuration error: logged, and not failed over, since every probe would say the same.
 */
import { PROBE_PATH, ProbeResponse, probeOrigin, signProbeRequest, type ProbeRequest } from "../../shared/probe-contract.ts";
import type { ProbeCallFailure } from "../../shared/smtp-outcome.ts";
import { readBodyWithin } from "../../shared/bounded-body.ts";
import { writeLog } from "../log.ts";
import { noteProbeReputation, probeOrder, rankingKey } from "./probe-ranking.ts";

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
