/**
 * The receiver policy (shared/email/receivers.ts) as the probe applies it (probe/policy/receivers.ts):
 * families by MX name, families never dialled, budgets keyed by our IP across a family's MX addresses,
 * transactions shaped per family, replies that pause or stop a family, warm-up, and budgets that survive
 * a restart. Real SMTP conversations with fixture servers on loopback whose MX names are the families'.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { loadProbeConfig, ProbeConfigError } from "../../probe/config.ts";
import { runProbe } from "../../probe/probe.ts";
import { ReceiverPolicies } from "../../probe/policy/receivers.ts";
import type { Scheduler, SchedulerConfig } from "../../probe/qmgr/scheduler.ts";
import { RECEIVER_FAMILIES, RECEIVER_POLICIES, receiverFamily, receiverOfHost } from "../../shared/email/receivers.ts";
import { startMtaFixture, type MtaFixture, type MtaFixtureOptions } from "../fixtures/mta-fixture.ts";
import { testScheduler } from "../fixtures/scheduler.ts";
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";

const ip = (n: number) => `127.0.0.${n}`;
let port = 0;
const fixtures: MtaFixture[] = [];
const schedulers: Scheduler[] = [];
let dir = "";

beforeAll(async () => {
  port = await freePortOn(Array.from({ length: 10 }, (_, i) => ip(180 + i)));
  dir = await mkdtemp(join(tmpdir(), "probe-state-"));
});
afterAll(async () => {
  await Promise.all(schedulers.map((s) => s.close()));
  await Promise.all(fixtures.map((f) => f.close()));
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => vi.restoreAllMocks());

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

const deps = (s: Scheduler) => ({ config: { allowPrivateTargets: true }, scheduler: s });
const check = (s: Scheduler, email: string, host: string, address: string, tenant?: string, catchAll = true) =>
  runProbe({ email, mx: [{ host, preference: 10, addresses: [address] }], deadline_ms: 5_000, catch_all_check: catchAll, ...(tenant ? { tenant } : {}) }, deps(s));
const rcptsOf = (f: MtaFixture) => f.connections.flatMap((c) => c.commands.filter((x) => x.startsWith("RCPT")));
/** Each transaction's RCPT addresses, as the server saw them. */
const transactionsOf = (f: MtaFixture) =>
  f.connections.flatMap((c) => {
    const found: string[][] = [];
    for (const command of c.commands) {
      if (command.startsWith("MAIL")) found.push([]);
      else if (command.startsWith("RCPT")) found[found.length - 1]!.push(/<([^>]*)>/.exec(command)![1]!);
    }
    return found;
  });

describe("the receiver policy table", () => {
  it("has one row per family, names each family by its MX hosts, and sends the rest to self-hosted", () => {
    expect(RECEIVER_POLICIES.map((p) => p.family).sort()).toEqual([...RECEIVER_FAMILIES].sort());
    expect(receiverOfHost("gmail-smtp-in.l.google.com.").family).toBe("google");
    expect(receiverOfHost("ASPMX.L.GOOGLE.COM").family).toBe("google");
    expect(receiverOfHost("contoso-com.mail.protection.outlook.com").family).toBe("microsoft-eop");
    expect(receiverOfHost("hotmail-com.olc.protection.outlook.com").family).toBe("outlook-consumer");
    expect(receiverOfHost("mta5.am0.yahoodns.net").family).toBe("yahoo");
    expect(receiverOfHost("mx1.hc1234-56.iphmx.com").family).toBe("cisco");
    expect(receiverOfHost("cluster-a.mailcontrol.com").family).toBe("forcepoint");
    expect(receiverOfHost("mail.example.org").family).toBe("self-hosted");
    // A lookalike is not the family: suffixes match whole labels.
    expect(receiverOfHost("mx.notgoogle.com").family).toBe("self-hosted");
    expect(receiverFamily([{ host: "backup.example.org", preference: 20 }, { host: "aspmx.l.google.com", preference: 10 }])).toBe("google");
  });

  it("every row's numbers are within their settings' bounds, and only families keyed by our IP warm up or spread over the fleet", () => {
    for (const p of RECEIVER_POLICIES) {
      expect(p.unknownRatio).toBeGreaterThan(0);
      expect(p.unknownRatio).toBeLessThanOrEqual(1);
      expect(p.rcptsPerTransaction).toBeGreaterThanOrEqual(1);
      if (p.warmupStart < 1 || p.fleetSpread) expect(p.budgetKey).toBe("probe_ip_family");
    }
  });
});

