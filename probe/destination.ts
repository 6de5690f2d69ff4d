/**
 * One destination mail server address, used politely and efficiently: the checks waiting for it, the
 * SMTP sessions open to it, and what it has told us about itself. Postfix splits this work between
 * its queue manager (what goes where, how many at once) and its connection cache (which open session
 * carries it); both live here, per address, while session.ts only speaks the protocol.
 *
 * - Sessions are reused: after the setup (greeting, EHLO, STARTTLS) a check on a warm session costs
 *   one round trip (RSET, MAIL FROM and the RCPTs in one write with PIPELINING). A session is
 *   closed with QUIT when idle too long, too old, after too many transactions, or before its
 *   refused RCPTs reach the count at which servers slow down or disconnect (Postfix: 10 and 20).
 * - Checks that wait while a transaction is assembled share it: one MAIL FROM, their RCPTs, and at
 *   most one random address per domain and MX host for the catch-all test when that answer is not
 *   known. A transaction never has more RCPTs than the session may still have refused.
 * - Politeness: at most `maxPerDestination` sessions and `destinationRcptRate` RCPTs per second. A
 *   421, a rate-limit reply or a dropped connection backs the destination off (doubling, up to
 *   30 s) and halves its sessions; the checks it affected go back to the front of the queue. A 452
 *   "too many recipients" sends the rest of the batch to the next transaction.
 * - Deadlines: a check waits in the queue no longer than its own deadline and holds nothing while it
 *   waits; when its budget runs out that check alone answers "timeout".
 */
import { randomBytes } from "node:crypto";
import type { CatchAllCache } from "./catch-all-cache.ts";
import type { ProbeConfig } from "./config.ts";
import { TokenBucket } from "./limits.ts";
import { classifyRcptReply, isThrottling } from "./smtp/classify.ts";
import type { SmtpReply } from "./smtp/reply.ts";
import { isPositive, openSession, type OpenResult, type SessionFailure, type SmtpSession, type SmtpStage } from "./smtp/session.ts";
import { monotonicNow } from "./clock.ts";

export type SchedulerConfig = Pick<
  ProbeConfig,
  | "heloName"
  | "mailFrom"
  | "smtpPort"
  | "connectTimeoutMs"
  | "maxConcurrency"
  | "maxPerDestination"
  | "maxQueued"
  | "destinationRcptRate"
  | "maxRcptsPerTransaction"
  | "maxRejectionsPerSession"
  | "sessionIdleMs"
  | "sessionMaxAgeMs"
  | "sessionMaxTransactions"
>;

export type CheckRequest = {
  /** The address to check, its domain in A-label form. */
  recipient: string;
  /** The MX host name: TLS SNI, and half of the catch-all cache key. */
  host: string;
  /** The IP literal to dial (already allowed by checkTarget). */
  address: string;
  /** Whether the caller wants to know if the server accepts any address. */
  catchAllCheck: boolean;
  /** Absolute time (ms since the epoch) by which this check answers, whatever happens. */
  deadline: number;
  /**
   * For a batch check (absolute time): if it has not been sent by then because the server is still
   * working through the checks ahead of it (it paces us), it is handed back unasked (`deferred`)
   * rather than left to time out. A server that answers nothing is not pacing: then the deadline
   * rules, as for any check.
   */
  deferAt?: number;
};

export type CheckFailure = SessionFailure | { kind: "unsupported"; message: string };

/** What one check learned at one address: the server's answer about it, or why there was none. */
export type CheckOutcome = {
  /** The last SMTP stage reached for this check. */
  stage: SmtpStage;
  /** The reply to RCPT TO for the address, when there was one. */
  rcpt: SmtpReply | null;
  /** The reply that refused us before RCPT (greeting, EHLO, MAIL FROM). */
  rejectedReply: SmtpReply | null;
  failure: CheckFailure | null;
  catchAll: boolean | null;
  catchAllCached: boolean;
  tls: boolean;
  pipelining: boolean;
  /** Sequential round trips this answer waited for: the session's setup when it rode the first transaction. */
  roundTrips: number;
  reusedSession: boolean;
  /** From the check's arrival at this destination to its answer. */
  ms: number;
  /** How the answer was got, when it is worth saying ("STARTTLS failed; continued in plain text"). */
  note: string | null;
  /** Not asked: handed back at its deferAt while the server worked through others (see CheckRequest). */
  deferred: boolean;
};

