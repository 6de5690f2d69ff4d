/**
 * Longer than 400 lines on purpose: the budget's arithmetic, pure: the window, the hour, the lanes and their snapshot keep one set of counts in step.
 * The unknown-recipient budget of one budget key (docs/probe.md "Receiver policy"): a receiver's
 * harvest defence counts the share of a client's recipients that are unknown users, and how many an
 * hour, and for some families (Google, Microsoft) it counts them by our sending IP across all its MX
 * addresses. The key is the receiver policy's (probe/policy/receivers.ts): one budget per family, or
 * per family and destination address. Its limits:
 *
 * - in any window (the family's: 60 s at gateways, an hour at Google), once `minSample` RCPTs were
 *   sent and more than `unknownFloor` unknown users are expected, at most `unknownRatio` of them;
 * - at most `unknownPerHour` unknown-user refusals an hour, RCPTs awaiting a reply counted as refusals;
 * - each lane (a customer) may spend a fair part of that hourly cap: 1/n of it with n lanes at work,
 *   and never more than LONE_LANE_SHARE of it alone, so a customer who arrives finds room; and so of the
 *   window's floor (1/n, and all but one alone): a dirty customer alone cannot fill the unknown users that never hold anything back, so a
 *   customer who arrives can still send a few, whose good answers then lower the share (issue 36: one account's
 *   random single checks beside another's clean job at a Forcepoint-style gateway);
 * - while the receiver asked us to back off (a pause) nothing goes.
 *
 * Nobody knows before asking which address is unknown, so a RCPT is charged its *risk*: the share of
 * unknown users among the recent answers to its lane, smoothed towards one half while there are few;
 * the catch-all test's random address is a certain unknown. Work from a lane whose answers *in the
 * window* are mostly good lowers the share and may go past the ratio (clean work mixed in), but never
 * past half (Forcepoint's trigger): a clean history older than the window cannot buy a burst.
 *
 * Pure: no timers, every decision takes `now` (the probe's clock, Unix-scale milliseconds).
 */
import { outcomeMeaning } from "../../shared/email/reasons.ts";
import type { RcptClass } from "../smtp/classify.ts";

/** The limits one budget applies; the object is the registry's, which may lower or raise them (warm-up). */
export type BudgetLimits = {
  unknownRatio: number;
  unknownWindowMs: number;
  unknownPerHour: number;
  /** RCPTs in the window before the share is judged (default MIN_SAMPLE). */
  minSample?: number;
  /**
   * Unknown users in the window that never hold anything back (default 0), read at worst: the
   * window's refusals plus every RCPT awaiting a reply, so that no more than this many can be refused.
   */
  unknownFloor?: number;
  /** The hour (shorter under PROBE_POLICY_TIME_SCALE). */
  hourMs?: number;
};

/** Below this many RCPTs in the window, the share is not judged (Forcepoint judges from 20). */
export const MIN_SAMPLE = 10;
const HOUR_MS = 3_600_000;
/** A lane's risk is (unknown + PRIOR_UNKNOWN) / (answered + PRIOR_WEIGHT) over its last answers: one half with none yet. */
const PRIOR_UNKNOWN = 1;
const PRIOR_WEIGHT = 2;
/** The answers per lane (and key) a risk is read from, at most, within the last hour. */
const LANE_MEMORY = 100;
/** The most of the hourly cap one lane may hold alone: the rest waits for a customer who arrives. */
export const LONE_LANE_SHARE = 0.8;
/** Work that lowers the share may go past the ratio, never past this share (Forcepoint blocks above half). */
const TRIGGER_SHARE = 0.5;

/** The lane of a check: its customer's tenant ("" when nobody was named). */
export type Tenant = string;

/**
 * The lane of the catch-all tests' random addresses: certain unknown users wherever the server is
 * not catch-all, so they count in the share but say nothing about the lane whose check they rode with.
 */
export const CATCH_ALL_LANE = "\u0000catch-all";

type RcptState = "pending" | "unknown" | "known" | "cancelled";

/** One RCPT sent under this budget, from its sending to the end of the window. */
export class BudgetRcpt {
  state: RcptState = "pending";
  /** Still counted: not yet older than the window. */
  inWindow = true;
  /** When its reply came (or it was closed or cancelled): it counts for a window after that. */
  endedAt: number | null = null;
  constructor(
    readonly at: number,
    /** Whose history its answer goes to (CATCH_ALL_LANE for a random address). */
    readonly lane: Tenant,
    /** Whose share of the hourly cap it spends: the customer, also for the random address riding with its check. */
    readonly owner: Tenant,
    readonly risk: number,
    private readonly budget: ReceiverBudget,
  ) {}

