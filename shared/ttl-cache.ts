/**
 * A bounded map whose entries expire: the one cache shape both sides use (the Worker's key and
 * DNS caches, the probe's catch-all and learned-destination memories). When full, the oldest entry
 * makes room, so one kind of traffic filling it cannot grow memory; an expired entry is dropped
 * when it is next read. Nothing here is shared between processes or isolates.
 */
export class TtlCache<K, V> {
  readonly #entries = new Map<K, { value: V; expiresAt: number }>();

  /** `clock`: milliseconds, Date.now by default (the probe passes its monotonic clock). */
  constructor(
    readonly maxEntries: number,
    private readonly clock: () => number = Date.now,
  ) {}

  get(key: K, now = this.clock()): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  set(key: K, value: V, ttlMs: number, now = this.clock()): void {
    this.#entries.delete(key);
    // Map keeps insertion order: the first key is the oldest entry.
    if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value as K);
    this.#entries.set(key, { value, expiresAt: now + ttlMs });
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Entries held, expired ones not yet read included. */
  get size(): number {
    return this.#entries.size;
  }
}
