/**
 * Catch-all knowledge per domain and MX host. Whether a server accepts any address changes rarely,
 * and asking costs an extra RCPT that servers count as an error against us, so a known answer is
 * reused for a while. The key includes the MX host that answered: a backup MX that accepts
 * everything (and bounces later) must not brand a domain whose primary knows its users.
 *
 * A test in progress is known too, so checks that arrive meanwhile wait for its answer instead of
 * sending a random address of their own. The cache is per probe process: in a fleet each probe
 * learns on its own (the Worker sends each domain to the same probe, so that is rare). The test itself,
 * a random address at the check's domain, is made here too (catchAllTestFor), in one place.
 */
import { randomBytes } from "node:crypto";
import type { QueuedCheck, SentRcpt } from "../check.ts";
import { monotonicNow } from "../clock.ts";
import { TtlCache } from "../../shared/ttl-cache.ts";

/** A random address sent to learn whether the server accepts any address at `domain`. */
export type CatchAllTest = { domain: string; host: string; recipient: string; finish: (catchAll: boolean | null) => void; budgetRcpt?: SentRcpt };

/** A local part nobody has: 16 random letters and digits. */
function randomLocalPart(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from(randomBytes(16), (b) => alphabet[b % alphabet.length]).join("");
}

/** The catch-all test for a check's domain at its MX host: a random local part at the domain as the check spells it. */
export function catchAllTestFor(p: Pick<QueuedCheck, "domain" | "req">): CatchAllTest {
  const at = p.req.recipient.lastIndexOf("@");
  return { domain: p.domain, host: p.req.host, recipient: `${randomLocalPart()}@${p.req.recipient.slice(at + 1)}`, finish: () => {} };
}

type Key = string;
const keyOf = (domain: string, host: string): Key => `${domain.toLowerCase()} ${host.toLowerCase()}`;

export class CatchAllCache {
  readonly #entries: TtlCache<Key, boolean>;
  readonly #tests = new Map<Key, Promise<boolean | null>>();

  constructor(
    readonly ttlMs: number,
    maxEntries: number,
  ) {
    this.#entries = new TtlCache(maxEntries, monotonicNow);
  }

  get(domain: string, host: string, now = monotonicNow()): boolean | null {
    return this.#entries.get(keyOf(domain, host), now) ?? null;
  }

  /** Records an answer; a later answer that contradicts an earlier one replaces it. */
  set(domain: string, host: string, catchAll: boolean, now = monotonicNow()): void {
    this.#entries.set(keyOf(domain, host), catchAll, this.ttlMs, now);
  }

  /** The answer of a test in progress for this domain and host, or null when none is running. */
  pending(domain: string, host: string): Promise<boolean | null> | null {
    return this.#tests.get(keyOf(domain, host)) ?? null;
  }

  /**
   * Registers a test; the returned function ends it with what was learned (null: nothing), records
   * a real answer and wakes every check waiting for it. Calling it again does nothing.
   */
  begin(domain: string, host: string): (catchAll: boolean | null) => void {
    const key = keyOf(domain, host);
    let finish!: (catchAll: boolean | null) => void;
    const answer = new Promise<boolean | null>((resolve) => (finish = resolve));
    this.#tests.set(key, answer);
    let done = false;
    return (catchAll) => {
      if (done) return;
      done = true;
      if (this.#tests.get(key) === answer) this.#tests.delete(key);
      if (catchAll !== null) this.set(domain, host, catchAll);
      finish(catchAll);
    };
  }

  get size(): number {
    return this.#entries.size;
  }
}
