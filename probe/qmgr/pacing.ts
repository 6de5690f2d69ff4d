/**
 * How hard one destination address may be pushed: every pacing decision the scheduler makes, in
 * one place, as Postfix's queue manager keeps per-destination concurrency and back-off apart from
 * the sessions that carry the mail. Pure: no sockets and no timers; each decision takes the time
 * (`now`, on the probe's monotonic clock), so a test drives it with a clock of its own.
 *
 * - Back-off: a 421, a rate-limit reply or a dropped session pauses the address (doubling from
 *   PROBE_DESTINATION_BACKOFF_MIN_MS up to _MAX_MS, reset by a clean transaction) and halves its
 *   sessions (grown back by one per clean transaction), as Postfix's destination concurrency shrinks
 *   on failure and grows on success.
 * - Size: RCPTs per transaction (our limit, the server's learned 452 limit, the token bucket, what
 *   the session may still be refused, a tarpit), sessions worth opening for the queue, when a
 *   session must be rotated, how often a check may be put back.
 * - Learned facts go to DestinationMemory, which outlives this object: dead for a moment, no TLS,
 *   no reuse, a tarpit, the server's recipient limit.
 */
import type { CheckOutcome } from "../check.ts";
import type { ProbeConfig } from "../config.ts";
import type { DestinationMemory } from "./destination-memory.ts";
import { TokenBucket } from "../limits.ts";

export type PacingConfig = Pick<
  ProbeConfig,
  | "maxPerDestination"
  | "destinationRcptRate"
  | "maxRcptsPerTransaction"
  | "maxRejectionsPerSession"
  | "sessionMaxAgeMs"
  | "sessionMaxTransactions"
  | "retryLimit"
  | "backoffMinMs"
  | "backoffMaxMs"
  | "tarpitReplyMs"
  | "catchAllMinWaitMs"
> & {
  /** The RCPT bucket's burst (default: its rate); at least 1. */
  destinationRcptBurst?: number;
};

/** What pacing needs to know about an open session. */
export type SessionUse = { transactions: number; rejections: number; openedAt: number };

/** Behind a tarpit every refusal costs seconds: one address and its catch-all test per transaction. */
const TARPIT_RCPTS = 2;
/** One stale session may be the server's idle timeout; two mean it drops every session after one transaction. */
const STALE_SESSIONS_FOR_NO_REUSE = 2;
/** An accepted address waits for the catch-all answer at most this many times its own reply time. */
const CATCH_ALL_RCPT_FACTOR = 3;

export class Pacing {
  #backoffMs = 0;
  #backoffUntil = 0;
  #sessionLimit: number;
  #staleSessions = 0;
  readonly #bucket: TokenBucket;

  constructor(
    readonly address: string,
    private readonly config: PacingConfig,
    private readonly memory: DestinationMemory,
    now: number,
  ) {
    this.#sessionLimit = config.maxPerDestination;
    this.#bucket = new TokenBucket(config.destinationRcptRate, Math.max(1, config.destinationRcptBurst ?? config.destinationRcptRate), now);
  }

  /** Sessions this address may have open now: PROBE_MAX_PER_DESTINATION, halved while it pushes back. */
  get sessionLimit(): number {
    return this.#sessionLimit;
  }

  /** The end of the back-off in force, or null when nothing holds the address back. */
  pausedUntil(now: number): number | null {
    return now < this.#backoffUntil ? this.#backoffUntil : null;
  }

  /** The answer a new check gets at once while the address is marked dead, or null. */
  dead(now: number): CheckOutcome | null {
    const mark = this.memory.get("dead", this.address, now);
    if (!mark) return null;
    const failure = mark.outcome.failure;
    return {
      ...mark.outcome,
      roundTrips: 0,
      failure: failure && { ...failure, message: `${failure.message} (this address failed ${now - mark.failedAt} ms ago)` },
    };
  }

  /** RCPTs per transaction the server takes: ours, until a 452 taught us fewer. */
  rcptLimit(now: number): number {
    return this.memory.get("rcptLimit", this.address, now) ?? this.config.maxRcptsPerTransaction;
  }

