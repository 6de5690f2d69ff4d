/**
 * A destination's waiting checks in the order they are served (docs/probe.md "Whose check goes
 * next"): single checks (a person waiting on a sign-up form) before any bulk work, then the bulk
 * tenants in turn, one check each, FIFO within a tenant. The rotation carries on from one
 * transaction to the next, so two tenants sharing one session get alternate recipients, three a
 * third each, whatever the length of their lists. Pure, no timers: Destination peeks, takes what
 * fits, and puts back what it could not send.
 */

/** null: a single check (interactive); a string: the bulk tenant it is for. */
export type Lane = string | null;

export class FairQueue<T> {
  readonly #interactive: T[] = [];
  readonly #tenants = new Map<string, T[]>();
  /** Tenants with waiting checks, in rotation order; `#next` is the one served next. */
  readonly #rotation: string[] = [];
  #next = 0;
  #size = 0;

  constructor(private readonly laneOf: (item: T) => Lane) {}

  get length(): number {
    return this.#size;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    yield* this.#interactive;
    for (const lane of this.#tenants.values()) yield* lane;
  }

  /** Waits at the back of its lane. */
  push(item: T): void {
    this.#lane(this.laneOf(item), "back").push(item);
    this.#size++;
  }

  /** Goes first in its lane again (a check sent back unasked, or to be retried), its tenant next in the rotation. */
  unshift(item: T): void {
    const tenant = this.laneOf(item);
    this.#lane(tenant, "next").unshift(item);
    if (tenant !== null) this.#next = this.#rotation.indexOf(tenant);
    this.#size++;
  }

  /** The check served next, left in place. */
  peek(): T | undefined {
    if (this.#interactive.length > 0) return this.#interactive[0];
    const tenant = this.#rotation[this.#next];
    return tenant === undefined ? undefined : this.#tenants.get(tenant)![0];
  }

  /** The check served next among the lanes not in `skip` (single checks are never skipped), left in place. */
  peekExcept(skip: ReadonlySet<Lane>): T | undefined {
    if (skip.size === 0 || this.#interactive.length > 0) return this.peek();
    for (let i = 0; i < this.#rotation.length; i++) {
      const tenant = this.#rotation[(this.#next + i) % this.#rotation.length]!;
      if (!skip.has(tenant)) return this.#tenants.get(tenant)![0];
    }
    return undefined;
  }

  /** Each lane with waiting checks (null: the single checks) and how many wait in it. */
  *lanes(): IterableIterator<[Lane, number]> {
    if (this.#interactive.length > 0) yield [null, this.#interactive.length];
    for (const tenant of this.#rotation) yield [tenant, this.#tenants.get(tenant)!.length];
  }

  /** Takes `item` out to be sent: its tenant's turn passes to the next tenant. */
  take(item: T): boolean {
    const tenant = this.laneOf(item);
    const at = tenant === null ? -1 : this.#rotation.indexOf(tenant);
    if (!this.remove(item)) return false;
    // Still waiting with more checks and it was its turn: the next tenant's now.
    if (at >= 0 && at === this.#next && this.#rotation[at] === tenant) this.#next = (at + 1) % this.#rotation.length;
    return true;
  }

  /** Takes `item` out without it having been served (it was answered while waiting): the rotation stays. */
  remove(item: T): boolean {
    const tenant = this.laneOf(item);
    const lane = tenant === null ? this.#interactive : this.#tenants.get(tenant);
    const i = lane ? lane.indexOf(item) : -1;
    if (!lane || i < 0) return false;
    lane.splice(i, 1);
    this.#size--;
    if (tenant !== null && lane.length === 0) {
      const at = this.#rotation.indexOf(tenant);
      this.#tenants.delete(tenant);
      this.#rotation.splice(at, 1);
      if (at < this.#next) this.#next--;
      if (this.#next >= this.#rotation.length) this.#next = 0;
    }
    return true;
  }

  /** Puts back checks taken in this order (a transaction that could not go out), the first of them next. */
  putBack(items: readonly T[]): void {
    for (let i = items.length - 1; i >= 0; i--) this.unshift(items[i]!);
  }

  #lane(tenant: Lane, where: "back" | "next"): T[] {
    if (tenant === null) return this.#interactive;
    let lane = this.#tenants.get(tenant);
    if (!lane) {
      this.#tenants.set(tenant, (lane = []));
      // A new tenant joins at the end of the round; one coming back with a retry is served next.
      if (where === "back") this.#rotation.push(tenant);
      else this.#rotation.splice(this.#next, 0, tenant);
    }
    return lane;
  }
}
