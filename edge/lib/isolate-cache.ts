/**
 * A bounded map whose entries expire, kept in one Worker isolate (each isolate has its own; nothing
 * here is shared across Cloudflare's network). When full, the oldest entry makes room, so one kind
 * of traffic filling it cannot grow memory.
 */
export class IsolateCache<K, V> {
  private readonly entries = new Map<K, { value: V; expiresAt: number }>();

  constructor(private readonly maxEntries: number) {}

  get(key: K, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: K, value: V, ttlMs: number, now = Date.now()): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, expiresAt: now + ttlMs });
  }
}
