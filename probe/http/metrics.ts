/**
 * The probe's metrics in the Prometheus text format (prom-client), served on PROBE_METRICS_LISTEN (default
 * 127.0.0.1:9788), never on the public port: what an operator of a fleet graphs and alerts on (docs/probe.md
 * "Metrics"). Counters are counted where things happen (probe/counters.ts: a check answered, a RCPT reply read, a
 * destination that pushed back); gauges are read from the scheduler at each scrape. No label carries an address, a domain
 * or a recipient: outcomes, reply classes and event kinds only. The same listener serves GET /status, the
 * details the public /healthz keeps to itself: the scheduler's figures and the self-audit's findings.
 *
 * The listener answers only requests whose Host names it by an IP address or `localhost` with its own port: a page
 * in a browser on the probe's host could otherwise read it through DNS rebinding (its own name resolved to
 * 127.0.0.1), as scripts/libsql-server.ts refuses too.
 */
import type { BlockRecord } from "../policy/blocks.ts";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { isIP, type AddressInfo } from "node:net";
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { counters } from "../counters.ts";
import { AUDIT_CHECKS, type ReputationAudit } from "../reputation.ts";
import type { Scheduler } from "../qmgr/scheduler.ts";
import { monotonicNow } from "../clock.ts";

/** The gauges of one scheduler, read at each scrape. */
function schedulerGauges(scheduler: Scheduler): Registry {
  const registry = new Registry();
  const gauge = (name: string, help: string, read: (s: ReturnType<Scheduler["stats"]>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(scheduler.stats()));
      },
    });
  gauge("probe_checks_in_flight", "Checks admitted and not answered yet", (s) => s.checks_in_flight);
  gauge("probe_queue_depth", "Checks waiting: for a place among the destinations, or in a destination's queue", (s) => s.checks_queued);
  gauge("probe_sessions_open", "SMTP sessions open", (s) => s.sessions_open);
  gauge("probe_sessions_idle", "SMTP sessions open and idle (warm, waiting for work)", (s) => s.sessions_idle);
  gauge("probe_destinations", "Mail-server addresses the scheduler tracks", (s) => s.destinations);
  gauge("probe_catch_all_cached", "Domains whose catch-all answer is cached", (s) => s.catch_all_cached);
  new Gauge({
    name: "probe_family_budget_left",
    help: "Unknown-user refusals the hourly cap of a family keyed by our IP (google, microsoft-eop) still allows, after warm-up",
    labelNames: ["family"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { family, left } of scheduler.receivers.familyLeft(monotonicNow())) this.set({ family }, left);
    },
  });
  new Gauge({
    name: "probe_blocked_keys",
    help: "Budget keys (a family keyed by our IP, or a family and one MX address) that block this probe now (docs/probe.md \"Blocks\"): nothing is sent there until the block ends",
    labelNames: ["family"] as const,
    registers: [registry],
    collect() {
      this.reset();
      const byFamily = new Map<string, number>();
      for (const b of scheduler.receivers.blocked(monotonicNow())) byFamily.set(b.family, (byFamily.get(b.family) ?? 0) + 1);
      for (const [family, n] of byFamily) this.set({ family }, n);
    },
  });
  new Gauge({
    name: "probe_blocks",
    help: "Blocks of this probe in force (docs/probe.md \"How far a block reaches\"), by family and scope: destination (the whole budget key) or domain (one recipient domain there, a tenant's own block; the key's other domains go on)",
    labelNames: ["family", "scope"] as const,
    registers: [registry],
    collect() {
      this.reset();
      const counts = new Map<string, { family: string; scope: string; n: number }>();
      for (const b of scheduler.receivers.blocks.list(monotonicNow())) {
        const k = `${b.family} ${b.scope}`;
        const c = counts.get(k) ?? { family: b.family, scope: b.scope, n: 0 };
        c.n++;
        counts.set(k, c);
      }
      for (const c of counts.values()) this.set({ family: c.family, scope: c.scope }, c.n);
    },
  });
  new Gauge({
    name: "probe_learned_rules",
    help: "Budget keys with a rule learned from punishment (docs/probe.md \"What is learned\"), by kind: harvest (it blocked us: the 60 s share and a lower hourly cap for good), rate (it throttled us: a lower RCPT rate for good)",
    labelNames: ["kind"] as const,
    registers: [registry],
    collect() {
      let harvest = 0;
      let rate = 0;
      for (const [, r] of scheduler.receivers.learned.entries()) {
        if (r.harvest) harvest++;
        if (r.rateFactor < 1) rate++;
      }
      this.set({ kind: "harvest" }, harvest);
      this.set({ kind: "rate" }, rate);
    },
  });
  return registry;
}

