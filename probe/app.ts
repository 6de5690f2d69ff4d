/**
 * The probe's HTTP surface (README "The SMTP probe"): POST /v1/probe, signed by the Worker, and GET /healthz.
 * The body is bounded before it is read, the signature checked before it is parsed, and the
 * answer parsed through the shared schema before it is sent.
 */
import { Hono } from "hono";
import {
  PROBE_MAX_BODY_BYTES,
  PROBE_PATH,
  PROBE_SIGNATURE_HEADER,
  PROBE_TIMESTAMP_HEADER,
  ProbeRequest,
  ProbeResponse,
  verifyProbeSignature,
} from "../shared/probe-contract.ts";
import { readBodyWithin } from "../shared/bounded-body.ts";
import { CatchAllCache } from "./catch-all-cache.ts";
import type { ProbeConfig } from "./config.ts";
import { KeyedLimiter, Limiter } from "./limits.ts";
import { runProbe, type ProbeDeps } from "./probe.ts";

const CATCH_ALL_CACHE_ENTRIES = 100_000;

export type ProbeService = ProbeDeps & { global: Limiter; secret: string; queueWaitMs: number };

export function createProbeService(config: ProbeConfig): ProbeService {
  return {
    config,
    secret: config.secret,
    queueWaitMs: config.queueWaitMs,
    global: new Limiter(config.maxConcurrency),
    perDestination: new KeyedLimiter(config.maxPerDestination),
    catchAllCache: new CatchAllCache(config.catchAllTtlMs, CATCH_ALL_CACHE_ENTRIES),
  };
}

export function createProbeApp(service: ProbeService): Hono {
  const app = new Hono();

  app.get("/healthz", (c) =>
    c.json({ ok: true, in_flight: service.global.active, waiting: service.global.waiting, catch_all_cached_domains: service.catchAllCache.size }),
  );

  app.post(PROBE_PATH, async (c) => {
    const started = Date.now();
    const declared = Number(c.req.header("content-length") ?? "0");
    const body = declared > PROBE_MAX_BODY_BYTES ? null : await readBodyWithin(c.req.raw.body, PROBE_MAX_BODY_BYTES);
    if (body === null) return c.json({ error: "Request body too large" }, 413);
    const signed = await verifyProbeSignature(
      service.secret,
      body,
      c.req.header(PROBE_TIMESTAMP_HEADER),
      c.req.header(PROBE_SIGNATURE_HEADER),
    );
    if (!signed) return c.json({ error: "Unauthorized" }, 401);

    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      return c.json({ error: "Malformed JSON body" }, 400);
    }
    const parsed = ProbeRequest.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return c.json({ error: `Invalid probe request: ${issue.path.join(".") || "body"}: ${issue.message}` }, 400);
    }
    const request = parsed.data;

    // Wait for a global slot no longer than the queue bound, and never past the request's own deadline.
    const release = await service.global.acquire(Math.min(started + service.queueWaitMs, started + request.deadline_ms));
    if (!release) return c.json({ error: "Probe busy" }, 503, { "Retry-After": "1" });
    try {
      const result = await runProbe(request, service, started);
      return c.json(ProbeResponse.parse(result));
    } finally {
      release();
    }
  });

  app.notFound((c) => c.json({ error: "Not found" }, 404));
  app.onError((err, c) => {
    console.error(JSON.stringify({ level: "error", error: String(err) }));
    return c.json({ error: "Internal server error" }, 500);
  });
  return app;
}
