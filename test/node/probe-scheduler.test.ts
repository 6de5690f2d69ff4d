/**
 * Longer than 400 lines on purpose: the scheduler's rules, each against fixture mail servers that share their setup.
 * The probe's scheduler against scripted MTAs on loopback (test/fixtures/mta-fixture.ts): warm
 * sessions and RSET, coalescing, rotation before Postfix's error limits, 452 splitting, 421 in the
 * middle of a batch, a tarpit, servers that close idle sessions or drop after one transaction, no
 * PIPELINING, deadlines while queued, fairness between destinations, at most PROBE_MAX_DESTINATIONS
 * destinations with what they taught us kept past them, catch-all per MX host, QUIT with FIN.
 * Assertions are on what the servers saw and what the scheduler logged, never on elapsed time.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import net from "node:net";
import { counters } from "../../probe/counters.ts";
import { runBatchProbe, runProbe } from "../../probe/probe.ts";
import type { Scheduler, SchedulerConfig } from "../../probe/qmgr/scheduler.ts";
import type { ProbeResponse } from "../../shared/probe-contract.ts";
import { startMtaFixture, type MtaFixture, type MtaFixtureOptions } from "../fixtures/mta-fixture.ts";
import { testScheduler } from "../fixtures/scheduler.ts";
import { brokenTlsDialogue, freePortOn, startRawServer, type RunningServer } from "../fixtures/smtp-servers.ts";

const ip = (n: number) => `127.0.0.${n}`;
let port = 0;
const fixtures: (MtaFixture | RunningServer)[] = [];
const schedulers: Scheduler[] = [];

beforeAll(async () => {
  port = await freePortOn(Array.from({ length: 50 }, (_, i) => ip(100 + i)));
});

afterAll(async () => {
  await Promise.all(schedulers.map((s) => s.close()));
  await Promise.all(fixtures.map((f) => f.close()));
});

afterEach(() => {
  vi.restoreAllMocks();
});

async function mta(n: number, options: Omit<MtaFixtureOptions, "host" | "port">): Promise<MtaFixture> {
  const f = await startMtaFixture({ host: ip(n), port, ...options });
  fixtures.push(f);
  return f;
}

/**
 * A scheduler with the unknown-recipient budget off (ratio 1, no hourly cap), as the workers and interop
 * suites run theirs: these tests are about sessions, limits and fairness; the budget has its own
 * (probe-harvest.test.ts, probe-receivers.test.ts).
 */
function scheduler(overrides: Partial<SchedulerConfig> = {}): Scheduler {
  const s = testScheduler(port, { unknownRatio: 1, unknownPerHour: 0, ...overrides });
  schedulers.push(s);
  return s;
}

/** One check through the MX walk, as the service runs it. */
function probe(s: Scheduler, email: string, addresses: string[], deadlineMs = 5_000): Promise<ProbeResponse> {
  const domain = email.slice(email.lastIndexOf("@") + 1);
  return runProbe(
    {
      email,
      mx: addresses.map((address, i) => ({ host: `mx${i}.${domain}`, preference: 10 * (i + 1), addresses: [address] })),
      deadline_ms: deadlineMs,
      catch_all_check: true,
    },
    { config: { allowPrivateTargets: true }, scheduler: s },
  );
}

/** One check of a batch (POST /v1/probe/batch with queue_ms) for `tenant`: null when it was handed back unasked. */
function batchProbe(s: Scheduler, email: string, addresses: string[], deadlineMs: number, deferAt: number | undefined, tenant = ""): Promise<ProbeResponse | null> {
  const domain = email.slice(email.lastIndexOf("@") + 1);
  const mx = addresses.map((address, i) => ({ host: `mx${i}.${domain}`, preference: 10 * (i + 1), addresses: [address] }));
  return runBatchProbe({ email, mx, deadline_ms: deadlineMs, catch_all_check: true }, { config: { allowPrivateTargets: true }, scheduler: s }, Date.now(), { deferAt, tenant }).then((r) =>
    "deferred" in r ? null : r,
  );
}

const rcpts = (f: MtaFixture, c = 0) => f.connections[c]!.commands.filter((x) => x.startsWith("RCPT")).length;
/** The RCPTs /metrics says were sent (probe_family_events_total, event "rcpt", every family): this process's count. */
const rcptsCounted = async () =>
  (await counters.getSingleMetric("probe_family_events_total")!.get()).values.filter((v) => v.labels.event === "rcpt").reduce((n, v) => n + v.value, 0);
