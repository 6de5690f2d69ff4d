/**
 * Issue 44 at the probe: how far a block reaches (probe/policy/block.ts judgeRcpt, probe/policy/blocks.ts), blocks
 * tried again, and what a single 5.7.1 means; the pure rules from tables (the research file's texts and the reply
 * corpus of probe-classify.test.ts), the rest against real SMTP fixture servers (test/fixtures/mta-fixture.ts) that
 * hold several domains, one of which refuses us per tenant ("Recipient address rejected: ... Client host [ip] blocked
 * using zen.spamhaus.org", as a Postfix restriction class or a hosting panel's per-domain RBL writes it).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judgeRcpt, namesUs } from "../../probe/policy/block.ts";
import { Blocks } from "../../probe/policy/blocks.ts";
import { countsPerSession } from "../../probe/policy/learned.ts";
import { runBatchProbe, runProbe } from "../../probe/probe.ts";
import type { Scheduler, SchedulerConfig } from "../../probe/qmgr/scheduler.ts";
import { monotonicNow } from "../../probe/clock.ts";
import { blockStatus } from "../../probe/http/metrics.ts";
import { startMtaFixture, type MtaFixture, type MtaFixtureOptions } from "../fixtures/mta-fixture.ts";
import { testScheduler } from "../fixtures/scheduler.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";

const r = (code: number, enhanced: string | null, text: string) => ({ code, enhanced, text });
const at = (domain: string, reply: ReturnType<typeof r>) => ({ domain, reply });

/** A tenant's own block list at a shared Postfix (smtpd_restriction_classes with reject_rbl_client), as the issue saw it. */
const TENANT_BLOCK = (a: string) => `554 5.7.1 <${a}>: Recipient address rejected: Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org`;
const GREETING_BLOCK = "554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org";

describe("what a single 5.7.1 means (item 6): the mailbox's answer, or a block of us", () => {
  // Texts from the research file (provider-limits.md) and the reply corpus (test/node/probe-classify.test.ts).
  const cases: [string, ReturnType<typeof r>, boolean][] = [
    ["Postfix check_recipient_access REJECT", r(554, "5.7.1", "<ana@example.com>: Recipient address rejected: Access denied"), false],
    ["a mailbox's own blocked senders", r(550, "5.7.1", "<ana@example.com>: Recipient address rejected: sender blocked by recipient"), false],
    ["a user's account blocked", r(550, "5.7.1", "This user account is blocked"), false],
    ["Yandex, a blocked account", r(550, "5.7.1", "Policy rejection on the target address"), false],
    ["EOP DBEB unknown user", r(550, "5.4.1", "Recipient address rejected: Access denied. AS(201806281)"), false],
    ["a tenant's RBL in a recipient restriction", r(554, "5.7.1", "<a@b.test>: Recipient address rejected: Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org"), true],
    ["Exim's black list", r(550, "5.7.1", "Rejected because 127.0.0.1 is in a black list at zen.spamhaus.org"), true],
    ["Exim's black list, no zone named", r(550, "5.7.1", "Rejected because 127.0.0.1 is in a black list"), true],
    ["EOP Customer Block list", r(550, "5.7.1", "Service unavailable, Client host [192.0.2.10] blocked using Customer Block list (AS16012607)"), true],
    ["EOP banned sending IP", r(550, "5.7.606", "Access denied, banned sending IP [192.0.2.10]. To request removal from this list please visit https://sender.office.com/"), true],
    ["EOP network on the block list (S3150)", r(550, "5.7.1", "Unfortunately, messages from [192.0.2.10] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150)."), true],
    ["Proofpoint DNSBL", r(550, "5.7.0", "Blocked - see https://support.proofpoint.com/dnsbl-lookup.cgi?ip=192.0.2.10"), true],
    ["Proofpoint reputation", r(550, "5.7.0", "Mail from 192.0.2.10 refused by Proofpoint Reputation Services."), true],
    ["Trend Micro ERS", r(550, "5.7.1", "Mail from 192.0.2.10 has been blocked by Trend Micro Email Reputation Service."), true],
    ["Spamhaus SBL", r(550, "5.7.1", "Mail from IP 192.0.2.10 was rejected due to listing in Spamhaus SBL."), true],
    ["Forcepoint harvest", r(554, "5.7.1", "Client host rejected: directory harvest attack detected, try again later"), true],
    ["a spam verdict (no name of us)", r(554, "5.7.1", "Spam message rejected"), false],
  ];
  it.each(cases)("%s", (_name, reply, block) => {
    expect(namesUs(reply)).toBe(block);
    // Alone at RCPT, in a transaction of one: a block exactly when it names us.
    expect(judgeRcpt("self-hosted", [at("b.test", reply)]) !== null).toBe(block && (reply.enhanced ?? "").startsWith("5.7."));
  });
});

