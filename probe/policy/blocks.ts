/**
 * The blocks in force, with their scope and their re-tests (issue 44, docs/probe.md "How far a block reaches",
 * "Blocks are tested again"). A block is kept per budget key (policy/receivers.ts keyOf) and reaches either the whole
 * key (`destination`: a refusal at the greeting, EHLO or MAIL FROM, a text the family documents as global, or two or
 * more recipient domains refusing us) or one recipient domain there (`domain`: a tenant's own block list at a server
 * that serves many). What each says, since and until when, and how often it was tried again, is shown in /status and
 * written to PROBE_STATE_FILE.
 *
 * - Evidence window: domains that blocked us at a key within EVIDENCE_WINDOW_MS count towards the two that make a
 *   block destination-wide.
 * - Unconfirmed: a domain block taken before any other domain was answered at its key since; until one is (within the
 *   evidence window), the key's transactions carry one RCPT (a gateway that refuses us whole costs one refused RCPT
 *   more, not a transaction's).
 * - Re-tests: a block longer than an hour is tried again with one check every RETEST_INTERVAL_MS (an hour), while it
 *   lasts; a check answered lifts it, one refused again keeps it as it was (its end does not move).
 *
 * Pure: no I/O; every time is the caller's (the probe clock, Unix-scale ms), scaled by PROBE_POLICY_TIME_SCALE.
 */
import type { ReceiverFamily } from "../../shared/email/receivers.ts";

export type BlockScope = "destination" | "domain";

/** One block in force. */
export type BlockRecord = {
  key: string;
  family: ReceiverFamily;
  scope: BlockScope;
  /** The recipient domain a `domain` block is for; null for the whole key. */
  domain: string | null;
  /** The refusal, as the receiver wrote it (code, enhanced code, text; at most 300 characters). */
  reply: string;
  since: number;
  until: number;
  /** Re-tests that found it holding. */
  retests: number;
  /** When the next re-test may go, or null (a block of an hour or less, or none left before its end). */
  nextRetestAt: number | null;
  /** A domain block: another domain was answered at the key since (or in the transaction that drew it). */
  confirmed: boolean;
};

/** The interval of re-tests, and the least block length that has them: an hour. */
export const RETEST_INTERVAL_MS = 3_600_000;
/** Domains that blocked us at a key within this long count together (two make the block destination-wide). */
export const EVIDENCE_WINDOW_MS = 3_600_000;
/** Blocks kept at most (the newest): a stream of tenants refusing us cannot grow the state. */
export const MAX_BLOCKS = 10_000;

const slot = (domain: string | null) => domain ?? "";

export class Blocks {
  readonly #byKey = new Map<string, Map<string, BlockRecord>>();
  /** Re-tests in flight, by record: one at a time. */
  readonly #retesting = new Set<BlockRecord>();
  #count = 0;

  /** @param scale PROBE_POLICY_TIME_SCALE: every interval divided by it. */
  constructor(private readonly scale = 1) {}

  get retestIntervalMs(): number {
    return RETEST_INTERVAL_MS / this.scale;
  }

