/**
 * The receiver-like fixtures the benchmarks measure the probe against (test/fixtures/receiver-fixtures.ts
 * inside test/fixtures/mta-fixture.ts): real SMTP conversations over loopback, their replies and
 * counters asserted. Windows run on a clock the test moves; the last test runs the fixture as the
 * benches do, a process with flags, and reads its counters through SIGUSR2.
 */
import { spawn } from "node:child_process";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startMtaFixture, type MtaFixture, type MtaFixtureOptions } from "../fixtures/mta-fixture.ts";
import { receiverOfHost } from "../../shared/email/receivers.ts";
import { createReceiver, RECEIVER_MX, type ReceiverKind, type ReceiverOptions } from "../fixtures/receiver-fixtures.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";

const HOST = "127.0.0.1";
const fixtures: MtaFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((f) => f.close()));
});

/** A clock the test moves by hand. */
function clock() {
  let t = 1_000_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

async function receiverFixture(kind: ReceiverKind, options: ReceiverOptions = {}, now = Date.now, extra: Partial<MtaFixtureOptions> = {}) {
  const receiver = createReceiver(kind, options, 1, "mx.test", now);
  const fixture = await startMtaFixture({ host: HOST, port: await freePortOn([HOST]), mailboxPrefix: "user", pipelining: false, receiver, ...extra });
  fixtures.push(fixture);
  return { fixture, receiver };
}

type Client = { greeting: string; send(command: string): Promise<string>; closed: Promise<void>; isClosed(): boolean; end(): void };

/** A plain SMTP client: one command, then its whole reply (multi-line replies joined). */
async function connect(port: number, helo = "probe.test"): Promise<Client> {
  const socket = net.connect(port, HOST);
  let buffered = "";
  let closedFlag = false;
  let waiting: ((reply: string) => void) | null = null;
  const closed = new Promise<void>((resolve) => socket.once("close", () => ((closedFlag = true), resolve())));
  const pump = () => {
    const end = /^\d{3} .*\r\n/m.exec(buffered);
    if (!end || !waiting) return;
    const upTo = end.index + end[0].length;
    const reply = buffered.slice(0, upTo).trimEnd();
    buffered = buffered.slice(upTo);
    const w = waiting;
    waiting = null;
    w(reply);
  };
  socket.on("data", (d: Buffer) => {
    buffered += d.toString("latin1");
    pump();
  });
  socket.on("error", () => {});
  const next = () =>
    new Promise<string>((resolve, reject) => {
      waiting = resolve;
      void closed.then(() => reject(new Error(`connection closed; unread: ${buffered}`)));
      pump();
    });
  const send = (command: string) => {
    socket.write(`${command}\r\n`);
    return next();
  };
  const greeting = await next();
  if (greeting.startsWith("220")) await send(`EHLO ${helo}`);
  return { greeting, send, closed, isClosed: () => closedFlag, end: () => socket.end() };
}

describe("google-like receiver", () => {
  it("refuses unknown users with 550 5.1.1 and a second recipient domain in one transaction with 451 4.3.0", async () => {
    const { fixture, receiver } = await receiverFixture("google");
    const c = await connect(fixture.port);
    expect(await c.send("MAIL FROM:<probe@verify.test>")).toMatch(/^250/);
    expect(await c.send("RCPT TO:<user1@gmail.test>")).toMatch(/^250 2\.1\.5/);
    expect(await c.send("RCPT TO:<nobody@gmail.test>")).toMatch(/^550 5\.1\.1 The email account that you tried to reach does not exist/);
    expect(await c.send("RCPT TO:<user2@workspace.test>")).toMatch(/^451 4\.3\.0 Multiple destination domains per transaction is unsupported/);
    expect(await c.send("RSET")).toMatch(/^250/);
    expect(await c.send("MAIL FROM:<probe@verify.test>")).toMatch(/^250/);
    expect(await c.send("RCPT TO:<user2@workspace.test>")).toMatch(/^250/);
    c.end();
    expect(receiver.counters).toMatchObject({ connections: 1, rcpts: 4, unknown_refused: 1, multiple_domains: 1, throttle_replies: 0, blocks: 0 });
  });

  it("answers 421 4.7.28 and closes once a sending IP passes its RCPT rate, and keeps throttling that IP (only) until the throttle ends", async () => {
    const t = clock();
    const { fixture, receiver } = await receiverFixture("google", { rcptPerMinute: 3, throttleMs: 600_000 }, t.now, { clientKey: "helo" });
    const a = await connect(fixture.port, "probe-a.test");
    await a.send("MAIL FROM:<probe@verify.test>");
    for (let i = 0; i < 3; i++) expect(await a.send(`RCPT TO:<user${i}@gmail.test>`)).toMatch(/^250/);
    await a.send("RSET");
    await a.send("MAIL FROM:<probe@verify.test>");
    expect(await a.send("RCPT TO:<user3@gmail.test>")).toMatch(/^421 4\.7\.28 .*unusual rate of .*from your IP address.*temporarily rate limited/);
    await a.closed;
    // A minute later its rate is back down, but the throttle holds for ten.
    t.advance(60_000);
    const again = await connect(fixture.port, "probe-a.test");
    await again.send("MAIL FROM:<probe@verify.test>");
    expect(await again.send("RCPT TO:<user4@gmail.test>")).toMatch(/^421 4\.7\.28/);
    // Another sending IP (another probe's name) is not throttled.
    const b = await connect(fixture.port, "probe-b.test");
    await b.send("MAIL FROM:<probe@verify.test>");
    expect(await b.send("RCPT TO:<user5@gmail.test>")).toMatch(/^250/);
    b.end();
    t.advance(600_000);
    const later = await connect(fixture.port, "probe-a.test");
    await later.send("MAIL FROM:<probe@verify.test>");
    expect(await later.send("RCPT TO:<user6@gmail.test>")).toMatch(/^250/);
    later.end();
    expect(receiver.counters).toMatchObject({ throttle_replies: 2, blocks: 1, connections: 4 });
  });

  it("throttles on its unknown-user rate per hour, and on a jump over the previous window", async () => {
    const t = clock();
    const { fixture, receiver } = await receiverFixture("google", { unknownPerHour: 2 }, t.now);
    const c = await connect(fixture.port);
    await c.send("MAIL FROM:<probe@verify.test>");
    expect(await c.send("RCPT TO:<nobody1@gmail.test>")).toMatch(/^550 5\.1\.1/);
    t.advance(30 * 60_000);
    expect(await c.send("RCPT TO:<nobody2@gmail.test>")).toMatch(/^550 5\.1\.1/);
    expect(await c.send("RCPT TO:<user1@gmail.test>")).toMatch(/^250/);
    expect(await c.send("RCPT TO:<nobody3@gmail.test>")).toMatch(/^421 4\.7\.28/);
    await c.closed;
    expect(receiver.counters).toMatchObject({ unknown_refused: 2, blocks: 1 });

    const jump = await receiverFixture("google", { jumpFactor: 2, jumpFloor: 3, jumpWindowMs: 60_000 }, t.now);
    const d = await connect(jump.fixture.port);
    await d.send("MAIL FROM:<probe@verify.test>");
    // The first window's 3 RCPTs are not past the floor, so nothing before them is no jump.
    t.advance(60_000 - (t.now() % 60_000));
    for (let i = 0; i < 3; i++) expect(await d.send(`RCPT TO:<user${i}@gmail.test>`)).toMatch(/^250/);
    t.advance(60_000);
    // Next window: up to 6 (twice the previous 3) is steady, the 7th is a jump.
    for (let i = 0; i < 6; i++) expect(await d.send(`RCPT TO:<user${10 + i}@gmail.test>`)).toMatch(/^250/);
    expect(await d.send("RCPT TO:<user20@gmail.test>")).toMatch(/^421 4\.7\.28/);
    expect(jump.receiver.counters.blocks).toBe(1);
  });
});

describe("EOP-like receiver", () => {
  it("answers a second RCPT in a transaction with 452 4.5.3 (AS780090) and unknown users with 550 5.4.1", async () => {
    const { fixture, receiver } = await receiverFixture("eop");
    const c = await connect(fixture.port);
    await c.send("MAIL FROM:<probe@verify.test>");
    expect(await c.send("RCPT TO:<nobody@tenant.test>")).toMatch(/^550 5\.4\.1 Recipient address rejected: Access denied/);
    expect(await c.send("RCPT TO:<user1@tenant.test>")).toMatch(/^452 4\.5\.3 Too many recipients \(AS780090\)/);
    expect(await c.send("RSET")).toMatch(/^250/);
    await c.send("MAIL FROM:<probe@verify.test>");
    expect(await c.send("RCPT TO:<user1@tenant.test>")).toMatch(/^250/);
    c.end();
    expect(receiver.counters).toMatchObject({ rcpts: 3, unknown_refused: 1, too_many_recipients: 1 });
  });

  it("in internal-relay mode accepts every recipient, unknown ones too", async () => {
    const { fixture, receiver } = await receiverFixture("eop", { internalRelay: true });
    const c = await connect(fixture.port);
    await c.send("MAIL FROM:<probe@verify.test>");
    expect(await c.send("RCPT TO:<nobody@tenant.test>")).toMatch(/^250/);
    c.end();
    expect(receiver.counters.unknown_refused).toBe(0);
  });
});

describe("Cisco-like gateway", () => {
  it("refuses 25 invalid recipients an hour per client, then accepts every recipient silently and records each one", async () => {
    const t = clock();
    const { fixture, receiver } = await receiverFixture("cisco", {}, t.now);
    t.advance(3_600_000 - (t.now() % 3_600_000));
    const c = await connect(fixture.port);
    await c.send("MAIL FROM:<probe@verify.test>");
    for (let i = 0; i < 25; i++) expect(await c.send(`RCPT TO:<nobody${i}@corp.test>`)).toMatch(/^550 5\.1\.1/);
    expect(await c.send("RCPT TO:<nobody25@corp.test>")).toMatch(/^250/);
    expect(await c.send("RCPT TO:<user1@corp.test>")).toMatch(/^250/);
    expect(await c.send("RCPT TO:<nobody26@corp.test>")).toMatch(/^250/);
    expect(receiver.counters).toMatchObject({ unknown_refused: 25, silent_accepts: 2, blocks: 0, peak_unknown_per_hour: 27 });
    expect([...receiver.silentlyAccepted]).toEqual(["nobody25@corp.test", "nobody26@corp.test"]);
    // The next clock hour starts a new count.
    t.advance(3_600_000);
    expect(await c.send("RCPT TO:<nobody27@corp.test>")).toMatch(/^550 5\.1\.1/);
    c.end();
    expect(receiver.counters.peak_unknown_per_hour).toBe(27);
  });

  it("divides its clock hour by the time scale", async () => {
    const t = clock();
    const receiver = createReceiver("cisco", { invalidPerHour: 1 }, 60, "mx.test", t.now);
    t.advance(60_000 - (t.now() % 60_000));
    const ask = (address: string) => receiver.rcpt({ client: "127.0.0.1", address, known: false, transaction: [] }).reply;
    expect(ask("nobody1@corp.test")).toMatch(/^550/);
    expect(ask("nobody2@corp.test")).toMatch(/^250/);
    t.advance(60_000);
    expect(ask("nobody3@corp.test")).toMatch(/^550/);
  });

  it("in drop mode ends the connection with 550 Too many invalid recipients past the threshold", async () => {
    const { fixture, receiver } = await receiverFixture("cisco", { invalidPerHour: 2, drop: true });
    const c = await connect(fixture.port);
    await c.send("MAIL FROM:<probe@verify.test>");
    await c.send("RCPT TO:<nobody1@corp.test>");
    await c.send("RCPT TO:<nobody2@corp.test>");
    expect(await c.send("RCPT TO:<nobody3@corp.test>")).toBe("550 Too many invalid recipients");
    await c.closed;
    expect(receiver.counters).toMatchObject({ unknown_refused: 2, blocks: 1, silent_accepts: 0 });
  });
});

describe("Outlook.com consumer receiver", () => {
  it("counts every connection, refuses unknown users with 550 5.5.0, then blocks the client with SC-002", async () => {
    const { fixture, receiver } = await receiverFixture("outlook-consumer", { blockAfterUnknown: 1 });
    const c = await connect(fixture.port);
    await c.send("MAIL FROM:<probe@verify.test>");
    expect(await c.send("RCPT TO:<nobody1@hotmail.test>")).toMatch(/^550 5\.5\.0/);
    expect(await c.send("RCPT TO:<nobody2@hotmail.test>")).toMatch(/^550 5\.7\.1 .*\(SC-002\)/);
    await c.closed;
    const refused = await connect(fixture.port);
    expect(refused.greeting).toMatch(/^550 5\.7\.1 .*SC-002/);
    await refused.closed;
    expect(receiver.counters).toMatchObject({ connections: 2, rcpts: 2, unknown_refused: 1, blocks: 1 });
  });
});

describe("shared-hosting receiver (issue 44)", () => {
  it("refuses every recipient of a blocking tenant with its per-domain blocklist reply, and answers the other tenants' mailboxes", () => {
    const r = createReceiver("shared-hosting", { blockingDomains: ["blocking.test"] });
    const ask = (address: string, known: boolean) => r.rcpt({ client: "127.0.0.1", address, known, transaction: [] }).reply;
    expect(ask("user1@blocking.test", true)).toMatch(/^554 5\.7\.1 <user1@blocking\.test>: Recipient address rejected: Service unavailable; Client host \[127\.0\.0\.1\] blocked using zen\.spamhaus\.org$/);
    expect(ask("user1@ok.test", true)).toMatch(/^250 /);
    expect(ask("nobody@ok.test", false)).toMatch(/^550 5\.1\.1 .*User unknown in virtual mailbox table$/);
    expect(r.counters).toMatchObject({ rcpts: 3, tenant_refusals: 1, unknown_refused: 1 });
  });
});

describe("the fixture as the benches run it", () => {
  it("stands behind MX names of the family each receiver imitates, as the probe reads them", () => {
    for (const host of [...RECEIVER_MX.google, RECEIVER_MX.googleWorkspace]) expect(receiverOfHost(host).family).toBe("google");
    expect(receiverOfHost(RECEIVER_MX.eop("contoso-eop.com")).family).toBe("microsoft-eop");
    expect(receiverOfHost(RECEIVER_MX.outlookConsumer).family).toBe("outlook-consumer");
    expect(receiverOfHost(RECEIVER_MX.cisco("cisco-corp.com")).family).toBe("cisco");
    expect(receiverOfHost(RECEIVER_MX.forcepoint("fp-corp.com")).family).toBe("forcepoint");
  });

  it("takes a receiver, its options and a time scale as flags and prints its counters on SIGUSR2", async () => {
    const port = await freePortOn([HOST]);
    const script = fileURLToPath(new URL("../fixtures/mta-fixture.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script, "--host", HOST, "--port", String(port), "--delay-ms", "0", "--receiver", "cisco", "--receiver-options", '{"invalidPerHour":1}', "--time-scale", "2"], { stdio: ["ignore", "pipe", "pipe"] });
    try {
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      await expect.poll(() => out, { timeout: 15_000 }).toContain("listening");
      const c = await connect(port);
      await c.send("MAIL FROM:<probe@verify.test>");
      expect(await c.send("RCPT TO:<nobody1@corp.test>")).toMatch(/^550 5\.1\.1/);
      expect(await c.send("RCPT TO:<nobody2@corp.test>")).toMatch(/^250/);
      c.end();
      child.kill("SIGUSR2");
      await expect.poll(() => out, { timeout: 5_000 }).toContain("{");
      const counters = JSON.parse(out.slice(out.indexOf("{")).split("\n")[0]!) as { connections: number; rcpts: number; receiver: Record<string, unknown> };
      expect(counters).toMatchObject({ connections: 1, rcpts: 2, receiver: { connections: 1, unknown_refused: 1, silent_accepts: 1, silently_accepted: ["nobody2@corp.test"] } });
    } finally {
      child.kill("SIGTERM");
    }
  });
});
