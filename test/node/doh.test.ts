/**
 * Longer than 400 lines on purpose: a table of DNS wire-format answers, one case each.
 * RFC 8484 client against the DoH fixture over real HTTP, plus the name-compression loop guard.
 */
import { Buffer } from "node:buffer";
import dnsPacket from "dns-packet";
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  checkName,
  MAX_DOH_RESPONSE_BYTES,
  parseDohResponse,
  queryDoh,
  validateDnsMessage,
  type DohFailure,
} from "../../shared/doh.ts";
import { startDohServer, type DohServer, type Zone } from "../fixtures/doh-server.ts";
import { testZone } from "../fixtures/test-zone.ts";

const LONG_SPF = `v=spf1 ${Array.from({ length: 30 }, (_, i) => `ip4:198.51.100.${i}`).join(" ")} -all`;

const zone: Zone = {
  ...testZone,
  "refused.test": "REFUSED",
  "badid.test": "BAD_ID",
  "garbage.test": "GARBAGE",
  "http500.test": "HTTP_500",
  "ctype.test": "BAD_CONTENT_TYPE",
  "reset.test": "RESET",
  "ttl.test": { MX: [{ preference: 10, exchange: "mx.ttl.test" }], A: ["192.0.2.1", "192.0.2.2"], AAAA: ["2001:db8::1"], ttl: 42 },
  "glue.test": { MX: [{ preference: 10, exchange: "mx.glue.test" }], glue: true },
  "mx.glue.test": { A: ["127.0.0.31"], AAAA: ["::1"] },
  "delay.test": { A: ["127.0.0.32"], delayMs: 300 },
  "delay-once.test": { A: ["127.0.0.33"], delayMs: 300, delayCount: 1 },
  "10.2.0.192.in-addr.arpa": { PTR: ["Probe1.Verify.Example."] },
  "txt.test": { TXT: ["v=spf1 ip4:192.0.2.10 -all", "other=1"], ttl: 30 },
  "long-txt.test": { TXT: [LONG_SPF] },
  "alias-txt.test": { CNAME: "txt.test" },
};

let server: DohServer;
beforeAll(async () => {
  server = await startDohServer({ zone });
});
afterAll(() => server.close());
beforeEach(() => server.resetStats());

const T = { timeoutMs: 1000 };

function expectFailure(r: unknown, reason: DohFailure["reason"]) {
  expect(r).toMatchObject({ failed: true, reason });
}

