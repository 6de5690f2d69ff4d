/**
 * Issue 36 at the probe: what is a block (probe/policy/block.ts), what a block or a throttle teaches for good
 * (probe/policy/learned.ts) and how it survives a restart (PROBE_STATE_FILE), the warm-up of Google's rate in minutes,
 * and sessions kept across the pacing gap; the pure parts from tables, the rest against real SMTP fixture receivers
 * (test/fixtures/mta-fixture.ts) that block at RCPT (Forcepoint's defence) and at the greeting.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBlock } from "../../probe/policy/block.ts";
import { countsPerSession, keyLimits, LearnedRules } from "../../probe/policy/learned.ts";
import { ReceiverPolicies } from "../../probe/policy/receivers.ts";
import { loadProbeState, saveProbeState } from "../../probe/policy/probe-state.ts";
import { runBatchProbe, runProbe } from "../../probe/probe.ts";
import type { Scheduler, SchedulerConfig } from "../../probe/qmgr/scheduler.ts";
import { LEARNED_HARVEST_RULE, receiverPolicy } from "../../shared/email/receivers.ts";
import { startMtaFixture, type MtaFixture, type MtaFixtureOptions } from "../fixtures/mta-fixture.ts";
import { createReceiver } from "../fixtures/receiver-fixtures.ts";
import { testScheduler } from "../fixtures/scheduler.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";

const r = (code: number, enhanced: string | null, text: string) => ({ code, enhanced, text });

describe("isBlock: a refusal of our probe, not of a mailbox", () => {
  const cases: [string, Parameters<typeof isBlock>[0], ReturnType<typeof r>[], boolean][] = [
    ["a 554 greeting", "greeting", [r(554, "5.7.1", "Your IP is listed at bl.spamcop.net")], true],
    ["a 554 greeting without an enhanced code", "greeting", [r(554, null, "No SMTP service here")], true],
    ["a 421 greeting (busy)", "greeting", [r(421, "4.3.2", "Service not available, try later")], false],
    ["a 421 greeting naming our IP", "greeting", [r(421, "4.7.0", "Your IP address has been temporarily blocked")], true],
    ["a 5.7.x to EHLO", "ehlo", [r(550, "5.7.1", "HELO rejected: policy")], true],
    ["a 5.5.x to EHLO (HELO fallback territory)", "ehlo", [r(502, "5.5.2", "command not recognized")], false],
    ["MAIL FROM refused by policy", "mail", [r(553, "5.7.1", "Sender address rejected: not owned by user")], true],
    ["MAIL FROM: TLS wanted first", "mail", [r(530, "5.7.0", "Must issue a STARTTLS command first")], false],
    ["MAIL FROM: a bad sender domain", "mail", [r(553, "5.1.8", "Sender address domain not found")], false],
    ["a RCPT 5.7.1 naming our client host (Forcepoint)", "rcpt", [r(554, "5.7.1", "Client host rejected: directory harvest attack detected")], true],
    ["a RCPT 5.7.1 blocklist", "rcpt", [r(554, "5.7.1", "Service unavailable; Client host [192.0.2.10] blocked using zen.spamhaus.org")], true],
    ["one RCPT 5.7.1 for one mailbox (an access list)", "rcpt", [r(550, "5.7.1", "<a@b.test>: Recipient address rejected: Access denied")], false],
    ["a 5.7.1 to every RCPT of a transaction", "rcpt", [r(550, "5.7.1", "Rejected"), r(550, "5.7.1", "Rejected")], true],
    ["5.7.1 beside an unknown user", "rcpt", [r(550, "5.7.1", "Rejected"), r(550, "5.1.1", "User unknown")], false],
    ["relaying refused to every RCPT (the wrong MX)", "rcpt", [r(554, "5.7.1", "Relay access denied"), r(554, "5.7.1", "Relay access denied")], false],
    ["unknown users only", "rcpt", [r(550, "5.1.1", "User unknown"), r(550, "5.1.1", "User unknown")], false],
  ];
  it.each(cases)("%s", (_name, stage, replies, block) => {
    expect(isBlock(stage, replies)).toBe(block);
  });
});

describe("what punishment teaches, for good", () => {
  const selfHosted = receiverPolicy("self-hosted");
  const google = receiverPolicy("google");

  it("a self-hosted row starts with the 60 s share; a Postfix, Exim or Exchange greeting earns ratio 1; a block takes it back for good", () => {
    expect(keyLimits(selfHosted, undefined, false)).toMatchObject({ unknownRatio: 0.3, windowSeconds: 60, unknownPerHour: 25 });
    expect(keyLimits(selfHosted, undefined, true)).toMatchObject({ unknownRatio: 1, unknownPerHour: 25 });
    const rules = new LearnedRules();
    const blocked = rules.block("self-hosted 192.0.2.1", 1_000);
    expect(keyLimits(selfHosted, blocked, true)).toMatchObject({ unknownRatio: LEARNED_HARVEST_RULE.unknownRatio, unknownPerHour: LEARNED_HARVEST_RULE.unknownPerHour });
    expect(["220 mx ESMTP Postfix (Debian/GNU)", "220 mx ESMTP Exim 4.96", "220 mx Microsoft ESMTP MAIL Service ready"].map((g) => countsPerSession(g))).toEqual([true, true, true]);
    expect(["220 mx ESMTP fixture", "220 mx.gateway ESMTP"].map((g) => countsPerSession(g))).toEqual([false, false]);
  });

  it("a family keyed by our IP loses half its hourly cap per block; a throttle halves the rate, down to a sixteenth", () => {
    const rules = new LearnedRules();
    rules.block("google", 1);
    expect(keyLimits(google, rules.get("google"), false)).toMatchObject({ unknownPerHour: 500, unknownRatio: 0.3 });
    rules.block("google", 2);
    expect(keyLimits(google, rules.get("google"), false).unknownPerHour).toBe(250);
    for (let i = 0; i < 6; i++) rules.throttle("google", 3 + i);
    expect(rules.get("google")).toMatchObject({ rateFactor: 1 / 16, throttles: 6, blocks: 2, harvest: true });
  });

  it("a lesson from elsewhere is kept only where stricter, never loosening one's own", () => {
    const rules = new LearnedRules();
    rules.throttle("cisco 192.0.2.9", 1);
    expect(rules.merge("cisco 192.0.2.9", { harvest: false, rateFactor: 1, blocks: 0, throttles: 0, at: 5 })).toBe(false);
    expect(rules.merge("cisco 192.0.2.9", { harvest: true, rateFactor: 1, blocks: 1, throttles: 0, at: 5 })).toBe(true);
    expect(rules.get("cisco 192.0.2.9")).toMatchObject({ harvest: true, rateFactor: 0.5, blocks: 1, throttles: 1 });
  });
});

describe("Google's warm-up in minutes", () => {
  const policies = () => new ReceiverPolicies({ receiverPolicy: {}, policyTimeScale: 1, netblockPeers: 1, unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 25 });

  it("starts at a fifth of 1.5 RCPT/s and grows 1.5x every 30 s to the row's rate in 2 minutes; a throttle halves it and the ramp goes on from there", () => {
    const p = policies();
    const google = p.policy("google");
    const t0 = 1_000_000;
    const rate = (t: number) => Number(p.gateOf(google, t)!.rcpts.ratePerSecond.toFixed(4));
    expect([rate(t0), rate(t0 + 30_000), rate(t0 + 60_000), rate(t0 + 90_000), rate(t0 + 120_000), rate(t0 + 600_000)]).toEqual([0.3, 0.45, 0.675, 1.0125, 1.5, 1.5]);
    // The hourly cap is volume: it still grows by the day.
    expect(p.budgetFor(google, "192.0.2.1", t0 + 600_000).limits.unknownPerHour).toBe(200);
    p.noteReply(google, "192.0.2.1", p.budgetFor(google, "192.0.2.1", t0 + 600_000), r(421, "4.7.28", "unusual rate ... temporarily rate limited"), t0 + 600_000);
    // Learned for good at the key (half the rate), and the ramp starts again from half of where it was.
    expect(rate(t0 + 600_000)).toBe(0.375);
    expect(rate(t0 + 600_000 + 30_000)).toBe(0.5625);
  });

  it("its state survives a restart (PROBE_STATE_FILE): the ramp goes on where it was, the learned rules stay", () => {
    const dir = mkdtempSync(join(tmpdir(), "probe-state-"));
    try {
      const file = join(dir, "state.json");
      const p = policies();
      const google = p.policy("google");
      const t0 = 1_000_000;
      p.gateOf(google, t0);
      p.learned.block("self-hosted 192.0.2.7", 5);
      saveProbeState(file, p, t0 + 60_000);
      const again = policies();
      again.restore(loadProbeState(file)!);
      expect(again.gateOf(again.policy("google"), t0 + 60_000)!.rcpts.ratePerSecond).toBeCloseTo(0.675);
      expect(again.learned.get("self-hosted 192.0.2.7")).toMatchObject({ harvest: true, blocks: 1 });
      expect(again.budgetFor(again.policy("self-hosted"), "192.0.2.7", t0 + 60_000).limits).toMatchObject({ unknownRatio: 0.3, unknownPerHour: 10 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const ip = (n: number) => `127.0.0.${n}`;
let port = 0;
const fixtures: MtaFixture[] = [];
const schedulers: Scheduler[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  port = await freePortOn(Array.from({ length: 6 }, (_, i) => ip(200 + i)));
});

afterAll(async () => {
  await Promise.all(schedulers.map((s) => s.close()));
  await Promise.all(fixtures.map((f) => f.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function mta(n: number, options: Omit<MtaFixtureOptions, "host" | "port">): Promise<MtaFixture> {
  const f = await startMtaFixture({ host: ip(n), port, ...options });
  fixtures.push(f);
  return f;
}
function scheduler(overrides: Partial<SchedulerConfig>): Scheduler {
  const s = testScheduler(port, overrides);
  schedulers.push(s);
  return s;
}
const mxOf = (email: string, address: string) => [{ host: `mx.${email.slice(email.indexOf("@") + 1)}`, preference: 10, addresses: [address] }];
const deps = (s: Scheduler) => ({ config: { allowPrivateTargets: true }, scheduler: s });
const batchCheck = (s: Scheduler, email: string, address: string) => {
  const started = Date.now();
  return runBatchProbe({ email, mx: mxOf(email, address), deadline_ms: 10_000, catch_all_check: true }, deps(s), started, { deferAt: started + 5_000, tenant: "t" });
};
const rcptsOf = (f: MtaFixture) => f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT")));

describe("a receiver that blocks us, for real", () => {
  it("blocked at RCPT (Forcepoint's defence, behind a self-hosted name): the refused lines come back unasked, nothing is answered policy_block, and the block and its lesson survive a restart", async () => {
    // Greets as Postfix (so no 60 s share at first) but blocks as Forcepoint does: the lie costs one block, learned for good.
    const f = await mta(200, { mailboxPrefix: "user", banner: "ESMTP Postfix", harvestDefence: { windowMs: 60_000, minRecipients: 20, ratio: 0.5, blockMs: 600_000 } });
    const dir = mkdtempSync(join(tmpdir(), "probe-blocks-"));
    dirs.push(dir);
    const stateFile = join(dir, "state.json");
    const s = scheduler({ stateFile, unknownPerHour: 0 });
    const emails = Array.from({ length: 40 }, (_, i) => `${i % 4 === 0 ? "user" : "nobody"}${i}@fp-behind.test`);
    const answers = await Promise.all(emails.map((e) => batchCheck(s, e, ip(200))));
    expect(f.harvest.blocks.length).toBe(1);
    expect(answers.filter((a) => !("deferred" in a) && a.outcome === "policy_block")).toEqual([]);
    const refused = answers.filter((a) => "deferred" in a && a.refused);
    expect(refused.length).toBeGreaterThan(0);
    for (const d of refused) expect(d).toMatchObject({ deferred: true, refused: true, waitingOn: "self-hosted", retryAfterMs: expect.any(Number) });
    expect(s.receivers.learned.get(`self-hosted ${ip(200)}`)).toMatchObject({ harvest: true, blocks: 1 });
    // Its domain's policy_block answers of the last hour are named for the Worker to take back.
    expect(s.untrusted.current().filter((n) => n.kind === "refused").map((n) => n.domains)).toEqual([["fp-behind.test"]]);
    await s.close();

    // Restarted: still blocked there (nothing sent), and the learned rule holds whatever the greeting says.
    const before = rcptsOf(f).length;
    const again = scheduler({ stateFile, unknownPerHour: 0 });
    const single = await runProbe({ email: "user99@fp-behind.test", mx: mxOf("x@fp-behind.test", ip(200)), deadline_ms: 3_000, catch_all_check: true }, deps(again));
    expect(single).toMatchObject({ outcome: "blocked", retry_after_ms: expect.any(Number) });
    expect(rcptsOf(f)).toHaveLength(before);
    expect(again.receivers.learned.get(`self-hosted ${ip(200)}`)).toMatchObject({ harvest: true });
  }, 30_000);

  it("blocked at the greeting: waiting checks are handed back (a batch's) or answered blocked (a single one) with the refusal, none policy_block", async () => {
    await mta(201, { mailboxPrefix: "user", harvestDefence: { windowMs: 60_000, minRecipients: 1, ratio: 0, blockMs: 600_000 } });
    const s = scheduler({ unknownPerHour: 0, unknownRatio: 1 });
    // One unknown user trips this defence; from then on the greeting is refused too.
    await runProbe({ email: "nobody@greet.test", mx: mxOf("x@greet.test", ip(201)), deadline_ms: 3_000, catch_all_check: false }, deps(s));
    const single = await runProbe({ email: "user1@greet.test", mx: mxOf("x@greet.test", ip(201)), deadline_ms: 3_000, catch_all_check: false }, deps(s));
    expect(single).toMatchObject({ outcome: "blocked", reply: { code: 554, enhanced_code: "5.7.1" } });
    expect(await batchCheck(s, "user2@greet.test", ip(201))).toMatchObject({ deferred: true, refused: true });
  }, 15_000);

  it("throttled (421 4.7.28 at a Google-like MX): the checks it held come back unasked to wait, none answered from it, and the lower rate is learned for good across a restart", async () => {
    // Throttles a client past 4 RCPTs a minute, for 10 minutes (test/fixtures/receiver-fixtures.ts).
    const f = await mta(203, { mailboxPrefix: "user", receiver: createReceiver("google", { rcptPerMinute: 4, throttleMs: 600_000 }) });
    const dir = mkdtempSync(join(tmpdir(), "probe-throttle-"));
    dirs.push(dir);
    const stateFile = join(dir, "state.json");
    const config = { stateFile, receiverPolicy: { google: { warmupStart: 1, rcptPerSecond: 100 } } } satisfies Partial<SchedulerConfig>;
    const s = scheduler(config);
    const host = "gmail-smtp-in.l.google.com";
    const gmail = (email: string) => {
      const started = Date.now();
      return runBatchProbe({ email, mx: [{ host, preference: 5, addresses: [ip(203)] }], deadline_ms: 10_000, catch_all_check: true }, deps(s), started, { deferAt: started + 5_000, tenant: "t" });
    };
    const emails = Array.from({ length: 10 }, (_, i) => `${i % 5 === 4 ? "nobody" : "user"}${i}@gmail.com`);
    const answers = await Promise.all(emails.map(gmail));
    expect(f.receiver!.counters.throttle_replies).toBeGreaterThan(0);
    // What was answered is the mailbox's answer; nothing is answered from the throttle (no policy_block, no 4xx as an answer).
    const answered = answers.flatMap((a, i) => ("deferred" in a ? [] : [[emails[i]!.startsWith("user"), a.outcome] as const]));
    for (const [known, outcome] of answered) expect(outcome).toBe(known ? "accepted" : "mailbox_not_found");
    const waiting = answers.filter((a) => "deferred" in a);
    expect(answered.length + waiting.length).toBe(10);
    expect(waiting.length).toBeGreaterThan(0);
    // A throttle is a pause, not a block of our probe: the lines wait on the family, and no other probe is told it refused.
    for (const d of waiting) expect(d).toMatchObject({ deferred: true, waitingOn: "google", retryAfterMs: expect.any(Number) });
    expect(s.receivers.learned.get("google")).toMatchObject({ rateFactor: 0.5, throttles: 1, harvest: false });
    const rate = (x: Scheduler) => x.receivers.gateOf(x.receivers.policy("google"), Date.now())!.rcpts.ratePerSecond;
    expect(rate(s)).toBe(50);
    await s.close();

    // Restarted from the state file: the lower rate holds, and the pause still holds the family (nothing sent).
    const before = f.receiver!.counters.rcpts;
    const again = scheduler(config);
    expect(again.receivers.learned.get("google")).toMatchObject({ rateFactor: 0.5, throttles: 1 });
    expect(rate(again)).toBe(50);
    const single = await runProbe({ email: "user42@gmail.com", mx: [{ host, preference: 5, addresses: [ip(203)] }], deadline_ms: 2_000, catch_all_check: true }, deps(again));
    expect(single.outcome).toBe("budget_spent");
    expect(f.receiver!.counters.rcpts).toBe(before);
  }, 30_000);
});

describe("sessions across the pacing gap", () => {
  it("a paced gateway (2 RCPTs a second, one a transaction) gets its RCPTs on one session kept open between transactions, not a connection each", async () => {
    const f = await mta(202, { mailboxPrefix: "user" });
    // A Cisco-like name (one session, paced); idle sessions close after 50 ms unless work waits.
    const host = "mx1.paced.iphmx.com";
    const s = scheduler({ sessionIdleMs: 50, receiverPolicy: { cisco: { rcptPerSecond: 2, rcptsPerTransaction: 1, unknownPerHour: 0, unknownRatio: 1 } } });
    const emails = Array.from({ length: 6 }, (_, i) => `user${i}@paced.test`);
    const answers = await Promise.all(emails.map((email) => runProbe({ email, mx: [{ host, preference: 10, addresses: [ip(202)] }], deadline_ms: 10_000, catch_all_check: false }, deps(s))));
    expect(answers.map((a) => a.outcome)).toEqual(emails.map(() => "accepted"));
    expect(f.connections).toHaveLength(1);
    expect(rcptsOf(f)).toHaveLength(6);
  }, 15_000);

  it("a gap longer than the keep-alive: a NOOP keeps the session (RSET at a server that does not know NOOP), still one connection", async () => {
    // One RCPT every 10 s (the family's burst is one): the second waits past the 8 s NOOP.
    const policy = { cisco: { rcptPerSecond: 0.1, rcptsPerTransaction: 1, unknownPerHour: 0, unknownRatio: 1 } };
    const runs = [
      { n: 204, noop: true },
      { n: 205, noop: false },
    ].map(async ({ n, noop }) => {
      const f = await mta(n, { mailboxPrefix: "user", noop });
      const s = scheduler({ sessionIdleMs: 50, receiverPolicy: policy });
      const host = `mx1.gap${n}.iphmx.com`;
      const answers = await Promise.all(["user1@gap.test", "user2@gap.test"].map((email) => runProbe({ email, mx: [{ host, preference: 10, addresses: [ip(n)] }], deadline_ms: 20_000, catch_all_check: false }, deps(s))));
      return { f, noop, outcomes: answers.map((a) => a.outcome) };
    });
    for (const { f, noop, outcomes } of await Promise.all(runs)) {
      expect(outcomes).toEqual(["accepted", "accepted"]);
      expect(f.connections, `NOOP ${noop ? "known" : "unknown"}`).toHaveLength(1);
      const commands = f.connections[0]!.commands;
      expect(commands).toContain("NOOP");
      // Where NOOP is not recognised, RSET kept the session instead (not counted against it as a refusal of a RCPT).
      if (!noop) expect(commands[commands.indexOf("NOOP") + 1]).toBe("RSET");
    }
  }, 30_000);
});
