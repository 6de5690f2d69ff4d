/**
 * A map whose entries expire and whose size is bounded: what the probe remembers about mail servers
 * (catch-all answers, what a destination address taught us) must neither outlive its usefulness nor
 * grow with every server ever seen. When full, the entry written longest ago goes first. Time is
 * passed in (the probe's monotonic clock by default), so tests can move it.
 */
import { monotonicNow } from "./clock.ts";

export class BoundedTtlMap<K, V> {
  readonly #entries = new Map<K, { value: V; expiresAt: number }>();

  constructor(
    readonly ttlMs: number,
    readonly maxEntries: number,
  ) {}

  /** The value, or undefined when there is none or it has expired (then it is dropped). */
  get(key: K, now = monotonicNow()): V | undefined {
    const hit = this.#entries.get(key);
    if (!hit) return undefined;
    if (hit.expiresAt <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return hit.value;
  }

  /** Writes a value that expires `ttlMs` from `now`, replacing any earlier one. */
  set(key: K, value: V, now = monotonicNow()): void {
    this.#entries.delete(key);
    // Map keeps insertion order, so the first key is the one written longest ago.
    if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { value, expiresAt: now + this.ttlMs });
  }

  get size(): number {
    return this.#entries.size;
  }
}
