/**
 * The scheduler's pacing decisions (probe/qmgr/pacing.ts) and what it remembers (shared/ttl-cache.ts,
 * destination-memory.ts), driven by a clock of the test's own: back-off doubling and halving,
 * sessions grown back on success, dead, no-TLS, no-reuse and tarpit memory, the learned 452 limit,
 * the RCPT token bucket, RCPTs per transaction, sessions worth opening, rotation. No sockets, no
 * waiting. The settings these read are parsed here too.
 */
import { describe, expect, it } from "vitest";
import { blankOutcome, type CheckOutcome } from "../../probe/check.ts";
import { loadProbeConfig, type ProbeConfig } from "../../probe/config.ts";
import { DestinationMemory } from "../../probe/qmgr/destination-memory.ts";
import { Pacing, type SessionUse } from "../../probe/qmgr/pacing.ts";
import { TtlCache } from "../../shared/ttl-cache.ts";
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";

const REQUIRED = { PROBE_SECRET: TEST_PROBE_SECRET, PROBE_HELO_NAME: "probe1.verify.example", PROBE_PUBLIC_IPS: "192.0.2.10" };
const defaults = loadProbeConfig(REQUIRED);
const T0 = 1_000_000;
const ADDRESS = "192.0.2.25";

function pacing(overrides: Partial<ProbeConfig> = {}, memory?: DestinationMemory) {
  const config = { ...defaults, ...overrides };
  const mem = memory ?? new DestinationMemory(config);
  return { pacing: new Pacing(ADDRESS, config, mem, T0), memory: mem, config };
}

const fresh: SessionUse = { transactions: 0, rejections: 0, openedAt: T0 };

describe("settings", () => {
  it("default to the values the probe always used", () => {
    expect(defaults).toMatchObject({
      retryLimit: 3,
      backoffMinMs: 1_000,
      backoffMaxMs: 30_000,
      deadMs: 5_000,
      tlsFallbackMemoryMs: 3_600_000,
      noReuseMemoryMs: 600_000,
      tarpitReplyMs: 1_000,
      tarpitModeMs: 120_000,
      catchAllMinWaitMs: 1_500,
      catchAllCacheEntries: 100_000,
      destinationForgetMs: 600_000,
      maxDestinations: 10_000,
      destinationMemoryEntries: 100_000,
      rcptLimitMemoryMs: 3_600_000,
    });
  });

  it.each([
    ["PROBE_DESTINATION_BACKOFF_MIN_MS", "250", "backoffMinMs", 250],
    ["PROBE_DESTINATION_BACKOFF_MAX_MS", "60000", "backoffMaxMs", 60_000],
    ["PROBE_DESTINATION_DEAD_MS", "0", "deadMs", 0],
    ["PROBE_TLS_FALLBACK_MEMORY_MS", "60000", "tlsFallbackMemoryMs", 60_000],
    ["PROBE_TARPIT_REPLY_MS", "500", "tarpitReplyMs", 500],
    ["PROBE_TARPIT_MODE_MS", "1000", "tarpitModeMs", 1_000],
    ["PROBE_MAX_DESTINATIONS", "50", "maxDestinations", 50],
    ["PROBE_RETRY_LIMIT", "0", "retryLimit", 0],
  ] as const)("%s=%s is read", (name, value, key, expected) => {
    expect(loadProbeConfig({ ...REQUIRED, [name]: value })[key]).toBe(expected);
  });

  it.each([
    [{ PROBE_MAX_DESTINATIONS: "0" }, /PROBE_MAX_DESTINATIONS/],
    [{ PROBE_TARPIT_REPLY_MS: "soon" }, /PROBE_TARPIT_REPLY_MS/],
    [{ PROBE_DESTINATION_BACKOFF_MIN_MS: "5000", PROBE_DESTINATION_BACKOFF_MAX_MS: "1000" }, /PROBE_DESTINATION_BACKOFF_MIN_MS must not exceed PROBE_DESTINATION_BACKOFF_MAX_MS/],
  ])("%o is refused, naming the setting", (env, message) => {
    expect(() => loadProbeConfig({ ...REQUIRED, ...env })).toThrow(message);
  });
});

describe("TtlCache (shared/ttl-cache.ts)", () => {
  it("forgets an entry at its expiry and keeps at most maxEntries, the one written longest ago going first", () => {
    const map = new TtlCache<string, number>(2, () => T0);
    map.set("a", 1, 100, T0);
    map.set("b", 2, 100, T0 + 10);
    expect([map.get("a", T0 + 99), map.get("a", T0 + 100)]).toEqual([1, undefined]);
    map.set("a", 1, 100, T0 + 20);
    map.set("b", 3, 100, T0 + 30); // rewriting makes it the newest
    map.set("c", 4, 100, T0 + 40);
    expect([map.get("a", T0 + 40), map.get("b", T0 + 40), map.get("c", T0 + 40), map.size]).toEqual([undefined, 3, 4, 2]);
  });
});