describe("families the probe never dials", () => {
  it("Outlook.com consumer (its policy forbids verifying without sending) and Yahoo (RCPT accepts anyone): not_probed, no connection", async () => {
    const f = await mta(180, { mailboxPrefix: "user" });
    const s = scheduler({});
    for (const host of ["hotmail-com.olc.protection.outlook.com", "mta5.am0.yahoodns.net"]) {
      const r = await check(s, "user1@hotmail.example", host, ip(180));
      expect(r).toMatchObject({ outcome: "not_probed", attempts: [], mx_host: host, reply: null });
    }
    expect(f.connections).toHaveLength(0);
  });
});

describe("transactions shaped per family", () => {
  it("microsoft-eop: one RCPT per transaction (the catch-all test alone, first), so a server that answers 452 4.5.3 to a second RCPT never does", async () => {
    const good = ["user1@contoso.example", "user2@contoso.example"];
    const f = await mta(181, { mailboxes: good, rcptLimit: 1 });
    const s = scheduler({ receiverPolicy: { "microsoft-eop": { warmupStart: 1, rcptPerSecond: 100 } } });
    const emails = [...good, "nobody1@contoso.example", "nobody2@contoso.example"];
    const results = await Promise.all(emails.map((e) => check(s, e, "contoso-com.mail.protection.outlook.com", ip(181))));
    expect(results.map((r) => r.outcome)).toEqual(["accepted", "accepted", "mailbox_not_found", "mailbox_not_found"]);
    expect(transactionsOf(f).every((t) => t.length === 1)).toBe(true);
    // The catch-all test went in a transaction of its own, first, and was refused: a tenant with
    // Directory-Based Edge Blocking on, whose accepted addresses are then not catch-all.
    expect(transactionsOf(f)[0]![0]).toMatch(/^[a-z0-9]{16}@contoso\.example$/);
    expect(results[0]).toMatchObject({ catch_all: false });
    expect(f.connections.flatMap((c) => c.commands)).not.toContain("452");
    expect(f.connections.reduce((n, c) => n + c.errors, 0)).toBe(3);
  });

  it("google: one recipient domain per transaction, and no random address at gmail.com (its catch-all answer is known)", async () => {
    const f = await mta(182, { mailboxPrefix: "user", delayMs: 20 });
    const s = scheduler({ receiverPolicy: { google: { warmupStart: 1, rcptPerSecond: 100, unknownPerHour: 0, unknownRatio: 1 } } });
    const emails = ["user1@gmail.com", "user2@gmail.com", "user1@workspace.example", "user2@workspace.example", "user3@gmail.com"];
    const results = await Promise.all(emails.map((e) => check(s, e, "gmail-smtp-in.l.google.com", ip(182))));
    expect(results.every((r) => r.outcome === "accepted")).toBe(true);
    for (const t of transactionsOf(f)) expect(new Set(t.map((a) => a.slice(a.indexOf("@") + 1))).size).toBe(1);
    // gmail.com addresses are answered "not catch-all" without a random address; the Workspace domain is tested.
    expect(results[0]).toMatchObject({ catch_all: false });
    const randoms = rcptsOf(f).filter((r) => !/<user\d@/.test(r));
    expect(randoms.length).toBeGreaterThan(0);
    expect(randoms.every((r) => r.includes("@workspace.example"))).toBe(true);
  });
});

