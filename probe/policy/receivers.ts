/**
 * The receiver policy (shared/email/receivers.ts) as the probe applies it: each family's row
 * with the operator's overrides and the time scale, the unknown-recipient budgets keyed the way each
 * family counts (per probe IP and family, or per probe IP and destination address), the per-family
 * session and RCPT limits of a family keyed by our IP, the warm-up of a new probe IP, and what a reply
 * that says "back off" or "stop" does to the key. docs/probe.md "Receiver policy".
 *
 * A probe sends from one IP, so "per probe IP" is per process; a fleet puts its probes in different
 * /24s or says how many share one (PROBE_NETBLOCK_PEERS), and Google's netblock cap is split among them.
 */
import { RECEIVER_POLICIES, WARMUP_DAILY_GROWTH, WARMUP_STEP_GROWTH, receiverOfHost, replyMatches, type ReceiverFamily, type ReceiverPolicy, type ReplyRule } from "../../shared/email/receivers.ts";
import { ReceiverBudget, type BudgetLimits, type BudgetSnapshot } from "./budget.ts";
import { Limiter, TokenBucket } from "../limits.ts";
import { countFamilyEvent } from "../counters.ts";
import { countsPerSession, keyLimits, LearnedRules, type LearnedRule } from "./learned.ts";
import { Blocks, type BlockRecord } from "./blocks.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** A destination-keyed budget nobody used for this long (in policy time) is forgotten: its hour is over. */
const IDLE_BUDGET_HOURS = 1;

/** What PROBE_RECEIVER_POLICY may change of a row: not the fields the Worker decides (probe/config.ts). */
export type ReceiverOverrides = Partial<Record<ReceiverFamily, Partial<Omit<ReceiverPolicy, "family" | "replies" | "probe" | "fleetSpread">>>>;

export type ReceiverPolicyConfig = {
  /** Operator overrides per family (PROBE_RECEIVER_POLICY). */
  receiverPolicy: ReceiverOverrides;
  /** Every policy duration divided by it, every rate multiplied (tests and benches; 1 in production). */
  policyTimeScale: number;
  /** Probes sending from this probe's /24 (itself included): Google's netblock cap is shared among them. */
  netblockPeers: number;
  /** The self-hosted row's unknown-share settings (PROBE_DESTINATION_*), kept as aliases. */
  unknownRatio: number;
  unknownWindowMs: number;
  unknownPerHour: number;
};

/** A family's row as applied: durations in (scaled) ms, rates per (scaled) second. */
export type AppliedPolicy = ReceiverPolicy & { windowMs: number; hourMs: number; rcptRate: number; rcptBurst: number; scale: number };

/** What a family keyed by our IP shares across all its destinations. */
export type FamilyGate = { sessions: Limiter; rcpts: TokenBucket };

/**
 * A family's warm-up at this probe IP: `factor` of the hourly cap (by the day), `rate` of the RCPT rate since
 * `rateSince` (by the row's step; a throttle halves it and the ramp starts again from there).
 */
type Warmup = { since: number; factor: number; day: number; frozenDay: number; rate?: number; rateSince?: number };

export type ReceiverState = { budgets: Record<string, BudgetSnapshot>; warmup: Partial<Record<ReceiverFamily, Warmup>>; learned?: Record<string, LearnedRule>; blocks?: BlockRecord[] };

type Reply = { code: number; enhanced: string | null; text: string };
const replyText = (r: Reply) => `${r.code}${r.enhanced ? ` ${r.enhanced}` : ""} ${r.text}`.trim();

/** Destinations whose greeting showed software that counts per session, remembered at most (the newest). */
const MAX_PER_SESSION = 100_000;

export class ReceiverPolicies {
  readonly #policies = new Map<ReceiverFamily, AppliedPolicy>();
  readonly #budgets = new Map<string, { budget: ReceiverBudget; usedAt: number; policy: AppliedPolicy }>();
  readonly #gates = new Map<ReceiverFamily, FamilyGate>();
  readonly #warmup = new Map<ReceiverFamily, Warmup>();
  /** What punishment taught us, per budget key (policy/learned.ts): persisted, and shared through the Worker. */
  readonly learned = new LearnedRules();
  /** The blocks in force, their scope and re-tests (policy/blocks.ts): persisted, shown in /status. */
  readonly blocks: Blocks;
  /** Destination addresses that greeted us: whether their greeting named software that counts errors per session. */
  readonly #perSession = new Map<string, boolean>();
  #restored: ReceiverState | null = null;

