/**
 * The probe's public HTTP surface (docs/probe.md "The SMTP probe"): POST /v1/probe (one address) and
 * POST /v1/probe/batch (many, streamed back as NDJSON), both signed by the Worker for this probe's own origin and
 * served by the same scheduler, and GET /healthz, which says only whether the probe takes work and the self-audit's
 * status (its findings, public addresses included, and the scheduler's figures are on the metrics listener,
 * probe/http/metrics.ts). A body is bounded before it is read, the signature checked before it is parsed, and every
 * answer parsed through the shared schema before it is sent.
 */
import { Hono, type Context } from "hono";
import {
  checkProbeHeaders,
  PROBE_BATCH_PATH,
  PROBE_MAX_BATCH_BODY_BYTES,
  PROBE_MAX_BODY_BYTES,
  PROBE_NONCE_HEADER,
  PROBE_PATH,
  PROBE_REPUTATION_HEADER,
  PROBE_SIGNATURE_HEADER,
  PROBE_TIMESTAMP_HEADER,
  ProbeBatchLine,
  PROBE_MAX_BATCH_NOTICES,
  ProbeBatchRequest,
  ProbeRequest,
  ProbeResponse,
  verifyProbeSignature,
} from "../../shared/probe-contract.ts";
import { readBodyWithin } from "../../shared/bounded-body.ts";
import { monotonicNow } from "../clock.ts";
import type { ProbeConfig } from "../config.ts";
import { runBatchProbe, runProbe, type ProbeDeps } from "../probe.ts";
import { ReputationAudit } from "../reputation.ts";
import { ReplayGuard } from "./replay-guard.ts";
import { Scheduler } from "../qmgr/scheduler.ts";

export type ProbeService = ProbeDeps & {
  config: ProbeConfig;
  /** Set on SIGTERM: new requests are answered 503 while the ones in flight finish. */
  draining: boolean;
  /** The nonces of requests accepted within the signature window. */
  replays: ReplayGuard;
  /**
   * The origins this probe answers at (PROBE_ORIGIN, else its loopback URLs; set by startProbeServer once the port
   * is bound): a request signed for any other origin, another probe's, is refused.
   */
  origins: string[];
  /** The self-audit of the probe's public addresses (started by startProbeServer, not here). */
  audit: ReputationAudit;
};

export function createProbeService(config: ProbeConfig, options: { audit?: ReputationAudit } = {}): ProbeService {
  return { config, scheduler: new Scheduler(config), draining: false, replays: new ReplayGuard(), origins: [], audit: options.audit ?? new ReputationAudit(config) };
}

const busy = (c: Context, why: string) => c.json({ error: why }, 503, { "Retry-After": "1" });

const unauthorized = (c: Context) => c.json({ error: "Unauthorized" }, 401);

/**
 * The signed body as text, or the error response to send instead. Headers first: a request whose
 * timestamp is stale or whose signature headers are missing is refused before a byte of its body is
 * read. Then the body, bounded; then the MAC over this probe's origin, method, path, timestamp, nonce and body;
 * then the nonce, which must not have been seen within the window.
 */
async function signedBody(c: Context, service: ProbeService, limit: number): Promise<string | Response> {
  const headers = checkProbeHeaders({
    timestamp: c.req.header(PROBE_TIMESTAMP_HEADER),
    nonce: c.req.header(PROBE_NONCE_HEADER),
    signature: c.req.header(PROBE_SIGNATURE_HEADER),
  });
  if (!headers) return unauthorized(c);
  const declared = Number(c.req.header("content-length") ?? "0");
  const body = declared > limit ? null : await readBodyWithin(c.req.raw.body, limit);
  if (body === null) return c.json({ error: "Request body too large" }, 413);
  const signed = await verifyProbeSignature(service.config.secret, { origins: service.origins, method: c.req.method, path: c.req.path, body }, headers);
  if (!signed) return unauthorized(c);
  const nonce = service.replays.admit(headers.nonce, headers.timestampSeconds);
  if (nonce === "replayed") return unauthorized(c);
  if (nonce === "full") return busy(c, "Probe busy");
  return body;
}

/** Parses JSON through a schema, or gives the 400 that says what is wrong. */
function parseBody<T>(c: Context, body: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } }): T | Response {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return c.json({ error: "Malformed JSON body" }, 400);
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  return c.json({ error: `Invalid probe request: ${issue.path.join(".") || "body"}: ${issue.message}` }, 400);
}

