/**
 * Proves the interop harness itself with raw protocol traffic and no product code: a real Postfix
 * answers RCPT TO per mailbox, catch-all and access rule, and unbound + dnsdist answer RFC 8484
 * queries for the zone.
 */
import { Buffer } from "node:buffer";
import { connect, type Socket } from "node:net";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import dnsPacket from "dns-packet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preflight } from "./preflight.ts";
import { startDohStack, type InteropZone, type RunningDohStack } from "./servers/doh.ts";
import { startPostfix, type RunningPostfix } from "./servers/postfix.ts";

const zone: InteropZone = {
  "known.test": { MX: [{ preference: 10, exchange: "mx.known.test" }] },
  "mx.known.test": { A: ["127.0.0.2"], AAAA: ["2001:db8::25"] },
  "catchall.test": { MX: [{ preference: 20, exchange: "mx.known.test" }] },
  "nullmx.test": { MX: [{ preference: 0, exchange: "." }] },
  "aonly.test": { A: ["127.0.0.2"] },
};

let postfix: RunningPostfix | undefined;
let doh: RunningDohStack | undefined;

beforeAll(async () => {
  await preflight();
  [postfix, doh] = await Promise.all([
    startPostfix({
      address: "127.0.0.2",
      hostname: "mx.known.test",
      mailboxes: ["alice@known.test"],
      // blocked.test is hosted here too, so the 554 comes from the access rule and not from relay denial.
      catchAllDomains: ["catchall.test", "blocked.test"],
      recipientRules: {
        "grey@known.test": "450 4.2.0 Greylisted, see http://postgrey.schweikert.ch/help/known.test.html",
        "blocked.test": "554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org",
      },
      tls: true,
    }),
    startDohStack(zone),
  ]);
});

afterAll(async () => {
  await Promise.all([postfix?.close(), doh?.close()]);
});

/** An SMTP client reduced to "send a line, get the whole (multi-line) reply". */
type Smtp = {
  reply(): Promise<string[]>;
  send(line: string): Promise<string[]>;
  /** Stops reading, so the socket can be handed to TLS after STARTTLS. */
  detach(): void;
};

function smtp(socket: Socket | TLSSocket): Smtp {
  let buffered = "";
  const lines: string[] = [];
  let waiting: { resolve(reply: string[]): void; reject(err: Error): void } | null = null;
  const deliver = () => {
    const last = lines.findIndex((line) => /^\d{3}( |$)/.test(line));
    if (!waiting || last < 0) return;
    const { resolve } = waiting;
    waiting = null;
    resolve(lines.splice(0, last + 1));
  };
  const onData = (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let end = buffered.indexOf("\r\n"); end >= 0; end = buffered.indexOf("\r\n")) {
      lines.push(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
    }
    deliver();
  };
  const fail = (err: Error) => waiting?.reject(err);
  socket.on("data", onData);
  socket.on("error", fail);
  socket.on("close", () => fail(new Error("connection closed")));
  const reply = () =>
    new Promise<string[]>((resolve, reject) => {
      waiting = { resolve, reject };
      deliver();
    });
  return {
    reply,
    send(line) {
      socket.write(`${line}\r\n`);
      return reply();
    },
    detach() {
      socket.off("data", onData);
    },
  };
}

async function openSmtp(address: string): Promise<{ socket: Socket; session: Smtp; greeting: string[] }> {
  const socket = connect({ host: address, port: 25 });
  const session = smtp(socket);
  return { socket, session, greeting: await session.reply() };
}

/** Sends MAIL FROM then each RCPT TO in one session; returns each recipient's reply line. */
async function rcptReplies(address: string, recipients: string[]): Promise<Record<string, string>> {
  const { socket, session } = await openSmtp(address);
  try {
    expect((await session.send("EHLO probe.test"))[0]).toMatch(/^250-/);
    expect(await session.send("MAIL FROM:<probe@probe.test>")).toEqual(["250 2.1.0 Ok"]);
    const replies: Record<string, string> = {};
    for (const rcpt of recipients) replies[rcpt] = (await session.send(`RCPT TO:<${rcpt}>`)).join("\n");
    expect(await session.send("QUIT")).toEqual(["221 2.0.0 Bye"]);
    return replies;
  } finally {
    socket.destroy();
  }
}

