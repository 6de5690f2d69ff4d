/**
 * When one destination's answers stop being trusted (probe/policy/untrusted.ts UntrustDetector), on a clock of the
 * test's own: a gateway that refused a random address within the hour and now accepts one is stopped for the hour
 * and the domains checked there since its last refusal are named; so are they after "too many invalid recipients".
 * A self-hosted server, or a gateway whose refusal is over an hour old, changes nothing. The whole path through a
 * real conversation is test/node/probe-receivers.test.ts's.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { ReceiverBudget } from "../../probe/policy/budget.ts";
import { UntrustDetector, type UntrustedNotice } from "../../probe/policy/untrusted.ts";
import { DestinationMemory } from "../../probe/qmgr/destination-memory.ts";

const T0 = 5_000_000;
const HOUR = 3_600_000;
const ADDRESS = "192.0.2.25";

afterEach(() => vi.restoreAllMocks());

function detector(family: "cisco" | "self-hosted") {
  const memory = new DestinationMemory({ destinationMemoryEntries: 100, deadMs: 0, tlsFallbackMemoryMs: 0, noReuseMemoryMs: 0, tarpitModeMs: 0, rcptLimitMemoryMs: 0 });
  const budget = new ReceiverBudget({ unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 10 });
  const notices: UntrustedNotice[] = [];
  const policy = { family, budgetKey: "probe_ip_destination" as const, hourMs: HOUR };
  const d = new UntrustDetector(ADDRESS, { policy, memory, budget: () => budget, untrust: (n) => notices.push(n) });
  const error = vi.spyOn(console, "warn").mockImplementation(() => {});
  return { d, budget, notices, lines: () => error.mock.calls.map((c) => JSON.parse(String(c[0])) as Record<string, unknown>) };
}

describe("a gateway that starts accepting everything", () => {
  it("accepting a random address within the hour after refusing one: stopped for the hour, the domains since its last refusal named", () => {
    const { d, budget, notices, lines } = detector("cisco");
    d.checked("before.example", T0);
    d.catchAllAnswered(false, T0 + 1_000);
    d.checked("one.example", T0 + 2_000);
    d.checked("two.example", T0 + 3_000);
    d.catchAllAnswered(true, T0 + 4_000);
    expect(budget.pausedUntil(T0 + 4_000)).toBe(T0 + 4_000 + HOUR);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.domains).toEqual(["one.example", "two.example"]);
    expect(notices[0]!.untilMs - notices[0]!.sinceMs).toBe(3_000);
    expect(lines().map((l) => [l.msg, l.alert, l.destination])).toEqual([
      ["receiver answers untrusted", true, ADDRESS],
      ["receiver accepts everything now", true, ADDRESS],
    ]);
  });

  it("a refusal more than an hour old, or a self-hosted server: nothing", () => {
    const late = detector("cisco");
    late.d.catchAllAnswered(false, T0);
    late.d.catchAllAnswered(true, T0 + HOUR + 1);
    expect([late.notices, late.budget.pausedUntil(T0 + HOUR + 1)]).toEqual([[], null]);
    const own = detector("self-hosted");
    own.d.catchAllAnswered(false, T0);
    own.d.catchAllAnswered(true, T0 + 1_000);
    expect([own.notices, own.budget.pausedUntil(T0 + 1_000)]).toEqual([[], null]);
  });

  it('"too many invalid recipients" names the domains since the last unknown user it refused, at most an hour back', () => {
    const { d, notices } = detector("cisco");
    d.checked("old.example", T0);
    d.replied(null, true, T0 + 1_000);
    d.checked("new.example", T0 + 2_000);
    // A reply that matched no untrusting rule and refused nobody changes nothing.
    d.replied(null, false, T0 + 2_500);
    expect(notices).toEqual([]);
    d.replied({ untrustsAccepted: true }, true, T0 + 3_000);
    expect(notices.map((n) => n.domains)).toEqual([["new.example"]]);
  });
});