/** Every RCPT the server saw, over all its connections. */
const rcptsSeen = (f: MtaFixture) => f.connections.reduce((n, _, c) => n + rcpts(f, c), 0);
const verbs = (f: MtaFixture, c = 0) => f.connections[c]!.commands.map((x) => x.split(/[ :]/, 1)[0]!.toUpperCase());
const RANDOM = "<random>";
/** The RCPT addresses of every transaction the server saw, in order (the catch-all test's random one as RANDOM). */
const transactions = (f: MtaFixture) =>
  f.connections.flatMap((c) => {
    const found: string[][] = [];
    for (const command of c.commands) {
      if (command.startsWith("MAIL")) found.push([]);
      const to = /^RCPT TO:<([^>]*)>/.exec(command)?.[1];
      if (to !== undefined) found.at(-1)!.push(/^[a-z0-9]{16}@/.test(to) ? RANDOM : to);
    }
    return found;
  });
/** The scheduler's operator lines ("destination backoff", "destination tarpit") while `run` runs. */
async function destinationEvents<T>(run: () => Promise<T>): Promise<{ result: T; events: Record<string, unknown>[] }> {
  const lines: string[] = [];
  vi.spyOn(console, "warn").mockImplementation((line: string) => void lines.push(line));
  const result = await run();
  return { result, events: lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => String(e.msg).startsWith("destination ")) };
}
/** Whether the server was ever asked about `email`. */
const asked = (f: MtaFixture, email: string) => f.connections.some((c) => c.commands.includes(`RCPT TO:<${email}>`));

describe("warm sessions", () => {
  it("a second check reuses the session: RSET, MAIL and RCPT in one write, one round trip", async () => {
    const f = await mta(100, { mailboxes: ["ana@warm.test", "ben@warm.test"] });
    const s = scheduler();
    const first = await probe(s, "ana@warm.test", [ip(100)]);
    const second = await probe(s, "ben@warm.test", [ip(100)]);
    expect(first).toMatchObject({ outcome: "accepted", catch_all: false, catch_all_cached: false });
    expect(second).toMatchObject({ outcome: "accepted", catch_all: false, catch_all_cached: true });
    expect(f.connections).toHaveLength(1);
    expect(first.attempts[0]).toMatchObject({ reused_session: false, round_trips: 4 }); // connect, greeting, EHLO, one group
    expect(second.attempts[0]).toMatchObject({ reused_session: true, round_trips: 1 });
    const conn = f.connections[0]!;
    expect(conn.chunks.at(-1)).toBe("RSET\r\nMAIL FROM:<verify@probe1.verify.example>\r\nRCPT TO:<ben@warm.test>\r\n");
    expect(verbs(f)).toEqual(["EHLO", "MAIL", "RCPT", "RCPT", "RSET", "MAIL", "RCPT"]);
  });

  it("QUIT waits for the 221 and closes with FIN, never a reset", async () => {
    const f = await mta(101, { mailboxes: ["ana@quit.test"] });
    const s = scheduler();
    await probe(s, "ana@quit.test", [ip(101)]);
    await s.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(f.connections[0]).toMatchObject({ quit: true, clientFin: true, clientReset: false, serverClosed: false });
  });

  it("an idle session is closed with QUIT after PROBE_SESSION_IDLE_MS", async () => {
    const f = await mta(102, { mailboxes: ["ana@idle.test"] });
    const s = scheduler({ sessionIdleMs: 100 });
    await probe(s, "ana@idle.test", [ip(102)]);
    await new Promise((r) => setTimeout(r, 400));
    expect(f.connections[0]).toMatchObject({ quit: true, clientFin: true, clientReset: false });
    expect(s.stats().sessions_open).toBe(0);
  });

  it("a server that closes idle sessions: the next check opens a fresh one, nothing fails", async () => {
    const f = await mta(103, { mailboxes: ["ana@short.test", "ben@short.test"], idleTimeoutMs: 100 });
    const s = scheduler();
    await probe(s, "ana@short.test", [ip(103)]);
    await new Promise((r) => setTimeout(r, 300));
    const second = await probe(s, "ben@short.test", [ip(103)]);
    expect(second.outcome).toBe("accepted");
    expect(f.connections).toHaveLength(2);
    expect(f.connections[0]!.serverClosed).toBe(true);
  });

  it("a server that resets the connection after the first transaction: retried on a fresh session, then one transaction per session", async () => {
    const f = await mta(104, { mailboxes: ["a@drop.test", "b@drop.test", "c@drop.test", "d@drop.test"], dropAfterTransactions: 1 });
    const s = scheduler();
    const results: ProbeResponse[] = [];
    for (const local of ["a", "b", "c", "d"]) results.push(await probe(s, `${local}@drop.test`, [ip(104)]));
    expect(results.map((r) => r.outcome)).toEqual(["accepted", "accepted", "accepted", "accepted"]);
    // After two sessions died on reuse the address gets one transaction per session, closed with QUIT.
    const last = f.connections.at(-1)!;
    await new Promise((r) => setTimeout(r, 100));
    expect(last).toMatchObject({ transactions: 1, quit: true });
  });

  it("without PIPELINING: one command per round trip, RSET before the next transaction", async () => {
    const f = await mta(105, { mailboxes: ["ana@nopipe.test", "ben@nopipe.test"], pipelining: false });
    const s = scheduler();
    const first = await probe(s, "ana@nopipe.test", [ip(105)]);
    const second = await probe(s, "ben@nopipe.test", [ip(105)]);
    expect([first.outcome, second.outcome]).toEqual(["accepted", "accepted"]);
    expect(first.pipelining).toBe(false);
    // connect, greeting, EHLO, MAIL, RCPT, random RCPT; then RSET, MAIL, RCPT on the warm session.
    expect(first.attempts[0]!.round_trips).toBe(6);
    expect(second.attempts[0]).toMatchObject({ round_trips: 3, reused_session: true });
    expect(f.connections[0]!.chunks.every((c) => c.split("\r\n").filter(Boolean).length === 1)).toBe(true);
  });
});

