/**
 * Harvest-aware pacing (probe/policy/budget.ts): the budget's arithmetic, then the scheduler against
 * an SMTP fixture that defends itself as Forcepoint does (more than half of at least 20 recipients in
 * its window unknown: 554 5.7.1 for that client IP), on a time scale of one second for the minute.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { runBatchProbe, runProbe } from "../../probe/probe.ts";
import { ReceiverBudget, MIN_SAMPLE } from "../../probe/policy/budget.ts";
import { PROBE_SETTINGS, type ProbeConfig } from "../../probe/config.ts";
import { startMetricsServer } from "../../probe/http/metrics.ts";
import { ReputationAudit } from "../../probe/reputation.ts";
import type { Scheduler, SchedulerConfig } from "../../probe/qmgr/scheduler.ts";
import { receiverPolicy } from "../../shared/email/receivers.ts";
import type { ProbeResponse } from "../../shared/probe-contract.ts";
import { startMtaFixture, type MtaFixture, type MtaFixtureOptions } from "../fixtures/mta-fixture.ts";
import { testScheduler } from "../fixtures/scheduler.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";

describe("the unknown-recipient budget of one destination", () => {
  const config = { unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 200 };

  it("lets anything through until 10 RCPTs were sent in the window, then keeps the expected unknown share at most the ratio", () => {
    const b = new ReceiverBudget(config);
    const rcpts = [];
    for (let i = 0; i < MIN_SAMPLE - 1; i++) {
      expect(b.admits("dirty", 1_000)).toBe(true);
      rcpts.push(b.sent("dirty", b.risk("dirty", 1_000), 1_000));
    }
    // 9 sent, each expected to be an unknown user at one half: the tenth would make it judged at 4.5 / 10.
    expect(b.admits("dirty", 1_000)).toBe(false);
    rcpts.forEach((r, i) => r.replied(i % 2 === 0, 1_100));
    expect(b.counts(1_100)).toEqual({ sent_in_window: 9, unknown_in_window: 5, unknown_last_hour: 5 });
    expect(b.admits("dirty", 1_200)).toBe(false);
    // The window moves on: 60 s after their replies, they no longer count (the hour still does).
    expect(b.nextRelief(1_200)).toBe(61_100);
    expect(b.admits("dirty", 61_099)).toBe(false);
    expect(b.admits("dirty", 61_100)).toBe(true);
    expect(b.counts(61_100)).toEqual({ sent_in_window: 0, unknown_in_window: 0, unknown_last_hour: 5 });
  });

  it("a lane whose answers are good costs less than the ratio and makes room for a dirty one (known-good work mixed in)", () => {
    const b = new ReceiverBudget(config);
    for (let i = 0; i < 20; i++) b.sent("clean", 0.5, 0).replied(false, 10);
    for (let i = 0; i < 4; i++) b.sent("dirty", 0.5, 0).replied(true, 10);
    expect(b.risk("clean", 20)).toBeCloseTo(1 / 22);
    expect(b.risk("dirty", 20)).toBeCloseTo(5 / 6);
    // 4 unknown of 24: six dirty RCPTs (expected 0.83 unknown each) still fit, 9 of 30 ...
    const plan = b.plan(20);
    let dirty = 0;
    while (b.fits(plan, 1, b.risk("dirty", 20))) {
      b.add(plan, 1, b.risk("dirty", 20));
      dirty++;
    }
    expect(dirty).toBe(6);
    // ... and a clean one, which lowers the share, fits where the dirty one does not, and makes room for it.
    expect(b.fits(plan, 1, b.risk("dirty", 20), b.lowersShare("dirty", 1, 20))).toBe(false);
    expect(b.lowersShare("clean", 1, 20)).toBe(true);
    expect(b.fits(plan, 1, b.risk("clean", 20), true)).toBe(true);
    for (let i = 0; i < 4; i++) b.add(plan, 1, b.risk("clean", 20));
    expect(b.fits(plan, 1, b.risk("dirty", 20))).toBe(true);
  });

  it("a lane lowers the share only on 10 answers or more, read pessimistically, its RCPTs in flight counted as unknown", () => {
    const b = new ReceiverBudget(config);
    for (let i = 0; i < 9; i++) b.sent("clean", 0.5, 0).replied(false, 10);
    // Nine good answers are not enough to go past the ratio on.
    expect(b.lowersShare("clean", 1, 20)).toBe(false);
    b.sent("clean", 0.5, 20).replied(false, 30);
    expect(b.lowersShare("clean", 1, 40)).toBe(true);
    // Ten good answers and three more in flight: (0 + 3 + 2) / (10 + 3 + 2) = 0.33, over the ratio.
    for (let i = 0; i < 3; i++) b.sent("clean", 0.1, 40);
    expect(b.lowersShare("clean", 0, 50)).toBe(false);
    // Two unknown among 20: (2 + 2) / (20 + 2) = 0.18, still lower.
    const mixed = new ReceiverBudget(config);
    for (let i = 0; i < 20; i++) mixed.sent("m", 0.5, 0).replied(i < 2, 10);
    expect(mixed.lowersShare("m", 0, 20)).toBe(true);
    // A lane's history outlives the window (answers of the last hour, the last 100).
    expect(mixed.risk("m", 3_000_000)).toBeCloseTo(3 / 22);
    expect(mixed.risk("m", 3_600_011)).toBe(0.5);
  });

  it("never passes the hourly limit, counting the RCPTs still waiting for their reply as unknown", () => {
    // A cap of 4: a lane alone may hold 3 of it (LONE_LANE_SHARE), the rest waits for another customer.
    const b = new ReceiverBudget({ unknownRatio: 1, unknownWindowMs: 60_000, unknownPerHour: 4 });
    b.sent("t", 0.5, 0).replied(true, 1);
    b.sent("t", 0.5, 2_000).replied(true, 2_001);
    const pending = b.sent("t", 0.5, 4_000);
    expect(b.admits("t", 4_001)).toBe(false);
    pending.replied(false, 4_002);
    expect(b.admits("t", 4_003)).toBe(true);
    b.sent("t", 0.5, 5_000).replied(true, 5_001);
    expect(b.admits("t", 3_599_999)).toBe(false);
    // The first refusal leaves the hour at 3,600,001.
    expect(b.nextRelief(3_599_999)).toBe(3_600_001);
    expect(b.admits("t", 3_600_001)).toBe(true);
  });

  it("a RCPT never sent (its session found dead) is not counted", () => {
    const b = new ReceiverBudget(config);
    for (let i = 0; i < 9; i++) b.sent("t", 0.5, 0).cancel(0);
    expect(b.counts(1)).toEqual({ sent_in_window: 0, unknown_in_window: 0, unknown_last_hour: 0 });
    expect(b.plan(1)).toEqual({ sent: 0, unknown: 0, windowWorst: 0, hourWorst: 0, byOwner: new Map(), windowByOwner: new Map() });
  });

  it("a customer alone fills all of the window's floor but one, so one who arrives can still send and earn room with good answers", () => {
    // The self-hosted row's shape: 30% once 10 were sent, 9 unknown users at worst never held.
    const b = new ReceiverBudget({ unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 0, unknownFloor: 9 });
    let dirty = 0;
    while (b.admits("dirty", 1_000) && dirty < 20) {
      b.sent("dirty", b.risk("dirty", 1_000), 1_000).replied(true, 1_001);
      dirty++;
    }
    // Alone: 8 of the floor of 9 (the share rule holds the rest, a window long).
    expect(dirty).toBe(8);
    // A clean customer arrives: the one left of the floor is its, RCPT by RCPT, then its good answers lower the share.
    let clean = 0;
    for (let t = 1_002; clean < 30; t++) {
      if (!b.admits("clean", t)) break;
      b.sent("clean", b.risk("clean", t), t).replied(false, t);
      clean++;
    }
    expect(clean).toBe(30);
    // Never past Forcepoint's trigger: more than half of at least 20 in the window unknown.
    const counts = b.counts(1_100);
    expect(counts.unknown_in_window / counts.sent_in_window).toBeLessThanOrEqual(0.5);
  });

  it("ratio 1 and no hourly limit: nothing is counted or held", () => {
    const b = new ReceiverBudget({ unknownRatio: 1, unknownWindowMs: 60_000, unknownPerHour: 0 });
    expect(b.enabled).toBe(false);
    expect(b.admits("t", 0)).toBe(true);
  });

  it("RCPTs awaiting their reply hold a lane at worst, but only until replied: admits(…, onceReplied) says whether nothing else holds it", () => {
    // The self-hosted row's shape: no share rule, 25 an hour, so one customer alone may hold 20 (refusals and RCPTs in flight).
    const b = new ReceiverBudget({ unknownRatio: 1, unknownWindowMs: 60_000, unknownPerHour: 25 });
    const inFlight = Array.from({ length: 20 }, () => b.sent("t", b.risk("t", 0), 0));
    expect(b.awaitingReplies).toBe(20);
    expect(b.admits("t", 1)).toBe(false);
    expect(b.admits("t", 1, 1, true)).toBe(true);
    // 12 of them refused: 12 of the lane's 20 spent for the hour, the rest is room again.
    inFlight.forEach((r, i) => r.replied(i < 12, 2));
    expect(b.awaitingReplies).toBe(0);
    expect(b.admits("t", 3)).toBe(true);
    // 8 more in flight fill the share; their replies free nothing if they are refusals, so once replied is not a promise
    // of room when the refusals themselves fill it.
    const more = Array.from({ length: 8 }, () => b.sent("t", b.risk("t", 3), 3));
    expect(b.admits("t", 4)).toBe(false);
    expect(b.admits("t", 4, 1, true)).toBe(true);
    more.forEach((r) => r.replied(true, 5));
    expect(b.admits("t", 6)).toBe(false);
    expect(b.admits("t", 6, 1, true)).toBe(false);
  });
});

const ip = (n: number) => `127.0.0.${n}`;
let port = 0;
const fixtures: MtaFixture[] = [];
const schedulers: Scheduler[] = [];

beforeAll(async () => {
  port = await freePortOn(Array.from({ length: 10 }, (_, i) => ip(160 + i)));
});

afterAll(async () => {
  await Promise.all(schedulers.map((s) => s.close()));
  await Promise.all(fixtures.map((f) => f.close()));
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Forcepoint's default on a 1 s scale: more than half of at least 20 recipients in the window unknown blocks the IP. */
const FORCEPOINT_SCALED = { windowMs: 1_000, minRecipients: 20, ratio: 0.5, blockMs: 60_000 };
/** The probe's defaults on the same scale. */
const BUDGET_SCALED: Partial<SchedulerConfig> = { unknownRatio: 0.3, unknownWindowMs: 1_000, unknownPerHour: 0 };

