/**
 * The probe's metrics in the Prometheus text format (prom-client), served on PROBE_METRICS_LISTEN (default
 * 127.0.0.1:9788), never on the public port: what an operator of a fleet graphs and alerts on (docs/probe.md
 * "Metrics"). Counters are counted where things happen (a check answered, a RCPT reply read, a destination
 * that pushed back); gauges are read from the scheduler at each scrape. No label carries an address, a domain
 * or a recipient: outcomes, reply classes and event kinds only.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import type { ProbeOutcome } from "../shared/smtp-outcome.ts";
import { AUDIT_CHECKS, type ReputationAudit } from "./reputation.ts";
import type { Scheduler } from "./scheduler.ts";
import { monotonicNow } from "./clock.ts";

/** Counters of this process: one probe per process in production. */
const counters = new Registry();

const checks = new Counter({
  name: "probe_checks_total",
  help: "Checks answered, by outcome (accepted, mailbox_not_found, policy_block, temporary_failure, ...); deferred ones handed back unasked",
  labelNames: ["outcome"] as const,
  registers: [counters],
});
const rcptReplies = new Counter({
  name: "probe_rcpt_replies_total",
  help: "Replies to RCPT TO by class (2xx, 4xx, 5xx), catch-all tests included: the 5xx share is what receivers punish",
  labelNames: ["class"] as const,
  registers: [counters],
});
const destinationEvents = new Counter({
  name: "probe_destination_events_total",
  help: "Mail servers that pushed back: backoff (refused or dropped a session, throttled), tarpit (a refusal came late), harvest_budget (our unknown-recipient budget there ran out)",
  labelNames: ["event"] as const,
  registers: [counters],
});

const harvestDeferrals = new Counter({
  name: "probe_harvest_deferrals_total",
  help: "Batch checks handed back unasked because their destination had spent its unknown-recipient budget (harvest-aware pacing)",
  registers: [counters],
});

const familyEvents = new Counter({
  name: "probe_family_events_total",
  help: "By receiver family (shared/email/receiver-policy.ts): rcpt (RCPTs sent), unknown (refused as unknown users), deferral (batch checks handed back for the family's budget), budget_spent (single checks answered without asking), backoff and stop (the receiver asked us to back off, or blocked us), not_probed (a family we do not probe)",
  labelNames: ["family", "event"] as const,
  registers: [counters],
});

export type FamilyEvent = "rcpt" | "unknown" | "deferral" | "budget_spent" | "backoff" | "stop" | "not_probed";
export const countFamilyEvent = (family: string, event: FamilyEvent) => familyEvents.inc({ family, event });

export const countCheck = (outcome: ProbeOutcome | "deferred") => checks.inc({ outcome });
export const countRcptReply = (code: number) => rcptReplies.inc({ class: `${Math.min(5, Math.max(2, Math.floor(code / 100)))}xx` });
export const countDestinationEvent = (event: "backoff" | "tarpit" | "harvest_budget") => destinationEvents.inc({ event });
export const countHarvestDeferral = () => harvestDeferrals.inc();

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
      for (const { family, left } of scheduler.budgets.familyLeft(monotonicNow())) this.set({ family }, left);
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

/**
 * Serves GET /metrics on host:port for this probe's scheduler and self-audit (a ProbeService has
 * both), plus the process's own (CPU, memory, event loop).
 */
export async function startMetricsServer(probe: { scheduler: Scheduler; audit: ReputationAudit }, host: string, port: number): Promise<MetricsServer> {
  const process = new Registry();
  collectDefaultMetrics({ register: process });
  const registry = Registry.merge([counters, schedulerGauges(probe.scheduler), auditGauges(probe.audit), process]);
  const server: Server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
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
  const { address, port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(":") ? `[${address}]` : address}:${bound}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