describe("coalescing", () => {
  it("checks that wait together share one transaction and one random address", async () => {
    const known = Array.from({ length: 6 }, (_, i) => `user${i}@batch.test`);
    const f = await mta(106, { mailboxes: known, delayMs: 30 });
    const s = scheduler();
    const emails = [...known, "nobody1@batch.test", "nobody2@batch.test"];
    const counted = await rcptsCounted();
    const results = await Promise.all(emails.map((e) => probe(s, e, [ip(106)])));
    expect(results.map((r) => r.outcome)).toEqual([...known.map(() => "accepted"), "mailbox_not_found", "mailbox_not_found"]);
    expect(results.every((r) => r.catch_all === false)).toBe(true);
    expect(f.connections).toHaveLength(1);
    // Eight addresses in at most two transactions. The two unknown users settle catch-all on their own (the
    // server refuses addresses), so the random address, asked only after the batch's replies, is never sent.
    expect(f.connections[0]!.transactions).toBeLessThanOrEqual(2);
    const randoms = f.connections[0]!.commands.filter((c) => /RCPT TO:<[a-z0-9]{16}@batch\.test>/.test(c));
    expect(randoms).toHaveLength(0);
    // /metrics counts the RCPTs sent, not the random address that was never asked.
    expect((await rcptsCounted()) - counted).toBe(rcptsSeen(f));
  });

  it("a catch-all server brands every accepted address in the batch, with one random RCPT", async () => {
    const f = await mta(107, { catchAllDomains: ["any.test"], delayMs: 30 });
    const s = scheduler();
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => probe(s, `p${i}@any.test`, [ip(107)])));
    expect(results.map((r) => [r.outcome, r.catch_all])).toEqual(Array(5).fill(["accepted", true]));
    expect(rcpts(f)).toBe(6);
  });

  it("a batch of known users gets its random address after their replies, in one more write on the same transaction", async () => {
    const known = Array.from({ length: 4 }, (_, i) => `user${i}@later.test`);
    const f = await mta(137, { mailboxes: known, delayMs: 30 });
    const s = scheduler();
    const counted = await rcptsCounted();
    const results = await Promise.all(known.map((e) => probe(s, e, [ip(137)])));
    expect(results.map((r) => [r.outcome, r.catch_all])).toEqual(known.map(() => ["accepted", false]));
    expect((await rcptsCounted()) - counted).toBe(rcptsSeen(f));
    const commands = f.connections.flatMap((c) => c.commands);
    const random = commands.findIndex((c) => /RCPT TO:<[a-z0-9]{16}@later\.test>/.test(c));
    expect(random).toBeGreaterThan(-1);
    // Every real RCPT of its transaction came before it; it was the only random one.
    const rcptsBefore = commands.slice(0, random).filter((c) => /RCPT TO:<user\d@later\.test>/.test(c));
    expect(rcptsBefore.length).toBeGreaterThanOrEqual(2);
    expect(commands.filter((c) => /RCPT TO:<[a-z0-9]{16}@later\.test>/.test(c))).toHaveLength(1);
  });
});

