/**
 * The Worker's side of POST /v1/probe/batch (docs/probe.md "The SMTP probe"): one signed request, then the
 * NDJSON answer read line by line as it streams, each line bounded and parsed through the shared
 * contract before anything looks at it. The probe's failures never throw: a probe that cannot be
 * reached, answers an error status or breaks off mid-stream leaves the addresses it has not answered
 * to the caller. Only what `onLine` throws propagates, after the stream is cancelled.
 */
import {
  PROBE_BATCH_PATH,
  PROBE_MAX_BATCH_ADDRESSES,
  PROBE_MAX_BATCH_NOTICES,
  ProbeBatchLine,
  probeOrigin,
  signProbeRequest,
  type ProbeBatchRequest,
} from "../../shared/probe-contract.ts";
import { noteProbeReputation } from "./probe-ranking.ts";

/** A ProbeResponse line is a few kilobytes at most (64 attempts, 512-character replies). */
const MAX_LINE_BYTES = 256 * 1024;
/** Time the answer may take beyond the batch's own deadline (network, the last lines). */
const RESPONSE_GRACE_MS = 5_000;

export type BatchCallEnd =
  | { ok: true; lines: number }
  | { ok: false; reason: "unreachable" | "error_status" | "bad_response" | "deadline"; status: number | null; lines: number };

export async function callProbeBatch(
  probeUrl: string,
  secret: string,
  request: ProbeBatchRequest,
  onLine: (line: ProbeBatchLine) => void | Promise<void>,
): Promise<BatchCallEnd> {
  const body = JSON.stringify(request);
  const signal = AbortSignal.timeout(request.deadline_ms + RESPONSE_GRACE_MS);
  let lines = 0;
  let notices = 0;
  const fail = (reason: Extract<BatchCallEnd, { ok: false }>["reason"], status: number | null = null): BatchCallEnd => ({ ok: false, reason, status, lines });
  let res: Response;
  try {
    const headers = { "content-type": "application/json", ...(await signProbeRequest(secret, { origin: probeOrigin(probeUrl), method: "POST", path: PROBE_BATCH_PATH, body })) };
    res = await fetch(new URL(PROBE_BATCH_PATH, probeUrl), { method: "POST", headers, body, signal });
    noteProbeReputation(probeUrl, res.headers);
  } catch {
    return fail(signal.aborted ? "deadline" : "unreachable");
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    return fail("error_status", res.status);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  /** Stops reading; the probe sees its stream cancelled and stops sending (its checks end at their deadlines). */
  const stop = () => reader.cancel().catch(() => undefined);
  let buffered = "";
  for (;;) {
    // Only the read is the probe's failure; what `onLine` throws (the answer writer's database) is
    // the caller's, and propagates once the probe has been told to stop.
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch {
      return fail(signal.aborted ? "deadline" : "unreachable", res.status);
    }
    if (chunk.value) buffered += chunk.value;
    let nl: number;
    while ((nl = buffered.indexOf("\n")) !== -1) {
      const text = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (text.trim() === "") continue;
      const parsed = ProbeBatchLine.safeParse(safeJson(text));
      const notice = parsed.success && !("email" in parsed.data);
      const tooMany = parsed.success && (notice ? ++notices > PROBE_MAX_BATCH_NOTICES + 1 : ++lines > PROBE_MAX_BATCH_ADDRESSES);
      if (!parsed.success || tooMany) {
        await stop();
        return fail("bad_response", res.status);
      }
      try {
        await onLine(parsed.data);
      } catch (error) {
        await stop();
        throw error;
      }
    }
    if (buffered.length > MAX_LINE_BYTES) {
      await stop();
      return fail("bad_response", res.status);
    }
    if (chunk.done) break;
  }
  return buffered.trim() === "" ? { ok: true, lines } : fail("bad_response", res.status);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