describe("answers", () => {
  it("MX with its TTL, by POST with RD set", async () => {
    const r = await queryDoh(server.url, "ttl.test", "MX", T);
    expect(r).toEqual({ failed: false, rcode: "NOERROR", answers: [{ preference: 10, exchange: "mx.ttl.test" }], ttl: 42, additional: [] });
    expect(server.queries).toEqual([{ name: "ttl.test", type: "MX" }]);
  });

  it("A and AAAA", async () => {
    const a = await queryDoh(server.url, "ttl.test", "A", T);
    const aaaa = await queryDoh(server.url, "ttl.test", "AAAA", T);
    expect(a).toMatchObject({ rcode: "NOERROR", answers: ["192.0.2.1", "192.0.2.2"], ttl: 42 });
    expect(aaaa).toMatchObject({ rcode: "NOERROR", answers: ["2001:db8::1"], ttl: 42 });
  });

  it("matches names case-insensitively and accepts a trailing dot", async () => {
    const r = await queryDoh(server.url, "OK.Test.", "MX", T);
    expect(r).toMatchObject({ rcode: "NOERROR", answers: [{ preference: 10, exchange: "mx1.ok.test" }, { preference: 20, exchange: "mx2.ok.test" }] });
  });

  it("returns A/AAAA from the additional section", async () => {
    const r = await queryDoh(server.url, "glue.test", "MX", T);
    expect(r).toMatchObject({
      additional: [
        { name: "mx.glue.test", type: "A", address: "127.0.0.31" },
        { name: "mx.glue.test", type: "AAAA", address: "::1" },
      ],
    });
  });

  it("NXDOMAIN carries the negative TTL from the SOA (min of TTL and MINIMUM)", async () => {
    expect(await queryDoh(server.url, "nx.test", "MX", T)).toEqual({ failed: false, rcode: "NXDOMAIN", answers: [], ttl: 60, additional: [] });
    expect(await queryDoh(server.url, "not-in-zone.test", "A", T)).toMatchObject({ rcode: "NXDOMAIN", ttl: 60 });
  });

  it("NODATA is NOERROR with no answers and the SOA's negative TTL", async () => {
    expect(await queryDoh(server.url, "nomail.test", "MX", T)).toMatchObject({ failed: false, rcode: "NOERROR", answers: [], ttl: 300 });
    expect(await queryDoh(server.url, "ttl.test", "AAAA", T)).toMatchObject({ answers: ["2001:db8::1"] });
  });

  it("SERVFAIL and REFUSED are answers with that rcode", async () => {
    expect(await queryDoh(server.url, "servfail.test", "MX", T)).toMatchObject({ failed: false, rcode: "SERVFAIL", answers: [] });
    expect(await queryDoh(server.url, "refused.test", "MX", T)).toMatchObject({ failed: false, rcode: "REFUSED" });
  });

  it("the fixture also speaks GET ?dns= (base64url)", async () => {
    const q = dnsPacket.encode({ type: "query", id: 4242, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: "MX", class: "IN", name: "ok.test" }] });
    const res = await fetch(`${server.url}?dns=${q.toString("base64url")}`, { headers: { accept: "application/dns-message" } });
    expect(res.headers.get("content-type")).toBe("application/dns-message");
    const r = parseDohResponse(Buffer.from(await res.arrayBuffer()), 4242, "ok.test", "MX");
    expect(r).toMatchObject({ rcode: "NOERROR", answers: [{ exchange: "mx1.ok.test" }, { exchange: "mx2.ok.test" }] });
  });

  it("follows a CNAME chain inside the answer and takes the minimum TTL", () => {
    const buf = dnsPacket.encode({
      type: "response",
      id: 7,
      flags: 0,
      questions: [{ type: "A", class: "IN", name: "www.x.test" }],
      answers: [
        { type: "CNAME", name: "www.x.test", ttl: 20, class: "IN", data: "edge.x.test" },
        { type: "A", name: "edge.x.test", ttl: 90, class: "IN", data: "192.0.2.9" },
        { type: "A", name: "unrelated.test", ttl: 5, class: "IN", data: "192.0.2.10" },
      ],
    });
    expect(parseDohResponse(buf, 7, "www.x.test", "A")).toMatchObject({ answers: ["192.0.2.9"], ttl: 20 });
  });
});

describe("PTR and TXT", () => {
  it("PTR names are normalized like MX exchanges (lower case, no trailing dot)", async () => {
    const r = await queryDoh(server.url, "10.2.0.192.in-addr.arpa", "PTR", T);
    expect(r).toEqual({ failed: false, rcode: "NOERROR", answers: ["probe1.verify.example"], ttl: 300, additional: [] });
    expect(server.queries).toEqual([{ name: "10.2.0.192.in-addr.arpa", type: "PTR" }]);
    expect(await queryDoh(server.url, "11.2.0.192.in-addr.arpa", "PTR", T)).toMatchObject({ rcode: "NXDOMAIN", answers: [] });
  });

  it("TXT gives one string per record; NODATA when the name has none", async () => {
    expect(await queryDoh(server.url, "txt.test", "TXT", T)).toMatchObject({ rcode: "NOERROR", answers: ["v=spf1 ip4:192.0.2.10 -all", "other=1"], ttl: 30 });
    expect(await queryDoh(server.url, "ttl.test", "TXT", T)).toMatchObject({ rcode: "NOERROR", answers: [] });
    expect(await queryDoh(server.url, "alias-txt.test", "TXT", T)).toMatchObject({ answers: ["v=spf1 ip4:192.0.2.10 -all", "other=1"] });
  });

  it("a TXT record over 255 bytes arrives as several character-strings, joined without spaces (RFC 7208 §3.3)", async () => {
    expect(LONG_SPF.length).toBeGreaterThan(255);
    const res = await fetch(server.url, {
      method: "POST",
      headers: { "content-type": "application/dns-message" },
      body: dnsPacket.encode({ type: "query", id: 5, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: "TXT", class: "IN", name: "long-txt.test" }] }),
    });
    const wire = dnsPacket.decode(Buffer.from(await res.arrayBuffer()));
    const chunks = (wire.answers![0] as dnsPacket.TxtAnswer).data as Buffer[];
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(255);
    expect(await queryDoh(server.url, "long-txt.test", "TXT", T)).toMatchObject({ answers: [LONG_SPF] });
  });

  it("TXT character-strings that overrun their record data make the message malformed", () => {
    // Header id 1, QR, 1 question, 1 answer; question "ok.test" TXT IN.
    const question = [2, 0x6f, 0x6b, 4, 0x74, 0x65, 0x73, 0x74, 0, 0, 16, 0, 1];
    const rr = (rdata: number[]) => [0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, rdata.length, ...rdata];
    const packet = (rdata: number[]) => Buffer.from([0, 1, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, ...question, ...rr(rdata)]);
    expect(parseDohResponse(packet([2, 0x68, 0x69, 1, 0x21]), 1, "ok.test", "TXT")).toMatchObject({ answers: ["hi!"] });
    expect(parseDohResponse(packet([5, 0x68, 0x69]), 1, "ok.test", "TXT")).toMatchObject({ failed: true, reason: "malformed" });
  });
});

