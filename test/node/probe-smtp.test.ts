/**
 * The probe's SMTP walk against real SMTP servers on loopback, one scenario per 127.0.0.x address:
 * outcomes, catch-all, PIPELINING, STARTTLS, HELO fallback, MX failover, limits and the deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runProbe, type ProbeDeps } from "../../probe/probe.ts";
import type { Scheduler, SchedulerConfig } from "../../probe/qmgr/scheduler.ts";
import { ProbeResponse, type ProbeRequestParsed } from "../../shared/probe-contract.ts";
import { testScheduler } from "../fixtures/scheduler.ts";
import { freePortOn, scriptedDialogue, startMailServer, startRawServer, type RunningServer } from "../fixtures/smtp-servers.ts";

const ip = (n: number) => `127.0.0.${n}`;
// Addresses with nothing listening on the shared port: connections are refused.
const CLOSED = ip(59);

let port = 0;
const servers: RunningServer[] = [];
const byName: Record<string, RunningServer> = {};

const schedulers: Scheduler[] = [];

/** A fresh scheduler (its own sessions and catch-all knowledge) with the probe's defaults, unless overridden. */
function deps(overrides: Partial<SchedulerConfig> & { allowPrivateTargets?: boolean } = {}, perDestination = 4): ProbeDeps {
  const { allowPrivateTargets = true, ...config } = overrides;
  const scheduler = testScheduler(port, { maxPerDestination: perDestination, ...config });
  schedulers.push(scheduler);
  return { config: { allowPrivateTargets }, scheduler };
}

function request(email: string, hosts: string[], deadlineMs = 4_000): ProbeRequestParsed {
  return {
    email,
    mx: hosts.map((address, i) => ({ host: `mx${i}.${address}.test`, preference: (i + 1) * 10, addresses: [address] })),
    deadline_ms: deadlineMs,
    catch_all_check: true,
  };
}

async function probe(email: string, hosts: string[], d = deps(), deadlineMs = 4_000) {
  const started = Date.now();
  const result = await runProbe(request(email, hosts, deadlineMs), d);
  // Every answer the probe gives must fit the shared contract.
  return { result: ProbeResponse.parse(result), ms: Date.now() - started };
}

