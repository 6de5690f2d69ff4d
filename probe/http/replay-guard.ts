/**
 * The nonces of signed requests this probe has accepted, each kept until its timestamp leaves the
 * skew window (docs/probe.md "The SMTP probe"), so a captured request is refused the second time. Only
 * requests whose signature checked out are remembered, so junk cannot fill it. When full it refuses
 * new requests (503) rather than forget a nonce still in its window: forgetting would reopen replay.
 */
import { PROBE_MAX_SKEW_SECONDS } from "../../shared/probe-contract.ts";

/** Far above what a probe serves in a window (its requests carry up to 2,000 checks each). */
export const MAX_REMEMBERED_NONCES = 200_000;

export type NonceVerdict = "fresh" | "replayed" | "full";

export class ReplayGuard {
  /** Nonce -> the second (Unix) after which its timestamp is stale and it can be forgotten. In insertion order. */
  private readonly seen = new Map<string, number>();

  constructor(private readonly maxEntries = MAX_REMEMBERED_NONCES) {}

  /** Records `nonce` (signed at `timestampSeconds`) unless it was seen or there is no room. */
  admit(nonce: string, timestampSeconds: number, nowSeconds = Math.floor(Date.now() / 1000)): NonceVerdict {
    this.forgetStale(nowSeconds);
    if (this.seen.has(nonce)) return "replayed";
    if (this.seen.size >= this.maxEntries) return "full";
    this.seen.set(nonce, timestampSeconds + PROBE_MAX_SKEW_SECONDS);
    return "fresh";
  }

  get size(): number {
    return this.seen.size;
  }

  get capacity(): number {
    return this.maxEntries;
  }

  /** Entries come in roughly by time; stale ones at the front go first, and a late straggler soon after. */
  private forgetStale(nowSeconds: number): void {
    for (const [nonce, staleAfter] of this.seen) {
      if (staleAfter >= nowSeconds) break;
      this.seen.delete(nonce);
    }
  }
}