describe("untrusted answers become failures, never throws", () => {
  it("oversized body (streamed, no Content-Length)", async () => {
    expectFailure(await queryDoh(server.url, "big.test", "MX", T), "oversized");
  });

  it("compression pointer loop", async () => {
    const r = await queryDoh(server.url, "loop.test", "MX", T);
    expectFailure(r, "malformed");
    expect((r as DohFailure).detail).toMatch(/loop/);
  });

  it("mismatched ID", async () => {
    expectFailure(await queryDoh(server.url, "badid.test", "MX", T), "id_mismatch");
  });

  it("garbage", async () => {
    expectFailure(await queryDoh(server.url, "garbage.test", "MX", T), "malformed");
  });

  it("HTTP 500, without retry", async () => {
    const r = await queryDoh(server.url, "http500.test", "MX", T);
    expectFailure(r, "http_status");
    expect((r as DohFailure).detail).toBe("500");
    expect(server.queries).toHaveLength(1);
  });

  it("wrong content type", async () => {
    expectFailure(await queryDoh(server.url, "ctype.test", "MX", T), "content_type");
  });

  it("404 from a wrong path", async () => {
    expectFailure(await queryDoh(server.url.replace("/dns-query", "/nope"), "ok.test", "MX", T), "http_status");
  });

  it("question mismatch (right ID, another name)", async () => {
    const fetcher = answerWith((q) => ({ ...q, questions: [{ type: "MX", class: "IN", name: "other.test" }] }));
    expectFailure(await queryDoh("http://doh.invalid/dns-query", "ok.test", "MX", { ...T, fetcher }), "question_mismatch");
    const wrongType = answerWith((q) => ({ ...q, questions: [{ type: "A", class: "IN", name: "ok.test" }] }));
    expectFailure(await queryDoh("http://doh.invalid/dns-query", "ok.test", "MX", { ...T, fetcher: wrongType }), "question_mismatch");
  });

  it("a query echoed back (QR clear) and a truncated answer", async () => {
    const echo = answerWith((q) => ({ ...q, type: "query" }));
    expectFailure(await queryDoh("http://doh.invalid/dns-query", "ok.test", "MX", { ...T, fetcher: echo }), "malformed");
    const tc = answerWith((q) => ({ ...q, flags: dnsPacket.TRUNCATED_RESPONSE }));
    expectFailure(await queryDoh("http://doh.invalid/dns-query", "ok.test", "MX", { ...T, fetcher: tc }), "truncated");
  });

  it("a body over the limit is refused while streaming even when Content-Length lies", async () => {
    const fetcher: typeof fetch = async () => {
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent > 10) return c.close();
          sent++;
          c.enqueue(new Uint8Array(16_384));
        },
      });
      return new Response(stream, { headers: { "content-type": "application/dns-message", "content-length": "100" } });
    };
    expectFailure(await queryDoh("http://doh.invalid/dns-query", "ok.test", "MX", { ...T, fetcher }), "oversized");
    expect(MAX_DOH_RESPONSE_BYTES).toBe(65_535);
  });

  it("a declared Content-Length over the limit fails before reading", async () => {
    const fetcher: typeof fetch = async () =>
      new Response("x", { headers: { "content-type": "application/dns-message", "content-length": "999999" } });
    expectFailure(await queryDoh("http://doh.invalid/dns-query", "ok.test", "MX", { ...T, fetcher }), "oversized");
  });

  it("more than 100 records in a section", async () => {
    const fetcher = answerWith((q) => ({
      ...q,
      answers: Array.from({ length: 101 }, (_, i) => ({ type: "A" as const, name: "ok.test", ttl: 1, data: `10.0.0.${i % 250}` })),
    }));
    const r = await queryDoh("http://doh.invalid/dns-query", "ok.test", "A", { ...T, fetcher });
    expectFailure(r, "malformed");
    expect((r as DohFailure).detail).toMatch(/record count/);
  });

  it("invalid names are refused without a query", async () => {
    for (const name of ["", "a..b", `${"a".repeat(64)}.test`, `${"abcdefghi.".repeat(26)}test`, "bücher.test", "a b.test"]) {
      expectFailure(await queryDoh(server.url, name, "MX", T), "invalid_name");
    }
    expect(server.queries).toHaveLength(0);
  });

  it("a fetcher that throws synchronously is a network failure", async () => {
    const fetcher = (() => {
      throw new Error("boom");
    }) as unknown as typeof fetch;
    expectFailure(await queryDoh(server.url, "ok.test", "MX", { ...T, fetcher }), "network");
  });

  it("random bytes with the right ID never throw", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 300 }), (bytes) => {
        const buf = Buffer.from(bytes);
        if (buf.length >= 2) buf.writeUInt16BE(99, 0);
        const r = parseDohResponse(buf, 99, "ok.test", "MX");
        expect(typeof r.failed).toBe("boolean");
      }),
      { numRuns: 300 },
    );
  });
});