describe("budgets keyed the way receivers count", () => {
  it("google counts by our IP: refusals at one Google MX address spend the budget at every other", async () => {
    const a = await mta(183, { mailboxPrefix: "user" });
    const b = await mta(184, { mailboxPrefix: "user" });
    // A cap of 4 an hour: one customer alone may hold 3 of it.
    const s = scheduler({ receiverPolicy: { google: { warmupStart: 1, rcptPerSecond: 100, unknownPerHour: 4, unknownRatio: 1 } } });
    for (let i = 0; i < 3; i++) expect((await check(s, `nobody${i}@gmail.com`, "gmail-smtp-in.l.google.com", ip(183), "acct1")).outcome).toBe("mailbox_not_found");
    const other = await check(s, "nobody9@gmail.com", "alt1.gmail-smtp-in.l.google.com", ip(184), "acct1");
    expect(other.outcome).toBe("budget_spent");
    expect(rcptsOf(b)).toHaveLength(0);
    // The same destination for a self-hosted domain keeps a budget of its own.
    expect(s.receivers.keyOf(s.receivers.policyOf("mx.example.org"), ip(184))).toBe(`self-hosted ${ip(184)}`);
    expect(s.receivers.keyOf(s.receivers.policyOf("aspmx.l.google.com"), ip(184))).toBe("google");
    expect(rcptsOf(a)).toHaveLength(3);
  });

  it("a reply that says back off pauses the whole family: 421 4.7.28 at one Google MX, and the next check elsewhere is not sent", async () => {
    const a = await mta(185, {
      mailboxPrefix: "user",
      rcptReply: (address) => (address.startsWith("nobody") ? "421 4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited." : undefined),
    });
    const b = await mta(186, { mailboxPrefix: "user" });
    const s = scheduler({ receiverPolicy: { google: { warmupStart: 1, rcptPerSecond: 100 } }, retryLimit: 0 });
    const warn = vi.spyOn(console, "warn");
    await check(s, "nobody1@gmail.com", "gmail-smtp-in.l.google.com", ip(185));
    const next = await check(s, "user1@gmail.com", "alt2.gmail-smtp-in.l.google.com", ip(186));
    expect(next.outcome).toBe("budget_spent");
    expect(rcptsOf(b)).toHaveLength(0);
    const line = warn.mock.calls.map((c) => String(c[0])).find((l) => l.includes("receiver backoff"));
    expect(JSON.parse(line!)).toMatchObject({ level: "warn", family: "google", destination: null, reply: "421 4.7.28", pause_seconds: 1_800, alert: false });
    expect(line).not.toMatch(/@/);
    // A pause while one was in force doubles.
    const budget = s.receivers.budgetFor(s.receivers.policy("google"), ip(185), Date.now());
    expect(budget.pauseLevel(Date.now())).toBe(1);
  });
});

describe("a gateway that starts accepting everything", () => {
  it("refused a random address, then accepts one: the address is stopped for the hour, an alert logged, and what it accepts is not valid on that alone", async () => {
    let randoms = 0;
    const f = await mta(188, {
      mailboxPrefix: "user",
      // The first random address is refused as an unknown user; past it the gateway accepts anything (Cisco's silent accept).
      rcptReply: (address) => (/^[a-z0-9]{16}@/.test(address) && randoms++ > 0 ? "250 2.1.5 Recipient OK" : undefined),
    });
    const s = scheduler({ receiverPolicy: { cisco: { rcptPerSecond: 100 } } });
    const error = vi.spyOn(console, "warn");
    const host = "mx1.hc1234-56.iphmx.com";
    expect(await check(s, "user1@first.example", host, ip(188))).toMatchObject({ outcome: "accepted", catch_all: false });
    const second = await check(s, "user1@second.example", host, ip(188));
    expect(second).toMatchObject({ outcome: "accepted", catch_all: true });
    const line = error.mock.calls.map((c) => String(c[0])).find((l) => l.includes("receiver accepts everything now"));
    expect(JSON.parse(line!)).toMatchObject({ level: "error", family: "cisco", destination: ip(188), alert: true });
    const before = rcptsOf(f).length;
    // Its defence is triggered against our probe: a block, so a check there says the probe was refused, not the mailbox,
    // and the address keeps the harvest rule for good.
    expect((await check(s, "user2@second.example", host, ip(188))).outcome).toBe("blocked");
    expect(s.receivers.learned.get(`cisco ${ip(188)}`)).toMatchObject({ harvest: true });
    expect(rcptsOf(f)).toHaveLength(before);
    // What it accepted since its last refusal is named to the Worker (every batch answer carries it): the
    // domain checked after the random address was refused, not the one whose check the refusal came with.
    expect(s.untrusted.current()).toEqual([{ kind: "untrusted", domains: ["second.example"], sinceMs: expect.any(Number), untilMs: expect.any(Number) }]);
    const [notice] = s.untrusted.current();
    expect(notice!.untilMs).toBeGreaterThanOrEqual(notice!.sinceMs);
    const untrustedLine = error.mock.calls.map((c) => String(c[0])).find((l) => l.includes("receiver answers untrusted"));
    expect(JSON.parse(untrustedLine!)).toMatchObject({ family: "cisco", destination: ip(188), domains: 1, alert: true });
    expect(untrustedLine).not.toMatch(/example/);
  });

  it("says 'too many invalid recipients': stopped, and the domains it accepted at since its last refusal are named", async () => {
    let unknown = 0;
    await mta(189, {
      mailboxPrefix: "user",
      // The first unknown user is refused as such; the next gets Cisco's "too many invalid recipients" (it was accepting the ones between silently).
      rcptReply: (address) => (address.startsWith("nobody") && unknown++ > 0 ? "550 5.1.1 Too many invalid recipients" : undefined),
    });
    const s = scheduler({ receiverPolicy: { cisco: { rcptPerSecond: 100 } } });
    const host = "mx1.hc7777-56.iphmx.com";
    expect((await check(s, "nobody1@a.example", host, ip(189), undefined, false)).outcome).toBe("mailbox_not_found");
    expect((await check(s, "user1@b.example", host, ip(189), undefined, false)).outcome).toBe("accepted");
    expect((await check(s, "user2@c.example", host, ip(189), undefined, false)).outcome).toBe("accepted");
    await check(s, "nobody2@d.example", host, ip(189), undefined, false);
    expect(s.untrusted.current().filter((n) => n.kind === "untrusted")).toEqual([
      { kind: "untrusted", domains: ["b.example", "c.example", "d.example"], sinceMs: expect.any(Number), untilMs: expect.any(Number) },
    ]);
    // Stopped (a block of our probe, learned for good): nothing more is sent there, and a check says the probe was refused.
    expect((await check(s, "user3@e.example", host, ip(189), undefined, false)).outcome).toBe("blocked");
    expect(s.receivers.learned.get(`cisco ${ip(189)}`)).toMatchObject({ harvest: true, blocks: 1 });
  });
});

