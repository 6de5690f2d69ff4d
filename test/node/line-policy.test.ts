/**
 * edge/jobs/verification/line-policy.ts, the one place that decides what becomes of a claimed job line: table
 * driven, no database. The end-to-end behaviour (a recheck really happens, a dead probe hands its
 * lines to the next) is in test/workers/jobs.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  afterAnswer,
  afterDeferral,
  afterProbeFailure,
  afterRefusal,
  LINE_POLICY,
  MAX_QUEUE_DELAY_SECONDS,
  overClaimed,
  parkedDelaySeconds,
  probeRank,
  refusedWaitingOn,
  requeueDelaySeconds,
  waitedTooLong,
  waitsOnBlock,
  type LineHistory,
} from "../../edge/jobs/verification/line-policy.ts";
import type { EmailVerificationResult } from "../../shared/api.ts";
import { SmtpOutcome } from "../../shared/smtp-outcome.ts";

const line = (over: Partial<LineHistory> = {}): LineHistory => ({ claims: 1, probeFailures: 0, rechecking: false, waitingSince: null, ...over });
const result = (smtp_outcome: string | null, dnsAssumed = false) =>
  ({ score_details: dnsAssumed ? { dns_failed_assumption: true } : {}, details: { smtp_outcome } }) as unknown as EmailVerificationResult;

describe("an answer in hand", () => {
  const NOW = 1_000_000;
  it.each(SmtpOutcome.options.map((o) => [o, o === "temporary_failure" || o === "timeout"] as const))("%s: rechecked on its first try: %s", (outcome, temporary) => {
    expect(afterAnswer(line(), result(outcome), 60, NOW)).toEqual(temporary ? { kind: "recheck", recheckAt: NOW + 60_000 } : { kind: "done" });
  });

  it("a DNS failure (an assumed MX) is rechecked too; no SMTP check at all is not", () => {
    expect(afterAnswer(line(), result(null, true), 60, NOW)).toEqual({ kind: "recheck", recheckAt: NOW + 60_000 });
    expect(afterAnswer(line(), result(null), 60, NOW)).toEqual({ kind: "done" });
  });

  it("a recheck's own temporary answer is final, and so is any with rechecks off (delay 0)", () => {
    expect(afterAnswer(line({ rechecking: true, claims: 2 }), result("temporary_failure"), 60, NOW)).toEqual({ kind: "done" });
    expect(afterAnswer(line(), result("temporary_failure"), 0, NOW)).toEqual({ kind: "done" });
  });
});

describe("a probe that could not be asked", () => {
  it.each([
    [0, "release"],
    [LINE_POLICY.maxProbeFailures - 2, "release"],
    [LINE_POLICY.maxProbeFailures - 1, "give_up"],
  ] as const)("after %i earlier probe failures: %s", (probeFailures, expected) => {
    expect(afterProbeFailure(line({ probeFailures, claims: 50 }))).toBe(expected);
  });

  it("moves the line one probe down the ranking per probe failure, never for claims or a recheck", () => {
    expect([0, 1, 2, 3].map((probeFailures) => probeRank(line({ probeFailures }), 3))).toEqual([0, 1, 2, 0]);
    expect(probeRank(line({ claims: 7, rechecking: true }), 3)).toBe(0);
  });
});

it("a line claimed more than maxClaims times is answered without an SMTP check", () => {
  expect(overClaimed(line({ claims: LINE_POLICY.maxClaims }))).toBe(false);
  expect(overClaimed(line({ claims: LINE_POLICY.maxClaims + 1 }))).toBe(true);
});

it("lines go back on the queue at once when deferred or moved, after a pause when released, after the recheck delay for a recheck", () => {
  expect([requeueDelaySeconds("defer", 90), requeueDelaySeconds("move", 90), requeueDelaySeconds("release", 90), requeueDelaySeconds("recheck", 90)]).toEqual([
    0,
    0,
    LINE_POLICY.releaseDelaySeconds,
    90,
  ]);
});

describe("a line the probe handed back because the receiver refuses that probe (a block): never an answer", () => {
  const NOW = 10_000_000;
  const DAY = 86_400_000;
  it.each([
    ["another probe in the ranking has not had it: moved there at once", line(), 3 * 3_600_000, 3, { kind: "move" }],
    ["the second of three probes refused too: moved to the third", line({ probeFailures: 1 }), 3 * 3_600_000, 3, { kind: "move" }],
    ["one probe only: parked until the block ends", line(), 3 * 3_600_000, 1, { kind: "park", until: NOW + 3 * 3_600_000 }],
    ["every probe had it: parked until the block ends", line({ probeFailures: 1 }), 3 * 3_600_000, 2, { kind: "park", until: NOW + 3 * 3_600_000 }],
    ["a block with no end said: parked a day, the table's longest", line(), undefined, 1, { kind: "park", until: NOW + DAY }],
    ["a block that ends exactly at the longest wait still parks", line({ waitingSince: NOW - DAY / 2 }), DAY / 2, 1, { kind: "park", until: NOW + DAY / 2 }],
    ["a block past the longest wait: answered now, probe_refused", line({ waitingSince: NOW - DAY / 2 }), DAY / 2 + 1, 1, { kind: "give_up" }],
  ] as const)("%s", (_, history, retryAfterMs, probes, expected) => {
    expect(afterRefusal(history, retryAfterMs, probes, DAY, NOW)).toEqual(expected);
  });

  it("is parked on refused:<family>, which the job's queue.waiting_on shows, apart from a budget's family", () => {
    expect(refusedWaitingOn("forcepoint")).toBe("refused:forcepoint");
    expect(refusedWaitingOn(null)).toBe("refused:unknown");
    expect([waitsOnBlock("refused:forcepoint"), waitsOnBlock("forcepoint"), waitsOnBlock(null)]).toEqual([true, false, false]);
  });
});

describe("a line the probe handed back unasked", () => {
  const NOW = 10_000_000;
  const DAY = 86_400_000;
  it.each([
    ["busy server, no relief given", line(), undefined, { kind: "defer" }],
    ["first parking: until the relief", line(), 60_000, { kind: "park", until: NOW + 60_000 }],
    ["a relief of 0 parks until now", line(), 0, { kind: "park", until: NOW }],
    ["parked before, relief inside the longest wait", line({ waitingSince: NOW - DAY / 2 }), DAY / 4, { kind: "park", until: NOW + DAY / 4 }],
    ["parked before, relief at the longest wait: answered now", line({ waitingSince: NOW - DAY / 2 }), DAY / 2, { kind: "give_up" }],
    ["a first relief past the longest wait: answered now", line(), DAY + 1, { kind: "give_up" }],
  ] as const)("%s", (_, history, retryAfterMs, expected) => {
    expect(afterDeferral(history, retryAfterMs, DAY, NOW)).toEqual(expected);
  });

  it.each([
    [null, false],
    [NOW - 1, false],
    [NOW - DAY + 1, false],
    [NOW - DAY, true],
    [NOW - 2 * DAY, true],
  ] as const)("first parked at %s: waited too long: %s", (waitingSince, expected) => {
    expect(waitedTooLong(line({ waitingSince }), DAY, NOW)).toBe(expected);
  });

  it("a parked line's turn is queued at its relief, rounded up, never past a message's longest delay", () => {
    expect([NOW - 5, NOW, NOW + 1, NOW + 1_000, NOW + 1_001, NOW + 30 * DAY].map((until) => parkedDelaySeconds(until, NOW))).toEqual([0, 0, 1, 1, 2, MAX_QUEUE_DELAY_SECONDS]);
  });
});