describe("timeout and the single retry", () => {
  it("times out per attempt and retries exactly once", async () => {
    const started = Date.now();
    const r = await queryDoh(server.url, "delay.test", "A", { timeoutMs: 60 });
    const took = Date.now() - started;
    expectFailure(r, "timeout");
    expect(took).toBeGreaterThanOrEqual(100);
    expect(took).toBeLessThan(280);
    await new Promise((res) => setTimeout(res, 20));
    expect(server.queries.filter((q) => q.name === "delay.test")).toHaveLength(2);
  });

  it("the retry can succeed after a timeout", async () => {
    const r = await queryDoh(server.url, "delay-once.test", "A", { timeoutMs: 100 });
    expect(r).toMatchObject({ failed: false, answers: ["127.0.0.33"] });
    expect(server.queries).toHaveLength(2);
  });

  it("a network error (reset connection) is retried once, then fails", async () => {
    expectFailure(await queryDoh(server.url, "reset.test", "MX", T), "network");
    expect(server.queries).toHaveLength(2);
  });

  it("a network error then success", async () => {
    let calls = 0;
    const fetcher: typeof fetch = (input, init) => {
      calls++;
      return calls === 1 ? Promise.reject(new TypeError("fetch failed")) : fetch(input, init);
    };
    expect(await queryDoh(server.url, "ok.test", "MX", { ...T, fetcher })).toMatchObject({ failed: false, rcode: "NOERROR" });
    expect(calls).toBe(2);
  });

  it("an unreachable resolver fails fast as a network error", async () => {
    const dead = await startDohServer({ zone: {} });
    const url = dead.url;
    await dead.close();
    expectFailure(await queryDoh(url, "ok.test", "MX", T), "network");
  });

  it("an outer abort stops at once, with no retry", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const started = Date.now();
    const r = await queryDoh(server.url, "delay.test", "A", { timeoutMs: 1000, signal: ac.signal });
    expectFailure(r, "aborted");
    expect(Date.now() - started).toBeLessThan(200);
    expect(server.queries).toHaveLength(1);
  });

  it("a fetcher that ignores the abort signal is still bounded by the timeout", async () => {
    const fetcher: typeof fetch = () => new Promise<Response>(() => {});
    const started = Date.now();
    expectFailure(await queryDoh(server.url, "ok.test", "MX", { timeoutMs: 40, fetcher }), "timeout");
    expect(Date.now() - started).toBeLessThan(200);
  });
});

