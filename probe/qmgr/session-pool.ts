/**
 * The SMTP sessions open to one destination address: Postfix's connection cache for one
 * destination. Opens a session (within the global limit, STARTTLS unless a failed handshake is
 * remembered, then plain text), keeps it warm between transactions (while checks wait on pacing, for the
 * receiver family's `sessionIdleSeconds`, with a NOOP every SESSION_KEEPALIVE_SECONDS: a paced receiver sees
 * one session carry many RCPTs, not a connection per RCPT), and closes it with QUIT when it has been idle
 * PROBE_SESSION_IDLE_MS with nothing waiting (or its family's idle time with work waiting), when pacing says it must be rotated, when the destination
 * pushed back, when another destination needs its global slot, or at shutdown. Which checks a
 * session carries is the destination's business (destination.ts); the protocol is session.ts's.
 */
import type { ProbeConfig } from "../config.ts";
import type { Pacing, SessionUse } from "./pacing.ts";
import { openSession, type OpenResult, type SmtpSession } from "../smtp/session.ts";
import { monotonicNow } from "../clock.ts";
import { SESSION_KEEPALIVE_SECONDS } from "../../shared/email/receivers.ts";

export type PoolConfig = Pick<ProbeConfig, "smtpPort" | "heloName" | "connectTimeoutMs" | "sessionIdleMs"> & {
  /** How long a session is kept idle while checks wait here (the family's sessionIdleSeconds, in ms); default sessionIdleMs. */
  keepIdleMs?: number;
};

const KEEPALIVE_MS = SESSION_KEEPALIVE_SECONDS * 1000;

/** One place in the pool: a session being opened (session null) or open. */
export type Slot = {
  session: SmtpSession | null;
  busy: boolean;
  retiring: boolean;
  /** Gives the global session slot back; calling it again does nothing. */
  release: () => void;
  idleTimer: NodeJS.Timeout | undefined;
  /** What every answer on this session says about how it was got (the plain-text fallback). */
  note: string | null;
};

/** What the pool needs from the destination that owns it and from the scheduler above. */
export type PoolOwner = {
  config: PoolConfig;
  /** A session slot within the global limit, or null when none came free before `deadline`. */
  acquireSessionSlot(deadline: number): Promise<(() => void) | null>;
  /** The pool gained its first idle session or lost its last one. */
  idleChanged(hasIdle: boolean): void;
  /** A session became ready or a place came free: there may be work to send. */
  wake(): void;
  /** Whether checks are waiting (a session opened at shutdown is only kept for them). */
  hasWork(): boolean;
  /** No session could be opened (other than by running out of time). */
  openFailed(failed: Extract<OpenResult, { ok: false }>): void;
  /** A session was opened (its greeting, for what the server says it runs). */
  opened?(session: SmtpSession): void;
  /** The last slot is gone. */
  emptied(): void;
};

export class SessionPool {
  readonly #slots = new Set<Slot>();
  #opening = 0;
  #closing = false;
  #hasIdle = false;
  readonly #whenEmpty: (() => void)[] = [];

  constructor(
    readonly address: string,
    private readonly pacing: Pacing,
    private readonly owner: PoolOwner,
  ) {}

  /** Places taken, sessions being opened included. */
  get slots(): number {
    return this.#slots.size;
  }

  get opening(): number {
    return this.#opening;
  }

  get counts(): { open: number; idle: number } {
    let open = 0;
    let idle = 0;
    for (const s of this.#slots) {
      if (!s.session) continue;
      open++;
      if (!s.busy && !s.retiring) idle++;
    }
    return { open, idle };
  }