/** The replay guard's size, read at each scrape: near its capacity, signed requests start being refused 503. */
function replayGauges(replays: { size: number; capacity: number }): Registry {
  const registry = new Registry();
  new Gauge({
    name: "probe_replay_guard_nonces",
    help: "Nonces of signed requests remembered within the signature window (the replay guard's size)",
    registers: [registry],
    collect() {
      this.set(replays.size);
    },
  });
  new Gauge({
    name: "probe_replay_guard_capacity",
    help: "Nonces the replay guard can hold; when full, new signed requests are answered 503",
    registers: [registry],
    collect() {
      this.set(replays.capacity);
    },
  });
  return registry;
}

/** The self-audit's gauges, read at each scrape (docs/probe.md "Self-audit"). */
function auditGauges(audit: ReputationAudit): Registry {
  const registry = new Registry();
  new Gauge({
    name: "probe_reputation_degraded",
    help: "1 when the self-audit found an error (wrong PTR or forward DNS, SPF not pass, listed on a blocklist), else 0",
    registers: [registry],
    collect() {
      this.set(audit.degraded ? 1 : 0);
    },
  });
  new Gauge({
    name: "probe_audit_check_ok",
    help: "1 when the self-audit check (ptr, fcrdns, spf, dnsbl) found no error for any public address, else 0",
    labelNames: ["check"] as const,
    registers: [registry],
    collect() {
      for (const check of AUDIT_CHECKS) this.set({ check }, audit.checkOk(check) ? 1 : 0);
    },
  });
  return registry;
}

export type MetricsServer = { url: string; close(): Promise<void> };

/** What the metrics listener reads: a ProbeService has all of it. */
export type MetricsSource = { scheduler: Scheduler; audit: ReputationAudit; replays?: { size: number; capacity: number }; readonly draining?: boolean };

/** A Host header naming this listener by an IP address or localhost, with its port: no DNS name can rebind to it. */
function hostAllowed(req: IncomingMessage, port: number): boolean {
  const host = req.headers.host?.toLowerCase() ?? "";
  const m = /^(\[[0-9a-f:.]+\]|[^:\[\]]+):(\d{1,5})$/.exec(host);
  if (!m || Number(m[2]) !== port) return false;
  const name = m[1]!.replace(/^\[|\]$/g, "");
  return name === "localhost" || isIP(name) !== 0;
}

/**
 * Serves GET /metrics on host:port for this probe's scheduler, self-audit and replay guard, plus the process's own
 * (CPU, memory, event loop), and GET /status (JSON: draining, the scheduler's figures, the self-audit's snapshot).
 */
export async function startMetricsServer(probe: MetricsSource, host: string, port: number): Promise<MetricsServer> {
  const process = new Registry();
  collectDefaultMetrics({ register: process });
  const registry = Registry.merge([counters, schedulerGauges(probe.scheduler), auditGauges(probe.audit), ...(probe.replays ? [replayGauges(probe.replays)] : []), process]);
  let bound = port;
  const server: Server = createServer((req, res) => {
    if (!hostAllowed(req, bound)) {
      res.writeHead(421, { "content-type": "text/plain" }).end("The Host header must name this listener by IP address or localhost\n");
      return;
    }
    const path = (req.url ?? "").split("?")[0];
    if (req.method === "GET" && path === "/status") {
      const now = monotonicNow();
      const receivers = {
        // What blocks us now, and what receivers taught us (docs/probe.md "Blocks", "What is learned"): MX addresses, never a recipient.
        blocked: probe.scheduler.receivers.blocked(now).map((b) => ({ key: b.key, family: b.family, seconds_left: Math.ceil((b.until - now) / 1000) })),
        learned: probe.scheduler.learnedWire(),
        // Every block in force with its scope (docs/probe.md "How far a block reaches"): a recipient domain names the tenant, never an address.
        blocks: blockStatus(probe.scheduler.receivers.blocks.list(now), now),
      };
      const status = { draining: probe.draining ?? false, ...probe.scheduler.stats(), replay_guard_nonces: probe.replays?.size ?? null, reputation: probe.audit.snapshot(), receivers };
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(status));
      return;
    }
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not found\n");
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
      () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics unavailable\n"),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  bound = address.port;
  return {
    url: `http://${address.address.includes(":") ? `[${address.address}]` : address.address}:${bound}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The blocks in force as GET /status shows them: probe-clock times as wall-clock ISO times. */
export function blockStatus(blocks: readonly BlockRecord[], now: number): Record<string, unknown>[] {
  const wall = (t: number) => new Date(Date.now() + (t - now)).toISOString();
  return blocks.map((b) => ({
    key: b.key,
    family: b.family,
    scope: b.scope,
    domain: b.domain,
    reply: b.reply,
    since: wall(b.since),
    until: wall(b.until),
    seconds_left: Math.ceil((b.until - now) / 1000),
    retests: b.retests,
    next_retest_at: b.nextRetestAt === null ? null : wall(b.nextRetestAt),
    confirmed: b.confirmed,
  }));
}
