/**
 * The gate a receiver's budget keeps at one destination (probe/policy/budget-gate.ts), pure and driven by a clock
 * of the test's own: what holds a check and until when, which held checks are answered at once (a single check:
 * budget_spent; a batch check whose relief comes too late: handed back), what the budget lets through of a queue,
 * what one transaction may carry with or without its catch-all test, whom each RCPT is charged to, and when the
 * budget's holding work back is worth a log line. No sockets, no timers.
 */
import { describe, expect, it } from "vitest";
import { ReceiverBudget } from "../../probe/policy/budget.ts";
import { admit, answeredOnArrival, heldAnswer, HoldNotice, holdOf, tenantOf, TransactionBudget, type GateCheck } from "../../probe/policy/budget-gate.ts";

const T0 = 1_000_000;
const HOUR = 3_600_000;

/** A waiting check: single unless `bulk`, asked by `tenant`. */
const check = (tenant: string | undefined, bulk = false, times: { deadline?: number; deferAt?: number } = {}): GateCheck => ({
  req: { deadline: times.deadline ?? T0 + 10_000, ...(times.deferAt !== undefined ? { deferAt: times.deferAt } : {}), ...(tenant !== undefined ? { tenant } : {}), ...(bulk ? { bulk } : {}) },
});

/** A budget of `cap` unknown users an hour and no share rule (the self-hosted row's shape): a tenant alone may hold 80% of it. */
const capped = (cap: number) => new ReceiverBudget({ unknownRatio: 1, unknownWindowMs: 60_000, unknownPerHour: cap });
const off = () => new ReceiverBudget({ unknownRatio: 1, unknownWindowMs: 60_000, unknownPerHour: 0 });

/** `n` RCPTs of `tenant` sent at `at` and refused as unknown users a moment later. */
function refused(b: ReceiverBudget, tenant: string, n: number, at: number): void {
  for (let i = 0; i < n; i++) b.sent(tenant, b.risk(tenant, at), at).replied(true, at + 1);
}

describe("whose budget a check spends", () => {
  it("is its customer's tenant, single checks and batches alike; nobody named is the empty tenant", () => {
    expect(tenantOf(check("acme"))).toBe("acme");
    expect(tenantOf(check("acme", true))).toBe("acme");
    expect(tenantOf(check(undefined))).toBe("");
  });
});

describe("holdOf: what holds a check now, and until when", () => {
  it("nothing while the budget has room", () => {
    expect(holdOf(capped(4), check("a"), T0)).toBeNull();
  });

  it("the tenant's share of the hour spent: held until the budget next changes (the oldest RCPT leaves the window)", () => {
    const b = capped(4);
    refused(b, "a", 3, T0);
    expect(holdOf(b, check("a"), T0 + 10)).toEqual({ reliefAt: T0 + 1 + 60_000 });
    // Another customer still finds room.
    expect(holdOf(b, check("b"), T0 + 10)).toBeNull();
  });

  it("only RCPTs awaiting their reply hold it: the relief is now (the replies come within the transaction)", () => {
    const b = capped(4);
    for (let i = 0; i < 3; i++) b.sent("a", 0.5, T0);
    expect(holdOf(b, check("a"), T0 + 10)).toEqual({ reliefAt: T0 + 10 });
  });

  it("a pause the receiver asked for holds every tenant until it ends", () => {
    const b = capped(4);
    b.pause(T0 + 30_000, false, T0);
    expect(holdOf(b, check("a"), T0 + 10)).toEqual({ reliefAt: T0 + 30_000 });
    expect(holdOf(b, check("b", true), T0 + 10)).toEqual({ reliefAt: T0 + 30_000 });
    expect(holdOf(b, check("a"), T0 + 30_000)).toBeNull();
  });
});