describe("warm-up", () => {
  const budgets = (scale = 1) =>
    new ReceiverPolicies({ receiverPolicy: {}, policyTimeScale: scale, netblockPeers: 1, unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 25 });
  const DAY = 86_400_000;

  it("a new probe IP starts Google at a fifth of its cap and grows at most 1.5x a day, not on a day the family pushed back", () => {
    const b = budgets();
    const google = b.policy("google");
    const t0 = 10 * DAY + 1_000;
    expect(b.budgetFor(google, "192.0.2.1", t0).limits.unknownPerHour).toBe(200);
    expect(b.budgetFor(google, "192.0.2.1", t0 + DAY).limits.unknownPerHour).toBe(300);
    const budget = b.budgetFor(google, "192.0.2.1", t0 + 2 * DAY);
    expect(budget.limits.unknownPerHour).toBe(450);
    b.noteReply(google, "192.0.2.1", budget, { code: 421, enhanced: "4.7.28", text: "rate limited" }, t0 + 2 * DAY + 10);
    // The day it pushed back does not count towards the ramp.
    expect(b.budgetFor(google, "192.0.2.1", t0 + 3 * DAY).limits.unknownPerHour).toBe(450);
    expect(b.budgetFor(google, "192.0.2.1", t0 + 4 * DAY).limits.unknownPerHour).toBe(675);
    expect(b.budgetFor(google, "192.0.2.1", t0 + 9 * DAY).limits.unknownPerHour).toBe(1_000);
    // Gateways and self-hosted servers count absolute numbers per host: no warm-up there.
    expect(b.budgetFor(b.policy("cisco"), "192.0.2.9", t0).limits.unknownPerHour).toBe(10);
  });

  it("Google's netblock cap is shared by the probes of one /24", () => {
    const b = new ReceiverPolicies({ receiverPolicy: { google: { warmupStart: 1 } }, policyTimeScale: 1, netblockPeers: 4, unknownRatio: 0.3, unknownWindowMs: 60_000, unknownPerHour: 25 });
    expect(b.budgetFor(b.policy("google"), "192.0.2.1", 0).limits.unknownPerHour).toBe(250);
  });
});