  /** The reply came: refused as an unknown user, or anything else. */
  replied(unknown: boolean, now: number): void {
    if (this.state === "pending") this.budget.record(this, unknown ? "unknown" : "known", now);
  }

  /** Never sent after all (the session was found dead before it went out). */
  cancel(now: number): void {
    if (this.state === "pending") this.budget.record(this, "cancelled", now);
  }

  /** The transaction ended without a reply to it: sent, not refused as unknown. */
  close(now: number): void {
    if (this.state === "pending") this.budget.record(this, "known", now);
  }
}

/** What one transaction being assembled would add, on top of what the window holds. */
export type BudgetPlan = {
  sent: number;
  /** Expected unknown users in the window: refusals, and RCPTs awaiting a reply at their risk. */
  unknown: number;
  /** Unknown users the window could hold at worst: refusals, and every RCPT awaiting a reply. */
  windowWorst: number;
  hourWorst: number;
  byOwner: Map<Tenant, number>;
  /** Each owner's unknown users the window could hold at worst (its refusals and RCPTs awaiting a reply there). */
  windowByOwner: Map<Tenant, number>;
};

/** A lane's last answers under this key (refused as unknown or not), and its RCPTs awaiting a reply. */
type LaneHistory = { answers: { at: number; unknown: boolean }[]; unknown: number; pending: number };

/** What survives a restart (probe/policy/probe-state.ts): the hour's refusals, the window's answers, a pause. */
export type BudgetSnapshot = {
  refusals: [at: number, owner: string][];
  answers: [at: number, lane: string, unknown: 0 | 1][];
  pause: { until: number; level: number; stop: boolean } | null;
};

export class ReceiverBudget {
  /** RCPTs of the last window, oldest first; the counts below are kept in step with it. */
  readonly #window: BudgetRcpt[] = [];
  #head = 0;
  #sent = 0;
  #unknown = 0;
  #pending = 0;
  #pendingRisk = 0;
  readonly #lanes = new Map<Tenant, LaneHistory>();
  /** Each unknown-user refusal of the last hour (when, whose), oldest first. */
  readonly #refusals: { at: number; owner: Tenant }[] = [];
  /** Per owner: refusals of the last hour and RCPTs in flight (the hourly cap's worst reading). */
  readonly #owners = new Map<Tenant, { refused: number; pending: number }>();
  #pause: { until: number; level: number; stop: boolean } | null = null;

  constructor(readonly limits: BudgetLimits) {}