  /** Records a block (replacing one of the same scope at the key). */
  add(r: Omit<BlockRecord, "retests" | "nextRetestAt"> & Partial<Pick<BlockRecord, "retests" | "nextRetestAt">>): BlockRecord {
    const interval = this.retestIntervalMs;
    const next = r.until - r.since > interval && r.since + interval < r.until ? r.since + interval : null;
    const rec: BlockRecord = { retests: 0, nextRetestAt: next, ...r, reply: r.reply.slice(0, 300) };
    let at = this.#byKey.get(r.key);
    if (!at) this.#byKey.set(r.key, (at = new Map()));
    if (!at.has(slot(r.domain))) this.#count++;
    at.set(slot(r.domain), rec);
    if (this.#count > MAX_BLOCKS) this.#dropOldest();
    return rec;
  }

  /** The block in force for this domain at this key (its own, not the key's), or undefined. */
  domainBlock(key: string, domain: string, now: number): BlockRecord | undefined {
    const r = this.#byKey.get(key)?.get(domain);
    return r && r.until > now ? r : undefined;
  }

  /** The key's destination-wide block in force, or undefined. */
  destinationBlock(key: string, now: number): BlockRecord | undefined {
    const r = this.#byKey.get(key)?.get("");
    return r && r.until > now ? r : undefined;
  }

  /** Whether the key has any domain block in force (the check that skips the queue's sweep when none). */
  hasDomainBlocks(key: string, now: number): boolean {
    const at = this.#byKey.get(key);
    if (!at) return false;
    for (const r of at.values()) if (r.domain !== null && r.until > now) return true;
    return false;
  }

  /** Recipient domains that blocked us at this key within the evidence window. */
  lately(key: string, now: number): Set<string> {
    const out = new Set<string>();
    for (const r of this.#byKey.get(key)?.values() ?? []) if (r.domain !== null && r.since >= now - EVIDENCE_WINDOW_MS / this.scale) out.add(r.domain);
    return out;
  }

  /** A RCPT for `domain` was answered at this key (accepted, or refused as the mailbox's answer): other domains' blocks there are confirmed as theirs. */
  answered(key: string, domain: string): void {
    for (const r of this.#byKey.get(key)?.values() ?? []) if (r.domain !== null && r.domain !== domain) r.confirmed = true;
  }

  /** Whether a domain block at this key awaits another domain's answer (its transactions then carry one RCPT). */
  unconfirmed(key: string, now: number): boolean {
    // At most for the evidence window: a server that answers nothing else (greylisting, say) is not held to one RCPT for the block's day.
    for (const r of this.#byKey.get(key)?.values() ?? []) if (r.domain !== null && !r.confirmed && r.until > now && r.since >= now - EVIDENCE_WINDOW_MS / this.scale) return true;
    return false;
  }

  /** The block a check for `domain` at `key` may re-test now (its key's, else its domain's), taken so no other goes meanwhile; or null. */
  takeRetest(key: string, domain: string, now: number): BlockRecord | null {
    for (const r of [this.destinationBlock(key, now), this.domainBlock(key, domain, now)]) {
      if (!r) continue;
      if (r.nextRetestAt === null || r.nextRetestAt > now || this.#retesting.has(r)) return null;
      this.#retesting.add(r);
      return r;
    }
    return null;
  }

  /** The re-test's check was answered: the block is over. */
  lift(r: BlockRecord): void {
    this.#retesting.delete(r);
    const at = this.#byKey.get(r.key);
    if (at?.get(slot(r.domain)) !== r) return;
    at.delete(slot(r.domain));
    this.#count--;
    if (at.size === 0) this.#byKey.delete(r.key);
  }

  /** The re-test found it holding: it keeps its end, and is tried again an interval later if that is before the end. */
  held(r: BlockRecord, now: number): void {
    if (!this.#retesting.delete(r)) return;
    r.retests++;
    const next = now + this.retestIntervalMs;
    r.nextRetestAt = next < r.until ? next : null;
  }

  /** The re-test went nowhere (its check expired or was handed back before it was asked): another check may try. */
  release(r: BlockRecord): void {
    this.#retesting.delete(r);
  }

  /** Every block in force. */
  list(now: number): BlockRecord[] {
    const out: BlockRecord[] = [];
    for (const at of this.#byKey.values()) for (const r of at.values()) if (r.until > now) out.push(r);
    return out;
  }

  /** Forgets blocks that ended. */
  sweep(now: number): void {
    for (const [key, at] of this.#byKey) {
      for (const [d, r] of at) {
        // Kept for the evidence window after its end: a domain that blocked us lately still counts.
        if (r.until <= now && r.since < now - EVIDENCE_WINDOW_MS / this.scale) {
          at.delete(d);
          this.#count--;
        }
      }
      if (at.size === 0) this.#byKey.delete(key);
    }
  }

  snapshot(now: number): BlockRecord[] {
    this.sweep(now);
    const out: BlockRecord[] = [];
    for (const at of this.#byKey.values()) for (const r of at.values()) out.push({ ...r });
    return out;
  }

  restore(records: readonly BlockRecord[]): void {
    for (const r of records) this.add(r);
  }

  #dropOldest(): void {
    let oldest: BlockRecord | null = null;
    for (const at of this.#byKey.values()) for (const r of at.values()) if (!oldest || r.since < oldest.since) oldest = r;
    if (oldest) this.lift(oldest);
  }
}