describe("error limits", () => {
  const postfix = { softErrorLimit: 10, hardErrorLimit: 20, errorSleepMs: 1_000 };

  it("rotates sessions before Postfix's soft error limit: every verdict right, no slowdown, every session QUIT", async () => {
    const good = Array.from({ length: 20 }, (_, i) => `user${i}@limits.test`);
    const f = await mta(108, { mailboxes: good, ...postfix });
    // One session at a time, so each one would collect every refusal if it were not rotated.
    const s = scheduler({ maxPerDestination: 1 });
    const emails = good.flatMap((g, i) => [g, `nobody${i}@limits.test`]);
    const results = await Promise.all(emails.map((e) => probe(s, e, [ip(108)], 8_000)));
    expect(results.map((r) => r.outcome)).toEqual(emails.map((e) => (e.startsWith("user") ? "accepted" : "mailbox_not_found")));
    await s.close();
    for (const conn of f.connections) {
      expect(conn.errors).toBeLessThan(postfix.softErrorLimit);
      expect(conn).toMatchObject({ quit: true, clientReset: false, serverClosed: false });
    }
    // 21 refusals (20 unknown users and one random address) need at least three sessions of nine.
    expect(f.connections.length).toBeGreaterThanOrEqual(3);
  });

  it("stays right against a server that slows down and disconnects (a probe set to ignore the limits)", async () => {
    const good = Array.from({ length: 10 }, (_, i) => `user${i}@harsh.test`);
    const f = await mta(109, { mailboxes: good, softErrorLimit: 10, hardErrorLimit: 20, errorSleepMs: 50 });
    const s = scheduler({ maxRejectionsPerSession: 100, maxRcptsPerTransaction: 50, maxPerDestination: 1 });
    const emails = [...Array.from({ length: 30 }, (_, i) => `nobody${i}@harsh.test`), ...good];
    const results = await Promise.all(emails.map((e) => probe(s, e, [ip(109)], 15_000)));
    // Postfix's "421 ... too many errors" pauses the address (receiver policy, self-hosted row): what was
    // not asked by then is answered budget_spent, never a wrong verdict.
    const right = emails.map((e) => (e.startsWith("user") ? "accepted" : "mailbox_not_found"));
    results.forEach((r, i) => expect([emails[i], r.outcome]).toEqual([emails[i], r.outcome === "budget_spent" ? "budget_spent" : right[i]]));
    expect(results.filter((r) => r.outcome !== "budget_spent").length).toBeGreaterThanOrEqual(19);
    expect(results.some((r) => r.outcome === "budget_spent")).toBe(true);
    expect(f.connections.some((c) => c.serverClosed)).toBe(true);
  });
});