  get #hourMs(): number {
    return this.limits.hourMs ?? HOUR_MS;
  }

  /** Whether any limit is in force at all (if not, nothing is counted). */
  get enabled(): boolean {
    return this.limits.unknownRatio < 1 || this.limits.unknownPerHour > 0;
  }

  #owner(owner: Tenant): { refused: number; pending: number } {
    let o = this.#owners.get(owner);
    if (!o) this.#owners.set(owner, (o = { refused: 0, pending: 0 }));
    return o;
  }

  #dropOwnerIfIdle(owner: Tenant): void {
    const o = this.#owners.get(owner);
    if (o && o.refused === 0 && o.pending === 0) this.#owners.delete(owner);
  }

  /** The lane's history with answers older than the hour (or beyond LANE_MEMORY) dropped; an empty one for a lane not seen. */
  #lane(lane: Tenant, now: number, create = true): LaneHistory {
    let h = this.#lanes.get(lane);
    if (!h) {
      h = { answers: [], unknown: 0, pending: 0 };
      if (!create) return h;
      this.#lanes.set(lane, h);
    }
    let drop = 0;
    while (drop < h.answers.length && (h.answers.length - drop > LANE_MEMORY || h.answers[drop]!.at <= now - this.#hourMs)) {
      if (h.answers[drop]!.unknown) h.unknown--;
      drop++;
    }
    if (drop > 0) h.answers.splice(0, drop);
    return h;
  }

  /** @internal A RCPT's reply (or its absence) moves it out of pending. */
  record(r: BudgetRcpt, state: Exclude<RcptState, "pending">, now: number): void {
    r.state = state;
    r.endedAt = now;
    const lane = this.#lane(r.lane, now);
    lane.pending--;
    if (state !== "cancelled") {
      lane.answers.push({ at: now, unknown: state === "unknown" });
      if (state === "unknown") lane.unknown++;
    }
    const owner = this.#owner(r.owner);
    owner.pending--;
    if (state === "unknown" && this.limits.unknownPerHour > 0) {
      this.#refusals.push({ at: now, owner: r.owner });
      owner.refused++;
    }
    this.#dropOwnerIfIdle(r.owner);
    if (lane.answers.length === 0 && lane.pending === 0) this.#lanes.delete(r.lane);
    if (!r.inWindow) return;
    this.#pending--;
    this.#pendingRisk -= r.risk;
    if (state === "cancelled") return void this.#sent--;
    if (state === "unknown") this.#unknown++;
  }

  /**
   * Drops what left the window: a RCPT counts until a window after its reply (the receiver counted it
   * when it arrived, which is before the reply; the time it took there must not shorten our memory of
   * it), and one awaiting its reply keeps counting, and so does every later one.
   */
  #expire(now: number): void {
    const since = now - this.limits.unknownWindowMs;
    while (this.#head < this.#window.length && (this.#window[this.#head]!.endedAt ?? Infinity) <= since) {
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
    const hourAgo = now - this.#hourMs;
    let drop = 0;
    while (drop < this.#refusals.length && this.#refusals[drop]!.at <= hourAgo) {
      const owner = this.#refusals[drop]!.owner;
      this.#owner(owner).refused--;
      this.#dropOwnerIfIdle(owner);
      drop++;
    }
    if (drop > 0) this.#refusals.splice(0, drop);
  }

  /** The share of unknown users a RCPT of `lane` is expected to be, from its last answers under this key. */
  risk(lane: Tenant, now: number): number {
    const h = this.#lane(lane, now, false);
    return (h.unknown + PRIOR_UNKNOWN) / (h.answers.length + PRIOR_WEIGHT);
  }

  /**
   * Whether `lane`'s work lowers the share whatever the window holds, so that it may go even when the
   * share is over the ratio (clean work mixed in): at least 10 answers *within the window*, and a
   * pessimistic reading of them, its RCPTs awaiting a reply (and `extra` more) counted as unknown,
   * still within the ratio. Only the window's answers count, as the receiver only counts those.
   */
  lowersShare(lane: Tenant, extra: number, now: number): boolean {
    if (lane === CATCH_ALL_LANE) return false;
    const h = this.#lane(lane, now, false);
    const since = now - this.limits.unknownWindowMs;
    let answered = 0;
    let unknown = 0;
    for (let i = h.answers.length - 1; i >= 0 && h.answers[i]!.at > since; i--) {
      answered++;
      if (h.answers[i]!.unknown) unknown++;
    }
    if (answered < MIN_SAMPLE) return false;
    const inFlight = h.pending + extra;
    return (unknown + inFlight + PRIOR_WEIGHT) / (answered + inFlight + PRIOR_WEIGHT) <= this.limits.unknownRatio;
  }

  /**
   * The window as it stands: the start of a plan for the next transaction. `replied`: as it will stand
   * once every RCPT awaiting a reply is answered as a known user (what their replies free, in moments).
   */
  plan(now: number, replied = false): BudgetPlan {
    this.#expire(now);
    const pending = replied ? 0 : this.#pending;
    const windowByOwner = new Map<Tenant, number>();
    for (let i = this.#head; i < this.#window.length; i++) {
      const r = this.#window[i]!;
      if (r.state === "unknown" || (r.state === "pending" && !replied)) windowByOwner.set(r.owner, (windowByOwner.get(r.owner) ?? 0) + 1);
    }
    return {
      sent: this.#sent,
      unknown: this.#unknown + (replied ? 0 : this.#pendingRisk),
      windowWorst: this.#unknown + pending,
      hourWorst: this.#refusals.length + pending,
      byOwner: new Map(),
      windowByOwner,
    };
  }

  /**
   * The most of the window's floor `owner` may hold at worst: all of it but one with nobody else at work, else a
   * fair part. The one left is the arriving customer's: its RCPT is answered in moments and frees it again, and
   * ten good answers in the window make its work one that lowers the share (lowersShare). One, not a fifth: a
   * company's server with a third of a list's users unknown (7 of 20, under the floor of 9) answers a list alone
   * without a window's wait (issue 36: the benchmark list as one job).
   */
  #floorShare(owner: Tenant, floor: number): number {
    let lanes = this.#owners.size;
    if (!this.#owners.has(owner)) lanes++;
    return lanes <= 1 ? Math.max(1, floor - 1) : Math.max(1, Math.floor(floor / lanes));
  }

  /** The most of the hourly cap `owner` may hold now (refusals of the hour and RCPTs in flight). */
  laneShare(owner: Tenant): number {
    const cap = this.limits.unknownPerHour;
    let lanes = this.#owners.size;
    if (!this.#owners.has(owner)) lanes++;
    return lanes <= 1 ? Math.max(1, Math.floor(cap * LONE_LANE_SHARE)) : Math.max(1, Math.floor(cap / lanes));
  }

  /**
   * Whether `rcpts` more RCPTs of total risk `risk` for `owner` stay within every limit; `lowers`:
   * they are work that lowers the share (lowersShare), which may go past the ratio but not past half.
   */
  fits(plan: BudgetPlan, rcpts: number, risk: number, lowers = false, owner?: Tenant): boolean {
    const c = this.limits;
    if (c.unknownPerHour > 0) {
      if (plan.hourWorst + rcpts > c.unknownPerHour) return false;
      if (owner !== undefined) {
        const o = this.#owners.get(owner);
        const worst = (o ? o.refused + o.pending : 0) + (plan.byOwner.get(owner) ?? 0);
        if (worst + rcpts > this.laneShare(owner)) return false;
      }
    }
    if (c.unknownRatio >= 1) return true;
    const sent = plan.sent + rcpts;
    const unknown = plan.unknown + risk;
    if (unknown <= c.unknownRatio * sent) return true;
    // Too few to judge, or within the floor: never held, but a customer within its part of the floor only.
    const floor = c.unknownFloor ?? 0;
    const ownerWorst = owner === undefined ? 0 : Math.max(0, (plan.windowByOwner.get(owner) ?? 0) + (plan.byOwner.get(owner) ?? 0));
    const withinPart = floor <= 0 || owner === undefined || ownerWorst + rcpts <= this.#floorShare(owner, floor);
    if (withinPart && (sent < (c.minSample ?? MIN_SAMPLE) || plan.windowWorst + rcpts <= floor)) return true;
    return lowers && unknown <= TRIGGER_SHARE * sent;
  }

  /** Adds what was just put in the transaction to the plan. */
  add(plan: BudgetPlan, rcpts: number, risk: number, owner?: Tenant): void {
    plan.sent += rcpts;
    plan.unknown += risk;
    plan.windowWorst += rcpts;
    plan.hourWorst += rcpts;
    if (owner !== undefined) plan.byOwner.set(owner, (plan.byOwner.get(owner) ?? 0) + rcpts);
  }

  /**
   * Whether `rcpts` RCPTs of `lane` (a check, with its catch-all test when 2) may go now; `onceReplied`:
   * whether they may once the RCPTs awaiting a reply are answered (nothing but those replies holds them).
   */
  admits(lane: Tenant, now: number, rcpts = 1, onceReplied = false): boolean {
    if (this.pausedUntil(now) !== null) return false;
    if (!this.enabled) return true;
    const risk = this.risk(lane, now) * Math.min(rcpts, 1) + Math.max(0, rcpts - 1);
    const plan = this.plan(now, onceReplied);
    if (!onceReplied) return this.fits(plan, rcpts, risk, rcpts === 1 && this.lowersShare(lane, 1, now), lane);
    // The lane's own RCPTs in flight leave its share too when answered.
    const o = this.#owners.get(lane);
    if (o) plan.byOwner.set(lane, -o.pending);
    return this.fits(plan, rcpts, risk, rcpts === 1 && this.lowersShare(lane, 1 - (this.#lanes.get(lane)?.pending ?? 0), now), lane);
  }

  /** RCPTs sent under this key still awaiting their reply. */
  get awaitingReplies(): number {
    return this.#pending;
  }

  /** A RCPT going out now, charged at `risk` to `owner`'s share: tell it the reply. */
  sent(lane: Tenant, risk: number, now: number, owner: Tenant = lane): BudgetRcpt {
    this.#expire(now);
    const rcpt = new BudgetRcpt(now, lane, owner, risk, this);
    this.#window.push(rcpt);
    this.#lane(lane, now).pending++;
    this.#owner(owner).pending++;
    this.#sent++;
    this.#pending++;
    this.#pendingRisk += risk;
    return rcpt;
  }

  /**
   * The receiver asked us to back off (`stop`: it blocked us): nothing goes until `until`. A pause
   * while one is in force, or soon after, goes up a level (the caller doubles its length).
   */
  pause(until: number, stop: boolean, now: number): number {
    const level = this.#pause && this.#pause.until > now - this.#hourMs ? this.#pause.level + 1 : 0;
    this.#pause = { until: Math.max(until, this.#pause?.until ?? 0), level, stop };
    return level;
  }

  /** A block's re-test was answered (policy/blocks.ts): the stop ends now; its level stays, so another soon doubles. */
  lift(now: number): void {
    if (this.#pause?.stop) this.#pause = { ...this.#pause, until: Math.min(this.#pause.until, now), stop: false };
  }

  /** The end of a pause in force, or null. */
  pausedUntil(now: number): number | null {
    return this.#pause && now < this.#pause.until ? this.#pause.until : null;
  }

  /** The end of a stop in force (the receiver blocked us), or null: a pause that is only a back-off is not one. */
  stoppedUntil(now: number): number | null {
    return this.#pause && this.#pause.stop && now < this.#pause.until ? this.#pause.until : null;
  }

  /** The level the next pause would be at (0 when none was recent): the caller doubles its length per level. */
  pauseLevel(now: number): number {
    return this.#pause && this.#pause.until > now - this.#hourMs ? this.#pause.level + 1 : 0;
  }

  /** When the budget next grows by itself (a pause ends, the oldest RCPT leaves the window, or a refusal the hour), or null. */
  nextRelief(now: number): number | null {
    this.#expire(now);
    const paused = this.pausedUntil(now);
    if (paused !== null) return paused;
    const times: number[] = [];
    const oldest = this.#window[this.#head];
    if (oldest && oldest.endedAt !== null) times.push(oldest.endedAt + this.limits.unknownWindowMs);
    const first = this.#refusals[0];
    if (first !== undefined) times.push(first.at + this.#hourMs);
    return times.length ? Math.max(now + 1, Math.min(...times)) : null;
  }

  /** For the log, metrics and tests: the window's RCPTs and refusals as unknown, the hour's refusals, what the cap has left. */
  counts(now: number): { sent_in_window: number; unknown_in_window: number; unknown_last_hour: number } {
    this.#expire(now);
    return { sent_in_window: this.#sent, unknown_in_window: this.#unknown, unknown_last_hour: this.#refusals.length };
  }

  /** Unknown-user refusals the hourly cap still allows (RCPTs in flight counted as refusals); Infinity without a cap. */
  left(now: number): number {
    if (this.limits.unknownPerHour <= 0) return Infinity;
    this.#expire(now);
    return Math.max(0, this.limits.unknownPerHour - this.#refusals.length - this.#pending);
  }

  /** What a restart must not forget. */
  snapshot(now: number): BudgetSnapshot {
    this.#expire(now);
    const answers: BudgetSnapshot["answers"] = [];
    for (let i = this.#head; i < this.#window.length; i++) {
      const r = this.#window[i]!;
      // A RCPT in flight when the probe stops is counted as the worst it could have been.
      if (r.state !== "cancelled") answers.push([r.at, r.lane, r.state === "known" ? 0 : 1]);
    }
    return { refusals: this.#refusals.map((r) => [r.at, r.owner]), answers, pause: this.#pause && { ...this.#pause } };
  }

  /** Takes back what a previous run counted (before any RCPT of this run). */
  restore(s: BudgetSnapshot, now: number): void {
    for (const [at, lane, unknown] of s.answers) {
      if (at <= now - this.limits.unknownWindowMs) continue;
      const r = this.sent(lane, unknown, at, lane);
      r.state = unknown ? "unknown" : "known";
      this.#pending--;
      this.#pendingRisk -= unknown;
      this.#lane(lane, at).pending--;
      this.#owner(lane).pending--;
      this.#dropOwnerIfIdle(lane);
      this.#lane(lane, at).answers.push({ at, unknown: unknown === 1 });
      if (unknown) {
        this.#unknown++;
        this.#lane(lane, at).unknown++;
      }
    }
    for (const [at, owner] of s.refusals) {
      if (at <= now - this.#hourMs) continue;
      this.#refusals.push({ at, owner });
      this.#owner(owner).refused++;
    }
    this.#refusals.sort((a, b) => a.at - b.at);
    if (s.pause && s.pause.until > now) this.#pause = { ...s.pause };
  }
}

/**
 * Whether a RCPT reply is the refusal harvest defences count: an unknown user, as its class proves
 * (shared/email/reasons.ts), or any permanent 5.1.x (bad destination mailbox or address) whatever its wording.
 */
export function isUnknownUser(cls: RcptClass, reply: { code: number; enhanced: string | null }): boolean {
  return (cls !== "too_many_recipients" && outcomeMeaning(cls).proves === "no_mailbox") || (reply.code >= 500 && reply.enhanced !== null && reply.enhanced.startsWith("5.1."));
}
