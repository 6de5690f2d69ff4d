/**
 * Harvest-aware pacing for one destination address (docs/probe.md "Unknown recipients"). Receiving
 * gateways defend against directory harvesting by the share of a client's recipients that are unknown
 * users, not by connections: Forcepoint blocks a client for hours once half of its recipients in 60 s
 * are unknown, Trend Micro's example at more than 5 of more than 10 in an hour. A customer's dirty
 * list is exactly that pattern, so each destination address keeps a budget:
 *
 * - in any PROBE_DESTINATION_WINDOW_SECONDS, once 10 RCPTs were sent, at most
 *   PROBE_DESTINATION_UNKNOWN_RATIO of them refused as unknown users (5.1.x);
 * - at most PROBE_DESTINATION_UNKNOWN_PER_HOUR unknown-user refusals in any hour.
 *
 * Nobody knows before asking which address is unknown, so a RCPT is charged its *risk*: the share of
 * unknown users among the recent answers to its lane (a bulk tenant, or the single checks) at this
 * address, smoothed towards one half while there are few; the catch-all test's random address is a
 * certain unknown. A RCPT still waiting for its reply counts at its risk; for the hourly limit at
 * worst (as unknown), so that limit is never passed. Work from a lane whose addresses are mostly good
 * costs less than the ratio and so makes room for the rest: clean work is mixed in with dirty work
 * where there is any, and a dirty list alone goes only as fast as the budget allows.
 *
 * Pure: no timers, every decision takes `now` (the probe's monotonic clock).
 */
import type { ProbeConfig } from "./config.ts";

export type HarvestConfig = Pick<ProbeConfig, "unknownRatio" | "unknownWindowMs" | "unknownPerHour">;

/** Below this many RCPTs in the window, the share is not judged (Forcepoint judges from 20). */
export const MIN_SAMPLE = 10;
const HOUR_MS = 3_600_000;
/** A lane's risk is (unknown + PRIOR_UNKNOWN) / (answered + PRIOR_WEIGHT) over its last answers: one half with none yet. */
const PRIOR_UNKNOWN = 1;
const PRIOR_WEIGHT = 2;
/** The answers per lane (and address) a risk is read from, at most, within the last hour. */
const LANE_MEMORY = 100;

/** The lane of a check: a bulk tenant, or null for the single checks (a person waiting). */
export type HarvestLane = string | null;

/**
 * The lane of the catch-all tests' random addresses: certain unknown users wherever the server is
 * not catch-all, so they count in the share but say nothing about the lane whose check they rode with.
 */
export const CATCH_ALL_LANE = "\u0000catch-all";

type RcptState = "pending" | "unknown" | "known" | "cancelled";

/** One RCPT sent to this address, from its sending to the end of the window. */
export class HarvestRcpt {
  state: RcptState = "pending";
  /** Still counted: not yet older than the window. */
  inWindow = true;
  constructor(
    readonly at: number,
    readonly lane: HarvestLane,
    readonly risk: number,
    private readonly budget: HarvestBudget,
  ) {}

  /** The reply came: refused as an unknown user, or anything else. */
  replied(unknown: boolean, now: number): void {
    if (this.state === "pending") this.budget.settle(this, unknown ? "unknown" : "known", now);
  }

  /** Never sent after all (the session was found dead before it went out). */
  cancel(now: number): void {
    if (this.state === "pending") this.budget.settle(this, "cancelled", now);
  }

  /** The transaction ended without a reply to it: sent, not refused as unknown. */
  close(now: number): void {
    if (this.state === "pending") this.budget.settle(this, "known", now);
  }
}

/** What one transaction being assembled would add, on top of what the window holds. */
export type HarvestPlan = { sent: number; unknown: number; hourWorst: number };

/** A lane's last answers at this address (refused as unknown or not), and its RCPTs awaiting a reply. */
type LaneHistory = { answers: { at: number; unknown: boolean }[]; unknown: number; pending: number };

export class HarvestBudget {
  /** RCPTs of the last window, oldest first; the counts below are kept in step with it. */
  readonly #window: HarvestRcpt[] = [];
  #head = 0;
  #sent = 0;
  #unknown = 0;
  #pending = 0;
  #pendingRisk = 0;
  readonly #lanes = new Map<HarvestLane, LaneHistory>();
  /** When each unknown-user refusal of the last hour came, oldest first (kept only with an hourly limit). */
  readonly #unknownTimes: number[] = [];

  constructor(private readonly config: HarvestConfig) {}

  /** Whether any limit is in force at all (if not, nothing is counted). */
  get enabled(): boolean {
    return this.config.unknownRatio < 1 || this.config.unknownPerHour > 0;
  }