  constructor(readonly config: ReceiverPolicyConfig) {
    const scale = config.policyTimeScale;
    this.blocks = new Blocks(scale);
    for (const row of RECEIVER_POLICIES) {
      let p: ReceiverPolicy = { ...row, ...config.receiverPolicy[row.family] };
      if (row.family === "self-hosted") {
        p = { ...p, unknownRatio: config.unknownRatio, windowSeconds: config.unknownWindowMs / 1000, unknownPerHour: config.unknownPerHour };
        p = { ...p, ...config.receiverPolicy[row.family] };
      }
      const rcptRate = p.rcptPerSecond * scale;
      this.#policies.set(row.family, {
        ...p,
        scale,
        windowMs: (p.windowSeconds * 1000) / scale,
        hourMs: HOUR_MS / scale,
        rcptRate,
        // At least one RCPT, at most a transaction's worth or a minute's rate at once.
        rcptBurst: Math.max(1, Math.min(p.rcptsPerTransaction, rcptRate * (60 / scale) )),
      });
    }
  }

  /** The family of a destination, by the MX host name the check was addressed to. */
  policyOf(host: string): AppliedPolicy {
    return this.#policies.get(receiverOfHost(host).family)!;
  }

  policy(family: ReceiverFamily): AppliedPolicy {
    return this.#policies.get(family)!;
  }

  /** The budget key: the family alone where the receiver counts by our IP, else the family and the address. */
  keyOf(policy: AppliedPolicy, address: string): string {
    return policy.budgetKey === "probe_ip_family" ? policy.family : `${policy.family} ${address}`;
  }

  /** The budget a check at `address` of `policy`'s family spends. */
  budgetFor(policy: AppliedPolicy, address: string, now: number): ReceiverBudget {
    const key = this.keyOf(policy, address);
    let entry = this.#budgets.get(key);
    const limits = this.#limits(policy, key, address, now);
    if (!entry) {
      entry = { budget: new ReceiverBudget(limits), usedAt: now, policy };
      const saved = this.#restored?.budgets[key];
      if (saved) entry.budget.restore(saved, now);
      this.#budgets.set(key, entry);
    } else Object.assign(entry.budget.limits, limits);
    entry.usedAt = now;
    return entry.budget;
  }

  /** A key's limits now: its row's, what it taught us (learned.ts), what its greeting showed, and the warm-up of the cap. */
  #limits(policy: AppliedPolicy, key: string, address: string, now: number): BudgetLimits {
    const perSession = policy.budgetKey === "probe_ip_destination" && this.#perSession.get(address) === true;
    const k = keyLimits(policy, this.learned.get(key), perSession);
    return {
      unknownRatio: k.unknownRatio,
      unknownWindowMs: (k.windowSeconds * 1000) / policy.scale,
      unknownPerHour: this.#hourlyCap({ ...policy, unknownPerHour: k.unknownPerHour }, now),
      minSample: k.minSample,
      unknownFloor: k.unknownFloor,
      hourMs: policy.hourMs,
    };
  }

  /** A destination greeted us: whether its software counts errors per session (policy/learned.ts countsPerSession) is read from it. */
  greeted(address: string, greeting: string, ehloKeywords: readonly string[] = []): void {
    // Evidence once shown stays: a later session's greeting or EHLO that names nothing does not take it back.
    this.#perSession.set(address, this.#perSession.get(address) === true || countsPerSession(greeting, ehloKeywords));
    if (this.#perSession.size > MAX_PER_SESSION) this.#perSession.delete(this.#perSession.keys().next().value!);
  }


  /** Whether a destination's limits may still loosen once it greets us: a self-hosted address not greeted yet. */
  provisional(policy: AppliedPolicy, address: string): boolean {
    return policy.family === "self-hosted" && !this.#perSession.has(address) && !this.learned.get(this.keyOf(policy, address))?.harvest;
  }

  /** The RCPT rate (per second, scaled) and burst of one destination of a family counted per destination, after what it taught us. */
  destinationRate(policy: AppliedPolicy, address: string): { rate: number; burst: number } {
    const factor = this.learned.get(this.keyOf(policy, address))?.rateFactor ?? 1;
    const rate = policy.rcptRate * factor;
    return { rate, burst: Math.max(1, Math.min(policy.rcptBurst, rate * (60 / policy.scale))) };
  }

  /** The sessions and RCPT rate a family keyed by our IP shares over its destinations; null for the others. */
  gateOf(policy: AppliedPolicy, now: number): FamilyGate | null {
    if (policy.budgetKey !== "probe_ip_family") return null;
    const rate = policy.rcptRate * this.warmupRate(policy, now) * (this.learned.get(policy.family)?.rateFactor ?? 1);
    const burst = Math.max(1, Math.min(policy.rcptBurst, rate * 60));
    let gate = this.#gates.get(policy.family);
    if (!gate) this.#gates.set(policy.family, (gate = { sessions: new Limiter(policy.sessionsPerIp), rcpts: new TokenBucket(rate, burst, now) }));
    // One bucket per family for every destination of it, retuned in place as the warm-up grows.
    else if (gate.rcpts.ratePerSecond !== rate) gate.rcpts.retune(rate, burst, now);
    return gate;
  }

  /** The unknown-user cap an hour of a key of this family now: warm-up, and Google's netblock share. */
  #hourlyCap(policy: AppliedPolicy, now: number): number {
    if (policy.unknownPerHour <= 0) return 0;
    let cap = policy.unknownPerHour;
    if (policy.netblockUnknownPerHour > 0) cap = Math.min(cap, policy.netblockUnknownPerHour / Math.max(1, this.config.netblockPeers));
    return Math.max(1, Math.floor(cap * this.warmupFactor(policy, now)));
  }

  /**
   * A new probe IP's share of the family's caps: warmupStart on its first day, then at most
   * WARMUP_DAILY_GROWTH times the day before, except after a day on which the family pushed back.
   */
  warmupFactor(policy: AppliedPolicy, now: number): number {
    if (policy.warmupStart >= 1) return 1;
    const dayMs = DAY_MS / policy.scale;
    const today = Math.floor(now / dayMs);
    let w = this.#warmup.get(policy.family) ?? this.#restored?.warmup[policy.family];
    if (!w) w = { since: now, factor: policy.warmupStart, day: today, frozenDay: -1, rate: policy.warmupStart, rateSince: now };
    while (w.day < today) {
      w = { ...w, day: w.day + 1, factor: w.frozenDay === w.day ? w.factor : Math.min(1, w.factor * WARMUP_DAILY_GROWTH) };
    }
    this.#warmup.set(policy.family, w);
    return w.factor;
  }

  /**
   * A new probe IP's share of the family's RCPT rate: warmupStart when it starts, then WARMUP_STEP_GROWTH times more
   * per warmupStepSeconds, up to the row's rate (docs/probe.md "Warm-up"); after a throttle, half what it was, growing
   * again from there.
   */
  warmupRate(policy: AppliedPolicy, now: number): number {
    if (policy.warmupStart >= 1) return 1;
    this.warmupFactor(policy, now);
    const w = this.#warmup.get(policy.family)!;
    const start = w.rate ?? w.factor;
    const since = w.rateSince ?? w.since;
    const steps = Math.max(0, Math.floor((now - since) / ((policy.warmupStepSeconds * 1000) / policy.scale)));
    return Math.min(1, start * WARMUP_STEP_GROWTH ** steps);
  }

  /** The family throttled us: its warm-up rate starts again from half of where it was. */
  #slowWarmup(policy: AppliedPolicy, now: number): void {
    if (policy.warmupStart >= 1) return;
    const rate = this.warmupRate(policy, now);
    const w = this.#warmup.get(policy.family)!;
    this.#warmup.set(policy.family, { ...w, rate: Math.max(policy.warmupStart / 4, rate / 2), rateSince: now });
  }

  /**
   * Our probe is blocked at this key (probe/policy/block.ts, or a reply rule that stops): nothing goes there for the
   * family's documented block time, and the key keeps the harvest rule for good. Returns when the block ends.
   */
  block(policy: AppliedPolicy, address: string, budget: ReceiverBudget, reply: { code: number; enhanced: string | null; text: string }, now: number, seconds = this.blockSecondsFor(policy, reply)): number {
    const until = now + (seconds * 1000) / policy.scale;
    budget.pause(until, true, now);
    const key = this.keyOf(policy, address);
    this.learned.block(key, Date.now());
    const held = this.blocks.destinationBlock(key, now);
    // A block seen again while it holds (a reply rule that stops, matched anew) keeps its record and re-tests.
    if (!held || held.until < until) this.blocks.add({ key, family: policy.family, scope: "destination", domain: null, reply: replyText(reply), since: held?.since ?? now, until, confirmed: true, ...(held ? { retests: held.retests } : {}) });
    const w = this.#warmup.get(policy.family);
    if (w) w.frozenDay = Math.floor(now / (DAY_MS / policy.scale));
    countFamilyEvent(policy.family, "block");
    countFamilyEvent(policy.family, "stop");
    logBlock(policy, address, reply, seconds, "destination");
    return until;
  }

  /**
   * A tenant refused us at this key (policy/block.ts judgeRcpt, scope `domain`): checks for that recipient domain
   * there wait for the block's end (or its re-test), the key's other domains go on. No harvest lesson: a tenant's own
   * block list is not a defence that counts our recipients, and the key's other tenants keep their limits.
   * `confirmed`: another domain was answered at the key in the same transaction.
   */
  blockDomain(policy: AppliedPolicy, address: string, domain: string, reply: Reply, now: number, confirmed: boolean): BlockRecord {
    const seconds = this.blockSecondsFor(policy, reply);
    const until = now + (seconds * 1000) / policy.scale;
    const key = this.keyOf(policy, address);
    const rec = this.blocks.add({ key, family: policy.family, scope: "domain", domain, reply: replyText(reply), since: now, until, confirmed });
    countFamilyEvent(policy.family, "block");
    // No domain in the log (docs/probe.md "Metrics": GET /status names it, on the private listener).
    logBlock(policy, address, reply, seconds, "domain");
    return rec;
  }

  /** A block's re-test was answered: it is lifted (a destination-wide one ends the key's stop too), and logged. */
  liftBlock(rec: BlockRecord, budget: ReceiverBudget | null, now: number): void {
    this.blocks.lift(rec);
    if (rec.scope === "destination") budget?.lift(now);
    countFamilyEvent(rec.family, "lifted");
    console.warn(JSON.stringify({ level: "info", msg: "receiver block lifted", family: rec.family, scope: rec.scope, retests: rec.retests, blocked_seconds: Math.round((now - rec.since) / 1000) }));
  }

  /** How long a block by this reply lasts: a judged stop rule's length where one matches (a gateway's 554 5.7.1), else the row's. */
  blockSecondsFor(policy: AppliedPolicy, reply: Reply): number {
    return policy.replies.find((r) => r.judged && r.action === "stop" && replyMatches(r, reply))?.seconds ?? policy.blockSeconds;
  }

  /** Keys blocked now, and until when (probe clock): for /status and the metrics. */
  blocked(now: number): { key: string; family: ReceiverFamily; until: number }[] {
    const out: { key: string; family: ReceiverFamily; until: number }[] = [];
    for (const [key, entry] of this.#budgets) {
      const until = entry.budget.stoppedUntil(now);
      if (until !== null) out.push({ key, family: entry.policy.family, until });
    }
    return out;
  }

  /**
   * A reply from a destination of this family: when it matches one of the family's rules, the key
   * is paused (doubling on repeats up to the rule's maximum; a rate reply is also learned as a throttle) or
   * stopped (a block: block()), the warm-up does not grow today, and it is logged and counted. Returns the
   * rule it matched, or null.
   */
  noteReply(policy: AppliedPolicy, address: string, budget: ReceiverBudget, reply: { code: number; enhanced: string | null; text: string }, now: number): ReplyRule | null {
    // A judged stop (a generic 5.7.1) is no rule here: policy/block.ts decides at the transaction's end whether it is a block, and its scope.
    const rule = policy.replies.find((r) => !r.judged && replyMatches(r, reply));
    if (!rule) return null;
    const level = budget.pauseLevel(now);
    const seconds = Math.min(rule.seconds * 2 ** level, rule.maxSeconds ?? rule.seconds);
    // A stop is a block: the key keeps the harvest rule, and its checks wait (or go to another probe).
    if (rule.action === "stop") {
      this.block(policy, address, budget, reply, now, seconds);
      return rule;
    }
    const until = now + (seconds * 1000) / policy.scale;
    // Replies of a throttle already in force (RCPTs that were in flight on other sessions) teach nothing new.
    const sameEpisode = budget.pausedUntil(now) !== null;
    budget.pause(until, false, now);
    const w = this.#warmup.get(policy.family);
    if (w) w.frozenDay = Math.floor(now / (DAY_MS / policy.scale));
    // A rate reply (421, 4.7.x) is a throttle: the key's rate is lowered for good, and a warming IP's ramp slows.
    if (!sameEpisode && (reply.code === 421 || (reply.enhanced ?? "").startsWith("4.7."))) {
      this.learned.throttle(this.keyOf(policy, address), Date.now());
      this.#slowWarmup(policy, now);
      countFamilyEvent(policy.family, "throttle");
    }
    countFamilyEvent(policy.family, "backoff");
    const line = {
      level: "warn",
      msg: "receiver backoff",
      family: policy.family,
      destination: policy.budgetKey === "probe_ip_family" ? null : address,
      reply: `${reply.code}${reply.enhanced ? ` ${reply.enhanced}` : ""}`,
      pause_seconds: seconds,
      alert: false,
    };
    console.warn(JSON.stringify(line));
    return rule;
  }

  /** Forgets destination-keyed budgets unused for an hour (their counts are over); family budgets stay. */
  sweep(now: number): void {
    this.blocks.sweep(now);
    for (const [key, entry] of this.#budgets) {
      if (entry.policy.budgetKey === "probe_ip_destination" && now - entry.usedAt > IDLE_BUDGET_HOURS * entry.policy.hourMs) {
        const counts = entry.budget.counts(now);
        if (counts.unknown_last_hour === 0 && entry.budget.pausedUntil(now) === null) this.#budgets.delete(key);
      }
    }
  }

  /** Per family keyed by our IP: what its hourly cap has left (metrics). */
  familyLeft(now: number): { family: ReceiverFamily; left: number }[] {
    const out: { family: ReceiverFamily; left: number }[] = [];
    for (const entry of this.#budgets.values()) {
      if (entry.policy.budgetKey === "probe_ip_family") out.push({ family: entry.policy.family, left: entry.budget.left(now) });
    }
    return out;
  }

  /** What a restart must not forget: every budget's hour and window, pauses, warm-up. */
  snapshot(now: number): ReceiverState {
    const budgets: Record<string, BudgetSnapshot> = { ...(this.#restored?.budgets ?? {}) };
    for (const [key, entry] of this.#budgets) budgets[key] = entry.budget.snapshot(now);
    for (const [key, s] of Object.entries(budgets)) {
      if (!this.#budgets.has(key) && s.refusals.every(([at]) => at <= now - HOUR_MS) && (!s.pause || s.pause.until <= now)) delete budgets[key];
    }
    const warmup: ReceiverState["warmup"] = { ...(this.#restored?.warmup ?? {}) };
    for (const [family, w] of this.#warmup) warmup[family] = w;
    return { budgets, warmup, learned: Object.fromEntries(this.learned.entries()), blocks: this.blocks.snapshot(now) };
  }

  /** Takes back a previous run's state, before this run's first check. */
  restore(state: ReceiverState): void {
    this.#restored = state;
    for (const [key, rule] of Object.entries(state.learned ?? {})) this.learned.merge(key, rule);
    this.blocks.restore(state.blocks ?? []);
  }
}

/** The one line a block writes (an alert): the family, the destination (none for a family-wide key), the reply's codes, the block's length and scope. */
function logBlock(policy: AppliedPolicy, address: string, reply: Reply, seconds: number, scope: "destination" | "domain"): void {
  console.warn(
    JSON.stringify({
      level: "error",
      msg: "receiver blocked us",
      family: policy.family,
      destination: policy.budgetKey === "probe_ip_family" ? null : address,
      reply: `${reply.code}${reply.enhanced ? ` ${reply.enhanced}` : ""}`,
      block_seconds: seconds,
      scope,
      alert: true,
    }),
  );
}
