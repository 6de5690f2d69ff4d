/**
 * The probe's scheduler: every check goes to the Destination of the address it must be asked at,
 * which queues it, coalesces it with others and runs it on a warm session (destination.ts). Here:
 * the destinations themselves, the global limit on open sessions (a waiting check holds none), the
 * catch-all knowledge they share, and the count of checks in flight that bounds what the probe
 * accepts.
 */
import { CatchAllCache } from "./catch-all-cache.ts";
import { Destination, type CheckOutcome, type CheckRequest, type SchedulerConfig } from "./destination.ts";
import { Limiter } from "./limits.ts";
import { monotonicNow } from "./clock.ts";

export type { CheckOutcome, CheckRequest, SchedulerConfig } from "./destination.ts";

const CATCH_ALL_CACHE_ENTRIES = 100_000;
/** A destination with nothing queued or open is forgotten after this long (it keeps what it learned until then). */
const FORGET_AFTER_MS = 10 * 60_000;

export type SchedulerStats = {
  checks_in_flight: number;
  checks_queued: number;
  sessions_open: number;
  sessions_idle: number;
  destinations: number;
  catch_all_cached: number;
};

export class Scheduler {
  readonly catchAll: CatchAllCache;
  readonly #destinations = new Map<string, Destination>();
  /** Destinations with an idle session, the longest idle first: where a session slot can be freed. */
  readonly #withIdle = new Set<Destination>();
  readonly #sessions: Limiter;
  readonly #sweep: NodeJS.Timeout;
  #inFlight = 0;
  #drained: (() => void) | null = null;

  constructor(
    readonly config: SchedulerConfig,
    catchAllTtlMs: number,
  ) {
    this.catchAll = new CatchAllCache(catchAllTtlMs, CATCH_ALL_CACHE_ENTRIES);
    this.#sessions = new Limiter(config.maxConcurrency);
    this.#sweep = setInterval(() => this.#forget(), 60_000);
    this.#sweep.unref();
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

  /** Runs one check at one address. The caller has reserved room for it with admit(). */
  check(req: CheckRequest): Promise<CheckOutcome> {
    let destination = this.#destinations.get(req.address);
    if (!destination) {
      destination = new Destination(req.address, {
        config: this.config,
        catchAll: this.catchAll,
        acquireSessionSlot: (deadline) => this.#acquireSessionSlot(deadline),
        idleChanged: (d, hasIdle) => {
          this.#withIdle.delete(d);
          if (hasIdle) this.#withIdle.add(d);
          // Checks elsewhere wait for a session slot: this idle session gives its slot up rather than
          // at the end of its idle time (they would wait that long, or past their deadline). Once the
          // destination has had its turn: a session is idle for a moment before its first transaction.
          if (hasIdle && this.#sessions.waiting > 0) setImmediate(() => this.#handOverIdle(d));
        },
      });
      this.#destinations.set(req.address, destination);
    }
    return destination.check(req);
  }

  /** Marks one admitted request (or one address of a batch) as answered. */
  done(n = 1): void {
    this.#inFlight -= n;
    this.#maybeDrained();
  }

  stats(): SchedulerStats {
    let queued = 0;
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
    await Promise.all([...this.#destinations.values()].map((d) => d.shutdown()));
  }

  #maybeDrained(): void {
    if (this.#inFlight <= 0 && this.#drained) {
      const resolve = this.#drained;
      this.#drained = null;
      resolve();
    }
  }

  async #acquireSessionSlot(deadline: number): Promise<(() => void) | null> {
    // An idle session elsewhere gives its slot up to a destination with work waiting.
    if (this.#sessions.active >= this.#sessions.max) {
      for (const d of this.#withIdle) if (d.closeOneIdle()) break;
    }
    return this.#sessions.acquire(deadline);
  }

  #handOverIdle(d: Destination): void {
    if (this.#sessions.waiting > 0 && this.#withIdle.has(d) && d.queued === 0) d.closeOneIdle();
  }

  #forget(): void {
    const now = monotonicNow();
    for (const [address, d] of this.#destinations) {
      if (d.empty && now - d.lastActivity > FORGET_AFTER_MS) this.#destinations.delete(address);
    }
  }
}
