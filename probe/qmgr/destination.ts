/**
 * Over 400 lines: the queue manager of one address (its queue, timers, transactions and what a failed session
 * does to the checks waiting) reads best in one place; every decision it applies is made elsewhere, pure.
 *
 * One destination mail server address: the checks waiting for it and what goes in which
 * transaction, the queue-manager half of Postfix's SMTP client side. Its sessions are kept by a
 * SessionPool (session-pool.ts), every decision about how hard to push the address is Pacing's
 * (pacing.ts), one transaction's replies are read by transaction.ts, whose check goes next is the
 * FairQueue's (fair-queue.ts), and the receiver's rules are decided in policy/: what its budget lets
 * through (policy/budget-gate.ts) and when its answers stop being trusted (policy/untrusted.ts).
 *
 * - Checks that wait while a transaction is assembled share it: one MAIL FROM, their RCPTs, and at
 *   most one random address per domain and MX host for the catch-all test when that answer is not
 *   known, within what pacing allows for that session.
 * - Deadlines: a check waits in the queue no longer than its own deadline and holds nothing while it
 *   waits; when its budget runs out that check alone answers "timeout". A batch check still waiting
 *   its turn at its `deferAt`, at a server that has answered others since it arrived, is handed back.
 * - Checks the server pushed back (421, a rate limit, a 452, a dropped session) go back to the front
 *   of the queue while the address backs off.
 * - A refusal of our probe itself (policy/block.ts: at the greeting, EHLO, MAIL FROM, or to every RCPT) stops the
 *   address's budget key for the family's block time: its checks are no answer, they go back unasked (a batch's, to
 *   wait or go to another probe) or are answered `blocked` (a single check), and the domains checked here lately are
 *   named to the Worker, whose `policy_block` answers there are taken back.
 * - A refusal at RCPT reaches what its evidence shows (policy/block.ts judgeRcpt, issue 44): the whole key, or one
 *   recipient domain, whose checks alone are held while the others go on; a block over an hour is tried again with one
 *   check (policy/blocks.ts), sent alone even while the key is stopped, and lifted when it is answered.
 */