async function mta(n: number, options: Omit<MtaFixtureOptions, "host" | "port">): Promise<MtaFixture> {
  const f = await startMtaFixture({ host: ip(n), port, ...options });
  fixtures.push(f);
  return f;
}

function scheduler(overrides: Partial<SchedulerConfig>): Scheduler {
  const s = testScheduler(port, { maxRcptsPerTransaction: 20, ...overrides });
  schedulers.push(s);
  return s;
}

const mxOf = (email: string, address: string) => [{ host: `mx.${email.slice(email.indexOf("@") + 1)}`, preference: 10, addresses: [address] }];
const deps = (s: Scheduler) => ({ config: { allowPrivateTargets: true }, scheduler: s });

/**
 * Runs `emails` as a job does: every address in a batch with queue_ms, the ones handed back asked
 * again at their relief, until each has an answer. Returns the answers and how many times each tenant was deferred.
 */
async function runJob(s: Scheduler, address: string, lists: Record<string, string[]>, queueMs = 800) {
  const answers = new Map<string, ProbeResponse>();
  /** Addresses handed back because the server blocks the probe (the Worker parks them till the block ends). */
  const refused = new Set<string>();
  const deferrals: Record<string, number> = Object.fromEntries(Object.keys(lists).map((t) => [t, 0]));
  const one = async (tenant: string, email: string): Promise<void> => {
    for (;;) {
      const started = Date.now();
      const r = await runBatchProbe({ email, mx: mxOf(email, address), deadline_ms: 20_000, catch_all_check: true }, deps(s), started, { deferAt: started + queueMs, tenant });
      if (!("deferred" in r)) return void answers.set(email, r);
      if (r.refused) return void refused.add(email);
      deferrals[tenant]!++;
      // As the Worker parks a line: until the budget's relief when the probe named one (a line handed
      // back at once, asked again at once, would never let the probe's timers run).
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(r.retryAfterMs ?? 1, queueMs))));
    }
  };
  await Promise.all(Object.entries(lists).flatMap(([tenant, emails]) => emails.map((e) => one(tenant, e))));
  return { answers, deferrals, refused };
}