/** Callbacks a destination needs from the scheduler that owns it. */
export type DestinationContext = {
  config: SchedulerConfig;
  catchAll: CatchAllCache;
  /** A session slot within the global limit, or null when none came free before `deadline`. */
  acquireSessionSlot(deadline: number): Promise<(() => void) | null>;
  /** This destination now has an idle session (one another destination could take the place of), or no longer has one. */
  idleChanged(destination: Destination, hasIdle: boolean): void;
};

type Pending = {
  req: CheckRequest;
  domain: string;
  utf8: boolean;
  submittedAt: number;
  retries: number;
  settled: boolean;
  resolve: (outcome: CheckOutcome) => void;
  timer: NodeJS.Timeout;
  deferTimer: NodeJS.Timeout | undefined;
  /** An answer already in hand (the address accepted) while the catch-all answer is awaited. */
  provisional: CheckOutcome | null;
  /** Where the check is now, for the timeout message. */
  waitingFor: string;
};

type Slot = {
  session: SmtpSession | null;
  busy: boolean;
  retiring: boolean;
  release: () => void;
  idleTimer: NodeJS.Timeout | undefined;
  note: string | null;
};

/** A check is retried at most this many times after a 421, a rate limit, a 452 or a dropped session. */
const RETRY_LIMIT = 3;
const BACKOFF_MIN_MS = 1_000;
const BACKOFF_MAX_MS = 30_000;
/** A failed connection (refused, refused greeting) is remembered this long: new checks fail over at once. */
const DEAD_MS = 5_000;
/** After a failed TLS handshake the address is dialled in plain text for this long (as MTAs do). */
const NO_TLS_MS = 60 * 60_000;
/** After sessions die when reused, the address gets one transaction per session for this long. */
const NO_REUSE_MS = 10 * 60_000;
/**
 * A refusal that comes this much later than the reply before it in the same transaction is a
 * tarpit (the server delays each unknown user): then one address per transaction for a while. The
 * first reply of a transaction is never judged: its wait includes the network and a busy server.
 */
const SLOW_REPLY_MS = 1_000;
const SLOW_MODE_MS = 2 * 60_000;
/** The catch-all answer may hold an accepted address back this long at most (servers tarpit unknown users). */
const CATCH_ALL_MIN_WAIT_MS = 1_500;
const CATCH_ALL_RCPT_FACTOR = 3;

/** A local part nobody has: 16 random letters and digits. */
export function randomLocalPart(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from(randomBytes(16), (b) => alphabet[b % alphabet.length]).join("");
}

const needsSmtpUtf8 = (address: string) => /[^\x00-\x7f]/.test(address);

/** What the answer to the random address says about catch-all: accepted yes, any permanent refusal no. */
function catchAllFromReply(reply: SmtpReply): boolean | null {
  const cls = classifyRcptReply(reply);
  if (cls === "accepted") return true;
  if (reply.code >= 500 && cls !== "too_many_recipients") return false;
  return null;
}

type CatchAllTest = { domain: string; host: string; recipient: string; finish: (catchAll: boolean | null) => void };

export class Destination {
  readonly #queue: Pending[] = [];
  readonly #slots = new Set<Slot>();
  readonly #bucket: TokenBucket;
  #opening = 0;
  #limit: number;
  #backoffMs = 0;
  #backoffUntil = 0;
  #deadUntil = 0;
  #deadOutcome: CheckOutcome | null = null;
  #noTlsUntil = 0;
  #noTlsNote: string | null = null;
  #noReuseUntil = 0;
  #staleSessions = 0;
  #slowUntil = 0;
  /** When this server last answered a RCPT: it is working, however slowly. */
  #answeredAt = 0;
  #rcptLimit: number;
  #wakeTimer: NodeJS.Timeout | undefined;
  #pumpScheduled = false;
  #closing = false;
  #hasIdle = false;
  readonly #whenEmpty: (() => void)[] = [];
  lastActivity = monotonicNow();

