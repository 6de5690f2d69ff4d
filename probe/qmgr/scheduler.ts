/**
 * The probe's scheduler: every check goes to the Destination of the address it must be asked at,
 * which queues it, coalesces it with others and runs it on a warm session (destination.ts). Here:
 * the destinations themselves, at most PROBE_MAX_DESTINATIONS of them (one with nothing queued and
 * nothing open is forgotten to make room, the one idle longest first; what it taught us stays in
 * DestinationMemory); the global limit on open sessions (a waiting check holds none); the catch-all
 * knowledge they share; and the count of checks in flight that bounds what the probe accepts.
 */
import { CatchAllCache } from "./catch-all-cache.ts";
import { blankOutcome, type CheckOutcome, type CheckRequest } from "../check.ts";
import type { ProbeConfig } from "../config.ts";
import { Destination, type DestinationConfig } from "./destination.ts";
import { DestinationMemory, type MemoryConfig } from "./destination-memory.ts";
import { Limiter } from "../limits.ts";
import { monotonicNow } from "../clock.ts";
import { ReceiverPolicies, type FamilyGate, type ReceiverPolicyConfig } from "../policy/receivers.ts";
import { loadProbeState, saveProbeState, STATE_SAVE_MS } from "../policy/probe-state.ts";
import { UntrustedAnswers } from "../policy/untrusted.ts";
import { PROBE_MAX_LEARNED_RULES, type LearnedRuleWire } from "../../shared/probe-contract.ts";

export type { CheckOutcome, CheckRequest } from "../check.ts";

export type SchedulerConfig = DestinationConfig &
  MemoryConfig &
  ReceiverPolicyConfig &
  Pick<ProbeConfig, "maxConcurrency" | "maxQueued" | "catchAllTtlMs" | "catchAllCacheEntries" | "maxDestinations" | "destinationForgetMs"> & {
    /** PROBE_STATE_FILE: where budgets, pauses and warm-up survive a restart (policy/probe-state.ts); null: memory only. */
    stateFile?: string | null;
  };

/** How often destinations idle past PROBE_DESTINATION_FORGET_MS are looked for. */
const SWEEP_MS = 60_000;

export type SchedulerStats = {
  checks_in_flight: number;
  checks_queued: number;
  sessions_open: number;
  sessions_idle: number;
  destinations: number;
  catch_all_cached: number;
};

/** A check for an address with no destination yet, waiting for a place among the destinations. */
type PlaceWaiter = { req: CheckRequest; submittedAt: number; resolve: (outcome: CheckOutcome) => void; timers: NodeJS.Timeout[] };

export class Scheduler {
  readonly catchAll: CatchAllCache;
  readonly memory: DestinationMemory;
  /** The receiver policy and the receivers' budgets, keyed as each family counts (policy/receivers.ts). */
  readonly receivers: ReceiverPolicies;
  /** Answers a receiver gave that are no longer trusted, for the Worker (probe/policy/untrusted.ts). */
  readonly untrusted = new UntrustedAnswers();
  readonly #destinations = new Map<string, Destination>();
  /** Destinations with nothing queued and nothing open, the longest so first: the ones that may be forgotten. */
  readonly #forgettable = new Set<Destination>();
  /** Destinations with an idle session, the longest idle first: where a session slot can be freed. */
  readonly #withIdle = new Set<Destination>();
  readonly #placeWaiters: PlaceWaiter[] = [];
  readonly #sessions: Limiter;
  readonly #sweep: NodeJS.Timeout;
  readonly #save: NodeJS.Timeout | undefined;
  #inFlight = 0;
  #drained: (() => void) | null = null;

  constructor(readonly config: SchedulerConfig) {
    this.catchAll = new CatchAllCache(config.catchAllTtlMs, config.catchAllCacheEntries);
    this.memory = new DestinationMemory(config);
    this.receivers = new ReceiverPolicies(config);
    const stateFile = config.stateFile;
    if (stateFile) {
      const saved = loadProbeState(stateFile);
      if (saved) this.receivers.restore(saved);
      this.#save = setInterval(() => saveProbeState(stateFile, this.receivers, monotonicNow()), STATE_SAVE_MS);
      this.#save.unref();
    }
    this.#sessions = new Limiter(config.maxConcurrency);
    this.#sweep = setInterval(() => this.#forgetIdle(), SWEEP_MS);
    this.#sweep.unref();
  }

  /** What receivers taught this probe (policy/learned.ts), the most recent first, as the contract carries it. */
  learnedWire(): LearnedRuleWire[] {
    return this.receivers.learned
      .entries()
      .reverse()
      .slice(0, PROBE_MAX_LEARNED_RULES)
      .map(([key, r]) => ({ key, harvest: r.harvest, rate_factor: r.rateFactor, blocks: r.blocks, throttles: r.throttles, at_ms: Math.max(0, Math.floor(r.at)) }));
  }