beforeAll(async () => {
  port = await freePortOn(Array.from({ length: 40 }, (_, i) => ip(20 + i)));
  const mail = async (name: string, n: number, opts: Omit<Parameters<typeof startMailServer>[0], "host" | "port">) => {
    const s = await startMailServer({ host: ip(n), port, ...opts });
    servers.push(s);
    byName[name] = s;
  };
  const raw = async (name: string, n: number, handler: Parameters<typeof startRawServer>[2]) => {
    const s = await startRawServer(ip(n), port, handler);
    servers.push(s);
    byName[name] = s;
  };
  await mail("plain", 20, { mailboxes: ["ana@known.test"] });
  await mail("catchall", 21, { catchAllDomains: ["any.test"] });
  await mail("grey", 22, { mailboxes: ["ana@grey.test"], rcptReplies: { "@grey.test": "450 4.2.0 <ana@grey.test>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/grey.test.html" } });
  await mail("policy", 23, { mailboxes: ["ana@block.test"], rcptReplies: { "@block.test": "554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org" } });
  await mail("full", 24, { mailboxes: ["ana@full.test"], rcptReplies: { "ana@full.test": "552 5.2.2 <ana@full.test>: Mailbox full" } });
  await mail("m365", 25, { mailboxes: ["ana@m365.test"], secondRcptReply: "452 4.5.3 Too many recipients" });
  await mail("nopipe", 26, { mailboxes: ["ana@nopipe.test"], pipelining: false, starttls: false });
  await mail("greet554", 27, { greetingReply: "554 5.7.1 Your IP is listed at bl.spamcop.net" });
  await mail("greet421", 28, { greetingReply: "421 4.3.2 Service not available, try later" });
  await mail("mailfrom", 29, { mailboxes: ["ana@sender.test"], mailReply: "553 5.7.1 Sender address rejected: not owned by user" });
  await mail("utf8", 30, { mailboxes: ["josé@utf8.test"] });
  await mail("noutf8", 31, { mailboxes: ["josé@noutf8.test"], smtputf8: false });
  await mail("slow", 32, { mailboxes: ["ana@slow.test"], delayMs: 150 });
  await mail("unclear", 33, { mailboxes: ["ana@unclear.test"], rcptReplies: { "ana@unclear.test": "550 Requested action not taken: mailbox unavailable" } });

  // HELO-only server: EHLO is unknown to it.
  await raw("helo", 40, scriptedDialogue("220 old.test SMTP\r\n", (line) => {
    const verb = line.split(" ")[0]!.toUpperCase();
    if (verb === "EHLO") return "502 5.5.2 Error: command not recognized\r\n";
    if (verb === "HELO") return "250 old.test\r\n";
    if (verb === "MAIL") return "250 2.1.0 Ok\r\n";
    if (verb === "RCPT") return line.includes("ana@old.test") ? "250 2.1.5 Ok\r\n" : "550 5.1.1 User unknown\r\n";
    if (verb === "QUIT") return "221 2.0.0 Bye\r\n";
    return "500 5.5.1 What?\r\n";
  }));
  // Advertises STARTTLS, agrees, then answers the handshake with garbage; fine in plain text.
  await raw("badtls", 41, (socket) => {
    let tlsAttempted = false;
    scriptedDialogue("220 badtls.test ESMTP\r\n", (line, s) => {
      const verb = line.split(" ")[0]!.toUpperCase();
      if (tlsAttempted) return null;
      if (verb === "EHLO") return "250-badtls.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n";
      if (verb === "STARTTLS") {
        tlsAttempted = true;
        s.once("data", () => s.end("this is not a TLS record\r\n"));
        return "220 2.0.0 Ready to start TLS\r\n";
      }
      if (verb === "MAIL") return "250 2.1.0 Ok\r\n";
      if (verb === "RCPT") return "250 2.1.5 Ok\r\n";
      return null;
    })(socket);
  });
  // Insists on TLS, and its TLS is broken: no answer about the mailbox is to be had.
  await raw("tlsonly", 49, (socket) => {
    let tlsAttempted = false;
    scriptedDialogue("220 tlsonly.test ESMTP\r\n", (line, s) => {
      const verb = line.split(" ")[0]!.toUpperCase();
      if (tlsAttempted) return null;
      if (verb === "EHLO") return "250-tlsonly.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n";
      if (verb === "STARTTLS") {
        tlsAttempted = true;
        s.once("data", () => s.destroy());
        return "220 2.0.0 Ready to start TLS\r\n";
      }
      if (verb === "MAIL") return "530 5.7.0 Must issue a STARTTLS command first\r\n";
      if (verb === "RCPT") return "503 5.5.1 Error: need MAIL command\r\n";
      if (verb === "QUIT") return "221 2.0.0 Bye\r\n";
      return null;
    })(socket);
  });
  // Hostile servers.
  await raw("silent", 42, () => {});
  await raw("endless", 43, (socket) => {
    const chunk = Buffer.alloc(64 * 1024, "a");
    socket.write("220 ");
    const pump = () => {
      while (!socket.destroyed && socket.write(chunk));
      if (!socket.destroyed) socket.once("drain", pump);
    };
    pump();
  });
  await raw("nocrlf", 44, (socket) => socket.write("220 greeting without an end of line"));
  await raw("banner10mb", 45, (socket) => {
    // 10 MB of well-formed continuation lines: only the line-count and size bounds stop it.
    const line = "220-" + "x".repeat(70) + "\r\n";
    socket.write(line.repeat(Math.ceil((10 * 1024 * 1024) / line.length)));
  });
  await raw("dribble", 46, (socket) => {
    const text = "220 slowly.test ESMTP\r\n";
    let i = 0;
    const timer = setInterval(() => {
      if (socket.destroyed || i >= text.length) return clearInterval(timer);
      socket.write(text[i++]!);
    }, 1000);
    socket.on("close", () => clearInterval(timer));
  });
  await raw("midreply", 47, scriptedDialogue("220 mid.test ESMTP\r\n", (line, s) => {
    if (line.toUpperCase().startsWith("EHLO")) {
      s.end("250-mid.test\r\n250-PIPELI");
      return null;
    }
    return null;
  }));
  await raw("garbage", 48, (socket) => socket.write("HTTP/1.1 400 Bad Request\r\n\r\n"));
});