describe("pushback", () => {
  it("452 too many recipients splits the batch instead of failing it, and the next transactions carry no more than the server took", async () => {
    const good = Array.from({ length: 8 }, (_, i) => `user${i}@split.test`);
    const f = await mta(110, { mailboxes: good, rcptLimit: 3, delayMs: 20 });
    const s = scheduler();
    const results = await Promise.all(good.map((e) => probe(s, e, [ip(110)])));
    expect(results.map((r) => r.outcome)).toEqual(good.map(() => "accepted"));
    const [first, ...later] = transactions(f);
    // All eight and the random one went together; the server took three and refused the rest with 452.
    expect(first).toEqual([...good, RANDOM]);
    // The rest, in order and each once, in transactions of at most three RCPTs (the random one included).
    expect(later.flat().filter((a) => a !== RANDOM)).toEqual(good.slice(3));
    expect(later.every((t) => t.length <= 3)).toBe(true);
    expect(later.length).toBeGreaterThanOrEqual(2);
  });

  it("a 421 in the middle of a batch: backs off, then answers the rest on a fresh session", async () => {
    const good = Array.from({ length: 6 }, (_, i) => `user${i}@busy.test`);
    const f = await mta(111, {
      mailboxes: good,
      delayMs: 20,
      rcptReply: (_a, conn, n) => (conn === f.connections[0] && n === 3 ? "421 4.7.0 mx.busy.test Error: too many connections, try again later" : undefined),
    });
    const s = scheduler();
    const { result: results, events } = await destinationEvents(() => Promise.all(good.map((e) => probe(s, e, [ip(111)], 8_000))));
    expect(results.map((r) => r.outcome)).toEqual(good.map(() => "accepted"));
    // One back-off of PROBE_DESTINATION_BACKOFF_MIN_MS, the destination's four sessions halved.
    expect(events).toEqual([{ level: "warn", msg: "destination backoff", destination: ip(111), why: "session dropped", backoff_ms: 1_000, sessions: 2 }]);
    // The 421 came to the third RCPT; the unanswered ones went to a fresh session, in order.
    const [first, ...later] = transactions(f);
    // The random address waits for the batch's replies, which the 421 cut short: never sent in the first.
    expect(first).toEqual(good);
    expect(f.connections[0]!.serverClosed).toBe(true);
    expect(later.flat().filter((a) => a !== RANDOM)).toEqual(good.slice(2));
  });

  it("a tarpit (refusals that come late) limits the address to two RCPTs per transaction", async () => {
    const good = Array.from({ length: 5 }, (_, i) => `user${i}@tarpit.test`);
    const f = await mta(123, { mailboxes: good, refusalDelayMs: 300 });
    const s = scheduler({ maxPerDestination: 1, tarpitReplyMs: 100 });
    const outcome = (e: string) => (e.startsWith("user") ? "accepted" : "mailbox_not_found");
    // One transaction: user0 answered at once, nobody0 300 ms later (a tarpit), user1; nobody0's refusal
    // settles catch-all, so no random address follows.
    const before = ["user0@tarpit.test", "nobody0@tarpit.test", "user1@tarpit.test"];
    const { result: first, events } = await destinationEvents(() => Promise.all(before.map((e) => probe(s, e, [ip(123)]))));
    expect(first.map((r) => r.outcome)).toEqual(before.map(outcome));
    expect(events).toContainEqual(expect.objectContaining({ msg: "destination tarpit", destination: ip(123) }));
    const after = ["user2@tarpit.test", "user3@tarpit.test", "nobody1@tarpit.test", "user4@tarpit.test", "nobody2@tarpit.test"];
    const second = await Promise.all(after.map((e) => probe(s, e, [ip(123)])));
    expect(second.map((r) => r.outcome)).toEqual(after.map(outcome));
    const [t1, ...later] = transactions(f);
    expect(t1).toEqual(before);
    expect(later.flat()).toEqual(after);
    expect(later.map((t) => t.length)).toEqual([2, 2, 1]);
  });

  it("a rate-limit 451 4.7.x is retried after a back-off; a greylisting 450 4.7.1 is an answer", async () => {
    let limited = false;
    const f = await mta(112, {
      mailboxes: ["ana@rate.test", "grey@rate.test"],
      rcptReply: (address) => {
        if (address === "grey@rate.test") return "450 4.7.1 <grey@rate.test>: Recipient address rejected: Greylisted";
        if (address === "ana@rate.test" && !limited) {
          limited = true;
          return "451 4.7.1 Rate limit exceeded, try again later";
        }
        return undefined;
      },
    });
    const s = scheduler();
    const [ana, grey] = await Promise.all([probe(s, "ana@rate.test", [ip(112)], 6_000), probe(s, "grey@rate.test", [ip(112)], 6_000)]);
    expect(ana.outcome).toBe("accepted");
    expect(grey.outcome).toBe("temporary_failure");
    expect(f.connections.flatMap((c) => c.commands).filter((c) => c.includes("grey@rate.test"))).toHaveLength(1);
  });
});