export function createProbeApp(service: ProbeService): Hono {
  const app = new Hono();
  const { scheduler } = service;

  // Every answer says how the self-audit last found this probe, so the Worker can rank it (edge/probe-client.ts).
  app.use(async (c, next) => {
    await next();
    c.res.headers.set(PROBE_REPUTATION_HEADER, service.audit.snapshot().status);
  });

  // Public: nothing an outsider could map the fleet or its addresses with. Details: GET /status on the metrics listener.
  app.get("/healthz", (c) => c.json({ ok: !service.draining, reputation: service.audit.snapshot().status }));

  app.post(PROBE_PATH, async (c) => {
    const started = monotonicNow();
    const body = await signedBody(c, service, PROBE_MAX_BODY_BYTES);
    if (typeof body !== "string") return body;
    const request = parseBody(c, body, ProbeRequest);
    if (request instanceof Response) return request;
    if (service.draining) return busy(c, "Probe shutting down");
    if (!scheduler.admit(1)) return busy(c, "Probe busy");
    try {
      return c.json(ProbeResponse.parse(await runProbe(request, service, started)));
    } finally {
      scheduler.done(1);
    }
  });

  app.post(PROBE_BATCH_PATH, async (c) => {
    const started = monotonicNow();
    const body = await signedBody(c, service, PROBE_MAX_BATCH_BODY_BYTES);
    if (typeof body !== "string") return body;
    const batch = parseBody(c, body, ProbeBatchRequest);
    if (batch instanceof Response) return batch;
    if (service.draining) return busy(c, "Probe shutting down");
    // One check per distinct address: a list may repeat one, the answer is the same.
    const checks = new Map<string, (typeof batch.groups)[number]["mx"]>();
    for (const group of batch.groups) for (const email of group.emails) if (!checks.has(email)) checks.set(email, group.mx);
    if (!scheduler.admit(checks.size)) return busy(c, "Probe busy");
    // What other probes of the fleet learned, through the Worker: kept where stricter than this probe's own.
    if (batch.learned) scheduler.learnFromFleet(batch.learned);

    const encoder = new TextEncoder();
    const deferAt = batch.queue_ms === undefined ? undefined : started + batch.queue_ms;
    let open = true;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        let left = checks.size;
        for (const [email, mx] of checks) {
          void runBatchProbe({ email, mx, deadline_ms: batch.deadline_ms, catch_all_check: batch.catch_all_check }, service, started, { deferAt, tenant: batch.tenant ?? "" })
            .then(
              (result): ProbeBatchLine =>
                "deferred" in result
                  ? {
                      email,
                      deferred: true,
                      ...(result.retryAfterMs !== null ? { retry_after_ms: Math.min(result.retryAfterMs, 7 * 86_400_000) } : {}),
                      ...(result.waitingOn !== null ? { waiting_on: result.waitingOn } : {}),
                      ...(result.refused ? { refused: true as const } : {}),
                    }
                  : ProbeBatchLine.parse({ email, result }),
            )
            .catch((error: unknown): ProbeBatchLine => {
              // One check that throws must not take the others (or the process) with it: it goes
              // back to the caller unasked, to be asked again. The address stays out of the log.
              const message = (error instanceof Error ? error.message : String(error)).slice(0, 200).replace(/[^\s<>"']+@[^\s<>"']+/g, "[address]");
              console.error(JSON.stringify({ level: "error", msg: "batch check failed", error: error instanceof Error ? error.name : "Error", message }));
              return { email, deferred: true };
            })
            .then((line) => {
              if (open) controller.enqueue(encoder.encode(JSON.stringify(line) + "\n"));
            })
            .finally(() => {
              scheduler.done(1);
              if (--left === 0 && open) {
                open = false;
                // Then the notices of answers no longer trusted or refused by a block (probe/policy/untrusted.ts), the newest last,
                // and what receivers taught this probe, for the Worker to hand to the fleet (policy/learned.ts).
                for (const n of scheduler.untrusted.current().slice(-PROBE_MAX_BATCH_NOTICES)) {
                  const span = { domains: n.domains, since_ms: n.sinceMs, until_ms: n.untilMs };
                  const notice: ProbeBatchLine = n.kind === "refused" ? { refused: span } : { untrusted: span };
                  controller.enqueue(encoder.encode(JSON.stringify(notice) + "\n"));
                }
                const learned = scheduler.learnedWire();
                if (learned.length > 0) controller.enqueue(encoder.encode(JSON.stringify({ learned } satisfies ProbeBatchLine) + "\n"));
                controller.close();
              }
            });
        }
      },
      cancel() {
        // The caller went away; the checks still end at their deadlines, their answers are dropped.
        open = false;
      },
    });
    return new Response(stream, { status: 200, headers: { "content-type": "application/x-ndjson", "cache-control": "no-store" } });
  });

  app.notFound((c) => c.json({ error: "Not found" }, 404));
  app.onError((err, c) => {
    console.error(JSON.stringify({ level: "error", error: err.name, message: err.message.slice(0, 200) }));
    return c.json({ error: "Internal server error" }, 500);
  });
  return app;
}
