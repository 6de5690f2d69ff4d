/**
 * The probe's counters (prom-client), counted where things happen: a check answered, a RCPT reply read, a destination
 * that pushed back, a receiver family's events. A leaf: the scheduler's parts count through it without importing the
 * metrics listener (probe/http/metrics.ts serves these with the gauges it reads at each scrape). No label carries an
 * address, a domain or a recipient.
 */
import { Counter, Registry } from "prom-client";
import type { ProbeOutcome } from "../shared/smtp-outcome.ts";

/** Counters of this process: one probe per process in production. */
export const counters = new Registry();

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
  help: "By receiver family (shared/email/receivers.ts): rcpt (RCPTs sent), connection (SMTP sessions opened: connections per RCPT is connection/rcpt), unknown (refused as unknown users), deferral (batch checks handed back for the family's budget), budget_spent (single checks answered without asking), backoff and stop (the receiver asked us to back off, or blocked us), block (a refusal of our probe: probe/policy/block.ts, destination-wide or one recipient domain's), retest (a block tried again with one check), lifted (a re-test answered: the block ended), throttle (a rate reply: the key's rate is lowered for good), refused (checks held because our probe is blocked there: batch lines handed back to wait, single checks answered probe_refused), not_probed (a family we do not probe)",
  labelNames: ["family", "event"] as const,
  registers: [counters],
});

export type FamilyEvent = "rcpt" | "connection" | "unknown" | "deferral" | "budget_spent" | "backoff" | "stop" | "block" | "retest" | "lifted" | "throttle" | "refused" | "not_probed";
export const countFamilyEvent = (family: string, event: FamilyEvent) => familyEvents.inc({ family, event });

export const countCheck = (outcome: ProbeOutcome | "deferred") => checks.inc({ outcome });
export const countRcptReply = (code: number) => rcptReplies.inc({ class: `${Math.min(5, Math.max(2, Math.floor(code / 100)))}xx` });
export const countBudgetDeferral = () => harvestDeferrals.inc();

/** What a destination did that an operator should see: pushed back, tarpitted, or spent our unknown-recipient budget. */
export type DestinationEvent = "backoff" | "tarpit" | "harvest_budget";

/**
 * An operator's line about a mail server that pushed back: its IP address and what happened, never a
 * recipient. One JSON object per line, like the rest of the probe's logs.
 */
export function destinationEvent(event: DestinationEvent, address: string, fields: Record<string, string | number>): void {
  destinationEvents.inc({ event });
  console.warn(JSON.stringify({ level: "warn", msg: `destination ${event}`, destination: address, ...fields }));
}