describe("compression loop guard (hand-made packets)", () => {
  // Header: id 1, QR, 1 question, `an` answers.
  const header = (an = 0) => [0, 1, 0x81, 0x80, 0, 1, 0, an, 0, 0, 0, 0];
  // Question "ok.test" MX IN at offset 12 (12..20 name, 21..24 type/class).
  const question = [2, 0x6f, 0x6b, 4, 0x74, 0x65, 0x73, 0x74, 0, 0, 15, 0, 1];
  const rrTail = (rdata: number[]) => [0, 15, 0, 1, 0, 0, 0, 60, 0, rdata.length, ...rdata];

  it("accepts ordinary backward pointers, including a chain of them", () => {
    // Answer owner: pointer to the question name (12); exchange "mx" + pointer to "test" (15).
    const ok = Buffer.from([...header(1), ...question, 0xc0, 12, ...rrTail([0, 10, 2, 0x6d, 0x78, 0xc0, 15])]);
    expect(validateDnsMessage(ok)).toEqual({ ok: true });
    expect(parseDohResponse(ok, 1, "ok.test", "MX")).toMatchObject({ answers: [{ preference: 10, exchange: "mx.test" }] });
    // A second answer whose exchange points at the first exchange (which itself points further back).
    const firstExchange = 12 + question.length + 2 + 10 + 2;
    const chain = Buffer.from([
      ...header(2),
      ...question,
      0xc0, 12, ...rrTail([0, 10, 2, 0x6d, 0x78, 0xc0, 15]),
      0xc0, 12, ...rrTail([0, 20, 0xc0, firstExchange]),
    ]);
    expect(validateDnsMessage(chain)).toEqual({ ok: true });
    expect(parseDohResponse(chain, 1, "ok.test", "MX")).toMatchObject({ answers: [{ exchange: "mx.test" }, { exchange: "mx.test" }] });
    expect(checkName(chain, 12)).toBe(21);
    expect(checkName(chain, 25)).toBe(27);
  });

  it("a pointer to itself", () => {
    const at = 12 + question.length;
    const buf = Buffer.from([...header(1), ...question, 0xc0, at, ...rrTail([0, 10, 0])]);
    expect(validateDnsMessage(buf)).toMatchObject({ ok: false, error: expect.stringMatching(/loop/) });
    expect(parseDohResponse(buf, 1, "ok.test", "MX")).toMatchObject({ failed: true, reason: "malformed" });
  });

  it("a label followed by a pointer back to that label (backwards of the pointer, still a loop)", () => {
    const at = 12 + question.length;
    const buf = Buffer.from([...header(1), ...question, 1, 0x61, 0xc0, at, ...rrTail([0, 10, 0])]);
    expect(checkName(buf, at)).toMatch(/loop/);
    expect(validateDnsMessage(buf).ok).toBe(false);
  });

  it("two pointers into each other (one of them forward)", () => {
    const a = 12 + question.length;
    // name A at a: pointer to a+2 (forward); name B at a+2: pointer to a.
    const buf = Buffer.from([...header(1), ...question, 0xc0, a + 2, 0xc0, a, ...rrTail([0, 10, 0])]);
    expect(checkName(buf, a)).toMatch(/loop/);
    expect(checkName(buf, a + 2)).toMatch(/loop/);
    expect(validateDnsMessage(buf).ok).toBe(false);
  });

  it("a loop hidden in the MX exchange, after a legitimate jump", () => {
    const rdataStart = 12 + question.length + 2 + 10;
    // exchange: label "x", pointer to the start of the exchange -> loop.
    const buf = Buffer.from([...header(1), ...question, 0xc0, 12, ...rrTail([0, 10, 1, 0x78, 0xc0, rdataStart + 2])]);
    expect(validateDnsMessage(buf)).toMatchObject({ ok: false });
    expect(parseDohResponse(buf, 1, "ok.test", "MX")).toMatchObject({ failed: true, reason: "malformed" });
  });

  it("pointers into the header, overflowing labels and bad label types", () => {
    expect(checkName(Buffer.from([...header(), 0xc0, 2]), 12)).toMatch(/header/);
    expect(checkName(Buffer.from([...header(), 5, 0x61]), 12)).toMatch(/overflow/);
    expect(checkName(Buffer.from([...header(), 0x40, 0]), 12)).toMatch(/label type/);
    expect(checkName(Buffer.from([...header(), 1, 0x61]), 12)).toMatch(/overflow/);
  });

  it("dns-packet's own decoder rejects the same loops (defence in depth)", () => {
    const at = 12 + question.length;
    const buf = Buffer.from([...header(1), ...question, 1, 0x61, 0xc0, at, ...rrTail([0, 10, 0])]);
    expect(() => dnsPacket.decode(buf)).toThrow(/pointer/);
  });
});

/** A fetcher answering every query with the packet `edit` derives from the decoded query. */
function answerWith(edit: (q: dnsPacket.Packet) => dnsPacket.Packet): typeof fetch {
  return async (_input, init) => {
    const query = dnsPacket.decode(Buffer.from(init!.body as Uint8Array));
    const base: dnsPacket.Packet = { type: "response", id: query.id, flags: 0, questions: query.questions, answers: [] };
    const body = dnsPacket.encode(edit(base));
    return new Response(body, { headers: { "content-type": "application/dns-message" } });
  };
}
