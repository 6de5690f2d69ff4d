/**
 * edge/jobs/line-policy.ts, the one place that decides what becomes of a claimed job line: table
 * driven, no database. The end-to-end behaviour (a recheck really happens, a dead probe hands its
 * lines to the next) is in test/workers/jobs.test.ts.
 */
import { describe, expect, it } from "vitest";
import { afterAnswer, afterProbeFailure, LINE_POLICY, overClaimed, probeRank, requeueDelaySeconds, type LineHistory } from "../../edge/jobs/line-policy.ts";
import type { EmailVerificationResult } from "../../shared/api.ts";
import { SmtpOutcome } from "../../shared/smtp-outcome.ts";

const line = (over: Partial<LineHistory> = {}): LineHistory => ({ claims: 1, probeFailures: 0, rechecking: false, ...over });
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

it("lines go back on the queue at once when deferred, after a pause when released, after the recheck delay for a recheck", () => {
  expect([requeueDelaySeconds("defer", 90), requeueDelaySeconds("release", 90), requeueDelaySeconds("recheck", 90)]).toEqual([0, LINE_POLICY.releaseDelaySeconds, 90]);
});