describe("a check held as it arrives", () => {
  it("when single (a person waits), waits only for a relief before its deadline (replies in flight); else it is answered at once: budget_spent, nothing sent", () => {
    expect(answeredOnArrival({ reliefAt: T0 + 1 }, check("a"))).toBe(false);
    expect(answeredOnArrival({ reliefAt: T0 + 10_000 }, check("a"))).toBe(true);
    expect(answeredOnArrival({ reliefAt: null }, check("a"))).toBe(true);
    expect(heldAnswer(check("a"))).toBe("budget_spent");
  });

  it("while the destination's limits are provisional (its greeting not read yet), a held check's relief is now", () => {
    const b = capped(4);
    refused(b, "a", 3, T0);
    expect(holdOf(b, check("a"), T0 + 10)).toEqual({ reliefAt: T0 + 1 + 60_000 });
    expect(holdOf(b, check("a"), T0 + 10, true)).toEqual({ reliefAt: T0 + 10 });
    // A pause the receiver asked for is no provisional limit.
    b.pause(T0 + 30_000, true, T0);
    expect(holdOf(b, check("a"), T0 + 10, true)).toEqual({ reliefAt: T0 + 30_000 });
  });

  it("waits in the queue when it is a batch's and its relief comes before it could be asked; else it is handed back", () => {
    const bulk = check("a", true, { deadline: T0 + 10_000, deferAt: T0 + 5_000 });
    expect(answeredOnArrival({ reliefAt: T0 + 4_999 }, bulk)).toBe(false);
    expect(answeredOnArrival({ reliefAt: T0 + 5_000 }, bulk)).toBe(true);
    expect(answeredOnArrival({ reliefAt: null }, bulk)).toBe(true);
    // Without a deferAt its deadline is the limit.
    expect(answeredOnArrival({ reliefAt: T0 + 9_999 }, check("a", true, { deadline: T0 + 10_000 }))).toBe(false);
    expect(answeredOnArrival({ reliefAt: T0 + 10_000 }, check("a", true, { deadline: T0 + 10_000 }))).toBe(true);
    expect(heldAnswer(bulk)).toBe("deferred");
  });
});

describe("admit: what the budget lets through of a destination's queue", () => {
  it("everything when the budget is off", () => {
    const queue = [check("a"), check("b", true), check("c", true)];
    expect(admit(queue, off(), T0)).toEqual({ send: 3, hold: [], answerNow: [], reliefAt: null });
  });

  it("a held tenant's batch checks wait, its single checks are answered now with the relief; other tenants go", () => {
    const b = capped(4);
    // Three refusals for "dirty": with two customers at work each may hold half of the hour's 4.
    refused(b, "dirty", 3, T0);
    const single = check("dirty");
    const batch = check("dirty", true);
    const queue = [single, batch, check("clean", true), check("clean")];
    const admission = admit(queue, b, T0 + 10);
    expect(admission.send).toBe(2);
    expect(admission.hold).toEqual([batch]);
    expect(admission.answerNow).toEqual([single]);
    expect(admission.reliefAt).toBe(T0 + 1 + 60_000);
  });

  it("an hour later the refusals have left and everything goes", () => {
    const b = capped(4);
    refused(b, "dirty", 3, T0);
    expect(admit([check("dirty"), check("dirty", true)], b, T0 + 1 + HOUR)).toEqual({ send: 2, hold: [], answerNow: [], reliefAt: null });
  });
});