  constructor(
    readonly address: string,
    private readonly ctx: DestinationContext,
  ) {
    const c = ctx.config;
    this.#limit = c.maxPerDestination;
    this.#rcptLimit = c.maxRcptsPerTransaction;
    this.#bucket = new TokenBucket(c.destinationRcptRate, c.destinationRcptRate);
  }

  get queued(): number {
    return this.#queue.length;
  }

  get sessions(): { open: number; idle: number } {
    let open = 0;
    let idle = 0;
    for (const s of this.#slots) {
      if (!s.session) continue;
      open++;
      if (!s.busy && !s.retiring) idle++;
    }
    return { open, idle };
  }

  /** Nothing queued, nothing open: the scheduler may forget this destination once it is old enough. */
  get empty(): boolean {
    return this.#queue.length === 0 && this.#slots.size === 0;
  }

  check(req: CheckRequest): Promise<CheckOutcome> {
    this.lastActivity = monotonicNow();
    return new Promise<CheckOutcome>((resolve) => {
      const p: Pending = {
        req,
        domain: req.recipient.slice(req.recipient.lastIndexOf("@") + 1).toLowerCase(),
        utf8: needsSmtpUtf8(req.recipient),
        submittedAt: monotonicNow(),
        retries: 0,
        settled: false,
        resolve,
        timer: setTimeout(() => this.#expire(p), Math.max(0, req.deadline - monotonicNow())),
        deferTimer: req.deferAt !== undefined && req.deferAt < req.deadline ? setTimeout(() => this.#defer(p), Math.max(0, req.deferAt - monotonicNow())) : undefined,
        provisional: null,
        waitingFor: "a session to this address",
      };
      const now = monotonicNow();
      if (this.#deadOutcome && now < this.#deadUntil) {
        const failure = this.#deadOutcome.failure;
        return this.#settle(p, {
          ...this.#deadOutcome,
          roundTrips: 0,
          failure: failure && { ...failure, message: `${failure.message} (this address failed ${now - (this.#deadUntil - DEAD_MS)} ms ago)` },
        });
      }
      this.#queue.push(p);
      this.#schedulePump();
    });
  }