afterAll(async () => {
  await Promise.all(schedulers.map((s) => s.close()));
  await Promise.all(servers.map((s) => s.close()));
});

describe("what the server says about the mailbox", () => {
  it("accepted, with STARTTLS and PIPELINING, MAIL FROM ours, the address asked first, then a random one", async () => {
    const { result } = await probe("ana@known.test", [ip(20)]);
    expect(result).toMatchObject({
      outcome: "accepted",
      catch_all: false,
      catch_all_cached: false,
      tls: true,
      pipelining: true,
      mx_host: `mx0.${ip(20)}.test`,
      mx_address: ip(20),
      reply: { code: 250 },
    });
    const rec = byName.plain!.record;
    expect(rec.mailFrom.at(-1)!.address).toBe("verify@probe1.verify.example");
    expect(rec.rcptTo.slice(-2)[0]).toBe("ana@known.test");
    expect(rec.rcptTo.slice(-1)[0]).toMatch(/^[a-z0-9]{16}@known\.test$/);
  });

  it("mailbox_not_found on 550 5.1.1, and the domain is known not to be catch-all", async () => {
    const { result } = await probe("nobody@known.test", [ip(20)]);
    expect(result.outcome).toBe("mailbox_not_found");
    expect(result.catch_all).toBe(false);
    expect(result.reply).toMatchObject({ code: 550, enhanced_code: "5.1.1" });
    expect(result.reply!.text).toContain("User unknown");
  });

  it("a catch-all server is detected, and the second probe of the domain uses the cache and one RCPT", async () => {
    const d = deps();
    const first = await probe("ana@any.test", [ip(21)], d);
    expect(first.result).toMatchObject({ outcome: "accepted", catch_all: true, catch_all_cached: false });
    const before = byName.catchall!.record.rcptTo.length;
    const second = await probe("ben@any.test", [ip(21)], d);
    expect(second.result).toMatchObject({ outcome: "accepted", catch_all: true, catch_all_cached: true });
    expect(byName.catchall!.record.rcptTo.slice(before)).toEqual(["ben@any.test"]);
  });

  it("greylisting (450) is a temporary failure, not a rejection", async () => {
    const { result } = await probe("ana@grey.test", [ip(22)]);
    expect(result.outcome).toBe("temporary_failure");
    expect(result.catch_all).toBeNull();
    expect(result.reply).toMatchObject({ code: 450, enhanced_code: "4.2.0" });
  });

  it("a blocklist rejection (554 5.7.1 naming our client host) is a block of the probe, never 'does not exist' nor the mailbox's answer", async () => {
    const { result } = await probe("ana@block.test", [ip(23)]);
    expect(result.outcome).toBe("blocked");
    expect(result.reply!.text).toContain("spamhaus");
    expect(result.retry_after_ms).toBeGreaterThan(0);
  });

  it("a full mailbox (552 5.2.2) is mailbox_full", async () => {
    const { result } = await probe("ana@full.test", [ip(24)]);
    expect(result.outcome).toBe("mailbox_full");
  });

  it("452 4.5.3 on the random RCPT keeps the first answer and leaves catch-all unknown", async () => {
    const { result } = await probe("ana@m365.test", [ip(25)]);
    expect(result).toMatchObject({ outcome: "accepted", catch_all: null, reply: { code: 250 } });
  });

  it("an unclear 550 is not counted against the mailbox", async () => {
    const { result } = await probe("ana@unclear.test", [ip(33)]);
    expect(result.outcome).toBe("rejected_unclear");
    expect(result.catch_all).toBeNull();
  });

  it("a MAIL FROM refused by policy (5.7.1) is a block of the probe at that address: the walk goes on to the next", async () => {
    const { result } = await probe("ana@sender.test", [ip(29), ip(20)]);
    // The next host does not take mail for sender.test ("Relay access denied"): its own answer, asked.
    expect(result.attempts.map((a) => [a.address, a.outcome, a.reply?.code])).toEqual([
      [ip(29), "blocked", 553],
      [ip(20), "policy_block", 554],
    ]);
    const alone = await probe("ana@sender.test", [ip(29)]);
    expect(alone.result).toMatchObject({ outcome: "blocked", reply: { code: 553 } });
  });
});