  /** Whether any session here is open: a failure to open another is then a refusal of more, not a dead server. */
  get anyOpen(): boolean {
    return [...this.#slots].some((s) => s.session);
  }

  /** Sessions free for a transaction, each checked again as it is reached. */
  *ready(): Generator<Slot & { session: SmtpSession }> {
    for (const slot of this.#slots) {
      if (slot.session && !slot.busy && !slot.retiring) yield slot as Slot & { session: SmtpSession };
    }
  }

  /** Open sessions that may take more work after what they carry now (for pacing's count). */
  reusable(): SessionUse[] {
    if (this.#closing) return [];
    return [...this.#slots].flatMap((slot) => (slot.session && !slot.retiring ? [slot.session] : []));
  }

  /** A session is about to carry a transaction. */
  checkOut(slot: Slot): void {
    slot.busy = true;
    clearTimeout(slot.idleTimer);
    this.#noteIdle();
  }

  /** A transaction ended: the session is kept warm, or closed when it is spent or `retire` says so. */
  checkIn(slot: Slot, retire: boolean): void {
    const s = slot.session!;
    slot.busy = false;
    if (s.closed) this.#remove(slot);
    else if (retire || this.#closing || this.pacing.shouldRotate(s, monotonicNow())) void this.retire(slot);
    else this.#idle(slot);
  }

  /** Opens one session for checks whose latest deadline is `deadline`, SNI `host`. */
  async open(deadline: number, host: string): Promise<void> {
    const slot: Slot = { session: null, busy: true, retiring: false, release: () => {}, idleTimer: undefined, note: null };
    this.#slots.add(slot);
    this.#opening++;
    const release = deadline > monotonicNow() ? await this.owner.acquireSessionSlot(deadline) : null;
    if (!release) {
      // Out of time before a global slot came free: the waiting checks time out on their own.
      this.#opening--;
      this.#forget(slot, false);
      return;
    }
    slot.release = once(release);
    const c = this.owner.config;
    const options = { host, address: this.address, port: c.smtpPort, heloName: c.heloName, connectTimeoutMs: c.connectTimeoutMs, deadline };
    let opened: OpenResult = await openSession({ ...options, startTls: this.pacing.startTls(monotonicNow()) });
    if (!opened.ok && opened.failure.kind === "tls" && monotonicNow() < deadline) {
      // As MTAs do with opportunistic TLS: a broken handshake is retried in plain text, and remembered.
      this.pacing.tlsFailed(opened.failure.message, monotonicNow());
      opened = await openSession({ ...options, startTls: false });
    }
    this.#opening--;
    if (opened.ok) {
      slot.session = opened.session;
      slot.note = this.pacing.tlsNote(monotonicNow());
      slot.busy = false;
      this.owner.opened?.(opened.session);
      opened.session.onClose(() => {
        if (!slot.busy && !slot.retiring) this.#remove(slot);
      });
      if (this.#closing && !this.owner.hasWork()) return void this.retire(slot);
      this.#idle(slot);
      this.owner.wake();
      return;
    }
    this.#remove(slot);
    if (opened.failure.kind !== "timeout") this.owner.openFailed(opened); // on a timeout the waiting checks time out on their own
  }

  /** QUIT, and out of the pool once the server has answered (or not). */
  async retire(slot: Slot): Promise<void> {
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

  /** Closes one idle session to free a global slot for another destination; false when there is none. */
  closeOneIdle(): boolean {
    for (const slot of this.ready()) {
      void this.retire(slot);
      return true;
    }
    return false;
  }

  /** Closes every idle session, so that a destination with nothing queued can be forgotten. */
  closeIdle(): void {
    for (const slot of [...this.ready()]) void this.retire(slot);
  }

  /** QUIT on every session: idle ones now, busy ones when their transaction ends. Resolves when all are closed. */
  async shutdown(): Promise<void> {
    this.#closing = true;
    const closed = this.#slots.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => this.#whenEmpty.push(resolve));
    for (const slot of [...this.#slots]) if (slot.session && !slot.busy) void this.retire(slot);
    await closed;
  }

  /**
   * Idle since `since`: closed after PROBE_SESSION_IDLE_MS, or, while checks wait here (on the RCPT rate, the budget),
   * kept up to the family's idle time with a NOOP every KEEPALIVE_MS, so the next transaction finds it open.
   */
  #idle(slot: Slot, since = monotonicNow()): void {
    clearTimeout(slot.idleTimer);
    const c = this.owner.config;
    const kept = this.owner.hasWork() && (c.keepIdleMs ?? 0) > c.sessionIdleMs;
    const left = (kept ? c.keepIdleMs! : c.sessionIdleMs) - (monotonicNow() - since);
    if (left <= 0) return void this.retire(slot);
    const noop = kept && left > KEEPALIVE_MS;
    slot.idleTimer = setTimeout(() => (noop ? void this.#keepAlive(slot, since) : void this.retire(slot)), noop ? KEEPALIVE_MS : left);
    slot.idleTimer.unref();
    this.#noteIdle();
  }

  /** A NOOP on a kept session: still answering, it stays idle; otherwise it is gone. */
  async #keepAlive(slot: Slot, since: number): Promise<void> {
    const s = slot.session;
    if (!s || slot.busy || slot.retiring) return;
    // The work it was kept for has gone (answered, or handed back): the ordinary idle time from now, as for any session.
    if (!this.owner.hasWork()) return this.#idle(slot);
    slot.busy = true;
    this.#noteIdle();
    const ok = await s.noop(monotonicNow() + KEEPALIVE_MS);
    slot.busy = false;
    if (!ok || s.closed) return this.#remove(slot);
    if (slot.retiring) return;
    if (this.#closing) return void this.retire(slot);
    this.#idle(slot, since);
    this.owner.wake();
  }

  /** Tells the owner when this pool gains its first idle session or loses its last one. */
  #noteIdle(): void {
    const hasIdle = this.counts.idle > 0;
    if (hasIdle !== this.#hasIdle) {
      this.#hasIdle = hasIdle;
      this.owner.idleChanged(hasIdle);
    }
  }

  #remove(slot: Slot): void {
    if (!this.#slots.has(slot)) return;
    clearTimeout(slot.idleTimer);
    slot.release();
    this.#forget(slot);
  }

  /** Takes a slot out; when it was the last one, shutdown and the owner hear of it. */
  #forget(slot: Slot, wake = true): void {
    this.#slots.delete(slot);
    if (this.#slots.size === 0) for (const resolve of this.#whenEmpty.splice(0)) resolve();
    this.#noteIdle();
    if (wake) this.owner.wake();
    if (this.#slots.size === 0) this.owner.emptied();
  }
}

function once(release: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      release();
    }
  };
}