describe("how far a RCPT block reaches (item 1), per family", () => {
  const tenant = r(554, "5.7.1", "<a@t1.test>: Recipient address rejected: Client host [127.0.0.1] blocked using zen.spamhaus.org");
  const ok = r(250, "2.1.5", "Ok");
  it("one recipient domain naming us beside others answered: that domain only", () => {
    expect(judgeRcpt("self-hosted", [at("t1.test", tenant), at("t2.test", ok), at("t3.test", r(550, "5.1.1", "User unknown"))])).toMatchObject({ scope: "domain", domains: ["t1.test"] });
  });
  it("two recipient domains naming us, in one transaction or within the evidence window: the destination", () => {
    expect(judgeRcpt("self-hosted", [at("t1.test", tenant), at("t2.test", tenant), at("t3.test", ok)])).toMatchObject({ scope: "destination" });
    expect(judgeRcpt("self-hosted", [at("t2.test", tenant)], new Set(["t1.test"]))).toMatchObject({ scope: "destination" });
    // The same domain again (in flight when it blocked, or its re-test) is still that domain alone.
    expect(judgeRcpt("self-hosted", [at("t1.test", tenant)], new Set(["t1.test"]))).toMatchObject({ scope: "domain", domains: ["t1.test"] });
  });
  it("texts a family documents as global reach the whole key; EOP's per-tenant Customer Block list does not", () => {
    const banned = r(550, "5.7.606", "Access denied, banned sending IP [192.0.2.10]");
    const customer = r(550, "5.7.1", "Service unavailable, Client host [192.0.2.10] blocked using Customer Block list (AS16012607)");
    expect(judgeRcpt("microsoft-eop", [at("contoso.test", banned)])).toMatchObject({ scope: "destination" });
    expect(judgeRcpt("microsoft-eop", [at("contoso.test", customer)])).toMatchObject({ scope: "domain", domains: ["contoso.test"] });
    expect(judgeRcpt("google", [at("gmail.com", r(550, "5.7.1", "Our system has detected an unusual rate of unsolicited mail originating from your IP address"))])).toMatchObject({ scope: "destination" });
    expect(judgeRcpt("self-hosted", [at("t1.test", r(554, "5.7.1", "Client host rejected: directory harvest attack detected")), at("t2.test", ok)])).toMatchObject({ scope: "destination" });
  });
  it("not a block: one 5.7.1 naming nobody, relaying refused; every RCPT of a transaction refused 5.7.x is (each of its domains)", () => {
    expect(judgeRcpt("self-hosted", [at("t1.test", r(550, "5.7.1", "Rejected")), at("t1.test", ok)])).toBeNull();
    expect(judgeRcpt("self-hosted", [at("t1.test", r(554, "5.7.1", "Relay access denied")), at("t1.test", r(554, "5.7.1", "Relay access denied"))])).toBeNull();
    expect(judgeRcpt("self-hosted", [at("t1.test", r(550, "5.7.1", "Rejected")), at("t1.test", r(550, "5.7.1", "Rejected")), at("t2.test", ok)])).toMatchObject({ scope: "domain", domains: ["t1.test"] });
    expect(judgeRcpt("self-hosted", [at("t1.test", r(550, "5.7.1", "Rejected")), at("t2.test", r(550, "5.7.1", "Rejected"))])).toMatchObject({ scope: "destination" });
  });
  it("re-tests: only a block over an hour, one at a time, every hour; a block that holds keeps its end", () => {
    const b = new Blocks();
    const short = b.add({ key: "k1", family: "self-hosted", scope: "domain", domain: "t.test", reply: "554 5.7.1 x", since: 0, until: 3_600_000, confirmed: true });
    expect(short.nextRetestAt).toBeNull();
    const day = b.add({ key: "k2", family: "self-hosted", scope: "domain", domain: "t.test", reply: "554 5.7.1 x", since: 0, until: 86_400_000, confirmed: true });
    expect(day.nextRetestAt).toBe(3_600_000);
    expect(b.takeRetest("k2", "t.test", 3_599_999)).toBeNull();
    expect(b.takeRetest("k2", "t.test", 3_600_000)).toBe(day);
    expect(b.takeRetest("k2", "t.test", 3_600_001)).toBeNull();
    b.held(day, 3_700_000);
    expect(day).toMatchObject({ retests: 1, nextRetestAt: 7_300_000, until: 86_400_000 });
    expect(b.takeRetest("k2", "t.test", 7_300_000)).toBe(day);
    b.lift(day);
    expect(b.domainBlock("k2", "t.test", 7_300_001)).toBeUndefined();
    // Unconfirmed (no other domain answered since) for the evidence window at most.
    b.add({ key: "k3", family: "self-hosted", scope: "domain", domain: "t.test", reply: "554 5.7.1 x", since: 0, until: 86_400_000, confirmed: false });
    expect([b.unconfirmed("k3", 1_000), b.unconfirmed("k3", 3_600_001)]).toEqual([true, false]);
    b.answered("k3", "t.test");
    expect(b.unconfirmed("k3", 1_000)).toBe(true);
    b.answered("k3", "other.test");
    expect(b.unconfirmed("k3", 1_000)).toBe(false);
    // What GET /status shows of a block.
    expect(blockStatus([short], 0)[0]).toMatchObject({ key: "k1", scope: "domain", domain: "t.test", reply: "554 5.7.1 x", seconds_left: 3600, retests: 0, next_retest_at: null });
  });
});