describe("the conversation", () => {
  it("with PIPELINING, MAIL FROM and both RCPTs go out in one write; QUIT comes when the session is closed", async () => {
    const d = deps();
    const { result } = await probe("ana@old.test", [ip(41)], d); // plain text after the TLS retry, PIPELINING offered
    expect(result.outcome).toBe("accepted");
    const chunks = byName.badtls!.record.chunks.at(-1)!;
    const group = chunks.find((c) => c.startsWith("MAIL FROM"))!;
    expect(group).toMatch(/^MAIL FROM:<verify@probe1\.verify\.example>\r\nRCPT TO:<ana@old\.test>\r\nRCPT TO:<[a-z0-9]{16}@old\.test>\r\n$/);
    expect(chunks).not.toContain("QUIT\r\n");
    await d.scheduler.close();
    expect(chunks.at(-1)).toBe("QUIT\r\n");
  });

  it("without PIPELINING the commands go one by one: more round trips, and no random RCPT after a rejection", async () => {
    const pipelined = await probe("ana@known.test", [ip(20)], deps());
    const sequential = await probe("ana@nopipe.test", [ip(26)]);
    expect(sequential.result).toMatchObject({ outcome: "accepted", pipelining: false, tls: false, catch_all: false });
    const seqTrips = sequential.result.attempts[0]!.round_trips;
    // connect, greeting, EHLO, MAIL, RCPT, RCPT (no STARTTLS offered) vs connect, greeting, EHLO, STARTTLS, handshake, EHLO, one group.
    expect(seqTrips).toBe(6);
    expect(pipelined.result.attempts[0]!.round_trips).toBe(7);
    const rec = byName.nopipe!.record;
    const before = rec.rcptTo.length;
    const rejected = await probe("nobody@nopipe.test", [ip(26)]);
    expect(rejected.result.outcome).toBe("mailbox_not_found");
    expect(rec.rcptTo.slice(before)).toEqual(["nobody@nopipe.test"]);
  });

  it("falls back to HELO when EHLO is unknown", async () => {
    const { result } = await probe("ana@old.test", [ip(40)]);
    expect(result).toMatchObject({ outcome: "accepted", pipelining: false, tls: false });
    const chunks = byName.helo!.record.chunks.at(-1)!.join("");
    expect(chunks).toContain("EHLO probe1.verify.example\r\nHELO probe1.verify.example\r\n");
  });

  it("a failed TLS handshake is retried once in plain text on the same address, and remembered", async () => {
    const d = deps();
    const before = byName.badtls!.record.connections;
    const { result } = await probe("ana@badtls.test", [ip(41)], d);
    expect(result).toMatchObject({ outcome: "accepted", tls: false });
    expect(result.attempts.map((a) => [a.address, a.outcome])).toEqual([[ip(41), "accepted"]]);
    expect(result.attempts[0]!.error).toMatch(/STARTTLS failed.*TLS.*plain text/s);
    expect(byName.badtls!.record.connections - before).toBe(2);
    // The next session to this address goes straight to plain text.
    await d.scheduler.close();
    await probe("ben@badtls.test", [ip(41)], d);
    expect(byName.badtls!.record.connections - before).toBe(3);
    expect(byName.badtls!.record.chunks.at(-1)!.join("")).not.toContain("STARTTLS");
  });

  it("a server that requires TLS and fails the handshake ends inconclusive, within the deadline", async () => {
    const { result, ms } = await probe("ana@tlsonly.test", [ip(49)], deps(), 2_000);
    expect(result.outcome).toBe("policy_block");
    expect(result.attempts.map((a) => a.outcome)).toEqual(["policy_block"]);
    expect(result.reply).toMatchObject({ code: 530, enhanced_code: "5.7.0" });
    expect(ms).toBeLessThan(2_000);
  });

  it("sends SMTPUTF8 for a non-ASCII address when offered, and does not send the address when not", async () => {
    const ok = await probe("josé@utf8.test", [ip(30)]);
    expect(ok.result.outcome).toBe("accepted");
    expect(byName.utf8!.record.mailFrom.at(-1)!.args).toMatchObject({ SMTPUTF8: true });
    const no = await probe("josé@noutf8.test", [ip(31)]);
    expect(no.result.outcome).toBe("protocol_error");
    expect(no.result.attempts[0]!.error).toMatch(/SMTPUTF8/);
    expect(byName.noutf8!.record.rcptTo).toEqual([]);
  });
});