  /**
   * Sessions to open now for `queued` waiting checks. A busy session is free again one round trip
   * from now, a new one only after several (connect, greeting, EHLO, STARTTLS): what the sessions
   * that can be reused will take next is not worth a connection of its own.
   */
  sessionsToOpen(queued: number, pool: { slots: number; opening: number; reusable: readonly SessionUse[] }, now: number): number {
    const c = this.config;
    const rcptLimit = this.rcptLimit(now);
    const perSession = Math.max(1, Math.min(rcptLimit, c.maxRejectionsPerSession));
    let absorbed = 0;
    for (const s of pool.reusable) {
      if (!this.shouldRotate(s, now)) absorbed += Math.max(0, Math.min(rcptLimit, c.maxRejectionsPerSession - s.rejections));
    }
    const want = Math.ceil(Math.max(0, queued - absorbed) / perSession) - pool.opening;
    return Math.max(0, Math.min(want, this.#sessionLimit - pool.slots));
  }

  /**
   * What the next transaction on this session may carry: RCPTs in all (the catch-all test
   * included), within our limit, the server's, the bucket's burst and what the session may still be
   * refused before servers start punishing it; and whether a catch-all test may ride along (a server
   * that takes one RCPT per transaction never gets the random one beside a real one).
   */
  transactionSize(s: SessionUse, now: number): { rcpts: number; catchAllTest: boolean } {
    const c = this.config;
    let perTransaction = Math.min(c.maxRcptsPerTransaction, this.rcptLimit(now), this.#bucket.capacity);
    if (this.memory.get("tarpit", this.address, now)) perTransaction = Math.min(perTransaction, TARPIT_RCPTS);
    return { rcpts: Math.min(perTransaction, c.maxRejectionsPerSession - s.rejections), catchAllTest: perTransaction >= 2 };
  }

  /** The RCPT rate and burst from now on (what the receiver taught us: a lower rate after a throttle), when they changed. */
  retune(rate: number, burst: number, now: number): void {
    const r = Math.min(this.config.destinationRcptRate, rate);
    const b = Math.max(1, Math.min(this.config.destinationRcptBurst ?? this.config.destinationRcptRate, burst));
    if (this.#bucket.ratePerSecond !== r || this.#bucket.capacity !== b) this.#bucket.retune(r, b, now);
  }

  /** Takes `n` RCPT tokens and returns 0, or takes none and returns how many ms until they are there. */
  takeRcpts(n: number, now: number): number {
    return this.#bucket.take(n, now);
  }

  /** RCPT tokens taken for RCPTs never sent (a catch-all test its batch's replies made needless). */
  giveBackRcpts(n: number, now: number): void {
    this.#bucket.giveBack(n, now);
  }

  /** How many ms until `n` RCPT tokens are there (0: now), taking none. */
  rcptWait(n: number, now: number): number {
    return this.#bucket.wait(n, now);
  }

  /** A session is closed rather than reused: too many transactions or refusals, too old, or the server drops reused ones. */
  shouldRotate(s: SessionUse, now: number): boolean {
    const c = this.config;
    return (
      s.transactions >= c.sessionMaxTransactions ||
      s.rejections >= c.maxRejectionsPerSession ||
      now - s.openedAt >= c.sessionMaxAgeMs ||
      this.memory.get("noReuse", this.address, now) !== undefined
    );
  }

  /** Whether to try STARTTLS: not while a failed handshake is remembered. */
  startTls(now: number): boolean {
    return this.memory.get("noTls", this.address, now) === undefined;
  }

  /** What answers from this address say while it is dialled in plain text after a failed handshake. */
  tlsNote(now: number): string | null {
    return this.memory.get("noTls", this.address, now) ?? null;
  }

  /** Whether a check put back `retries` times already may be put back once more. */
  mayRetry(retries: number): boolean {
    return retries < this.config.retryLimit;
  }

  /** How long an accepted address waits for the catch-all answer (servers tarpit unknown users). */
  catchAllWaitMs(replyMs: number): number {
    return Math.max(this.config.catchAllMinWaitMs, CATCH_ALL_RCPT_FACTOR * replyMs);
  }

  /**
   * A RCPT reply arrived `now`, the one before it in the same transaction at `previousAt` (null: it
   * is the first, whose wait includes the network and a busy server, so it is never judged). A
   * refusal that late is a tarpit: returns the gap, and the address is in tarpit mode for a while.
   */
  rcptReplied(code: number, previousAt: number | null, now: number): number | null {
    if (code < 400 || previousAt === null || now - previousAt <= this.config.tarpitReplyMs) return null;
    this.memory.set("tarpit", this.address, true, now);
    return now - previousAt;
  }

  /**
   * A 452 "too many recipients" after `accepted` RCPTs of the transaction: that is the server's
   * limit from now on. False when it came first: there is no limit to learn, the server pushes back.
   */
  recipientLimitReached(accepted: number, now: number): boolean {
    if (accepted === 0) return false;
    this.memory.set("rcptLimit", this.address, Math.max(1, Math.min(this.rcptLimit(now), accepted)), now);
    return true;
  }

  /** A reused session was found dead before any reply: the second time, no more reuse for a while. */
  staleSession(now: number): void {
    if (++this.#staleSessions >= STALE_SESSIONS_FOR_NO_REUSE) this.memory.set("noReuse", this.address, true, now);
  }

  /** A TLS handshake failed: plain text for a while, as MTAs do with opportunistic TLS. */
  tlsFailed(message: string, now: number): void {
    this.memory.set("noTls", this.address, `STARTTLS failed (${message}); continued in plain text`, now);
  }

  /** No session could be opened and none is open: new checks get `outcome` at once for a moment. */
  connectFailed(outcome: CheckOutcome, now: number): void {
    this.memory.set("dead", this.address, { outcome, failedAt: now }, now);
  }

  /** The destination pushed back (421, a rate limit, a dropped session): wait, and use fewer sessions. */
  pushedBack(now: number): { backoffMs: number; sessions: number } {
    const c = this.config;
    this.#backoffMs = Math.min(c.backoffMaxMs, Math.max(c.backoffMinMs, this.#backoffMs * 2));
    this.#backoffUntil = now + this.#backoffMs;
    this.#sessionLimit = Math.max(1, Math.floor(this.#sessionLimit / 2));
    return { backoffMs: this.#backoffMs, sessions: this.#sessionLimit };
  }

  /** A transaction went through without pushback: the back-off starts over, one more session is allowed. */
  transactionClean(): void {
    this.#backoffMs = 0;
    this.#sessionLimit = Math.min(this.config.maxPerDestination, this.#sessionLimit + 1);
  }
}