const ip = (n: number) => `127.0.0.${n}`;
let port = 0;
const fixtures: MtaFixture[] = [];
const schedulers: Scheduler[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  port = await freePortOn(Array.from({ length: 10 }, (_, i) => ip(210 + i)));
});

afterAll(async () => {
  await Promise.all(schedulers.map((s) => s.close()));
  await Promise.all(fixtures.map((f) => f.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function mta(n: number, options: Omit<MtaFixtureOptions, "host" | "port">): Promise<MtaFixture> {
  const f = await startMtaFixture({ host: ip(n), port, mailboxPrefix: "user", banner: "ESMTP Postfix", ...options });
  fixtures.push(f);
  return f;
}
function scheduler(overrides: Partial<SchedulerConfig> = {}): Scheduler {
  const s = testScheduler(port, { unknownPerHour: 0, ...overrides });
  schedulers.push(s);
  return s;
}
/** Every domain's MX is one shared host at `address` (one server, many tenants). */
const mxAt = (address: string) => [{ host: "mx.shared-hosting.test", preference: 10, addresses: [address] }];
const deps = (s: Scheduler) => ({ config: { allowPrivateTargets: true }, scheduler: s });
const batchCheck = (s: Scheduler, email: string, address: string, tenant: string) => {
  const started = Date.now();
  return runBatchProbe({ email, mx: mxAt(address), deadline_ms: 10_000, catch_all_check: true }, deps(s), started, { deferAt: started + 5_000, tenant });
};
const single = (s: Scheduler, email: string, address: string) => runProbe({ email, mx: mxAt(address), deadline_ms: 3_000, catch_all_check: false }, deps(s));
const rcptsTo = (f: MtaFixture, domain: string) => f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT") && x.toLowerCase().includes(`@${domain}>`)));
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** Ten lines at each of four accepting domains (half unknown users) for one tenant, ten at the blocking domain for another. */
function lines(blocking: string, accepting: string[]) {
  const out: { email: string; tenant: string; known: boolean; blocked: boolean }[] = [];
  for (let i = 0; i < 10; i++) {
    for (const d of accepting) out.push({ email: `${i % 2 ? "nobody" : "user"}${i}@${d}`, tenant: "accepting-account", known: i % 2 === 0, blocked: false });
    out.push({ email: `user${i}@${blocking}`, tenant: "blocking-account", known: true, blocked: true });
  }
  return out;
}

describe("one server for several domains, one refusing us per tenant", () => {
  it("the other domains' lines are answered right; the blocking domain's lines wait (refused, with a retry time); nothing else is held", async () => {
    const f = await mta(210, { rcptReply: (a) => (a.endsWith("@blocking.test") ? TENANT_BLOCK(a) : undefined) });
    const s = scheduler();
    const all = lines("blocking.test", ["ok1.test", "ok2.test", "ok3.test", "ok4.test"]);
    const answers = await Promise.all(all.map((l) => batchCheck(s, l.email, ip(210), l.tenant)));
    all.forEach((l, i) => {
      const a = answers[i]!;
      if (l.blocked) expect(a, l.email).toMatchObject({ deferred: true, refused: true, waitingOn: "self-hosted", retryAfterMs: expect.any(Number) });
      else expect(a, l.email).toMatchObject({ outcome: l.known ? "accepted" : "mailbox_not_found" });
    });
    const now = monotonicNow();
    // The block is the tenant's: the destination itself is not stopped, and no harvest lesson is learned for it.
    expect(s.receivers.blocked(now)).toEqual([]);
    expect(s.receivers.blocks.list(now)).toEqual([expect.objectContaining({ scope: "domain", domain: "blocking.test", key: `self-hosted ${ip(210)}`, confirmed: true })]);
    expect(s.receivers.learned.get(`self-hosted ${ip(210)}`)).toBeUndefined();
    // Only that domain's policy_block answers are named for the Worker to take back.
    expect(s.untrusted.current().filter((n) => n.kind === "refused").map((n) => n.domains)).toEqual([["blocking.test"]]);
    // Afterwards: a single check at an accepting domain is answered; one at the blocking domain is held with nothing sent.
    expect(await single(s, "user77@ok2.test", ip(210))).toMatchObject({ outcome: "accepted" });
    const sent = rcptsTo(f, "blocking.test").length;
    expect(await single(s, "user77@blocking.test", ip(210))).toMatchObject({ outcome: "blocked", retry_after_ms: expect.any(Number), reply: { code: 554, enhanced_code: "5.7.1" } });
    expect(rcptsTo(f, "blocking.test")).toHaveLength(sent);
  }, 30_000);

  it("a tenant's block seen before any other domain answered: one RCPT a transaction until one does, then the others go on", async () => {
    const f = await mta(211, { rcptReply: (a) => (a.endsWith("@blocking.test") ? TENANT_BLOCK(a) : undefined) });
    const s = scheduler();
    const first = await Promise.all(["user1@blocking.test", "user2@blocking.test"].map((e) => batchCheck(s, e, ip(211), "a")));
    for (const a of first) expect(a).toMatchObject({ deferred: true, refused: true });
    expect(s.receivers.blocks.list(monotonicNow())).toEqual([expect.objectContaining({ scope: "domain", confirmed: false })]);
    const others = Array.from({ length: 8 }, (_, i) => `user${i}@ok${i % 2}.test`);
    const answers = await Promise.all(others.map((e) => batchCheck(s, e, ip(211), "b")));
    expect(answers.map((a) => ("outcome" in a ? a.outcome : "held"))).toEqual(others.map(() => "accepted"));
    expect(s.receivers.blocks.list(monotonicNow())).toEqual([expect.objectContaining({ scope: "domain", confirmed: true })]);
    // The transaction right after the block carried one RCPT.
    const afterBlock = f.connections.flatMap((c) => c.chunks).filter((ch) => /RCPT TO:<[^>]*@ok/i.test(ch));
    expect(afterBlock[0]!.match(/RCPT TO/gi)).toHaveLength(1);
  }, 30_000);

  it("two domains refusing us there make it the destination's block: nothing more is sent to any domain", async () => {
    const f = await mta(212, { rcptReply: (a) => (/@(b1|b2)\.test$/.test(a) ? TENANT_BLOCK(a) : undefined) });
    const s = scheduler();
    await Promise.all(["user1@b1.test", "user1@b2.test"].map((e) => batchCheck(s, e, ip(212), "a")));
    const now = monotonicNow();
    expect(s.receivers.blocked(now).map((b) => b.key)).toEqual([`self-hosted ${ip(212)}`]);
    expect(s.receivers.blocks.list(now).map((b) => b.scope)).toContain("destination");
    const before = f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT"))).length;
    expect(await single(s, "user5@ok.test", ip(212))).toMatchObject({ outcome: "blocked" });
    expect(f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT")))).toHaveLength(before);
  }, 30_000);

  it("a refusal at the greeting still stops the whole destination, every domain's checks held", async () => {
    await mta(213, { greetingReply: () => GREETING_BLOCK });
    const s = scheduler();
    expect(await single(s, "user1@ok1.test", ip(213))).toMatchObject({ outcome: "blocked", reply: { code: 554 } });
    expect(await batchCheck(s, "user1@ok2.test", ip(213), "b")).toMatchObject({ deferred: true, refused: true });
    expect(s.receivers.blocks.list(monotonicNow())).toEqual([expect.objectContaining({ scope: "destination", domain: null })]);
  }, 15_000);

  it("at a gateway (Cisco's MX names): a 554 5.7.1 naming nobody is the mailbox's answer, a tenant's blocklist refusal its domain's block; the gateway is not stopped", async () => {
    await mta(219, { rcptReply: (a) => (a.startsWith("policy@") ? `554 5.7.1 <${a}>: Recipient address rejected: Access denied` : a.endsWith("@blocking.test") ? TENANT_BLOCK(a) : undefined) });
    const s = scheduler({ receiverPolicy: { cisco: { unknownPerHour: 0, unknownRatio: 1, rcptPerSecond: 100 } } });
    const gw = [{ host: "mx1.shared.iphmx.com", preference: 10, addresses: [ip(219)] }];
    const emails = ["policy@ok.test", "user1@ok.test", "user1@blocking.test", "user2@ok2.test"];
    const answers = await Promise.all(
      emails.map((email) => {
        const started = Date.now();
        return runBatchProbe({ email, mx: gw, deadline_ms: 10_000, catch_all_check: false }, deps(s), started, { deferAt: started + 5_000, tenant: "t" });
      }),
    );
    expect(answers.map((a) => ("outcome" in a ? a.outcome : a.refused ? "refused" : "deferred"))).toEqual(["policy_block", "accepted", "refused", "accepted"]);
    expect(s.receivers.blocked(monotonicNow())).toEqual([]);
    expect(s.receivers.blocks.list(monotonicNow())).toEqual([expect.objectContaining({ family: "cisco", scope: "domain", domain: "blocking.test" })]);
    // The gateway's documented 24 h for a 554 5.7.1 block, not the 70 minutes of its "too many invalid recipients".
    const rec = s.receivers.blocks.list(monotonicNow())[0]!;
    expect(rec.until - rec.since).toBe(86_400_000);
  }, 30_000);

  it("the tenant's block, and its lesson, survive a probe restart (PROBE_STATE_FILE)", async () => {
    const f = await mta(214, { rcptReply: (a) => (a.endsWith("@blocking.test") ? TENANT_BLOCK(a) : undefined) });
    const dir = mkdtempSync(join(tmpdir(), "probe-tenant-"));
    dirs.push(dir);
    const stateFile = join(dir, "state.json");
    const s = scheduler({ stateFile });
    await Promise.all(["user1@blocking.test", "user1@ok.test", "user2@ok.test"].map((e) => batchCheck(s, e, ip(214), "a")));
    const rec = s.receivers.blocks.list(monotonicNow())[0]!;
    await s.close();
    const again = scheduler({ stateFile });
    expect(again.receivers.blocks.list(monotonicNow())).toEqual([expect.objectContaining({ scope: "domain", domain: "blocking.test", until: rec.until, since: rec.since })]);
    const sent = rcptsTo(f, "blocking.test").length;
    expect(await single(again, "user9@blocking.test", ip(214))).toMatchObject({ outcome: "blocked" });
    expect(rcptsTo(f, "blocking.test")).toHaveLength(sent);
    expect(await single(again, "user9@ok.test", ip(214))).toMatchObject({ outcome: "accepted" });
  }, 30_000);
});

describe("blocks tried again (item 2), an hour a second (PROBE_POLICY_TIME_SCALE 3600)", () => {
  it("a tenant's block: the re-test that finds it holding keeps its end; once it ended, the re-test's answer lifts it", async () => {
    let refusing = true;
    const f = await mta(215, { rcptReply: (a) => (refusing && a.endsWith("@blocking.test") ? TENANT_BLOCK(a) : undefined) });
    const s = scheduler({ policyTimeScale: 3600 });
    await Promise.all(["user1@blocking.test", "user1@ok.test"].map((e) => batchCheck(s, e, ip(215), "a")));
    const rec = s.receivers.blocks.list(monotonicNow())[0]!;
    expect(rec).toMatchObject({ scope: "domain", retests: 0 });
    const { until } = rec;
    // Before its re-test: held, nothing sent.
    let sent = rcptsTo(f, "blocking.test").length;
    expect(await single(s, "user2@blocking.test", ip(215))).toMatchObject({ outcome: "blocked" });
    expect(rcptsTo(f, "blocking.test")).toHaveLength(sent);
    await sleep(1_100);
    // The re-test: one check goes, is refused, and the block keeps its end.
    expect(await single(s, "user3@blocking.test", ip(215))).toMatchObject({ outcome: "blocked" });
    expect(rcptsTo(f, "blocking.test")).toHaveLength(sent + 1);
    expect(s.receivers.blocks.list(monotonicNow())[0]).toMatchObject({ retests: 1, until });
    sent = rcptsTo(f, "blocking.test").length;
    expect(await single(s, "user4@blocking.test", ip(215))).toMatchObject({ outcome: "blocked" });
    expect(rcptsTo(f, "blocking.test")).toHaveLength(sent);
    // The tenant delisted us: the next re-test is answered, and the block is lifted.
    refusing = false;
    await sleep(1_100);
    expect(await single(s, "user5@blocking.test", ip(215))).toMatchObject({ outcome: "accepted" });
    expect(s.receivers.blocks.list(monotonicNow())).toEqual([]);
    expect(await batchCheck(s, "user6@blocking.test", ip(215), "a")).toMatchObject({ outcome: "accepted" });
  }, 30_000);

  it("a destination-wide block (the greeting): the re-test keeps one that holds and lifts one that ended; waiting lines are told the re-test's time", async () => {
    let refusing = true;
    await mta(216, { greetingReply: () => (refusing ? GREETING_BLOCK : undefined) });
    const s = scheduler({ policyTimeScale: 3600 });
    expect(await single(s, "user1@ok.test", ip(216))).toMatchObject({ outcome: "blocked" });
    const rec = s.receivers.blocks.list(monotonicNow())[0]!;
    expect(rec).toMatchObject({ scope: "destination" });
    const held = await batchCheck(s, "user2@ok.test", ip(216), "b");
    // Asked again at the re-test (an hour, here a second), not at the day's end.
    expect(held).toMatchObject({ deferred: true, refused: true });
    expect("retryAfterMs" in held && held.retryAfterMs).toBeLessThanOrEqual(1_000);
    await sleep(1_100);
    expect(await single(s, "user3@ok.test", ip(216))).toMatchObject({ outcome: "blocked" });
    expect(s.receivers.blocks.list(monotonicNow())[0]).toMatchObject({ retests: 1, until: rec.until });
    refusing = false;
    await sleep(1_100);
    expect(await single(s, "user4@ok.test", ip(216))).toMatchObject({ outcome: "accepted" });
    expect(s.receivers.blocked(monotonicNow())).toEqual([]);
    expect(s.receivers.blocks.list(monotonicNow())).toEqual([]);
    expect(await batchCheck(s, "user5@ok.test", ip(216), "b")).toMatchObject({ outcome: "accepted" });
  }, 30_000);
});

/** Debian's Postfix 3.7 EHLO (smtpd.c's order), as the interop server answers it; Exim 4.96's; Exchange 2019's. */
const POSTFIX_EHLO = ["PIPELINING", "SIZE 10240000", "VRFY", "ETRN", "STARTTLS", "ENHANCEDSTATUSCODES", "8BITMIME", "DSN", "SMTPUTF8", "CHUNKING"];
const keywords = (lines: string[]) => lines.map((l) => l.split(" ")[0]!);

describe("software known by how it answers (item 4)", () => {
  it("a greeting that names nothing: Postfix's EHLO in its own order, Exim's and Exchange's extensions are evidence; a reordered or partial list is not", () => {
    expect(countsPerSession("mx.example.test ESMTP", keywords(POSTFIX_EHLO))).toBe(true);
    expect(countsPerSession("mx.example.test ESMTP", ["SIZE", "8BITMIME", "PIPELINING", "PIPE_CONNECT", "CHUNKING", "PRDR", "STARTTLS", "HELP"])).toBe(true);
    expect(countsPerSession("mx.example.test", ["SIZE", "PIPELINING", "DSN", "ENHANCEDSTATUSCODES", "STARTTLS", "8BITMIME", "BINARYMIME", "CHUNKING", "XRDST"])).toBe(true);
    // The fixture's own list, a gateway's short list, Postfix's words in another order: nothing shown.
    expect(countsPerSession("mx.example.test ESMTP", ["PIPELINING", "SIZE", "8BITMIME", "SMTPUTF8"])).toBe(false);
    expect(countsPerSession("mx.example.test ESMTP", ["8BITMIME", "SIZE", "STARTTLS"])).toBe(false);
    expect(countsPerSession("mx.example.test ESMTP", ["ETRN", "PIPELINING", "SIZE", "ENHANCEDSTATUSCODES", "DSN"])).toBe(false);
  });

  const GENERIC_UNKNOWN = (a: string) => `550 5.1.1 <${a}>: no such user here`;
  const sixtySingles = async (n: number, options: Omit<MtaFixtureOptions, "host" | "port">) => {
    await mta(n, { banner: "ESMTP", softErrorLimit: 10, hardErrorLimit: 20, ...options });
    const s = scheduler();
    const emails = Array.from({ length: 60 }, (_, i) => `${i % 2 ? "nobody" : "user"}${i}@hidden.test`);
    const answers = await Promise.all(emails.map((e) => runProbe({ email: e, mx: mxAt(ip(n)), deadline_ms: 10_000, catch_all_check: false }, deps(s))));
    return { s, emails, outcomes: answers.map((a) => a.outcome), ratio: s.receivers.budgetFor(s.receivers.policy("self-hosted"), ip(n), monotonicNow()).limits.unknownRatio };
  };

  it("a Postfix that hides its name is known by its EHLO: the 60 s share is lifted, 60 single checks at once, half unknown, all answered, none budget_spent", async () => {
    const { emails, outcomes, ratio } = await sixtySingles(217, { ehloKeywords: POSTFIX_EHLO, unknownUserReply: GENERIC_UNKNOWN });
    expect(outcomes).toEqual(emails.map((e) => (e.startsWith("user") ? "accepted" : "mailbox_not_found")));
    expect(ratio).toBe(1);
  }, 30_000);

  it("Postfix's words for an unknown user alone loosen nothing (a gateway in front of a Postfix relays them): the 60 s share holds", async () => {
    const { outcomes, ratio } = await sixtySingles(218, {});
    expect(ratio).toBe(0.3);
    expect(outcomes).toContain("budget_spent");
    expect(outcomes).not.toContain("policy_block");
  }, 30_000);
});
