/**
 * What destination addresses have taught the probe, kept apart from their live state (queues,
 * sessions) so that forgetting an idle destination does not forget what it told us: a failed TLS
 * handshake is remembered for an hour whether or not the address is in use meanwhile. Each fact has
 * its own lifetime and its own bound (BoundedTtlMap), so a stream of new servers cannot grow it.
 */
import type { CheckOutcome } from "./check.ts";
import type { ProbeConfig } from "./config.ts";
import { BoundedTtlMap } from "./ttl-map.ts";

export type MemoryConfig = Pick<
  ProbeConfig,
  "destinationMemoryEntries" | "deadMs" | "tlsFallbackMemoryMs" | "noReuseMemoryMs" | "tarpitModeMs" | "rcptLimitMemoryMs"
>;

/** A connection that failed (refused, refused greeting): the answer new checks get for a moment. */
export type DeadMark = { outcome: CheckOutcome; failedAt: number };

export class DestinationMemory {
  /** A refused connection or greeting, for `deadMs`. */
  readonly dead: BoundedTtlMap<string, DeadMark>;
  /** A failed TLS handshake: the note every answer from this address carries, for `tlsFallbackMemoryMs`. */
  readonly noTls: BoundedTtlMap<string, string>;
  /** Sessions that died when reused: one transaction per session, for `noReuseMemoryMs`. */
  readonly noReuse: BoundedTtlMap<string, true>;
  /** A refusal that came late (a tarpit): two RCPTs per transaction, for `tarpitModeMs`. */
  readonly tarpit: BoundedTtlMap<string, true>;
  /** The RCPTs per transaction a 452 "too many recipients" taught us, for `rcptLimitMemoryMs`. */
  readonly rcptLimit: BoundedTtlMap<string, number>;

  constructor(c: MemoryConfig) {
    const entries = c.destinationMemoryEntries;
    this.dead = new BoundedTtlMap(c.deadMs, entries);
    this.noTls = new BoundedTtlMap(c.tlsFallbackMemoryMs, entries);
    this.noReuse = new BoundedTtlMap(c.noReuseMemoryMs, entries);
    this.tarpit = new BoundedTtlMap(c.tarpitModeMs, entries);
    this.rcptLimit = new BoundedTtlMap(c.rcptLimitMemoryMs, entries);
  }
}