describe("back-off and sessions", () => {
  it("doubles from the minimum to the maximum, halving the sessions, and starts over after a clean transaction", () => {
    const { pacing: p } = pacing({ maxPerDestination: 4, backoffMinMs: 1_000, backoffMaxMs: 5_000 });
    const steps = [0, 1, 2, 3, 4].map((i) => p.pushedBack(T0 + i));
    expect(steps).toEqual([
      { backoffMs: 1_000, sessions: 2 },
      { backoffMs: 2_000, sessions: 1 },
      { backoffMs: 4_000, sessions: 1 },
      { backoffMs: 5_000, sessions: 1 },
      { backoffMs: 5_000, sessions: 1 },
    ]);
    expect([p.pausedUntil(T0 + 4), p.pausedUntil(T0 + 5_003), p.pausedUntil(T0 + 5_004)]).toEqual([T0 + 5_004, T0 + 5_004, null]);
    const grown = [1, 2, 3, 4].map(() => (p.transactionClean(), p.sessionLimit));
    expect(grown).toEqual([2, 3, 4, 4]);
    expect(p.pushedBack(T0 + 10_000)).toEqual({ backoffMs: 1_000, sessions: 2 });
  });

  it.each([
    // queued, slots, opening, reusable sessions (rejections), limit -> sessions to open
    [0, 0, 0, [], 4, 0],
    [1, 0, 0, [], 4, 1],
    [20, 0, 0, [], 4, 3], // 9 per session: what a session may be refused before the soft error limit
    [20, 0, 1, [], 4, 2],
    [20, 1, 0, [0], 4, 2], // a reusable session absorbs 9 of them
    [20, 1, 0, [8], 4, 3], // one that may be refused only once more absorbs 1
    [100, 3, 0, [0, 0, 0], 4, 1], // never past the destination's limit
  ] as const)("%i queued, %i places, %i opening, sessions %o, limit %i: open %i", (queued, slots, opening, rejections, limit, expected) => {
    const { pacing: p } = pacing({ maxPerDestination: limit });
    const reusable = rejections.map((r) => ({ ...fresh, rejections: r }));
    expect(p.sessionsToOpen(queued, { slots, opening, reusable }, T0)).toBe(expected);
  });

  it.each([
    ["fresh", fresh, false],
    ["at PROBE_SESSION_MAX_TRANSACTIONS", { ...fresh, transactions: 20 }, true],
    ["at PROBE_MAX_REJECTIONS_PER_SESSION", { ...fresh, rejections: 9 }, true],
    ["at PROBE_SESSION_MAX_AGE_MS", { ...fresh, openedAt: T0 - 60_000 }, true],
  ] as const)("a session %s is rotated: %s", (_what, session, rotate) => {
    expect(pacing().pacing.shouldRotate(session, T0)).toBe(rotate);
  });

  it("puts a check back at most PROBE_RETRY_LIMIT times", () => {
    const { pacing: p } = pacing({ retryLimit: 3 });
    expect([0, 1, 2, 3].map((n) => p.mayRetry(n))).toEqual([true, true, true, false]);
  });
});

