/**
 * What destination addresses have taught the probe, kept apart from their live state (queues,
 * sessions) so that forgetting an idle destination does not forget what it told us: a failed TLS
 * handshake is remembered for an hour whether or not the address is in use meanwhile, and so are its
 * last refusals and the domains checked there (what a notice of untrusted answers names). Each fact has
 * its own lifetime and its own bound (shared/ttl-cache.ts), so a stream of new servers cannot grow it.
 */
import type { CheckOutcome } from "../check.ts";
import type { ProbeConfig } from "../config.ts";
import { TtlCache } from "../../shared/ttl-cache.ts";
import { monotonicNow } from "../clock.ts";
import type { DomainsSeen } from "../policy/untrusted.ts";

export type MemoryConfig = Pick<
  ProbeConfig,
  "destinationMemoryEntries" | "deadMs" | "tlsFallbackMemoryMs" | "noReuseMemoryMs" | "tarpitModeMs" | "rcptLimitMemoryMs"
>;

/** A connection that failed (refused, refused greeting): the answer new checks get for a moment. */
export type DeadMark = { outcome: CheckOutcome; failedAt: number };

/** Each fact and what it holds. */
type Facts = {
  /** A refused connection or greeting, for `deadMs`. */
  dead: DeadMark;
  /** A failed TLS handshake: the note every answer from this address carries, for `tlsFallbackMemoryMs`. */
  noTls: string;
  /** Sessions that died when reused: one transaction per session, for `noReuseMemoryMs`. */
  noReuse: true;
  /** A refusal that came late (a tarpit): two RCPTs per transaction, for `tarpitModeMs`. */
  tarpit: true;
  /** The RCPTs per transaction a 452 "too many recipients" taught us, for `rcptLimitMemoryMs`. */
  rcptLimit: number;
  /** When it last refused an unknown user (monotonic ms), for REFUSALS_MEMORY_MS: accepts since then may be silent (probe/policy/untrusted.ts). */
  refusedAt: number;
  /** When it last refused the catch-all test's random address, for REFUSALS_MEMORY_MS: accepting one later is drift. */
  randomRefusedAt: number;
  /** The domains checked there lately, for REFUSALS_MEMORY_MS after the last. */
  domainsSeen: DomainsSeen;
};

/** How long refusals and the domains checked are remembered: the hour a receiver's silent accepts are looked back over. */
export const REFUSALS_MEMORY_MS = 3_600_000;
type Fact = keyof Facts;

export class DestinationMemory {
  readonly #ttlMs: Record<Fact, number>;
  readonly #facts: { [F in Fact]: TtlCache<string, Facts[F]> };

  constructor(c: MemoryConfig) {
    this.#ttlMs = {
      dead: c.deadMs,
      noTls: c.tlsFallbackMemoryMs,
      noReuse: c.noReuseMemoryMs,
      tarpit: c.tarpitModeMs,
      rcptLimit: c.rcptLimitMemoryMs,
      refusedAt: REFUSALS_MEMORY_MS,
      randomRefusedAt: REFUSALS_MEMORY_MS,
      domainsSeen: REFUSALS_MEMORY_MS,
    };
    const store = <V>() => new TtlCache<string, V>(c.destinationMemoryEntries, monotonicNow);
    this.#facts = { dead: store(), noTls: store(), noReuse: store(), tarpit: store(), rcptLimit: store(), refusedAt: store(), randomRefusedAt: store(), domainsSeen: store() };
  }

  /** What `address` taught us of `fact`, if it has not expired. */
  get<F extends Fact>(fact: F, address: string, now?: number): Facts[F] | undefined {
    return this.#facts[fact].get(address, now);
  }

  /** Remembers `fact` of `address` for that fact's lifetime. */
  set<F extends Fact>(fact: F, address: string, value: Facts[F], now?: number): void {
    this.#facts[fact].set(address, value, this.#ttlMs[fact], now);
  }
}