import { catchAllTestFor, type CatchAllCache, type CatchAllTest } from "./catch-all-cache.ts";
import { blankOutcome, laneOf, needsSmtpUtf8, type CheckOutcome, type CheckRequest, type QueuedCheck } from "../check.ts";
import type { ProbeConfig } from "../config.ts";
import type { DestinationMemory } from "./destination-memory.ts";
import { Pacing, type PacingConfig } from "./pacing.ts";
import { SessionPool, type PoolConfig, type Slot } from "./session-pool.ts";
import type { OpenResult, SmtpSession } from "../smtp/session.ts";
import { answersForDomain, runTransaction } from "./transaction.ts";
import { monotonicNow } from "../clock.ts";
import { FairQueue, type Lane } from "./fair-queue.ts";
import type { ReceiverBudget } from "../policy/budget.ts";
import { admit, answeredOnArrival, heldAnswer, HoldNotice, holdOf, TransactionBudget, type Hold } from "../policy/budget-gate.ts";
import { countFamilyEvent, countBudgetDeferral, destinationEvent } from "../counters.ts";
import type { AppliedPolicy, FamilyGate } from "../policy/receivers.ts";
import type { SmtpReply } from "../smtp/reply.ts";
import { UntrustDetector, type UntrustedNotice } from "../policy/untrusted.ts";
import type { ReplyRule } from "../../shared/email/receivers.ts";
import { isBlock, judgeRcpt, type RcptReply, type RefusalStage } from "../policy/block.ts";
import type { BlockRecord, Blocks } from "../policy/blocks.ts";

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
  /** Our probe is blocked here (policy/block.ts): the key stops for the family's block time and keeps the harvest rule. */
  block(reply: SmtpReply, now: number): void;
  /** This address stopped us another way (found accepting everything): the key keeps the harvest rule for good. */
  learnBlock(): void;
  /** What this address refused in a span of time was its block of us, not answers (the Worker takes them back). */
  refused(notice: UntrustedNotice): void;
  /** The blocks in force (policy/blocks.ts), and this address's budget key in them. */
  blocks: Blocks;
  key: string;
  /** A tenant refused us here (policy/block.ts judgeRcpt, scope `domain`): that recipient domain waits, the others go on. */
  blockDomain(domain: string, reply: SmtpReply, now: number, confirmed: boolean): BlockRecord;
  /** A block's re-test was answered: it is lifted. */
  liftBlock(rec: BlockRecord, now: number): void;
  /** This address's RCPT rate after what it taught us (a family counted per destination), or null: the family's gate rules. */
  rcptRate(now: number): { rate: number; burst: number } | null;
  /** A session was opened here: its greeting and EHLO extensions (what the server says it runs, and shows). */
  greeted(greeting: string, ehloKeywords: readonly string[]): void;
  /** Whether this address's budget limits may still loosen once its greeting is read (none read yet): held single checks wait for it. */
  provisional(): boolean;
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
  /** When the budget starts holding bulk work back here, it is logged (once per window at most). */
  readonly #holdNotice: HoldNotice;
  readonly #untrust: UntrustDetector;
  /** The end of the block the Worker was last told about (one refused notice per block). */
  #refusedNoticeUntil = 0;
  /** The reply that blocked us here last: what a check held by the block says it was refused with. */
  #blockReply: SmtpReply | null = null;
  /** Checks sent as a block's re-test (policy/blocks.ts), queued or in flight, and the block each tries: one per block. */
  readonly #retests = new Map<QueuedCheck, BlockRecord>();
  lastActivity = monotonicNow();

  constructor(
    readonly address: string,
    private readonly ctx: DestinationContext,
  ) {
    this.#pacing = new Pacing(address, ctx.config, ctx.memory, monotonicNow());
    this.#holdNotice = new HoldNotice(ctx.config.unknownWindowMs);
    // A gateway found accepting everything has tripped its harvest defence against us: stopped, and learned as a block.
    const budget = () => ({
      pause: (until: number, stop: boolean, now: number) => {
        this.budget.pause(until, stop, now);
        if (stop) ctx.learnBlock();
      },
    });
    this.#untrust = new UntrustDetector(address, { policy: ctx.policy, memory: ctx.memory, budget, untrust: (notice) => ctx.untrust(notice) });
    this.#pool = new SessionPool(address, this.#pacing, {
      config: ctx.config,
      acquireSessionSlot: (deadline) => ctx.acquireSessionSlot(deadline),
      idleChanged: (hasIdle) => ctx.idleChanged(this, hasIdle),
      wake: () => this.#schedulePump(),
      hasWork: () => this.#queue.length > 0,
      openFailed: (failed) => this.#openFailed(failed),
      opened: (session) => {
        countFamilyEvent(ctx.policy.family, "connection");
        ctx.greeted(session.greeting, session.ehloKeywords);
      },
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
      this.#untrust.checked(p.domain, now);
      const dead = this.#pacing.dead(now);
      if (dead) return this.#finish(p, dead);
      // A block due for its re-test takes this check as the one that tries (policy/blocks.ts); others at it are held.
      const retest = this.ctx.blocks.takeRetest(this.ctx.key, p.domain, now);
      if (retest) {
        this.#retests.set(p, retest);
        countFamilyEvent(this.ctx.policy.family, "retest");
        this.#queue.push(p);
        this.#noteEmpty();
        return this.#schedulePump();
      }
      // Its recipient domain refused us here (a tenant's block): it waits, the key's other domains go on.
      const tenantBlock = this.ctx.blocks.domainBlock(this.ctx.key, p.domain, now);
      if (tenantBlock) return this.#answerHeld(p, { reliefAt: tenantBlock.until }, tenantBlock);
      // A domain whose catch-all answer the family's policy knows gets no random address.
      if (req.catchAllCheck && this.ctx.policy.knownNotCatchAll.includes(p.domain) && this.ctx.catchAll.get(p.domain, req.host) === null) {
        this.ctx.catchAll.set(p.domain, req.host, false);
      }
      // Over its tenant's budget: a single check is answered now, a batch check whose relief comes
      // after it could be asked goes back at once (the caller parks it until then).
      const held = holdOf(this.budget, p, now, this.ctx.provisional());
      if (held && answeredOnArrival(held, p)) return this.#answerHeld(p, held);
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
    if (this.#retests.has(p)) this.#retestEnded(p, outcome);
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
   * A check its budget holds, answered at once (policy/budget-gate.ts heldAnswer): a single check with nothing sent, a
   * batch check handed back; `refused` when what holds it is a block of our probe.
   */
  #answerHeld(p: QueuedCheck, hold: Hold, tenantBlock?: BlockRecord): void {
    const now = monotonicNow();
    const whole = this.budget.stoppedUntil(now) !== null;
    const refused = whole || tenantBlock !== undefined;
    // A block is asked about again at its next re-test, sooner than its end (policy/blocks.ts).
    const rec = tenantBlock ?? (whole ? this.ctx.blocks.destinationBlock(this.ctx.key, now) : undefined);
    const reliefAt = rec?.nextRetestAt != null && (hold.reliefAt === null || rec.nextRetestAt < hold.reliefAt) ? rec.nextRetestAt : hold.reliefAt;
    const heldBy = { family: this.ctx.policy.family, reliefAt, refused };
    const rejectedReply = tenantBlock ? replyOf(tenantBlock) : whole ? (this.#blockReply ?? (rec ? replyOf(rec) : null)) : null;
    if (refused) countFamilyEvent(heldBy.family, "refused");
    if (heldAnswer(p) === "deferred") {
      if (!refused) countBudgetDeferral();
      countFamilyEvent(heldBy.family, "deferral");
      return this.#finish(p, { ...blankOutcome(), deferred: true, heldBy, rejectedReply });
    }
    if (!refused) countFamilyEvent(heldBy.family, "budget_spent");
    this.#finish(p, { ...blankOutcome(), heldBy, rejectedReply });
  }

  /**
   * A batch check still waiting its turn at its deferAt is handed back unasked when the server
   * answered others meanwhile (it paces us), or when its lane's budget holds it back (the job parks
   * it until the relief: not a failure).
   */
  #defer(p: QueuedCheck): void {
    if (p.finished || p.provisional || !p.waitingFor.startsWith("a session")) return;
    const held = holdOf(this.budget, p, monotonicNow(), this.ctx.provisional());
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
    this.#sweepTenantBlocks(monotonicNow());
    // The receiver asked the whole key to back off: nothing waits here for that, but a block's re-test.
    const stopped = this.budget.pausedUntil(monotonicNow());
    if (stopped !== null) {
      for (const p of [...this.#queue]) if (!this.#retests.has(p)) this.#answerHeld(p, { reliefAt: stopped });
      return this.#pumpRetest();
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
    // Single checks the budget holds are answered at once; what it lets through is worth opening sessions for.
    const now = monotonicNow();
    const admission = admit(this.#queue, this.budget, now, this.ctx.provisional());
    for (const p of admission.answerNow) this.#answerHeld(p, { reliefAt: admission.reliefAt });
    // Checks waiting for the address's greeting (limits it may loosen) need a session to read it.
    const sendable = admission.send || (this.#pool.slots === 0 && admission.hold.length > 0 && this.ctx.provisional() ? 1 : 0);
    if (sendable === 0) return this.#wakeOnBudget();
    const pool = this.#pool;
    let open = this.#pacing.sessionsToOpen(sendable, { slots: pool.slots, opening: pool.opening, reusable: pool.reusable() }, monotonicNow());
    if (open === 0) return;
    let deadline = 0;
    for (const p of this.#queue) deadline = Math.max(deadline, p.req.deadline);
    const host = this.#queue.peek()!.req.host;
    while (open-- > 0) void pool.open(deadline, host);
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
    const learned = this.ctx.rcptRate(now);
    if (learned) this.#pacing.retune(learned.rate, learned.burst, now);
    const paced = this.#pacing.transactionSize(s, now);
    // A tenant's block not yet shown to be the tenant's alone (no other domain answered here since): one RCPT a transaction.
    const size = this.ctx.blocks.unconfirmed(this.ctx.key, now) ? { ...paced, rcpts: Math.min(paced.rcpts, 1), catchAllTest: false } : paced;
    // A server that takes one RCPT per transaction (Microsoft 365) gets its catch-all test alone, first.
    if (!size.catchAllTest && size.rcpts >= 1) {
      const alone = this.#testAlone(slot, now);
      if (alone !== null) return alone;
    }
    const batch: QueuedCheck[] = [];
    const tests = new Map<string, CatchAllTest>();
    let blocked = false;
    // The receiver's budget: what fits in this transaction (policy/budget-gate.ts); a queue lane it holds waits.
    const budget = new TransactionBudget(this.budget, now);
    const held = new Set<Lane>();
    /** Whose check each catch-all test rides with: the customer it is charged to. */
    const testOwners = new Map<CatchAllTest, QueuedCheck>();
    const oneDomain = this.ctx.policy.domainsPerTransaction === 1;
    for (let p = this.#queue.peekExcept(held); p !== undefined && batch.length + tests.size < size.rcpts; p = this.#queue.peekExcept(held)) {
      // Google refuses a second recipient domain in one transaction (451 4.3.0): the next one waits.
      if (oneDomain && batch.length > 0 && p.domain !== batch[0]!.domain) break;
      if (p.utf8 && !s.smtpUtf8) {
        // Another MX of the domain may offer SMTPUTF8: the walk goes on (stage "ehlo").
        const failure = { kind: "unsupported", message: "the address needs SMTPUTF8 and the server does not offer it" } as const;
        this.#finish(p, { ...blankOutcome(), tls: s.tls, pipelining: s.pipelining, note: slot.note, stage: "ehlo", failure });
        continue;
      }
      const key = `${p.domain} ${p.req.host.toLowerCase()}`;
      const cache = this.ctx.catchAll;
      const test = size.catchAllTest && p.req.catchAllCheck && !tests.has(key) && cache.get(p.domain, p.req.host) === null && cache.pending(p.domain, p.req.host) === null;
      if (batch.length + tests.size + (test ? 2 : 1) > size.rcpts) {
        blocked = true;
        break;
      }
      // The check goes without its catch-all test when only the test does not fit.
      const fit = budget.fit(p, test);
      // A single check that replies in flight may make room for waits for them (its deadline still rules).
      if (fit === "wait") break;
      if (fit === "answer-now") {
        this.#answerHeld(p, { reliefAt: budget.reliefAt() });
        continue;
      }
      if (fit === "hold") {
        held.add(laneOf(p)!);
        continue;
      }
      if (fit === "with-test") {
        const t = catchAllTestFor(p);
        tests.set(key, t);
        testOwners.set(t, p);
      }
      batch.push(p);
      this.#queue.take(p);
    }
    if (this.#holdNotice.note(held.size > 0, now)) destinationEvent("harvest_budget", this.address, { family: this.ctx.policy.family, ...this.budget.counts(now) });
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
    // Tokens for every RCPT that may go; a deferred catch-all test never asked gives its back (#transact).
    this.#pacing.takeRcpts(rcpts, now);
    gate?.take(rcpts, now);
    for (const p of batch) p.budgetRcpt = budget.sent(p);
    for (const t of tests.values()) t.budgetRcpt = budget.sentTest(testOwners.get(t)!);
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
    const budget = new TransactionBudget(this.budget, now);
    if (!budget.fitsTestAlone(p)) return null;
    const gate = this.ctx.gate(now)?.rcpts;
    const wait = Math.max(this.#pacing.rcptWait(1, now), gate ? gate.wait(1, now) : 0);
    if (wait > 0) {
      this.#wakeAt(now + wait);
      return "rate";
    }
    this.#pacing.takeRcpts(1, now);
    gate?.take(1, now);
    const test = catchAllTestFor(p);
    test.budgetRcpt = budget.sentTest(p);
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
      rcptsAsked: (n) => {
        for (let i = 0; i < n; i++) countFamilyEvent(this.ctx.policy.family, "rcpt");
      },
      testsUnasked: (n, now) => {
        this.#pacing.giveBackRcpts(n, now);
        this.ctx.gate(now)?.rcpts.giveBack(n, now);
      },
      catchAllAnswered: (catchAll, now) => this.#untrust.catchAllAnswered(catchAll, now),
      replied: (reply, unknown, now) => {
        if (unknown) countFamilyEvent(this.ctx.policy.family, "unknown");
        this.#untrust.replied(this.ctx.noteReply(reply, now), unknown, now);
      },
      blocked: (stage, replies, now) => this.#blocked(stage, replies, now),
      rcptAnswered: (domains) => {
        for (const d of domains) this.ctx.blocks.answered(this.ctx.key, d);
      },
    });
    const ended = monotonicNow();
    for (const p of end.unasked) p.budgetRcpt?.cancel(ended);
    for (const p of batch) p.budgetRcpt?.close(ended);
    for (const t of tests) t.budgetRcpt?.close(ended);
    // A re-test that came back unasked found its block holding (#blocked marked it) or went nowhere: it is over either way.
    for (const p of [...end.unasked, ...end.retry]) if (this.#retests.has(p)) this.#retestEnded(p, null);
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

  #pushedBack(why: string): void {
    const { backoffMs, sessions } = this.#pacing.pushedBack(monotonicNow());
    destinationEvent("backoff", this.address, { why, backoff_ms: backoffMs, sessions });
  }

  /**
   * Whether refusals at `stage` are a block of our probe (policy/block.ts), or come while one is in force (a family rule
   * that stops, matched as the replies came): recorded, and the Worker told once per block what to take back. At RCPT,
   * how far it reaches (judgeRcpt): "all" (the key) or the recipient domains blocked, whose checks go back unasked.
   */
  #blocked(stage: RefusalStage, items: readonly RcptReply<SmtpReply>[], now: number): false | "all" | ReadonlySet<string> {
    const replies = items.map((i) => i.reply);
    const refusal = replies.find((r) => (r.enhanced ?? "").startsWith("5.7.")) ?? replies.find((r) => r.code >= 500) ?? replies[0];
    if (this.budget.stoppedUntil(now) === null) {
      if (!refusal) return false;
      if (stage === "rcpt") {
        const judged = judgeRcpt(this.ctx.policy.family, items, this.ctx.blocks.lately(this.ctx.key, now));
        if (!judged) return false;
        if (judged.scope === "domain") return this.#tenantBlocked(judged.domains, judged.reply, items, now);
        this.ctx.block(judged.reply, now);
      } else {
        if (!isBlock(stage, replies)) return false;
        this.ctx.block(refusal, now);
      }
    }
    this.#blockReply = refusal ?? this.#blockReply;
    // A re-test of the key's block found it holding.
    const rec = this.ctx.blocks.destinationBlock(this.ctx.key, now);
    if (rec) for (const tried of this.#retests.values()) if (tried === rec) this.ctx.blocks.held(rec, now);
    const until = this.budget.stoppedUntil(now) ?? now;
    if (until > this.#refusedNoticeUntil) {
      this.#refusedNoticeUntil = until;
      const notice = this.#untrust.lately(now);
      if (notice) this.ctx.refused(notice);
    }
    return "all";
  }

  /**
   * Recipient domains refused us here and the others did not (a tenant's block): each is blocked alone (a re-test that
   * finds it holding keeps it as it was), and the Worker is told to take back only that domain's policy_block answers.
   */
  #tenantBlocked(domains: readonly string[], reply: SmtpReply, items: readonly RcptReply<SmtpReply>[], now: number): ReadonlySet<string> {
    const answeredOthers = (d: string) => items.some((i) => i.domain !== d && answersForDomain(i.reply));
    for (const d of domains) {
      const held = this.ctx.blocks.domainBlock(this.ctx.key, d, now);
      if (held) {
        for (const tried of this.#retests.values()) if (tried === held) this.ctx.blocks.held(held, now);
        continue;
      }
      this.ctx.blockDomain(d, reply, now, answeredOthers(d));
      const wall = Date.now();
      this.ctx.refused({ domains: [d], sinceMs: wall - this.ctx.policy.hourMs, untilMs: wall });
    }
    return new Set(domains);
  }

  /** Checks waiting for a recipient domain that refused us here (not its re-test) are held: handed back or answered blocked. */
  #sweepTenantBlocks(now: number): void {
    if (!this.ctx.blocks.hasDomainBlocks(this.ctx.key, now)) return;
    for (const p of [...this.#queue]) {
      if (this.#retests.has(p)) continue;
      const rec = this.ctx.blocks.domainBlock(this.ctx.key, p.domain, now);
      if (rec) this.#answerHeld(p, { reliefAt: rec.until }, rec);
    }
  }

  /** While the key is stopped: the block's re-test, if one waits, goes alone on a session (opened for it if need be). */
  #pumpRetest(): void {
    const p = [...this.#queue].find((q) => this.#retests.has(q));
    if (!p) return;
    const now = monotonicNow();
    for (const slot of this.#pool.ready()) {
      const s = slot.session;
      if (!s.usable) continue;
      const wait = this.#pacing.rcptWait(1, now);
      if (wait > 0) return this.#wakeAt(now + wait);
      this.#pacing.takeRcpts(1, now);
      this.#queue.take(p);
      void this.#transact(slot, [p], []);
      return;
    }
    if (this.#pool.slots === 0) void this.#pool.open(p.req.deadline, p.req.host);
  }

  /** A re-test's check ended: answered (a RCPT reply that is no block) lifts its block; anything else lets a later check try. */
  #retestEnded(p: QueuedCheck, outcome: CheckOutcome | null): void {
    const rec = this.#retests.get(p)!;
    this.#retests.delete(p);
    const now = monotonicNow();
    if (outcome?.rcpt && !outcome.heldBy && !outcome.deferred) this.ctx.liftBlock(rec, now);
    else this.ctx.blocks.release(rec);
  }

  #openFailed(failed: Extract<OpenResult, { ok: false }>): void {
    const now0 = monotonicNow();
    if (failed.rejectedReply) this.ctx.noteReply(failed.rejectedReply, now0);
    const refusedAt = failed.stage === "greeting" ? "greeting" : failed.stage === "ehlo" ? "ehlo" : null;
    if (failed.rejectedReply && refusedAt && this.#blocked(refusedAt, [{ domain: "", reply: failed.rejectedReply }], now0)) {
      // Refused for who we are: every check waiting here waits for the block's end (or another probe), none is answered from it.
      for (const p of [...this.#queue]) {
        if (this.#retests.has(p)) this.#retestEnded(p, null);
        this.#answerHeld(p, { reliefAt: this.budget.stoppedUntil(now0) });
      }
      return;
    }
    if (this.#pool.anyOpen) {
      // Sessions already open here work: this one was turned away (too many connections), so slow down.
      this.#pushedBack(`another session refused (${failed.failure.message})`);
      return;
    }
    const now = monotonicNow();
    const { stage, rejectedReply, failure, tls, roundTrips } = failed;
    const outcome: CheckOutcome = { ...blankOutcome(), stage, rejectedReply, failure, tls, roundTrips, note: this.#pacing.tlsNote(now) };
    // Every check waiting here moves on to its next MX address now, and so will new ones for a moment.
    this.#pacing.connectFailed(outcome, now);
    for (const p of [...this.#queue]) this.#finish(p, outcome);
  }
}

/** A block's reply as the receiver wrote it, read back from its record (policy/blocks.ts keeps it as text). */
function replyOf(rec: BlockRecord): SmtpReply {
  const m = /^(\d{3})(?: (\d\.\d{1,3}\.\d{1,3}))?(?: (.*))?$/s.exec(rec.reply);
  const code = m ? Number(m[1]) : 554;
  const enhanced = m?.[2] ?? null;
  const text = m?.[3] ?? rec.reply;
  return { code, enhanced, text, lines: [text] };
}