  /** QUIT on every session: idle ones now, busy ones when their transaction ends. Resolves when all are closed. */
  async shutdown(): Promise<void> {
    this.#closing = true;
    const closed = this.#slots.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => this.#whenEmpty.push(resolve));
    for (const slot of [...this.#slots]) if (slot.session && !slot.busy) void this.#retire(slot);
    await closed;
  }

  /** Closes one idle session to free a global slot for another destination; false when there is none. */
  closeOneIdle(): boolean {
    for (const slot of this.#slots) {
      if (slot.session && !slot.busy && !slot.retiring) {
        void this.#retire(slot);
        return true;
      }
    }
    return false;
  }

  #settle(p: Pending, outcome: CheckOutcome): void {
    if (p.settled) return;
    p.settled = true;
    clearTimeout(p.timer);
    clearTimeout(p.deferTimer);
    const i = this.#queue.indexOf(p);
    if (i >= 0) this.#queue.splice(i, 1);
    p.resolve({ ...outcome, ms: monotonicNow() - p.submittedAt });
  }

  /** A batch check still waiting its turn at a server that answered others meanwhile: handed back unasked. */
  #defer(p: Pending): void {
    if (p.settled || p.provisional || !p.waitingFor.startsWith("a session") || this.#answeredAt < p.submittedAt) return;
    this.#settle(p, { ...blankOutcome(), deferred: true });
  }

  #expire(p: Pending): void {
    if (p.settled) return;
    if (p.provisional) return this.#settle(p, p.provisional);
    this.#settle(p, {
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

  #wakeAt(at: number): void {
    if (this.#wakeTimer) return;
    this.#wakeTimer = setTimeout(() => {
      this.#wakeTimer = undefined;
      this.#pump();
    }, Math.max(1, at - monotonicNow()));
  }

  #pump(): void {
    if (this.#queue.length === 0) return;
    this.lastActivity = monotonicNow();
    if (monotonicNow() < this.#backoffUntil) return this.#wakeAt(this.#backoffUntil);
    for (const slot of this.#slots) {
      if (this.#queue.length === 0) return;
      // Out of RCPT tokens: the rate is what limits this destination now, not its sessions.
      if (slot.session && !slot.busy && !slot.retiring && this.#dispatch(slot) === "rate") return;
    }
    if (this.#queue.length === 0 || monotonicNow() < this.#backoffUntil) return;
    // Open as many sessions as the queue can fill, within this destination's limit. A busy session
    // is free again one round trip from now, a new one only after several (connect, greeting, EHLO,
    // STARTTLS): what the open ones will take next is not worth a connection of its own.
    const config = this.ctx.config;
    const perSession = Math.max(1, Math.min(this.#rcptLimit, config.maxRejectionsPerSession));
    let absorbed = 0;
    for (const slot of this.#slots) {
      const s = slot.session;
      if (s && !slot.retiring && !this.#shouldRotate(s)) absorbed += Math.max(0, Math.min(this.#rcptLimit, config.maxRejectionsPerSession - s.rejections));
    }
    let want = Math.ceil(Math.max(0, this.#queue.length - absorbed) / perSession) - this.#opening;
    while (want-- > 0 && this.#slots.size < this.#limit) void this.#open();
  }

  /** Takes what the session may carry from the queue and sends it as one transaction. */
  #dispatch(slot: Slot): "sent" | "rate" | "retired" | "nothing" {
    const s = slot.session!;
    if (!s.usable) {
      if (!s.closed) void this.#retire(slot);
      return "retired";
    }
    const config = this.ctx.config;
    // What the server and our politeness allow per transaction, and what this session may still be
    // refused before servers start punishing it. Behind a tarpit every refusal costs seconds: one
    // address (and its catch-all test) at a time.
    let perTransaction = Math.min(config.maxRcptsPerTransaction, this.#rcptLimit, this.#bucket.capacity);
    if (monotonicNow() < this.#slowUntil) perTransaction = Math.min(perTransaction, 2);
    const budget = Math.min(perTransaction, config.maxRejectionsPerSession - s.rejections);
    const batch: Pending[] = [];
    const tests = new Map<string, CatchAllTest>();
    let blocked = false;
    for (let i = 0; i < this.#queue.length && batch.length + tests.size < budget; ) {
      const p = this.#queue[i]!;
      if (p.utf8 && !s.smtpUtf8) {
        // Another MX of the domain may offer SMTPUTF8: the walk goes on (stage "ehlo").
        this.#settle(p, {
          ...this.#sessionFacts(slot, false),
          stage: "ehlo",
          failure: { kind: "unsupported", message: "the address needs SMTPUTF8 and the server does not offer it" },
        });
        continue;
      }
      const key = `${p.domain} ${p.req.host.toLowerCase()}`;
      // A server that takes one RCPT per transaction never gets the random one beside a real one.
      const test =
        perTransaction >= 2 &&
        p.req.catchAllCheck &&
        !tests.has(key) &&
        this.ctx.catchAll.get(p.domain, p.req.host) === null &&
        this.ctx.catchAll.pending(p.domain, p.req.host) === null;
      if (batch.length + tests.size + (test ? 2 : 1) > budget) {
        blocked = true;
        break;
      }
      if (test) {
        const at = p.req.recipient.lastIndexOf("@");
        tests.set(key, {
          domain: p.domain,
          host: p.req.host,
          recipient: `${randomLocalPart()}@${p.req.recipient.slice(at + 1)}`,
          finish: () => {},
        });
      }
      batch.push(p);
      this.#queue.splice(i, 1);
    }
    if (batch.length === 0) {
      // Nothing fits in what this session may still be refused: a fresh session takes the rest.
      if (!blocked) return "nothing";
      void this.#retire(slot);
      return "retired";
    }
    const wait = this.#bucket.take(batch.length + tests.size);
    if (wait > 0) {
      this.#queue.unshift(...batch);
      this.#wakeAt(monotonicNow() + wait);
      return "rate";
    }
    for (const t of tests.values()) t.finish = this.ctx.catchAll.begin(t.domain, t.host);
    void this.#transact(slot, batch, [...tests.values()]);
    return "sent";
  }

  async #transact(slot: Slot, batch: Pending[], tests: CatchAllTest[]): Promise<void> {
    const s = slot.session!;
    slot.busy = true;
    clearTimeout(slot.idleTimer);
    this.#noteIdle();
    const firstUse = s.transactions === 0;
    const started = monotonicNow();
    let lastReplyAt: number | null = null;
    let throttled = false;
    let sawReply = false;
    const requeue: Pending[] = [];
    for (const p of batch) p.waitingFor = "a reply to RCPT TO";

    // Sequential waits of this transaction so far: one with PIPELINING; otherwise RSET (on a reused
    // session), MAIL FROM, then one per RCPT answered.
    let roundTrips = s.pipelining ? 1 : firstUse ? 1 : 2;
    const facts = (): CheckOutcome => ({ ...this.#sessionFacts(slot, !firstUse), roundTrips: (firstUse ? s.setupRoundTrips : 0) + roundTrips });

    const onReply = (index: number, reply: SmtpReply) => {
      sawReply = true;
      const now = monotonicNow();
      this.#answeredAt = now;
      if (reply.code >= 400 && lastReplyAt !== null && now - lastReplyAt > SLOW_REPLY_MS) {
        this.#slowUntil = now + SLOW_MODE_MS;
        destinationEvent("tarpit", this.address, { reply_ms: now - lastReplyAt });
      }
      lastReplyAt = now;
      if (!s.pipelining) roundTrips++;
      if (index >= batch.length) {
        tests[index - batch.length]?.finish(catchAllFromReply(reply));
        return;
      }
      const p = batch[index]!;
      if (p.settled) return;
      const cls = classifyRcptReply(reply);
      if (cls === "too_many_recipients" || isThrottling(reply)) {
        if (cls === "too_many_recipients" && index > 0) this.#rcptLimit = Math.max(1, Math.min(this.#rcptLimit, index));
        else throttled = true;
        if (p.retries < RETRY_LIMIT) return void requeue.push(p);
      }
      this.#answer(p, reply, cls === "mailbox_not_found", () => ({ ...facts(), stage: "rcpt", rcpt: reply }), now - started);
    };

    const followUp = (replies: readonly (SmtpReply | null)[]) => {
      // Without PIPELINING the random address is only asked about for a domain with an accepted address.
      const accepted = new Set(batch.filter((p, i) => replies[i] && isPositive(replies[i]!)).map((p) => `${p.domain} ${p.req.host.toLowerCase()}`));
      const asked = tests.filter((t) => accepted.has(`${t.domain} ${t.host.toLowerCase()}`));
      for (const t of tests) if (!asked.includes(t)) t.finish(null);
      tests.splice(0, tests.length, ...asked);
      return asked.map((t) => t.recipient);
    };

    const result = await s.transaction({
      mailFrom: this.ctx.config.mailFrom,
      utf8: batch.some((p) => p.utf8),
      recipients: [...batch.map((p) => p.req.recipient), ...(s.pipelining ? tests.map((t) => t.recipient) : [])],
      ...(s.pipelining ? {} : { followUp }),
      deadline: Math.max(...batch.map((p) => p.req.deadline)),
      onReply,
    });
    for (const t of tests) t.finish(null);

    const unanswered = batch.filter((p) => !p.settled && !requeue.includes(p));
    const refusal = result.reset && !isPositive(result.reset) ? result.reset : result.mail && !isPositive(result.mail) ? result.mail : null;
    if (refusal && isThrottling(refusal)) {
      throttled = true;
      requeue.push(...unanswered);
    } else if (refusal === result.reset && refusal) {
      requeue.push(...unanswered);
    } else if (refusal) {
      // A refused MAIL FROM is about us (our name, our address), never the mailbox: it ends the walk.
      for (const p of unanswered) {
        this.#settle(p, { ...facts(), stage: "mail", rejectedReply: refusal, failure: { kind: "rejected", message: `mail refused: ${refusal.code}` } });
      }
    } else if (result.failure) {
      const stale = !firstUse && !sawReply && result.reset === null && result.mail === null && result.failure.kind === "closed";
      if (stale) {
        // The server had closed the idle session, or closes after each transaction: not a refusal.
        if (++this.#staleSessions >= 2) this.#noReuseUntil = monotonicNow() + NO_REUSE_MS;
        for (const p of unanswered) this.#queue.unshift(p);
      } else if (result.failure.kind === "closed") {
        throttled = true;
        requeue.push(...unanswered);
      } else {
        for (const p of unanswered) this.#settle(p, { ...facts(), stage: "rcpt", failure: result.failure });
      }
    }

    for (const p of requeue.reverse()) {
      if (p.settled) continue;
      p.retries++;
      p.waitingFor = "a session to this address";
      this.#queue.unshift(p);
    }
    if (throttled) this.#pushedBack(refusal ? `${refusal.code} to ${refusal === result.reset ? "RSET" : "MAIL FROM"}` : result.failure ? "session dropped" : "a throttling or too-many-recipients reply to RCPT");
    else if (!result.failure && !refusal) {
      this.#backoffMs = 0;
      this.#limit = Math.min(this.ctx.config.maxPerDestination, this.#limit + 1);
    }

    slot.busy = false;
    if (s.closed) this.#remove(slot);
    else if (this.#shouldRotate(s) || throttled) void this.#retire(slot);
    else this.#idle(slot);
    this.#schedulePump();
  }

  /** Answers a check whose RCPT was answered, with the catch-all knowledge that goes with it. */
  #answer(p: Pending, reply: SmtpReply, notFound: boolean, base: () => CheckOutcome, replyMs: number): void {
    const cache = this.ctx.catchAll;
    if (notFound) {
      // A server that refuses one address is not accepting every address; this replaces a cached "yes".
      if (p.req.catchAllCheck) cache.set(p.domain, p.req.host, false);
      return this.#settle(p, { ...base(), catchAll: p.req.catchAllCheck ? false : null, catchAllCached: false });
    }
    const known = p.req.catchAllCheck ? cache.get(p.domain, p.req.host) : null;
    const pending = p.req.catchAllCheck && known === null && isPositive(reply) ? cache.pending(p.domain, p.req.host) : null;
    if (!pending) return this.#settle(p, { ...base(), catchAll: known, catchAllCached: known !== null });
    // The address is accepted; its answer waits for the random one, but not for long.
    p.provisional = { ...base(), catchAll: null, catchAllCached: false };
    const wait = Math.max(CATCH_ALL_MIN_WAIT_MS, CATCH_ALL_RCPT_FACTOR * replyMs);
    let timer: NodeJS.Timeout | undefined;
    void Promise.race([pending, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), wait)))]).then((catchAll) => {
      clearTimeout(timer);
      this.#settle(p, { ...base(), catchAll, catchAllCached: false });
    });
  }

  #sessionFacts(slot: Slot, reused: boolean): CheckOutcome {
    const s = slot.session!;
    return { ...blankOutcome(), tls: s.tls, pipelining: s.pipelining, reusedSession: reused, note: slot.note };
  }

  #shouldRotate(s: SmtpSession): boolean {
    const c = this.ctx.config;
    return (
      s.transactions >= c.sessionMaxTransactions ||
      s.rejections >= c.maxRejectionsPerSession ||
      monotonicNow() - s.openedAt >= c.sessionMaxAgeMs ||
      monotonicNow() < this.#noReuseUntil ||
      this.#closing
    );
  }

  /** The destination pushed back (421, a rate limit, a dropped session): wait, and use fewer sessions. */
  #pushedBack(why: string): void {
    this.#backoffMs = Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, this.#backoffMs * 2));
    this.#backoffUntil = monotonicNow() + this.#backoffMs;
    this.#limit = Math.max(1, Math.floor(this.#limit / 2));
    destinationEvent("backoff", this.address, { why, backoff_ms: this.#backoffMs, sessions: this.#limit });
  }

  #idle(slot: Slot): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = setTimeout(() => void this.#retire(slot), this.ctx.config.sessionIdleMs);
    slot.idleTimer.unref();
    this.#noteIdle();
  }

  /** Tells the scheduler when this destination gains or loses its last idle session. */
  #noteIdle(): void {
    const hasIdle = this.sessions.idle > 0;
    if (hasIdle !== this.#hasIdle) {
      this.#hasIdle = hasIdle;
      this.ctx.idleChanged(this, hasIdle);
    }
  }

  async #retire(slot: Slot): Promise<void> {
    if (slot.retiring) return;
    slot.retiring = true;
    clearTimeout(slot.idleTimer);
    this.#noteIdle();
    // A session saying goodbye no longer counts against the global limit: another destination may
    // open one while the 221 is on its way.
    slot.release();
    await slot.session?.quit();
    this.#remove(slot);
  }

  #remove(slot: Slot): void {
    if (!this.#slots.delete(slot)) return;
    clearTimeout(slot.idleTimer);
    slot.release();
    if (this.#slots.size === 0) for (const resolve of this.#whenEmpty.splice(0)) resolve();
    this.#noteIdle();
    this.#schedulePump();
  }

  async #open(): Promise<void> {
    const slot: Slot = { session: null, busy: true, retiring: false, release: () => {}, idleTimer: undefined, note: null };
    const once = (release: () => void) => {
      let done = false;
      return () => {
        if (!done) {
          done = true;
          release();
        }
      };
    };
    this.#slots.add(slot);
    this.#opening++;
    const deadline = this.#queue.reduce((latest, p) => Math.max(latest, p.req.deadline), 0);
    const host = this.#queue[0]?.req.host ?? this.address;
    const release = deadline > monotonicNow() ? await this.ctx.acquireSessionSlot(deadline) : null;
    if (!release) {
      this.#opening--;
      this.#slots.delete(slot);
      return;
    }
    slot.release = once(release);
    const c = this.ctx.config;
    const options = { host, address: this.address, port: c.smtpPort, heloName: c.heloName, connectTimeoutMs: c.connectTimeoutMs, deadline };
    let opened: OpenResult = await openSession({ ...options, startTls: monotonicNow() >= this.#noTlsUntil });
    if (!opened.ok && opened.failure.kind === "tls" && monotonicNow() < deadline) {
      // As MTAs do with opportunistic TLS: a broken handshake is retried in plain text, and remembered.
      this.#noTlsUntil = monotonicNow() + NO_TLS_MS;
      this.#noTlsNote = `STARTTLS failed (${opened.failure.message}); continued in plain text`;
      opened = await openSession({ ...options, startTls: false });
    }
    this.#opening--;
    if (opened.ok) {
      slot.session = opened.session;
      slot.note = monotonicNow() < this.#noTlsUntil ? this.#noTlsNote : null;
      slot.busy = false;
      opened.session.onClose(() => {
        if (!slot.busy && !slot.retiring) this.#remove(slot);
      });
      if (this.#closing && this.#queue.length === 0) return void this.#retire(slot);
      this.#idle(slot);
      this.#schedulePump();
      return;
    }
    this.#remove(slot);
    this.#openFailed(opened);
  }

  #openFailed(failed: Extract<OpenResult, { ok: false }>): void {
    if (failed.failure.kind === "timeout") return; // the waiting checks time out on their own
    if ([...this.#slots].some((s) => s.session)) {
      // Sessions already open here work: this one was turned away (too many connections), so slow down.
      this.#pushedBack(`another session refused (${failed.failure.message})`);
      return;
    }
    const outcome: CheckOutcome = {
      ...blankOutcome(),
      stage: failed.stage,
      rejectedReply: failed.rejectedReply,
      failure: failed.failure,
      tls: failed.tls,
      roundTrips: failed.roundTrips,
      note: monotonicNow() < this.#noTlsUntil ? this.#noTlsNote : null,
    };
    // Every check waiting here moves on to its next MX address now, and so will new ones for a moment.
    this.#deadOutcome = outcome;
    this.#deadUntil = monotonicNow() + DEAD_MS;
    for (const p of [...this.#queue]) this.#settle(p, outcome);
  }
}

/**
 * An operator's line about a mail server that pushed back: its IP address and what happened, never a
 * recipient. One JSON object per line, like the rest of the probe's logs.
 */
function destinationEvent(event: "backoff" | "tarpit", address: string, fields: Record<string, string | number>): void {
  console.warn(JSON.stringify({ level: "warn", msg: `destination ${event}`, destination: address, ...fields }));
}

function blankOutcome(): CheckOutcome {
  return {
    stage: "connect",
    rcpt: null,
    rejectedReply: null,
    failure: null,
    catchAll: null,
    catchAllCached: false,
    tls: false,
    pipelining: false,
    roundTrips: 0,
    reusedSession: false,
    ms: 0,
    note: null,
    deferred: false,
  };
}