describe("deadlines and fairness", () => {
  it("a check never waits in the queue past its deadline: it alone answers timeout, on time", async () => {
    const good = Array.from({ length: 12 }, (_, i) => `user${i}@queue.test`);
    const f = await mta(113, { mailboxes: good, delayMs: 300 });
    const s = scheduler({ maxPerDestination: 1, maxRcptsPerTransaction: 2 });
    const results = await Promise.all(good.map((e) => probe(s, e, [ip(113)], 1_500)));
    const outcomes = results.map((r) => r.outcome);
    expect(outcomes).toContain("accepted");
    expect(outcomes).toContain("timeout");
    expect(outcomes.every((o) => o === "accepted" || o === "timeout")).toBe(true);
    const queued = good.filter((_, i) => /deadline reached while waiting for a session/.test(results[i]!.attempts[0]!.error ?? ""));
    expect(queued.length).toBeGreaterThan(0);
    // Those timed out in the queue were never sent: their deadline took them out, not a reply.
    expect(queued.filter((e) => asked(f, e))).toEqual([]);
    expect(good.filter((e, i) => results[i]!.outcome === "accepted" && !asked(f, e))).toEqual([]);
  });

  it("a batch check still waiting its turn at a server that answers others is handed back unasked at queue_ms, not timed out", async () => {
    const good = Array.from({ length: 12 }, (_, i) => `user${i}@pace.test`);
    const f = await mta(121, { mailboxes: good, delayMs: 300 });
    const s = scheduler({ maxPerDestination: 1, maxRcptsPerTransaction: 2 });
    const started = Date.now();
    const results = await Promise.all(good.map((e) => batchProbe(s, e, [ip(121)], 5_000, started + 1_000)));
    const answered = results.filter((r) => r !== null);
    expect(answered.length).toBeGreaterThan(0);
    expect(answered.every((r) => r.outcome === "accepted")).toBe(true);
    // Those sent before queue_ms were answered; the rest came back unasked, not as timeouts.
    const deferred = good.filter((_, i) => results[i] === null);
    expect(deferred.length).toBeGreaterThan(0);
    expect(deferred.filter((e) => asked(f, e))).toEqual([]);
    expect(good.filter((e) => asked(f, e)).length).toBe(answered.length);
  });

  it("a server that answers nothing is not pacing: its batch checks are not handed back, they time out", async () => {
    const silent = net.createServer(() => {}); // takes the connection, never greets
    await new Promise<void>((resolve) => silent.listen(port, ip(122), resolve));
    try {
      const s = scheduler({ connectTimeoutMs: 5_000 });
      const started = Date.now();
      const results = await Promise.all(["a@silent.test", "b@silent.test"].map((e) => batchProbe(s, e, [ip(122)], 1_500, started + 300)));
      expect(results.map((r) => r?.outcome)).toEqual(["timeout", "timeout"]);
    } finally {
      silent.close();
    }
  });

  it("with every session slot taken, a session that goes idle hands its slot to a check waiting elsewhere at once", async () => {
    // Four destinations, two session slots, sessions kept 5 s when idle: the last two checks must
    // not wait out the first two sessions' idle time (they would time out at their 2 s deadline).
    const servers = await Promise.all([130, 131, 132, 133].map((n) => mta(n, { mailboxes: [`ana@d${n}.test`] })));
    const s = scheduler({ maxConcurrency: 2, sessionIdleMs: 5_000 });
    const answers = await Promise.all([130, 131, 132, 133].map((n) => probe(s, `ana@d${n}.test`, [ip(n)], 2_000)));
    expect(answers.map((a) => a.outcome)).toEqual(["accepted", "accepted", "accepted", "accepted"]);
    // Two sessions said QUIT long before their idle time was up, to let the other two in.
    expect(servers.filter((f) => f.connections[0]!.quit)).toHaveLength(2);
  });

  it("one hot destination cannot take the capacity another one needs", async () => {
    const hotMailboxes = Array.from({ length: 200 }, (_, i) => `user${i}@hot.test`);
    await mta(114, { mailboxes: hotMailboxes, delayMs: 50 });
    await mta(115, { mailboxes: ["ana@cold.test"] });
    const s = scheduler({ maxConcurrency: 3, maxPerDestination: 2 });
    const hot = Promise.all(hotMailboxes.map((e) => probe(s, e, [ip(114)], 20_000)));
    await new Promise((r) => setTimeout(r, 100));
    const cold = await probe(s, "ana@cold.test", [ip(115)], 5_000);
    expect(cold.outcome).toBe("accepted");
    expect(s.stats().checks_queued).toBeGreaterThan(0); // the hot destination is still busy
    expect((await hot).every((r) => r.outcome === "accepted")).toBe(true);
  });
});