describe("RCPTs per transaction", () => {
  it.each([
    ["our limit", { maxRejectionsPerSession: 100 }, fresh, { rcpts: 20, catchAllTest: true }],
    ["what the session may still be refused", {}, { ...fresh, rejections: 7 }, { rcpts: 2, catchAllTest: true }],
    ["the bucket's burst", { destinationRcptRate: 5 }, fresh, { rcpts: 5, catchAllTest: true }],
    ["one per transaction: no catch-all test beside it", { maxRcptsPerTransaction: 1 }, fresh, { rcpts: 1, catchAllTest: false }],
  ] as const)("are bounded by %s", (_what, overrides, session, expected) => {
    expect(pacing(overrides).pacing.transactionSize(session, T0)).toEqual(expected);
  });

  it("a 452 after n accepted RCPTs lowers the limit to n, never raises it, and is forgotten after PROBE_RCPT_LIMIT_MEMORY_MS", () => {
    const { pacing: p } = pacing({ rcptLimitMemoryMs: 10_000 });
    expect(p.recipientLimitReached(0, T0)).toBe(false); // the first RCPT refused: pushback, nothing to learn
    expect(p.rcptLimit(T0)).toBe(20);
    expect(p.recipientLimitReached(3, T0)).toBe(true);
    expect(p.recipientLimitReached(5, T0 + 1)).toBe(true);
    expect([p.rcptLimit(T0 + 1), p.transactionSize(fresh, T0 + 1).rcpts]).toEqual([3, 3]);
    expect(p.rcptLimit(T0 + 10_001)).toBe(20);
  });

  it("a refusal later than PROBE_TARPIT_REPLY_MS after the reply before it puts the address in tarpit mode: two RCPTs per transaction for PROBE_TARPIT_MODE_MS", () => {
    const { pacing: p } = pacing({ tarpitReplyMs: 1_000, tarpitModeMs: 120_000, maxRejectionsPerSession: 100 });
    expect([
      p.rcptReplied(550, null, T0 + 5_000), // the first reply of a transaction is never judged
      p.rcptReplied(250, T0, T0 + 5_000), // nor an acceptance
      p.rcptReplied(550, T0, T0 + 1_000), // nor a refusal just in time
    ]).toEqual([null, null, null]);
    expect(p.transactionSize(fresh, T0 + 1_000).rcpts).toBe(20);
    expect(p.rcptReplied(550, T0, T0 + 1_001)).toBe(1_001);
    expect(p.transactionSize(fresh, T0 + 1_001)).toEqual({ rcpts: 2, catchAllTest: true });
    expect(p.transactionSize(fresh, T0 + 1_001 + 119_999).rcpts).toBe(2);
    expect(p.transactionSize(fresh, T0 + 1_001 + 120_000).rcpts).toBe(20);
  });

  it("takes RCPT tokens at PROBE_DESTINATION_RCPT_RATE a second and says how long to wait when out", () => {
    const { pacing: p } = pacing({ destinationRcptRate: 10 });
    expect([p.takeRcpts(10, T0), p.takeRcpts(1, T0), p.takeRcpts(2, T0 + 100), p.takeRcpts(1, T0 + 100)]).toEqual([0, 100, 100, 0]);
  });

  it("gives back the tokens of RCPTs never sent (a deferred catch-all test its batch settled), never past the burst", () => {
    const { pacing: p } = pacing({ destinationRcptRate: 10 });
    expect(p.takeRcpts(10, T0)).toBe(0);
    expect(p.rcptWait(2, T0)).toBe(200);
    p.giveBackRcpts(2, T0);
    expect(p.rcptWait(2, T0)).toBe(0);
    expect(p.rcptWait(3, T0)).toBe(100);
    p.giveBackRcpts(50, T0);
    expect(p.takeRcpts(10, T0)).toBe(0);
    expect(p.rcptWait(1, T0)).toBe(100);
  });

  it("an accepted address waits for its catch-all answer 3x its own reply time, at least PROBE_CATCH_ALL_MIN_WAIT_MS", () => {
    const { pacing: p } = pacing({ catchAllMinWaitMs: 1_500 });
    expect([p.catchAllWaitMs(100), p.catchAllWaitMs(1_000)]).toEqual([1_500, 3_000]);
  });
});

describe("learned facts outlive the destination's live state", () => {
  const refused: CheckOutcome = { ...blankOutcome(), failure: { kind: "connect", message: "connect ECONNREFUSED" } };

  it("a refused connection marks the address dead for PROBE_DESTINATION_DEAD_MS, for a new Pacing of the same address too", () => {
    const { pacing: p, memory, config } = pacing({ deadMs: 5_000 });
    expect(p.dead(T0)).toBeNull();
    p.connectFailed(refused, T0);
    const again = new Pacing(ADDRESS, config, memory, T0 + 1_200);
    expect(again.dead(T0 + 1_200)).toMatchObject({ roundTrips: 0, failure: { kind: "connect", message: "connect ECONNREFUSED (this address failed 1200 ms ago)" } });
    expect(again.dead(T0 + 5_000)).toBeNull();
    expect(new Pacing("192.0.2.26", config, memory, T0).dead(T0)).toBeNull();
  });

  it("a failed TLS handshake means plain text, with a note, for PROBE_TLS_FALLBACK_MEMORY_MS", () => {
    const { pacing: p, memory, config } = pacing({ tlsFallbackMemoryMs: 3_600_000 });
    expect([p.startTls(T0), p.tlsNote(T0)]).toEqual([true, null]);
    p.tlsFailed("wrong version number", T0);
    const again = new Pacing(ADDRESS, config, memory, T0 + 1);
    expect([again.startTls(T0 + 3_599_999), again.tlsNote(T0 + 1)]).toEqual([false, "STARTTLS failed (wrong version number); continued in plain text"]);
    expect(again.startTls(T0 + 3_600_000)).toBe(true);
  });

  it("two sessions found dead when reused: every session rotated after one transaction for PROBE_NO_REUSE_MEMORY_MS", () => {
    const { pacing: p } = pacing({ noReuseMemoryMs: 600_000 });
    const openedAt = (now: number): SessionUse => ({ ...fresh, openedAt: now });
    p.staleSession(T0);
    expect(p.shouldRotate(fresh, T0)).toBe(false); // once may be the server's idle timeout
    p.staleSession(T0 + 10);
    const at = [T0 + 10, T0 + 600_009, T0 + 600_010];
    expect(at.map((now) => p.shouldRotate(openedAt(now), now))).toEqual([true, true, false]);
  });

  it("each fact is bounded by PROBE_DESTINATION_MEMORY_ENTRIES, the oldest forgotten first", () => {
    const config = { ...defaults, destinationMemoryEntries: 2 };
    const memory = new DestinationMemory(config);
    for (const n of [1, 2, 3]) new Pacing(`192.0.2.${n}`, config, memory, T0).tlsFailed("bad record", T0);
    expect([1, 2, 3].map((n) => new Pacing(`192.0.2.${n}`, config, memory, T0).startTls(T0))).toEqual([true, false, false]);
  });
});
