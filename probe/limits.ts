/**
 * Concurrency limits with a bounded wait. A probe VM has one IP and a finite number of sockets;
 * big providers throttle or block an IP that opens many connections at once, so each destination
 * address gets a small limit of its own on top of the global one.
 */

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
    const wait = deadline - Date.now();
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

/** One Limiter per key (destination IP), created on demand and dropped when idle. */
export class KeyedLimiter {
  readonly #limiters = new Map<string, Limiter>();

  constructor(readonly maxPerKey: number) {}

  async acquire(key: string, deadline: number): Promise<(() => void) | null> {
    let limiter = this.#limiters.get(key);
    if (!limiter) {
      limiter = new Limiter(this.maxPerKey);
      this.#limiters.set(key, limiter);
    }
    const release = await limiter.acquire(deadline);
    const l = limiter;
    if (!release) {
      this.#dropIfIdle(key, l);
      return null;
    }
    return () => {
      release();
      this.#dropIfIdle(key, l);
    };
  }

  #dropIfIdle(key: string, limiter: Limiter): void {
    if (limiter.active === 0 && limiter.waiting === 0 && this.#limiters.get(key) === limiter) this.#limiters.delete(key);
  }
}
