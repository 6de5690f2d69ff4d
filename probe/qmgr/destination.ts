/**
 * Over 400 lines: the queue-manager half of the scheduler (what goes in which transaction, under which
 * budget, when a check waits, is answered or handed back) reads best in one place; its pure decisions
 * are already apart (pacing.ts, fair-queue.ts, harvest-budget.ts, transaction.ts).
 *
 * One destination mail server address: the checks waiting for it and what goes in which
 * transaction, the queue-manager half of Postfix's SMTP client side. Its sessions are kept by a
 * SessionPool (session-pool.ts), every decision about how hard to push the address is Pacing's
 * (pacing.ts), and one transaction's replies are read by transaction.ts.
 *
 * - Checks that wait while a transaction is assembled share it: one MAIL FROM, their RCPTs, and at
 *   most one random address per domain and MX host for the catch-all test when that answer is not
 *   known, within what pacing allows for that session.
 * - Deadlines: a check waits in the queue no longer than its own deadline and holds nothing while it
 *   waits; when its budget runs out that check alone answers "timeout". A batch check still waiting
 *   its turn at its `deferAt`, at a server that has answered others since it arrived, is handed back.
 * - Checks the server pushed back (421, a rate limit, a 452, a dropped session) go back to the front
 *   of the queue while the address backs off.
 */
import type { CatchAllCache } from "./catch-all-cache.ts";
import { blankOutcome, tenantOf, laneOf, needsSmtpUtf8, randomLocalPart, type CheckOutcome, type CheckRequest, type QueuedCheck } from "../check.ts";
import type { ProbeConfig } from "../config.ts";
import type { DestinationMemory } from "./destination-memory.ts";
import { Pacing, type PacingConfig } from "./pacing.ts";
import { SessionPool, type PoolConfig, type Slot } from "./session-pool.ts";
import type { OpenResult, SmtpSession } from "../smtp/session.ts";
import { runTransaction, type CatchAllTest } from "./transaction.ts";
import { monotonicNow } from "../clock.ts";
import { FairQueue, type Lane } from "./fair-queue.ts";
import { CATCH_ALL_LANE, type ReceiverBudget } from "../policy/budget.ts";
import { countFamilyEvent, countBudgetDeferral, destinationEvent } from "../counters.ts";
import type { AppliedPolicy, FamilyGate } from "../policy/receivers.ts";
import type { SmtpReply } from "../smtp/reply.ts";
import { DomainsSeen, type UntrustedNotice } from "../policy/untrusted.ts";
import type { ReplyRule } from "../../shared/email/receivers.ts";

/** What a destination reads of the probe's configuration (its pool's and its pacing's included). */
export type DestinationConfig = PacingConfig & PoolConfig & Pick<ProbeConfig, "mailFrom" | "unknownWindowMs">;

/** What a destination needs from the scheduler that owns it. */
export type DestinationContext = {
  config: DestinationConfig;
  catchAll: CatchAllCache;
  memory: DestinationMemory;
  /** The receiver family of this address (policy/receivers.ts). */
  policy: AppliedPolicy;
  /** The unknown-recipient budget this address spends (its family's, or its own), which outlives the destination. */
  budget(now: number): ReceiverBudget;
  /** The RCPT rate and sessions this address shares with its whole family (a family keyed by our IP), or null. */
  gate(now: number): FamilyGate | null;
  /** A reply that may ask us to back off or stop (the family's reply rules): the rule it matched, or null. */
  noteReply(reply: SmtpReply, now: number): ReplyRule | null;
  /** What this address accepted in a span of time is not to be trusted (probe/policy/untrusted.ts). */
  untrust(notice: UntrustedNotice): void;
  /** A session slot within the global limit, or null when none came free before `deadline`. */
  acquireSessionSlot(deadline: number): Promise<(() => void) | null>;
  /** This destination now has an idle session (one another destination could take the place of), or no longer has one. */
  idleChanged(destination: Destination, hasIdle: boolean): void;
  /** This destination now has nothing queued and nothing open (it may be forgotten), or has again. */
  emptyChanged(destination: Destination, empty: boolean): void;
};

