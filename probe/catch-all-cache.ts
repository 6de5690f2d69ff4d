/**
 * Catch-all verdicts per domain. Whether a domain accepts any address changes rarely, and asking
 * costs an extra RCPT that some servers hold against us, so a known answer is reused for a while.
 * The cache is per probe process: in a fleet each probe learns on its own, which costs at most one
 * extra RCPT per domain and probe.
 */
export class CatchAllCache {
  readonly #entries = new Map<string, { catchAll: boolean; expiresAt: number }>();

  constructor(
    readonly ttlMs: number,
    readonly maxEntries: number,
  ) {}

  get(domain: string, now = Date.now()): boolean | null {
    const key = domain.toLowerCase();
    const hit = this.#entries.get(key);
    if (!hit) return null;
    if (hit.expiresAt <= now) {
      this.#entries.delete(key);
      return null;
    }
    return hit.catchAll;
  }

  set(domain: string, catchAll: boolean, now = Date.now()): void {
    const key = domain.toLowerCase();
    this.#entries.delete(key);
    // Map keeps insertion order, so the first key is the oldest entry.
    if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { catchAll, expiresAt: now + this.ttlMs });
  }

  get size(): number {
    return this.#entries.size;
  }
}