describe("tenants at one destination", () => {
  /** The order in which the server saw the RCPTs of `emails`' addresses (the catch-all tests left out). */
  const rcptOrder = (f: MtaFixture, emails: Set<string>) =>
    f.connections
      .flatMap((c) => c.commands)
      .filter((x) => x.toUpperCase().startsWith("RCPT"))
      .map((x) => /<([^>]*)>/.exec(x)?.[1] ?? "")
      .filter((e) => emails.has(e));

  it("takes tenants in turn: a small list sent after a big one is answered alongside it, not after it", async () => {
    const big = Array.from({ length: 60 }, (_, i) => `big${i}@tenants.test`);
    const small = Array.from({ length: 10 }, (_, i) => `small${i}@tenants.test`);
    const f = await mta(134, { mailboxes: [...big, ...small], delayMs: 20 });
    const s = scheduler({ maxPerDestination: 1, maxRcptsPerTransaction: 4 });
    const bigDone = Promise.all(big.map((e) => batchProbe(s, e, [ip(134)], 20_000, undefined, "tenant-a")));
    await new Promise((r) => setTimeout(r, 50));
    const smallDone = await Promise.all(small.map((e) => batchProbe(s, e, [ip(134)], 20_000, undefined, "tenant-b")));
    expect(smallDone.every((r) => r?.outcome === "accepted")).toBe(true);
    expect((await bigDone).every((r) => r?.outcome === "accepted")).toBe(true);
    const order = rcptOrder(f, new Set([...big, ...small]));
    // Every small address went out before the 30th big one: FIFO would have sent all 60 big ones first.
    const lastSmall = Math.max(...small.map((e) => order.indexOf(e)));
    expect(order.slice(0, lastSmall + 1).filter((e) => e.startsWith("big")).length).toBeLessThan(30);
  });

  it("three tenants get a third each while all three wait", async () => {
    const lists = ["a", "b", "c"].map((t) => Array.from({ length: 24 }, (_, i) => `${t}${i}@three.test`));
    const f = await mta(135, { mailboxes: lists.flat(), delayMs: 20 });
    const s = scheduler({ maxPerDestination: 1, maxRcptsPerTransaction: 3 });
    await Promise.all(lists.flatMap((list, t) => list.map((e) => batchProbe(s, e, [ip(135)], 20_000, undefined, `tenant-${t}`))));
    const order = rcptOrder(f, new Set(lists.flat()));
    // In the first 36 recipients (half of all), each tenant had between 10 and 14.
    for (const t of ["a", "b", "c"]) {
      const n = order.slice(0, 36).filter((e) => e.startsWith(t)).length;
      expect(n, t).toBeGreaterThanOrEqual(10);
      expect(n, t).toBeLessThanOrEqual(14);
    }
  });

  it("a single check goes ahead of every bulk check waiting at its destination", async () => {
    const bulk = Array.from({ length: 40 }, (_, i) => `bulk${i}@single.test`);
    const f = await mta(136, { mailboxes: [...bulk, "person@single.test"], delayMs: 20 });
    const s = scheduler({ maxPerDestination: 1, maxRcptsPerTransaction: 2 });
    const queued = Promise.all(bulk.map((e) => batchProbe(s, e, [ip(136)], 20_000, undefined, "tenant-a")));
    await new Promise((r) => setTimeout(r, 50));
    expect((await probe(s, "person@single.test", [ip(136)], 10_000)).outcome).toBe("accepted");
    await queued;
    const order = rcptOrder(f, new Set([...bulk, "person@single.test"]));
    // It went out in the next transaction or so, with most of the list still waiting behind it.
    expect(order.indexOf("person@single.test")).toBeLessThan(10);
  });
});