  /** The lane's history with answers older than the hour (or beyond LANE_MEMORY) dropped; an empty one for a lane not seen. */
  #lane(lane: HarvestLane, now: number, create = true): LaneHistory {
    let h = this.#lanes.get(lane);
    if (!h) {
      h = { answers: [], unknown: 0, pending: 0 };
      if (!create) return h;
      this.#lanes.set(lane, h);
    }
    let drop = 0;
    while (drop < h.answers.length && (h.answers.length - drop > LANE_MEMORY || h.answers[drop]!.at <= now - HOUR_MS)) {
      if (h.answers[drop]!.unknown) h.unknown--;
      drop++;
    }
    if (drop > 0) h.answers.splice(0, drop);
    return h;
  }

  /** @internal A RCPT's reply (or its absence) moves it out of pending. */
  settle(r: HarvestRcpt, state: Exclude<RcptState, "pending">, now: number): void {
    r.state = state;
    const lane = this.#lane(r.lane, now);
    lane.pending--;
    if (state !== "cancelled") {
      lane.answers.push({ at: now, unknown: state === "unknown" });
      if (state === "unknown") lane.unknown++;
    }
    if (state === "unknown" && this.config.unknownPerHour > 0) this.#unknownTimes.push(now);
    if (lane.answers.length === 0 && lane.pending === 0) this.#lanes.delete(r.lane);
    if (!r.inWindow) return;
    this.#pending--;
    this.#pendingRisk -= r.risk;
    if (state === "cancelled") return void this.#sent--;
    if (state === "unknown") this.#unknown++;
  }

  #expire(now: number): void {
    const since = now - this.config.unknownWindowMs;
    while (this.#head < this.#window.length && this.#window[this.#head]!.at <= since) {
      const r = this.#window[this.#head++]!;
      r.inWindow = false;
      if (r.state === "cancelled") continue;
      this.#sent--;
      if (r.state === "pending") {
        this.#pending--;
        this.#pendingRisk -= r.risk;
      } else if (r.state === "unknown") this.#unknown--;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#window.length) {
      this.#window.splice(0, this.#head);
      this.#head = 0;
    }
    const hourAgo = now - HOUR_MS;
    let drop = 0;
    while (drop < this.#unknownTimes.length && this.#unknownTimes[drop]! <= hourAgo) drop++;
    if (drop > 0) this.#unknownTimes.splice(0, drop);
  }

  /** The share of unknown users a RCPT of `lane` is expected to be, from its last answers at this address. */
  risk(lane: HarvestLane, now: number): number {
    const h = this.#lane(lane, now, false);
    return (h.unknown + PRIOR_UNKNOWN) / (h.answers.length + PRIOR_WEIGHT);
  }

  /**
   * Whether `lane`'s work lowers the share whatever the window holds, so that it may go even when the
   * share is over the ratio (clean work mixed in): at least 10 answers, and a pessimistic reading of
   * them, its RCPTs awaiting a reply (and `extra` more) counted as unknown, still within the ratio.
   * Counting the ones in flight is what keeps a lane that turns dirty from running ahead of its answers.
   */
  lowersShare(lane: HarvestLane, extra: number, now: number): boolean {
    if (lane === CATCH_ALL_LANE) return false;
    const h = this.#lane(lane, now, false);
    if (h.answers.length < MIN_SAMPLE) return false;
    const inFlight = h.pending + extra;
    return (h.unknown + inFlight + PRIOR_WEIGHT) / (h.answers.length + inFlight + PRIOR_WEIGHT) <= this.config.unknownRatio;
  }

  /** The window as it stands: the start of a plan for the next transaction. */
  plan(now: number): HarvestPlan {
    this.#expire(now);
    return { sent: this.#sent, unknown: this.#unknown + this.#pendingRisk, hourWorst: this.#unknownTimes.length + this.#pending };
  }

  /**
   * Whether `rcpts` more RCPTs of total risk `risk` stay within both limits; `lowers`: they are work
   * that lowers the share (lowersShare), which may go however high the share is now.
   */
  fits(plan: HarvestPlan, rcpts: number, risk: number, lowers = false): boolean {
    const c = this.config;
    if (c.unknownPerHour > 0 && plan.hourWorst + rcpts > c.unknownPerHour) return false;
    const sent = plan.sent + rcpts;
    return c.unknownRatio >= 1 || sent < MIN_SAMPLE || plan.unknown + risk <= c.unknownRatio * sent || lowers;
  }

  /** Adds what was just put in the transaction to the plan. */
  add(plan: HarvestPlan, rcpts: number, risk: number): void {
    plan.sent += rcpts;
    plan.unknown += risk;
    plan.hourWorst += rcpts;
  }

  /** Whether one RCPT of `lane` may go now. */
  admits(lane: HarvestLane, now: number): boolean {
    return !this.enabled || this.fits(this.plan(now), 1, this.risk(lane, now), this.lowersShare(lane, 1, now));
  }

  /** A RCPT going out now, charged at `risk`: tell it the reply. */
  sent(lane: HarvestLane, risk: number, now: number): HarvestRcpt {
    this.#expire(now);
    const rcpt = new HarvestRcpt(now, lane, risk, this);
    this.#window.push(rcpt);
    this.#lane(lane, now).pending++;
    this.#sent++;
    this.#pending++;
    this.#pendingRisk += risk;
    return rcpt;
  }

  /** When the budget next grows by itself (the oldest RCPT leaves the window, or a refusal the hour), or null. */
  nextRelief(now: number): number | null {
    this.#expire(now);
    const times: number[] = [];
    const oldest = this.#window[this.#head];
    if (oldest) times.push(oldest.at + this.config.unknownWindowMs);
    const first = this.#unknownTimes[0];
    if (first !== undefined && this.#unknownTimes.length + this.#pending >= this.config.unknownPerHour) times.push(first + HOUR_MS);
    return times.length ? Math.max(now + 1, Math.min(...times)) : null;
  }

  /** For the log and tests: the window's RCPTs and refusals as unknown, and the hour's refusals. */
  counts(now: number): { sent_in_window: number; unknown_in_window: number; unknown_last_hour: number } {
    this.#expire(now);
    return { sent_in_window: this.#sent, unknown_in_window: this.#unknown, unknown_last_hour: this.#unknownTimes.length };
  }
}

/** Whether a RCPT reply is the refusal harvest defences count: an unknown user. */
export function isUnknownUser(cls: string, reply: { code: number; enhanced: string | null }): boolean {
  return cls === "mailbox_not_found" || (reply.code >= 500 && reply.enhanced !== null && reply.enhanced.startsWith("5.1."));
}