describe("Postfix on 127.0.0.2:25", () => {
  it("greets at once and advertises PIPELINING and STARTTLS", async () => {
    const { socket, session, greeting } = await openSmtp(postfix!.address);
    try {
      expect(greeting).toEqual(["220 mx.known.test ESMTP Postfix"]);
      const ehlo = await session.send("EHLO probe.test");
      expect(ehlo[0]).toBe("250-mx.known.test");
      expect(ehlo.map((line) => line.slice(4))).toEqual(expect.arrayContaining(["PIPELINING", "STARTTLS", "ENHANCEDSTATUSCODES"]));
    } finally {
      socket.destroy();
    }
  });

  it("answers RCPT TO per mailbox, catch-all domain and access rule", async () => {
    expect(
      await rcptReplies(postfix!.address, [
        "alice@known.test",
        "bob@known.test",
        "anything@catchall.test",
        "grey@known.test",
        "someone@blocked.test",
        "someone@elsewhere.test",
      ]),
    ).toEqual({
      "alice@known.test": "250 2.1.5 Ok",
      "bob@known.test": "550 5.1.1 <bob@known.test>: Recipient address rejected: User unknown in virtual mailbox table",
      "anything@catchall.test": "250 2.1.5 Ok",
      "grey@known.test":
        "450 4.2.0 <grey@known.test>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/known.test.html",
      "someone@blocked.test":
        "554 5.7.1 <someone@blocked.test>: Recipient address rejected: Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org",
      // A domain the server does not host: relaying is refused, as on any MX on the internet.
      "someone@elsewhere.test": "554 5.7.1 <someone@elsewhere.test>: Relay access denied",
    });
  });

  it("completes STARTTLS with its self-signed certificate", async () => {
    const { socket, session } = await openSmtp(postfix!.address);
    try {
      await session.send("EHLO probe.test");
      expect(await session.send("STARTTLS")).toEqual(["220 2.0.0 Ready to start TLS"]);
      session.detach();
      const secure = tlsConnect({ socket, servername: "mx.known.test", rejectUnauthorized: false });
      await new Promise<void>((resolve, reject) => {
        secure.once("secureConnect", resolve);
        secure.once("error", reject);
      });
      expect(secure.getPeerCertificate().subject?.CN).toBe("mx.known.test");
      const ehlo = await smtp(secure).send("EHLO probe.test");
      expect(ehlo.map((line) => line.slice(4))).not.toContain("STARTTLS");
      secure.destroy();
    } finally {
      socket.destroy();
    }
  });

  it("runs a second instance on 127.0.0.3 alongside, with its own mailboxes", async () => {
    const other = await startPostfix({ address: "127.0.0.3", hostname: "mx.other.test", mailboxes: ["carol@other.test"] });
    try {
      expect(await rcptReplies(other.address, ["carol@other.test", "alice@known.test"])).toEqual({
        "carol@other.test": "250 2.1.5 Ok",
        "alice@known.test": "554 5.7.1 <alice@known.test>: Relay access denied",
      });
      expect(await rcptReplies(postfix!.address, ["alice@known.test"])).toEqual({ "alice@known.test": "250 2.1.5 Ok" });
    } finally {
      await other.close();
    }
    await expect(openSmtp("127.0.0.3")).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe("unbound behind dnsdist (RFC 8484 over HTTP/1.1)", () => {
  let nextId = 1;
  async function query(name: string, type: "MX" | "A" | "AAAA"): Promise<dnsPacket.DecodedPacket> {
    const id = nextId++;
    const res = await fetch(doh!.url, {
      method: "POST",
      headers: { "content-type": "application/dns-message", accept: "application/dns-message" },
      body: dnsPacket.encode({ type: "query", id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/dns-message");
    const packet = dnsPacket.decode(Buffer.from(await res.arrayBuffer()));
    expect(packet.id).toBe(id);
    return packet;
  }
  const data = (packet: dnsPacket.DecodedPacket) => packet.answers?.map((a) => ("data" in a ? a.data : undefined));
  // @types/dns-packet does not declare the decoded rcode: read it from the header flags.
  const rcode = (packet: dnsPacket.DecodedPacket) => (packet.flags ?? 0) & 0x0f;
  const NOERROR = 0;
  const NXDOMAIN = 3;

  it("answers MX, A and AAAA records", async () => {
    const mx = await query("known.test", "MX");
    expect(rcode(mx)).toBe(NOERROR);
    expect(data(mx)).toEqual([{ preference: 10, exchange: "mx.known.test" }]);
    expect(data(await query("catchall.test", "MX"))).toEqual([{ preference: 20, exchange: "mx.known.test" }]);
    expect(data(await query("mx.known.test", "A"))).toEqual(["127.0.0.2"]);
    expect(data(await query("mx.known.test", "AAAA"))).toEqual(["2001:db8::25"]);
  });

  it("answers the null MX as preference 0, exchange '.'", async () => {
    expect(data(await query("nullmx.test", "MX"))).toEqual([{ preference: 0, exchange: "." }]);
  });

  it("answers an A-only name with NODATA for MX and an SOA to cache it by", async () => {
    const mx = await query("aonly.test", "MX");
    expect(rcode(mx)).toBe(NOERROR);
    expect(mx.answers).toEqual([]);
    expect(mx.authorities?.map((a) => [a.type, a.name])).toEqual([["SOA", "aonly.test"]]);
    expect(data(await query("aonly.test", "A"))).toEqual(["127.0.0.2"]);
  });

  it("answers NXDOMAIN for names not in the zone", async () => {
    expect(rcode(await query("nope.test", "MX"))).toBe(NXDOMAIN);
    expect(rcode(await query("nope.known.test", "A"))).toBe(NXDOMAIN);
    expect(rcode(await query("example.com", "MX"))).toBe(NXDOMAIN);
  });
});
