/**
 * Limits: a counting semaphore with a bounded wait (the probe's SMTP sessions, all destinations
 * together: a probe VM has one IP and a finite number of sockets) and a token bucket (RCPT commands
 * per second to one destination address: big providers throttle an IP that asks too fast).
 */
import { monotonicNow } from "./clock.ts";

type Waiter = { resolve: (release: (() => void) | null) => void; timer: NodeJS.Timeout };

/** A counting semaphore whose waiters give up at a deadline instead of queueing forever. */
export class Limiter {
  #active = 0;
  readonly #waiters: Waiter[] = [];

  constructor(readonly max: number) {}

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** A release function, or null when no slot came free before `deadline` (ms since the epoch). */
  acquire(deadline: number): Promise<(() => void) | null> {
    if (this.#active < this.max) {
      this.#active++;
      return Promise.resolve(this.#releaser());
    }
    const wait = deadline - monotonicNow();
    if (wait <= 0) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          resolve(null);
        }, wait),
      };
      this.#waiters.push(waiter);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) {
        clearTimeout(next.timer);
        next.resolve(this.#releaser()); // the slot passes straight to the next waiter
      } else {
        this.#active--;
      }
    };
  }
}

/** Tokens refill continuously at `ratePerSecond` up to `capacity`; taking more waits. */
export class TokenBucket {
  #tokens: number;
  #at: number;

  constructor(
    public ratePerSecond: number,
    public capacity: number,
    now = monotonicNow(),
  ) {
    this.#tokens = capacity;
    this.#at = now;
  }

  /** A new rate and burst from now on (a warming IP's), keeping the tokens there are. */
  retune(ratePerSecond: number, capacity: number, now = monotonicNow()): void {
    this.#refill(now);
    this.ratePerSecond = ratePerSecond;
    this.capacity = capacity;
    this.#tokens = Math.min(this.#tokens, capacity);
  }

  #refill(now: number): void {
    this.#tokens = Math.min(this.capacity, this.#tokens + ((now - this.#at) * this.ratePerSecond) / 1000);
    this.#at = now;
  }

  /** How many milliseconds until `n` tokens (at most `capacity`) are there; 0: now. Takes nothing. */
  wait(n: number, now = monotonicNow()): number {
    this.#refill(now);
    const want = Math.min(n, this.capacity);
    return this.#tokens >= want ? 0 : Math.ceil(((want - this.#tokens) * 1000) / this.ratePerSecond);
  }

  /** Gives back `n` tokens taken for something never sent (up to `capacity`). */
  giveBack(n: number, now = monotonicNow()): void {
    this.#refill(now);
    this.#tokens = Math.min(this.capacity, this.#tokens + n);
  }

  /**
   * Takes `n` tokens (at most `capacity`) and returns 0, or takes nothing and returns how many
   * milliseconds to wait until `n` are there.
   */
  take(n: number, now = monotonicNow()): number {
    this.#refill(now);
    const want = Math.min(n, this.capacity);
    if (this.#tokens >= want) {
      this.#tokens -= want;
      return 0;
    }
    return Math.ceil(((want - this.#tokens) * 1000) / this.ratePerSecond);
  }
}