describe("TransactionBudget: what one transaction may carry", () => {
  it("with the budget off: every check goes as asked, and nothing is counted", () => {
    const tb = new TransactionBudget(off(), T0);
    expect(tb.fit(check("a"), true)).toBe("with-test");
    expect(tb.fit(check("a"), false)).toBe("without-test");
    expect(tb.fitsTestAlone(check("a"))).toBe(true);
    expect(tb.sent(check("a"))).toBeUndefined();
    expect(tb.sentTest(check("a"))).toBeUndefined();
  });

  it("a check goes with its catch-all test while both fit, without it when only the check does, then not at all", () => {
    // A cap of 4: customer "a" alone may hold 3 (its RCPTs in flight counted as refusals).
    const b = capped(4);
    const tb = new TransactionBudget(b, T0);
    expect(tb.fit(check("a"), true)).toBe("with-test");
    expect(tb.fit(check("a"), true)).toBe("without-test");
    // Its share is full of RCPTs in flight: a single check of it waits for their replies, a batch check's tenant is held.
    expect(tb.fit(check("a"), false)).toBe("wait");
    expect(tb.fit(check("a", true), false)).toBe("hold");
    // Another customer has its own share, within the hour's 4.
    expect(tb.fit(check("b", true), false)).toBe("without-test");
    expect(tb.fit(check("b", true), false)).toBe("hold");
    expect(tb.reliefAt()).toBeNull();
  });

  it("what goes out is counted: each check at its tenant's risk, each catch-all test a certain unknown charged to the check's customer", () => {
    const b = capped(4);
    let now = T0;
    const tb = new TransactionBudget(b, now);
    const a = check("a");
    expect(tb.fit(a, true)).toBe("with-test");
    const rcpt = tb.sent(a)!;
    const test = tb.sentTest(a)!;
    expect(b.awaitingReplies).toBe(2);
    now += 50;
    rcpt.replied(false, now);
    test.replied(true, now);
    // The random address's refusal is no answer about "a"'s addresses, but it spends "a"'s share of the hour.
    expect(b.risk("a", now)).toBeCloseTo(1 / 3);
    expect(b.counts(now).unknown_last_hour).toBe(1);
    const next = new TransactionBudget(b, now);
    expect(next.fit(check("a"), true)).toBe("with-test");
    expect(next.fit(check("a"), false)).toBe("wait");
    expect(next.reliefAt()).toBe(now + 60_000);
    // Its share full of refusals, nothing in flight: a single check is answered at once, nothing sent.
    refused(b, "a", 2, now);
    expect(new TransactionBudget(b, now + 10).fit(check("a", false, { deadline: now + 10_000 }), false)).toBe("answer-now");
  });

  it("a catch-all test alone (a server that takes one RCPT per transaction) fits while its customer's share has room", () => {
    const b = capped(4);
    refused(b, "a", 2, T0);
    expect(new TransactionBudget(b, T0 + 10).fitsTestAlone(check("a"))).toBe(true);
    refused(b, "a", 1, T0 + 20);
    expect(new TransactionBudget(b, T0 + 30).fitsTestAlone(check("a"))).toBe(false);
    expect(new TransactionBudget(b, T0 + 30).fitsTestAlone(check("b"))).toBe(true);
  });

  it("under a share rule, a tenant whose answers in the window are good lowers the share and goes past the ratio, never past half", () => {
    const window = (dirty: number) => {
      const b = new ReceiverBudget({ unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 0 });
      for (let i = 0; i < 20; i++) b.sent("clean", 0.5, T0).replied(false, T0 + 10);
      for (let i = 0; i < dirty; i++) b.sent("dirty", 0.5, T0).replied(true, T0 + 10);
      return new TransactionBudget(b, T0 + 20);
    };
    // 12 unknown of 32, over 0.3: the dirty tenant waits; the clean one goes, without its catch-all test (a certain unknown user).
    const over = window(12);
    expect(over.fit(check("dirty", true), false)).toBe("hold");
    expect(over.fit(check("clean", true), true)).toBe("without-test");
    expect(over.fit(check("clean", true), false)).toBe("without-test");
    // 30 unknown of 50, over half (Forcepoint's trigger): nothing goes.
    expect(window(30).fit(check("clean", true), false)).toBe("hold");
  });
});

describe("HoldNotice: when the budget holding work back is worth a log line", () => {
  it("when it starts holding, once per window at most however often it flips", () => {
    const notice = new HoldNotice(60_000);
    expect(notice.note(false, T0)).toBe(false);
    expect(notice.note(true, T0)).toBe(true);
    expect(notice.note(true, T0 + 1)).toBe(false);
    expect(notice.note(false, T0 + 2)).toBe(false);
    expect(notice.note(true, T0 + 59_999)).toBe(false);
    expect(notice.note(false, T0 + 60_000)).toBe(false);
    expect(notice.note(true, T0 + 60_000)).toBe(true);
  });
});