describe("at most PROBE_MAX_DESTINATIONS destinations", () => {
  it("a scheduler fed checks for more destination addresses than its cap never holds more than the cap, and answers them all", async () => {
    const hosts = [140, 141, 142, 143, 144, 145];
    await Promise.all(hosts.map((n) => mta(n, { mailboxes: [`ana@d${n}.test`] })));
    const s = scheduler({ maxDestinations: 2 });
    const held: number[] = [];
    const sample = setInterval(() => held.push(s.stats().destinations), 1);
    try {
      const answers = await Promise.all(hosts.map((n) => probe(s, `ana@d${n}.test`, [ip(n)], 5_000).finally(() => held.push(s.stats().destinations))));
      expect(answers.map((a) => a.outcome)).toEqual(hosts.map(() => "accepted"));
    } finally {
      clearInterval(sample);
    }
    expect(held.length).toBeGreaterThan(hosts.length);
    expect(Math.max(...held)).toBe(2);
  });

  it("what a forgotten destination taught us stays: after a failed TLS handshake it is dialled in plain text, though its live state is gone", async () => {
    const badTls = await startRawServer(ip(146), port, brokenTlsDialogue("badtls.test"));
    fixtures.push(badTls);
    const others = await Promise.all([147, 148].map((n) => mta(n, { mailboxes: [`ana@d${n}.test`] })));
    const s = scheduler({ maxDestinations: 2 });
    const first = await probe(s, "ana@badtls.test", [ip(146)]);
    expect(first).toMatchObject({ outcome: "accepted", tls: false });
    expect(badTls.record.connections).toBe(2); // the handshake, then plain text
    // Two other destinations take both places: the one at 146 closes its idle session and is forgotten.
    for (const n of [147, 148]) expect((await probe(s, `ana@d${n}.test`, [ip(n)])).outcome).toBe("accepted");
    expect(s.stats().destinations).toBe(2);
    expect(badTls.record.chunks[1]!.join("")).toContain("QUIT");
    expect(others.every((f) => f.connections.length === 1)).toBe(true);
    const again = await probe(s, "ben@badtls.test", [ip(146)]);
    expect(again).toMatchObject({ outcome: "accepted", tls: false });
    expect(again.attempts[0]!.error).toMatch(/STARTTLS failed.*plain text/s);
    expect(badTls.record.connections).toBe(3);
    expect(badTls.record.chunks[2]!.join("")).not.toContain("STARTTLS");
  });
});

describe("catch-all", () => {
  it("is known per domain and MX host: a backup MX that accepts everything does not brand the domain", async () => {
    await mta(116, { mailboxes: ["ana@split-mx.test"] });
    await mta(117, { catchAllDomains: ["split-mx.test"] });
    const s = scheduler();
    const viaBackup = await probe(s, "ana@split-mx.test", [ip(118), ip(117)]); // 118: nothing listens
    expect(viaBackup).toMatchObject({ outcome: "accepted", catch_all: true, mx_address: ip(117) });
    const viaPrimary = await probe(s, "ana@split-mx.test", [ip(116)]);
    expect(viaPrimary).toMatchObject({ outcome: "accepted", catch_all: false, catch_all_cached: false });
    expect(s.catchAll.get("split-mx.test", "mx1.split-mx.test")).toBe(true);
    expect(s.catchAll.get("split-mx.test", "mx0.split-mx.test")).toBe(false);
  });

  it("a permanent 5xx to the random address, whatever its wording, means not catch-all (OpenSMTPD's 524 5.2.4)", async () => {
    await mta(119, {
      mailboxes: ["ana@opensmtpd.test"],
      rcptReply: (address) => (address === "ana@opensmtpd.test" ? undefined : "524 5.2.4 Mailing list expansion problem"),
    });
    const s = scheduler();
    expect(await probe(s, "ana@opensmtpd.test", [ip(119)])).toMatchObject({ outcome: "accepted", catch_all: false });
  });

  it("a later answer that contradicts the cache replaces it", async () => {
    await mta(120, { mailboxes: ["ana@changed.test"] });
    const s = scheduler();
    s.catchAll.set("changed.test", "mx0.changed.test", true);
    const unknown = await probe(s, "nobody@changed.test", [ip(120)]);
    expect(unknown).toMatchObject({ outcome: "mailbox_not_found", catch_all: false });
    expect(s.catchAll.get("changed.test", "mx0.changed.test")).toBe(false);
  });
});