export class Destination {
  /** Single checks first, then bulk tenants in turn (fair-queue.ts). */
  readonly #queue = new FairQueue<QueuedCheck>(laneOf);
  readonly #pacing: Pacing;
  readonly #pool: SessionPool;
  /** When this server last answered a RCPT: it is working, however slowly. */
  #answeredAt = 0;
  #wakeTimer: NodeJS.Timeout | undefined;
  #wakeTimerAt = 0;
  #pumpScheduled = false;
  #empty = true;
  /** The unknown-recipient budget holds bulk work back now (logged once per episode). */
  #budgetHeld = false;
  #budgetLoggedAt = -Infinity;
  /** When a random address was last refused here: a gateway that accepts one after that has changed. */

  lastActivity = monotonicNow();

  constructor(
    readonly address: string,
    private readonly ctx: DestinationContext,
  ) {
    this.#pacing = new Pacing(address, ctx.config, ctx.memory, monotonicNow());
    this.#pool = new SessionPool(address, this.#pacing, {
      config: ctx.config,
      acquireSessionSlot: (deadline) => ctx.acquireSessionSlot(deadline),
      idleChanged: (hasIdle) => ctx.idleChanged(this, hasIdle),
      wake: () => this.#schedulePump(),
      hasWork: () => this.#queue.length > 0,
      openFailed: (failed) => this.#openFailed(failed),
      emptied: () => this.#noteEmpty(),
    });
  }

  /** The unknown-recipient budget this address spends. */
  get budget(): ReceiverBudget {
    return this.ctx.budget(monotonicNow());
  }

  get queued(): number {
    return this.#queue.length;
  }

  get sessions(): { open: number; idle: number } {
    return this.#pool.counts;
  }

  /** Nothing queued, nothing open: the scheduler may forget this destination. */
  get empty(): boolean {
    return this.#queue.length === 0 && this.#pool.slots === 0;
  }

  check(req: CheckRequest): Promise<CheckOutcome> {
    this.lastActivity = monotonicNow();
    return new Promise<CheckOutcome>((resolve) => {
      const p: QueuedCheck = {
        req,
        domain: req.recipient.slice(req.recipient.lastIndexOf("@") + 1).toLowerCase(),
        utf8: needsSmtpUtf8(req.recipient),
        submittedAt: monotonicNow(),
        retries: 0,
        finished: false,
        resolve,
        timer: setTimeout(() => this.#expire(p), Math.max(0, req.deadline - monotonicNow())),
        deferTimer: req.deferAt !== undefined && req.deferAt < req.deadline ? setTimeout(() => this.#defer(p), Math.max(0, req.deferAt - monotonicNow())) : undefined,
        provisional: null,
        waitingFor: "a session to this address",
      };
      const now = monotonicNow();
      this.#domainsSeen().add(p.domain, now);
      const dead = this.#pacing.dead(now);
      if (dead) return this.#finish(p, dead);
      // A domain whose catch-all answer the family's policy knows gets no random address.
      if (req.catchAllCheck && this.ctx.policy.knownNotCatchAll.includes(p.domain) && this.ctx.catchAll.get(p.domain, req.host) === null) {
        this.ctx.catchAll.set(p.domain, req.host, false);
      }
      // Over its lane's budget: a single check is answered now, a batch check whose relief comes
      // after it could be asked goes back at once (the caller parks it until then).
      const held = this.#held(p, now);
      if (held && (!req.bulk || held.reliefAt === null || held.reliefAt >= Math.min(req.deferAt ?? req.deadline, req.deadline))) return this.#answerHeld(p, held);
      this.#queue.push(p);
      this.#noteEmpty();
      this.#schedulePump();
    });
  }

  /** QUIT on every session: idle ones now, busy ones when their transaction ends. Resolves when all are closed. */
  shutdown(): Promise<void> {
    return this.#pool.shutdown();
  }

  /** Closes one idle session to free a global slot for another destination; false when there is none. */
  closeOneIdle(): boolean {
    return this.#pool.closeOneIdle();
  }

  /** Closes every idle session of a destination with nothing queued, so that it can be forgotten. */
  closeIdle(): void {
    if (this.#queue.length === 0) this.#pool.closeIdle();
  }

  #finish(p: QueuedCheck, outcome: CheckOutcome): void {
    if (p.finished) return;
    p.finished = true;
    clearTimeout(p.timer);
    clearTimeout(p.deferTimer);
    this.#queue.remove(p);
    p.resolve({ ...outcome, ms: monotonicNow() - p.submittedAt });
    this.#noteEmpty();
  }

  #noteEmpty(): void {
    const empty = this.empty;
    if (empty === this.#empty) return;
    this.#empty = empty;
    this.ctx.emptyChanged(this, empty);
  }

  /**
   * What holds the check's lane back now (its budget, or a pause the receiver asked for), or null. When
   * only RCPTs awaiting their reply hold it (they count at worst until answered), the relief is now:
   * those replies come within the transaction, not a window later, so a batch check waits in the queue
   * for them instead of going back to the Worker to be parked for a window.
   */
  #held(p: QueuedCheck, now: number): CheckOutcome["heldBy"] {
    const budget = this.budget;
    const lane = tenantOf(p);
    if (budget.admits(lane, now)) return null;
    const soon = budget.awaitingReplies > 0 && budget.admits(lane, now, 1, true);
    return { family: this.ctx.policy.family, reliefAt: soon ? now : budget.nextRelief(now) };
  }

  /** A check its budget holds: a single check answered at once (nothing sent), a batch check handed back. */
  #answerHeld(p: QueuedCheck, heldBy: NonNullable<CheckOutcome["heldBy"]>): void {
    if (p.req.bulk) {
      countBudgetDeferral();
      countFamilyEvent(heldBy.family, "deferral");
      return this.#finish(p, { ...blankOutcome(), deferred: true, heldBy });
    }
    countFamilyEvent(heldBy.family, "budget_spent");
    this.#finish(p, { ...blankOutcome(), heldBy });
  }

  /**
   * A batch check still waiting its turn at its deferAt is handed back unasked when the server
   * answered others meanwhile (it paces us), or when its lane's budget holds it back (the job parks
   * it until the relief: not a failure).
   */
  #defer(p: QueuedCheck): void {
    if (p.finished || p.provisional || !p.waitingFor.startsWith("a session")) return;
    const held = this.#held(p, monotonicNow());
    if (held) return this.#answerHeld(p, held);
    if (this.#answeredAt < p.submittedAt) return;
    this.#finish(p, { ...blankOutcome(), deferred: true });
  }

  #expire(p: QueuedCheck): void {
    if (p.finished) return;
    if (p.provisional) return this.#finish(p, p.provisional);
    this.#finish(p, {
      ...blankOutcome(),
      stage: p.waitingFor.startsWith("a reply") ? "rcpt" : "connect",
      failure: { kind: "timeout", message: `deadline reached while waiting for ${p.waitingFor}` },
    });
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    setImmediate(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  /** Pumps again at `at`, or earlier if already due earlier (a back-off, the RCPT bucket and the budget each ask). */
  #wakeAt(at: number): void {
    if (this.#wakeTimer) {
      if (this.#wakeTimerAt <= at) return;
      clearTimeout(this.#wakeTimer);
    }
    this.#wakeTimerAt = at;
    this.#wakeTimer = setTimeout(() => {
      this.#wakeTimer = undefined;
      this.#pump();
    }, Math.max(1, at - monotonicNow()));
  }

  #pump(): void {
    if (this.#queue.length === 0) return;
    this.lastActivity = monotonicNow();
    const paused = this.#pacing.pausedUntil(monotonicNow());
    if (paused !== null) return this.#wakeAt(paused);
    // The receiver asked the whole key to back off: nothing waits here for that.
    const stopped = this.budget.pausedUntil(monotonicNow());
    if (stopped !== null) {
      for (const p of [...this.#queue]) this.#answerHeld(p, { family: this.ctx.policy.family, reliefAt: stopped });
      return;
    }
    for (const slot of this.#pool.ready()) {
      if (this.#queue.length === 0) return;
      const sent = this.#dispatch(slot);
      // Out of RCPT tokens: the rate is what limits this destination now, not its sessions.
      if (sent === "rate") return;
      // Everything waiting is bulk work the unknown-recipient budget holds back until it grows.
      if (sent === "budget") return this.#wakeOnBudget();
    }
    if (this.#queue.length === 0 || this.#pacing.pausedUntil(monotonicNow()) !== null) return;
    const sendable = this.#sendable(monotonicNow());
    if (sendable === 0) return this.#wakeOnBudget();
    const pool = this.#pool;
    let open = this.#pacing.sessionsToOpen(sendable, { slots: pool.slots, opening: pool.opening, reusable: pool.reusable() }, monotonicNow());
    if (open === 0) return;
    let deadline = 0;
    for (const p of this.#queue) deadline = Math.max(deadline, p.req.deadline);
    const host = this.#queue.peek()!.req.host;
    while (open-- > 0) void pool.open(deadline, host);
  }

  /** Checks waiting whose lane the unknown-recipient budget lets through now; single checks it holds are answered at once. */
  #sendable(now: number): number {
    const budget = this.budget;
    if (!budget.enabled) return this.#queue.length;
    const admitted = new Map<string, boolean>();
    const heldSingles: QueuedCheck[] = [];
    let n = 0;
    for (const p of this.#queue) {
      const lane = tenantOf(p);
      let ok = admitted.get(lane);
      if (ok === undefined) admitted.set(lane, (ok = budget.admits(lane, now)));
      if (ok) n++;
      else if (!p.req.bulk) heldSingles.push(p);
    }
    for (const p of heldSingles) this.#answerHeld(p, { family: this.ctx.policy.family, reliefAt: budget.nextRelief(now) });
    return n;
  }

  #wakeOnBudget(): void {
    const at = this.budget.nextRelief(monotonicNow());
    if (at !== null) this.#wakeAt(at);
  }

  /** Takes what the session may carry from the queue and sends it as one transaction. */
  #dispatch(slot: Slot & { session: SmtpSession }): "sent" | "rate" | "retired" | "nothing" | "budget" {
    const s = slot.session;
    if (!s.usable) {
      if (!s.closed) void this.#pool.retire(slot);
      return "retired";
    }
    const now = monotonicNow();
    const size = this.#pacing.transactionSize(s, now);
    // A server that takes one RCPT per transaction (Microsoft 365) gets its catch-all test alone, first.
    if (!size.catchAllTest && size.rcpts >= 1) {
      const alone = this.#testAlone(slot, now);
      if (alone !== null) return alone;
    }
    const batch: QueuedCheck[] = [];
    const tests = new Map<string, CatchAllTest>();
    let blocked = false;
    // The unknown-recipient budget: each RCPT charged its lane's risk; a lane it cannot take waits.
    const budget = this.budget;
    const plan = budget.enabled ? budget.plan(now) : null;
    const risks = new Map<string, number>();
    const riskOf = (lane: string) => risks.get(lane) ?? risks.set(lane, budget.risk(lane, now)).get(lane)!;
    const held = new Set<Lane>();
    /** RCPTs of each budget lane put in this transaction so far: in flight, as far as the budget is concerned. */
    const added = new Map<string, number>();
    /** Whose check each catch-all test rides with: the customer it is charged to. */
    const testOwners = new Map<CatchAllTest, string>();
    const oneDomain = this.ctx.policy.domainsPerTransaction === 1;
    for (let p = this.#queue.peekExcept(held); p !== undefined && batch.length + tests.size < size.rcpts; p = this.#queue.peekExcept(held)) {
      // Google refuses a second recipient domain in one transaction (451 4.3.0): the next one waits.
      if (oneDomain && batch.length > 0 && p.domain !== batch[0]!.domain) break;
      if (p.utf8 && !s.smtpUtf8) {
        // Another MX of the domain may offer SMTPUTF8: the walk goes on (stage "ehlo").
        this.#finish(p, {
          ...blankOutcome(),
          tls: s.tls,
          pipelining: s.pipelining,
          note: slot.note,
          stage: "ehlo",
          failure: { kind: "unsupported", message: "the address needs SMTPUTF8 and the server does not offer it" },
        });
        continue;
      }
      const key = `${p.domain} ${p.req.host.toLowerCase()}`;
      let test =
        size.catchAllTest &&
        p.req.catchAllCheck &&
        !tests.has(key) &&
        this.ctx.catchAll.get(p.domain, p.req.host) === null &&
        this.ctx.catchAll.pending(p.domain, p.req.host) === null;
      if (batch.length + tests.size + (test ? 2 : 1) > size.rcpts) {
        blocked = true;
        break;
      }
      const lane = tenantOf(p);
      if (plan) {
        // The random address of a catch-all test is an unknown user wherever it is refused; the
        // check goes without it when only the test does not fit.
        const fits = (withTest: boolean) =>
          budget.fits(plan, withTest ? 2 : 1, riskOf(lane) + (withTest ? 1 : 0), !withTest && budget.lowersShare(lane, (added.get(lane) ?? 0) + 1, now), lane);
        if (test && !fits(true) && fits(false)) test = false;
        if (!fits(test)) {
          const queueLane = laneOf(p);
          if (queueLane === null) this.#answerHeld(p, { family: this.ctx.policy.family, reliefAt: budget.nextRelief(now) });
          else held.add(queueLane);
          continue;
        }
        budget.add(plan, test ? 2 : 1, riskOf(lane) + (test ? 1 : 0), lane);
        added.set(lane, (added.get(lane) ?? 0) + 1);
      }
      if (test) {
        const at = p.req.recipient.lastIndexOf("@");
        const t: CatchAllTest = { domain: p.domain, host: p.req.host, recipient: `${randomLocalPart()}@${p.req.recipient.slice(at + 1)}`, finish: () => {} };
        tests.set(key, t);
        testOwners.set(t, lane);
      }
      batch.push(p);
      this.#queue.take(p);
    }
    this.#noteBudget(held.size > 0, now);
    if (batch.length === 0) {
      if (held.size > 0 && !blocked) return "budget";
      // Nothing fits in what this session may still be refused: a fresh session takes the rest.
      if (!blocked) return "nothing";
      void this.#pool.retire(slot);
      return "retired";
    }
    // This address's RCPT rate, and its family's when the family counts by our IP.
    const rcpts = batch.length + tests.size;
    const gate = this.ctx.gate(now)?.rcpts;
    const wait = Math.max(this.#pacing.rcptWait(rcpts, now), gate ? gate.wait(rcpts, now) : 0);
    if (wait > 0) {
      this.#queue.putBack(batch);
      this.#wakeAt(now + wait);
      return "rate";
    }
    this.#pacing.takeRcpts(rcpts, now);
    gate?.take(rcpts, now);
    for (let i = 0; i < rcpts; i++) countFamilyEvent(this.ctx.policy.family, "rcpt");
    if (plan) {
      for (const p of batch) p.budgetRcpt = budget.sent(tenantOf(p), riskOf(tenantOf(p)), now);
      for (const t of tests.values()) t.budgetRcpt = budget.sent(CATCH_ALL_LANE, 1, now, testOwners.get(t));
    }
    void this.#transact(slot, batch, [...tests.values()]);
    return "sent";
  }

  /**
   * The catch-all test of the check served next, as a transaction of its own, when the answer is
   * neither known nor being learned: the check follows in the next transaction and finds it (or waits
   * for it). Null when there is no such test to send; "rate" when the RCPT bucket says wait.
   */
  #testAlone(slot: Slot & { session: SmtpSession }, now: number): "sent" | "rate" | null {
    const p = this.#queue.peek();
    if (!p || !p.req.catchAllCheck || p.utf8) return null;
    const cache = this.ctx.catchAll;
    if (cache.get(p.domain, p.req.host) !== null || cache.pending(p.domain, p.req.host) !== null) return null;
    const budget = this.budget;
    const lane = tenantOf(p);
    if (budget.enabled && !budget.fits(budget.plan(now), 1, 1, false, lane)) return null;
    const gate = this.ctx.gate(now)?.rcpts;
    const wait = Math.max(this.#pacing.rcptWait(1, now), gate ? gate.wait(1, now) : 0);
    if (wait > 0) {
      this.#wakeAt(now + wait);
      return "rate";
    }
    this.#pacing.takeRcpts(1, now);
    gate?.take(1, now);
    countFamilyEvent(this.ctx.policy.family, "rcpt");
    const at = p.req.recipient.lastIndexOf("@");
    const test: CatchAllTest = { domain: p.domain, host: p.req.host, recipient: `${randomLocalPart()}@${p.req.recipient.slice(at + 1)}`, finish: () => {} };
    if (budget.enabled) test.budgetRcpt = budget.sent(CATCH_ALL_LANE, 1, now, lane);
    void this.#transact(slot, [], [test], p.req.deadline);
    return "sent";
  }

  async #transact(slot: Slot & { session: SmtpSession }, batch: QueuedCheck[], tests: CatchAllTest[], testsDeadline?: number): Promise<void> {
    this.#pool.checkOut(slot);
    const end = await runTransaction(slot, batch, tests, {
      address: this.address,
      mailFrom: this.ctx.config.mailFrom,
      pacing: this.#pacing,
      catchAll: this.ctx.catchAll,
      finish: (p, outcome) => this.#finish(p, outcome),
      answered: (now) => (this.#answeredAt = now),
      ...(testsDeadline !== undefined ? { testsDeadline } : {}),
      catchAllAnswered: (catchAll, now) => this.#catchAllAnswered(catchAll, now),
      replied: (reply, unknown, now) => {
        if (unknown) countFamilyEvent(this.ctx.policy.family, "unknown");
        // "Too many invalid recipients" is no refusal to trust from: it says the accepts before it were silent.
        if (this.ctx.noteReply(reply, now)?.untrustsAccepted) this.#untrust(now);
        else if (unknown) this.ctx.memory.set("refusedAt", this.address, now);
      },
    });
    const ended = monotonicNow();
    for (const p of end.unasked) p.budgetRcpt?.cancel(ended);
    for (const p of batch) p.budgetRcpt?.close(ended);
    for (const t of tests) t.budgetRcpt?.close(ended);
    for (const p of end.unasked) this.#queue.unshift(p);
    for (const p of end.retry.reverse()) {
      if (p.finished) continue;
      p.retries++;
      p.waitingFor = "a session to this address";
      this.#queue.unshift(p);
    }
    if (end.pushback) this.#pushedBack(end.pushback);
    else if (end.clean) this.#pacing.transactionClean();
    this.#pool.checkIn(slot, end.pushback !== null);
    this.#schedulePump();
  }

  /**
   * A gateway that refused a random address within the hour and now accepts one has stopped telling
   * the truth (Cisco's harvest defence accepts silently and drops past its threshold): the address is
   * stopped for the hour and an operator alerted. The accepted random address is kept as the
   * catch-all answer, so what this server accepts meanwhile is never reported valid on that alone.
   */
  #catchAllAnswered(catchAll: boolean, now: number): void {
    const memory = this.ctx.memory;
    if (!catchAll) {
      memory.set("randomRefusedAt", this.address, now);
      memory.set("refusedAt", this.address, now);
      return;
    }
    const policy = this.ctx.policy;
    const randomRefusedAt = memory.get("randomRefusedAt", this.address) ?? -Infinity;
    if (policy.budgetKey !== "probe_ip_destination" || policy.family === "self-hosted" || now - randomRefusedAt > policy.hourMs) return;
    this.budget.pause(now + policy.hourMs, true, now);
    this.#untrust(now);
    countFamilyEvent(policy.family, "stop");
    console.warn(
      JSON.stringify({ level: "error", msg: "receiver accepts everything now", family: policy.family, destination: this.address, refused_random_ms_ago: now - randomRefusedAt, alert: true }),
    );
  }

  /**
   * Every `accepted` since this address's last refusal may have been a silent accept: the domains checked
   * here since then (at most an hour back) are named to the Worker (probe/policy/untrusted.ts), never an address.
   */
  #untrust(now: number): void {
    // On the probe's clock (as the domains' times are), then in wall-clock time for the Worker.
    const since = Math.max(this.ctx.memory.get("refusedAt", this.address) ?? -Infinity, now - this.ctx.policy.hourMs);
    const domains = this.#domainsSeen().since(since);
    const wall = Date.now();
    this.ctx.untrust({ domains, sinceMs: wall - (now - since), untilMs: wall });
    console.warn(JSON.stringify({ level: "error", msg: "receiver answers untrusted", family: this.ctx.policy.family, destination: this.address, domains: domains.length, since_ms_ago: now - since, alert: true }));
  }

  /** The domains checked at this address lately (in the probe's memory of it, so forgetting the idle destination keeps them). */
  #domainsSeen(): DomainsSeen {
    const seen = this.ctx.memory.get("domainsSeen", this.address) ?? new DomainsSeen();
    // Set again at each use: kept for an hour after the last.
    this.ctx.memory.set("domainsSeen", this.address, seen);
    return seen;
  }

  /** Logs when the budget starts holding bulk work back here: once per window at most, however often it flips. */
  #noteBudget(holding: boolean, now: number): void {
    if (holding === this.#budgetHeld) return;
    this.#budgetHeld = holding;
    if (!holding || now - this.#budgetLoggedAt < this.ctx.config.unknownWindowMs) return;
    this.#budgetLoggedAt = now;
    destinationEvent("harvest_budget", this.address, { family: this.ctx.policy.family, ...this.budget.counts(now) });
  }

  #pushedBack(why: string): void {
    const { backoffMs, sessions } = this.#pacing.pushedBack(monotonicNow());
    destinationEvent("backoff", this.address, { why, backoff_ms: backoffMs, sessions });
  }

  #openFailed(failed: Extract<OpenResult, { ok: false }>): void {
    if (failed.rejectedReply) this.ctx.noteReply(failed.rejectedReply, monotonicNow());
    if (this.#pool.anyOpen) {
      // Sessions already open here work: this one was turned away (too many connections), so slow down.
      this.#pushedBack(`another session refused (${failed.failure.message})`);
      return;
    }
    const now = monotonicNow();
    const outcome: CheckOutcome = {
      ...blankOutcome(),
      stage: failed.stage,
      rejectedReply: failed.rejectedReply,
      failure: failed.failure,
      tls: failed.tls,
      roundTrips: failed.roundTrips,
      note: this.#pacing.tlsNote(now),
    };
    // Every check waiting here moves on to its next MX address now, and so will new ones for a moment.
    this.#pacing.connectFailed(outcome, now);
    for (const p of [...this.#queue]) this.#finish(p, outcome);
  }
}