/** `n` addresses at `domain`, every `unknownEvery`-th one... : `known` ones are mailboxes, the rest unknown users. */
function list(domain: string, n: number, isKnown: (i: number) => boolean) {
  const emails = Array.from({ length: n }, (_, i) => `${isKnown(i) ? "user" : "nobody"}${i}@${domain}`);
  return { emails, known: emails.filter((e) => e.startsWith("user")) };
}

describe("harvest-aware pacing against a Forcepoint-style defence", () => {
  it("without the budget a list 60% unknown trips the block (its refusals handed back, never policy_block); with it every verdict is right and there is no block", async () => {
    // The control: the same list, the budget off (ratio 1, no hourly limit), against its own server.
    const { emails, known } = list("dirty.test", 50, (i) => i % 5 < 2);
    const control = await mta(160, { mailboxPrefix: "user", harvestDefence: FORCEPOINT_SCALED });
    const off = await runJob(scheduler({ unknownRatio: 1, unknownPerHour: 0 }), ip(160), { t: emails });
    expect(control.harvest.blocks.length).toBeGreaterThan(0);
    // The block is ours, not an answer: what it refused comes back unasked, to wait for its end.
    expect([...off.answers.values()].filter((r) => r.outcome === "policy_block")).toEqual([]);
    expect(off.refused.size).toBeGreaterThan(0);
    expect(off.answers.size + off.refused.size).toBe(emails.length);

    const f = await mta(161, { mailboxPrefix: "user", harvestDefence: FORCEPOINT_SCALED });
    const warn = vi.spyOn(console, "warn");
    const on = await runJob(scheduler(BUDGET_SCALED), ip(161), { t: emails });
    expect(f.harvest.blocks).toEqual([]);
    expect(f.harvest.blockedReplies).toBe(0);
    for (const e of emails) expect([e, on.answers.get(e)?.outcome]).toEqual([e, known.includes(e) ? "accepted" : "mailbox_not_found"]);
    // The budget held the list back (handed back, asked again), and said so once per episode, naming the IP, never an address.
    expect(on.deferrals.t).toBeGreaterThan(0);
    const logged = warn.mock.calls.map((c) => String(c[0])).filter((l) => l.includes("harvest_budget"));
    expect(logged.length).toBeGreaterThan(0);
    expect(JSON.parse(logged[0]!)).toMatchObject({ level: "warn", msg: "destination harvest_budget", destination: ip(161) });
    expect(logged.join("\n")).not.toMatch(/@/);
  }, 60_000);

  it("a clean tenant's work and a dirty one's at one server, waiting for the window where they must: no block, every verdict right", async () => {
    const dirty = list("dirty2.test", 40, () => false).emails;
    const clean = list("clean2.test", 80, () => true).emails;
    const f = await mta(162, { mailboxPrefix: "user", harvestDefence: FORCEPOINT_SCALED });
    const s = scheduler(BUDGET_SCALED);
    const run = await runJob(s, ip(162), { dirty, clean });
    expect(f.harvest.blocks).toEqual([]);
    expect(dirty.every((e) => run.answers.get(e)?.outcome === "mailbox_not_found")).toBe(true);
    expect(clean.every((e) => run.answers.get(e)?.outcome === "accepted")).toBe(true);
    // 40 unknown beside 80 good is more than 30%: part of the lists had to wait for the window to move on.
    expect(run.deferrals.dirty! + run.deferrals.clean!).toBeGreaterThan(0);
  }, 60_000);

  it("a clean history older than the window buys no burst: only the window's answers lower the share", () => {
    const b = new ReceiverBudget({ unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 0 });
    for (let i = 0; i < 50; i++) b.sent("clean", 0.5, 0).replied(false, 10);
    expect(b.lowersShare("clean", 1, 30_000)).toBe(true);
    // A minute later the 50 good answers still make the lane's risk low, but they are out of the receiver's window.
    expect(b.risk("clean", 70_000)).toBeLessThan(0.05);
    expect(b.lowersShare("clean", 1, 70_000)).toBe(false);
  });

  it("a customer's single checks over its lane's budget are answered at once with nothing sent; another customer's still go", async () => {
    const f = await mta(163, { mailboxPrefix: "user", harvestDefence: FORCEPOINT_SCALED });
    const s = scheduler({ unknownRatio: 1, unknownWindowMs: 60_000, unknownPerHour: 6 });
    const metrics = await startMetricsServer({ scheduler: s, audit: new ReputationAudit(s.config as ProbeConfig) }, "127.0.0.1", 0);
    const scrape = async () => await (await fetch(metrics.url)).text();
    const deferralsCounted = async () => Number(/^probe_harvest_deferrals_total (\d+)/m.exec(await scrape())?.[1]);
    const before = await deferralsCounted();
    const dirty = list("dirty3.test", 12, () => false).emails;
    const job = await Promise.all(
      dirty.map((email) => {
        const started = Date.now();
        return runBatchProbe({ email, mx: mxOf(email, ip(163)), deadline_ms: 10_000, catch_all_check: false }, deps(s), started, { deferAt: started + 600, tenant: "t" });
      }),
    );
    // A cap of 6 an hour: one customer alone may spend 4 of it (LONE_LANE_SHARE); the rest of its list is handed back unasked.
    expect(job.filter((r) => !("deferred" in r) && r.outcome === "mailbox_not_found")).toHaveLength(4);
    const deferred = job.filter((r) => "deferred" in r);
    expect(deferred).toHaveLength(8);
    // Each says when the budget next has room and which receiver family holds it.
    for (const d of deferred) expect(d).toMatchObject({ deferred: true, waitingOn: "self-hosted", retryAfterMs: expect.any(Number) });
    expect((await deferralsCounted()) - before).toBe(8);
    // The same customer's single check: answered at once, nothing sent.
    const started = Date.now();
    const single = await runProbe({ email: "nobody-single@dirty3.test", mx: mxOf("x@dirty3.test", ip(163)), deadline_ms: 5_000, catch_all_check: false, tenant: "t" }, deps(s));
    expect(single.outcome).toBe("budget_spent");
    // When the lane's budget next has room: an hour after the first refusal at the latest.
    expect(single.retry_after_ms).toBeGreaterThan(0);
    expect(single.retry_after_ms).toBeLessThanOrEqual(3_600_000);
    expect(single.attempts[0]).toMatchObject({ outcome: "budget_spent", reply: null });
    expect(Date.now() - started).toBeLessThan(1_000);
    const sent = () => f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT"))).length;
    expect(sent()).toBe(4);
    // Another customer still has its part of the cap.
    const other = await runProbe({ email: "nobody-other@dirty3.test", mx: mxOf("x@dirty3.test", ip(163)), deadline_ms: 5_000, catch_all_check: false, tenant: "u" }, deps(s));
    expect(other.outcome).toBe("mailbox_not_found");
    expect(sent()).toBe(5);
    expect(await scrape()).toMatch(/^probe_family_events_total\{family="self-hosted",event="budget_spent"\} 1$/m);
    await metrics.close();
  }, 30_000);

  it("a self-hosted Postfix's 20 addresses, 12 unknown, at the row's defaults: answered without one hand-back (its greeting lifts the 60 s share; RCPTs in flight hold the rest until their reply, not for a window)", async () => {
    const f = await mta(164, { mailboxPrefix: "user", banner: "ESMTP Postfix (Debian/GNU)" });
    const row = receiverPolicy("self-hosted");
    // The settings' defaults are the row's (one rule in one place).
    const byDefault = (name: "PROBE_DESTINATION_UNKNOWN_RATIO" | "PROBE_DESTINATION_WINDOW_SECONDS" | "PROBE_DESTINATION_UNKNOWN_PER_HOUR") =>
      PROBE_SETTINGS.shape[name].parse(undefined);
    expect([byDefault("PROBE_DESTINATION_UNKNOWN_RATIO"), byDefault("PROBE_DESTINATION_WINDOW_SECONDS"), byDefault("PROBE_DESTINATION_UNKNOWN_PER_HOUR")]).toEqual([
      row.unknownRatio,
      row.windowSeconds,
      row.unknownPerHour,
    ]);
    const s = scheduler({ unknownRatio: row.unknownRatio, unknownWindowMs: row.windowSeconds * 1000, unknownPerHour: row.unknownPerHour });
    const { emails, known } = list("self20.test", 20, (i) => i >= 12);
    const run = await runJob(s, ip(164), { t: emails });
    expect(run.deferrals.t).toBe(0);
    for (const e of emails) expect(run.answers.get(e)?.outcome).toBe(known.includes(e) ? "accepted" : "mailbox_not_found");
    // 20 addresses, each asked once; their unknown users settle catch-all, so no random address is sent.
    expect(f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT")))).toHaveLength(20);
  }, 30_000);

  it("a company's server that names no software, 20 addresses, 7 unknown, at the row's defaults (the 60 s share kept): answered without one hand-back and no random address", async () => {
    const f = await mta(165, { mailboxPrefix: "user", banner: "ESMTP fixture" });
    const s = scheduler({});
    // A third unknown, spread through the list as in the benchmark list's "mailboxes" domains.
    const { emails, known } = list("company20.test", 20, (i) => i % 3 !== 1);
    expect(emails.length - known.length).toBe(7);
    const run = await runJob(s, ip(165), { t: emails });
    expect(run.deferrals.t).toBe(0);
    for (const e of emails) expect(run.answers.get(e)?.outcome).toBe(known.includes(e) ? "accepted" : "mailbox_not_found");
    // The unknown users are within the floor of 9 that no gateway punishes, and all but one of it is this customer's.
    expect(f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT")))).toHaveLength(20);
  }, 30_000);
});