  /** Rules other probes learned (through the Worker): each kept where stricter than this probe's own. */
  learnFromFleet(rules: readonly LearnedRuleWire[]): void {
    for (const r of rules) this.receivers.learned.merge(r.key, { harvest: r.harvest, rateFactor: r.rate_factor, blocks: r.blocks, throttles: r.throttles, at: r.at_ms });
  }

  /** Reserves room for `n` checks; false (nothing reserved) when the probe already holds its maximum. */
  admit(n: number): boolean {
    if (this.#inFlight + n > this.config.maxQueued) return false;
    this.#inFlight += n;
    return true;
  }

  /** Gives back reserved room that was not used by a check. */
  unadmit(n: number): void {
    this.#inFlight -= n;
    this.#maybeDrained();
  }

  /**
   * Runs one check at one address. The caller has reserved room for it with admit(). When every
   * place is taken by a destination with work, the check waits for one (holding nothing) until its
   * deadline, or its deferAt for a batch check.
   */
  check(req: CheckRequest): Promise<CheckOutcome> {
    const destination = this.#destinations.get(req.address) ?? this.#place(req.address, req.host);
    if (destination) return destination.check(req);
    return new Promise((resolve) => {
      const submittedAt = monotonicNow();
      const waiter: PlaceWaiter = { req, submittedAt, resolve, timers: [] };
      const leave = (outcome: CheckOutcome) => {
        const i = this.#placeWaiters.indexOf(waiter);
        if (i < 0) return;
        this.#placeWaiters.splice(i, 1);
        for (const t of waiter.timers) clearTimeout(t);
        resolve({ ...outcome, ms: monotonicNow() - submittedAt });
      };
      waiter.timers.push(
        setTimeout(
          () => leave({ ...blankOutcome(), failure: { kind: "timeout", message: "deadline reached while waiting for a place among the probe's destinations" } }),
          Math.max(0, req.deadline - submittedAt),
        ),
      );
      if (req.deferAt !== undefined && req.deferAt < req.deadline) {
        waiter.timers.push(setTimeout(() => leave({ ...blankOutcome(), deferred: true }), Math.max(0, req.deferAt - submittedAt)));
      }
      this.#placeWaiters.push(waiter);
      // A destination whose sessions are all idle and nothing queued gives its place up now rather
      // than at the end of its sessions' idle time.
      for (const d of this.#withIdle) {
        if (d.queued === 0 && d.sessions.open === d.sessions.idle) {
          d.closeIdle();
          break;
        }
      }
    });
  }

  /** Marks one admitted request (or one address of a batch) as answered. */
  done(n = 1): void {
    this.#inFlight -= n;
    this.#maybeDrained();
  }

  stats(): SchedulerStats {
    let queued = this.#placeWaiters.length;
    let open = 0;
    let idle = 0;
    for (const d of this.#destinations.values()) {
      queued += d.queued;
      const s = d.sessions;
      open += s.open;
      idle += s.idle;
    }
    return {
      checks_in_flight: this.#inFlight,
      checks_queued: queued,
      sessions_open: open,
      sessions_idle: idle,
      destinations: this.#destinations.size,
      catch_all_cached: this.catchAll.size,
    };
  }

  /** Resolves once every admitted check has been answered (each within its own deadline). */
  drained(): Promise<void> {
    if (this.#inFlight <= 0) return Promise.resolve();
    return new Promise((resolve) => (this.#drained = resolve));
  }

  /** QUIT on every session; sessions carrying a transaction close when it ends. */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    clearInterval(this.#save);
    await Promise.all([...this.#destinations.values()].map((d) => d.shutdown()));
    if (this.config.stateFile) saveProbeState(this.config.stateFile, this.receivers, monotonicNow());
  }

  #maybeDrained(): void {
    if (this.#inFlight <= 0 && this.#drained) {
      const resolve = this.#drained;
      this.#drained = null;
      resolve();
    }
  }

  /**
   * A new destination for `address` (its receiver family by `host`, the MX name it was asked for),
   * forgetting the one idle longest when all places are taken; null when none can go.
   */
  #place(address: string, host: string): Destination | null {
    if (this.#destinations.size >= this.config.maxDestinations) {
      const oldest = this.#forgettable.values().next();
      if (oldest.done) return null;
      this.#forget(oldest.value);
    }
    const receivers = this.receivers;
    const policy = receivers.policyOf(host);
    const gate = receivers.gateOf(policy, monotonicNow());
    // A family counted per destination caps this address's sessions, RCPT rate and transaction size.
    const config: DestinationConfig = {
      ...this.config,
      maxPerDestination: Math.min(this.config.maxPerDestination, policy.sessionsPerIp),
      maxRcptsPerTransaction: Math.min(this.config.maxRcptsPerTransaction, policy.rcptsPerTransaction),
      keepIdleMs: policy.sessionIdleSeconds * 1000,
      sessionMaxAgeMs: Math.max(this.config.sessionMaxAgeMs, policy.sessionMaxAgeSeconds * 1000),
      ...(gate ? {} : { destinationRcptRate: Math.min(this.config.destinationRcptRate, policy.rcptRate), destinationRcptBurst: Math.min(this.config.destinationRcptRate, policy.rcptBurst) }),
    };
    const destination = new Destination(address, {
      config,
      catchAll: this.catchAll,
      memory: this.memory,
      policy,
      budget: (now) => receivers.budgetFor(policy, address, now),
      gate: (now) => receivers.gateOf(policy, now),
      noteReply: (reply, now) => receivers.noteReply(policy, address, receivers.budgetFor(policy, address, now), reply, now),
      untrust: (notice) => this.untrusted.note(notice),
      block: (reply, now) => void receivers.block(policy, address, receivers.budgetFor(policy, address, now), reply, now),
      refused: (notice) => this.untrusted.note(notice, "refused"),
      blocks: receivers.blocks,
      key: receivers.keyOf(policy, address),
      blockDomain: (domain, reply, now, confirmed) => receivers.blockDomain(policy, address, domain, reply, now, confirmed),
      liftBlock: (rec, now) => receivers.liftBlock(rec, receivers.budgetFor(policy, address, now), now),
      learnBlock: () => void receivers.learned.block(receivers.keyOf(policy, address), Date.now()),
      rcptRate: () => (gate ? null : receivers.destinationRate(policy, address)),
      greeted: (greeting, ehlo) => receivers.greeted(address, greeting, ehlo),
      provisional: () => receivers.provisional(policy, address),
      acquireSessionSlot: (deadline) => this.#acquireSessionSlot(deadline, gate),
      idleChanged: (d, hasIdle) => {
        this.#withIdle.delete(d);
        if (hasIdle) this.#withIdle.add(d);
        // Checks elsewhere wait for a session slot or a place: this idle session gives its slot up
        // rather than at the end of its idle time (they would wait that long, or past their
        // deadline). Once the destination has had its turn: a session is idle for a moment before
        // its first transaction.
        if (hasIdle && (this.#sessions.waiting > 0 || this.#placeWaiters.length > 0)) setImmediate(() => this.#handOverIdle(d));
      },
      emptyChanged: (d, empty) => {
        this.#forgettable.delete(d);
        if (!empty || this.#destinations.get(d.address) !== d) return;
        this.#forgettable.add(d);
        if (this.#placeWaiters.length > 0) queueMicrotask(() => this.#seatWaiters());
      },
    });
    this.#destinations.set(address, destination);
    this.#forgettable.add(destination);
    return destination;
  }

  #forget(d: Destination): void {
    this.#destinations.delete(d.address);
    this.#forgettable.delete(d);
    this.#withIdle.delete(d);
  }

  /** Gives places that came free to the checks waiting for one, first come first served. */
  #seatWaiters(): void {
    while (this.#placeWaiters.length > 0) {
      const { address, host } = this.#placeWaiters[0]!.req;
      const destination = this.#destinations.get(address) ?? this.#place(address, host);
      if (!destination) return;
      for (const waiter of this.#placeWaiters.filter((w) => w.req.address === address)) {
        this.#placeWaiters.splice(this.#placeWaiters.indexOf(waiter), 1);
        for (const t of waiter.timers) clearTimeout(t);
        void destination.check(waiter.req).then(waiter.resolve);
      }
    }
  }

  /** A session slot within the global limit and, for a family keyed by our IP, within the family's sessions. */
  async #acquireSessionSlot(deadline: number, gate: FamilyGate | null): Promise<(() => void) | null> {
    const family = gate ? await gate.sessions.acquire(deadline) : null;
    if (gate && !family) return null;
    // An idle session elsewhere gives its slot up to a destination with work waiting.
    if (this.#sessions.active >= this.#sessions.max) {
      for (const d of this.#withIdle) if (d.closeOneIdle()) break;
    }
    const global = await this.#sessions.acquire(deadline);
    if (!global) {
      family?.();
      return null;
    }
    return () => {
      global();
      family?.();
    };
  }

  #handOverIdle(d: Destination): void {
    if (!this.#withIdle.has(d) || d.queued > 0) return;
    if (this.#placeWaiters.length > 0) d.closeIdle();
    else if (this.#sessions.waiting > 0) d.closeOneIdle();
  }

  #forgetIdle(): void {
    const now = monotonicNow();
    this.receivers.sweep(now);
    for (const d of this.#forgettable) if (now - d.lastActivity > this.config.destinationForgetMs) this.#forget(d);
  }
}