describe("MX failover", () => {
  it("a refused connection, a 554 greeting and a 421 greeting each move on to the next host", async () => {
    const { result } = await probe("ana@known.test", [CLOSED, ip(27), ip(28), ip(20)]);
    expect(result.outcome).toBe("accepted");
    expect(result.mx_address).toBe(ip(20));
    expect(result.attempts.map((a) => a.outcome)).toEqual(["connection_failed", "blocked", "temporary_failure", "accepted"]);
  });

  it("hosts are tried by preference, whatever order they arrive in", async () => {
    const req = request("ana@known.test", [ip(20), CLOSED]);
    req.mx[0]!.preference = 50;
    req.mx[1]!.preference = 5;
    const result = await runProbe(req, deps());
    expect(result.attempts.map((a) => a.address)).toEqual([CLOSED, ip(20)]);
  });

  it("when every host fails, the most informative failure is the outcome", async () => {
    const { result } = await probe("ana@known.test", [CLOSED, ip(27)]);
    expect(result.outcome).toBe("blocked");
    expect(result.reply).toMatchObject({ code: 554 });
    const onlyRefused = await probe("ana@known.test", [CLOSED]);
    expect(onlyRefused.result.outcome).toBe("connection_failed");
  });

  it("an answer about the mailbox stops the walk: a 5.1.1 is not retried on a backup MX", async () => {
    const { result } = await probe("nobody@known.test", [ip(20), ip(21)]);
    expect(result.outcome).toBe("mailbox_not_found");
    expect(result.attempts).toHaveLength(1);
  });
});

describe("hostile servers end within the deadline, inconclusive", () => {
  const DEADLINE = 1_500;
  const cases: [string, number, string][] = [
    ["silence", 42, "timeout"],
    ["an endless line", 43, "protocol_error"],
    ["no CRLF, ever", 44, "timeout"],
    ["a 10 MB banner", 45, "protocol_error"],
    ["one byte per second", 46, "timeout"],
    ["a close in the middle of a reply", 47, "protocol_error"],
    ["something that is not SMTP", 48, "protocol_error"],
  ];
  for (const [name, n, outcome] of cases) {
    it(`${name}: ${outcome}`, async () => {
      const { result, ms } = await probe("ana@hostile.test", [ip(n)], deps(), DEADLINE);
      expect(result.outcome).toBe(outcome);
      expect(result.catch_all).toBeNull();
      expect(ms).toBeLessThan(DEADLINE + 250);
    });
  }

  it("two silent hosts share one deadline: the whole probe ends at it", async () => {
    const { result, ms } = await probe("ana@hostile.test", [ip(42), ip(42)], deps({ connectTimeoutMs: 5_000 }), DEADLINE);
    expect(result.outcome).toBe("timeout");
    expect(ms).toBeLessThan(DEADLINE + 250);
  });

  it("a slow server (150 ms per reply) still answers inside the deadline", async () => {
    const { result } = await probe("ana@slow.test", [ip(32)], deps(), 4_000);
    expect(result).toMatchObject({ outcome: "accepted", catch_all: false });
  });
});

describe("safety and limits", () => {
  it("refuses private and loopback targets unless allowed, without connecting", async () => {
    const before = byName.plain!.record.connections;
    const { result } = await probe("ana@known.test", [ip(20)], deps({ allowPrivateTargets: false }));
    expect(result.outcome).toBe("refused_target");
    expect(result.attempts[0]!.error).toMatch(/loopback/);
    expect(byName.plain!.record.connections).toBe(before);
  });

  it("holds at most the per-destination limit of sessions to one address, and shares them", async () => {
    const d = deps({}, 2);
    const slow = byName.slow!;
    const before = { connections: slow.record.connections, mail: slow.record.mailFrom.length };
    const results = await Promise.all(Array.from({ length: 6 }, () => runProbe(request("ana@slow.test", [ip(32)], 10_000), d)));
    expect(results.map((r) => r.outcome)).toEqual(Array(6).fill("accepted"));
    expect(slow.record.connections - before.connections).toBeLessThanOrEqual(2);
    expect(slow.record.maxConcurrent).toBeLessThanOrEqual(2);
    // Checks that waited together went in one transaction: fewer MAIL FROMs than checks.
    expect(slow.record.mailFrom.length - before.mail).toBeLessThan(6);
  });
});