describe("memory across restarts (PROBE_STATE_FILE)", () => {
  it("a probe stopped and started again still counts the hour's refusals: the receiver sees no burst past its cap", async () => {
    const f = await mta(187, { mailboxPrefix: "user" });
    const stateFile = join(dir, "state.json");
    const config = { unknownRatio: 1, unknownPerHour: 4, stateFile } satisfies Partial<SchedulerConfig>;
    const first = testScheduler(port, config);
    for (let i = 0; i < 3; i++) expect((await check(first, `nobody${i}@restart.example`, "mx.restart.example", ip(187), "acct", false)).outcome).toBe("mailbox_not_found");
    await first.close();
    const saved = JSON.parse(await readFile(stateFile, "utf8"));
    expect(saved.budgets[`self-hosted ${ip(187)}`].refusals).toHaveLength(3);
    expect(JSON.stringify(saved)).not.toMatch(/@/);
    const second = scheduler(config);
    expect((await check(second, "nobody9@restart.example", "mx.restart.example", ip(187), "acct", false)).outcome).toBe("budget_spent");
    expect(rcptsOf(f)).toHaveLength(3);
  });

  it("a state file that is not ours is ignored with a warning, and the probe starts afresh", async () => {
    const stateFile = join(dir, "broken.json");
    await import("node:fs/promises").then((fs) => fs.writeFile(stateFile, "{not json"));
    const warn = vi.spyOn(console, "warn");
    const s = scheduler({ stateFile });
    expect(s.receivers.budgetFor(s.receivers.policyOf("mx.x.example"), ip(188), Date.now()).counts(Date.now()).unknown_last_hour).toBe(0);
    expect(warn.mock.calls.some((c) => String(c[0]).includes("probe state ignored"))).toBe(true);
  });
});

describe("PROBE_RECEIVER_POLICY", () => {
  const base = { PROBE_SECRET: TEST_PROBE_SECRET, PROBE_HELO_NAME: "probe1.verify.example", PROBE_PUBLIC_IPS: "192.0.2.10" };

  it("overrides the fields of a row the probe applies, and refuses what is not JSON, an unknown family or field, or a value out of bounds, naming it", () => {
    expect(loadProbeConfig({ ...base, PROBE_RECEIVER_POLICY: '{"google":{"unknownPerHour":500},"cisco":{"unknownPerHour":5}}' }).receiverPolicy).toEqual({
      google: { unknownPerHour: 500 },
      cisco: { unknownPerHour: 5 },
    });
    expect(loadProbeConfig(base).receiverPolicy).toEqual({});
    expect(() => loadProbeConfig({ ...base, PROBE_RECEIVER_POLICY: "{nope" })).toThrow(/PROBE_RECEIVER_POLICY must be JSON/);
    expect(() => loadProbeConfig({ ...base, PROBE_RECEIVER_POLICY: '{"gmail":{}}' })).toThrow(ProbeConfigError);
    expect(() => loadProbeConfig({ ...base, PROBE_RECEIVER_POLICY: '{"google":{"unknownPerHuor":5}}' })).toThrow(/PROBE_RECEIVER_POLICY: google/);
    expect(() => loadProbeConfig({ ...base, PROBE_RECEIVER_POLICY: '{"google":{"unknownRatio":2}}' })).toThrow(/PROBE_RECEIVER_POLICY: google.unknownRatio/);
    expect(() => loadProbeConfig({ ...base, PROBE_POLICY_TIME_SCALE: "0.5" })).toThrow(/PROBE_POLICY_TIME_SCALE must be at least 1/);
  });

  it.each([
    ['{"yahoo":{"probe":"yes"}}', "yahoo.probe cannot be set at the probe: the Worker decides it from shared/email/receivers.ts"],
    ['{"google":{"unknownPerHour":500},"outlook-consumer":{"probe":"yes"}}', "outlook-consumer.probe cannot be set at the probe: the Worker decides it from shared/email/receivers.ts"],
    ['{"cisco":{"fleetSpread":true}}', "cisco.fleetSpread cannot be set at the probe: the Worker decides it from shared/email/receivers.ts"],
    ['{"google":{"suffixes":["google.com"]}}', "google.suffixes cannot be set at the probe: the Worker and the probe both name a host's family from shared/email/receivers.ts"],
  ])("refuses at start what the Worker decides, which an override at the probe could never change: %s", (value, message) => {
    const load = () => loadProbeConfig({ ...base, PROBE_RECEIVER_POLICY: value });
    expect(load).toThrow(ProbeConfigError);
    expect(load).toThrow(`PROBE_RECEIVER_POLICY: ${message}`);
  });
});
