/**
 * Which addresses the probe may dial and callbacks may reach (shared/targets.ts): only public unicast. MX records are written
 * by whoever owns the domain, so every reserved range, in every spelling an address parser accepts,
 * must be refused unless a test explicitly allows private targets.
 */
import { describe, expect, it } from "vitest";
import { checkTarget } from "../../shared/targets.ts";

const refusedV4: [string, string][] = [
  ["0.0.0.0", "unspecified (this host)"],
  ["0.1.2.3", "0.0.0.0/8, this network"],
  ["10.0.0.1", "RFC 1918"],
  ["10.255.255.255", "RFC 1918, last address"],
  ["172.16.0.1", "RFC 1918"],
  ["172.31.255.254", "RFC 1918"],
  ["192.168.1.1", "RFC 1918"],
  ["100.64.0.1", "carrier-grade NAT"],
  ["100.127.255.254", "carrier-grade NAT"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["169.254.169.254", "link-local: the cloud metadata service"],
  ["192.0.0.1", "IETF protocol assignments"],
  ["192.0.2.1", "TEST-NET-1"],
  ["198.51.100.1", "TEST-NET-2"],
  ["203.0.113.1", "TEST-NET-3"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  ["192.88.99.1", "6to4 relay anycast"],
  ["192.31.196.1", "AS112"],
  ["192.52.193.1", "AMT"],
  ["192.175.48.1", "AS112 direct delegation"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast (SSDP)"],
  ["240.0.0.1", "reserved class E"],
  ["255.255.255.254", "reserved class E"],
  ["255.255.255.255", "limited broadcast"],
];

const refusedV6: [string, string][] = [
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback, long form"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local with a zone"],
  ["fec0::1", "deprecated site-local"],
  ["fc00::1", "unique local"],
  ["fd12:3456:789a::1", "unique local"],
  ["ff02::1", "multicast"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation (RFC 9637)"],
  ["2001:2::1", "benchmarking"],
  ["2001:10::1", "ORCHID"],
  ["2001:20::1", "ORCHIDv2"],
  ["100::1", "discard-only"],
  ["5f00::1", "segment routing"],
  ["2001:4:112::1", "AS112-v6"],
  ["2001::1", "Teredo"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo, with an embedded server address"],
  ["2002:a00:1::1", "6to4 of 10.0.0.1"],
  ["2002:808:808::1", "6to4, even of a public IPv4: a relay decides where it goes"],
  ["64:ff9b::10.0.0.1", "NAT64 well-known prefix to a private IPv4"],
  ["64:ff9b::808:808", "NAT64 well-known prefix: DNS64 makes these, authoritative MX data never does"],
  ["64:ff9b:1::1", "NAT64 local-use prefix (RFC 8215)"],
  ["::ffff:0:10.0.0.1", "IPv4-translated (RFC 6145)"],
];

/** IPv4 reached through IPv6 spellings and shorthand forms: each is judged as the IPv4 it reaches. */
const disguised: [string, string][] = [
  ["::ffff:10.0.0.1", "IPv4-mapped, dotted"],
  ["::ffff:a00:1", "IPv4-mapped, hex"],
  ["0:0:0:0:0:ffff:7f00:1", "IPv4-mapped loopback, long form"],
  ["::ffff:169.254.169.254", "IPv4-mapped metadata service"],
  ["::127.0.0.1", "IPv4-compatible loopback"],
  ["127.1", "shorthand loopback"],
  ["10.1", "shorthand private"],
  ["0x7f.1", "hex shorthand loopback"],
  ["0177.0.0.1", "octal loopback"],
  ["2130706433", "one 32-bit number: 127.0.0.1"],
  ["0x7f000001", "one hex number: 127.0.0.1"],
  ["0", "one number: 0.0.0.0"],
  ["4294967295", "one number: 255.255.255.255"],
];

describe("checkTarget without private targets", () => {
  it.each([...refusedV4, ...refusedV6, ...disguised])("refuses %s (%s)", (literal) => {
    const result = checkTarget(literal, false);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/address$/);
  });

  it.each([
    ["8.8.8.8", "8.8.8.8"],
    ["1.1.1.1", "1.1.1.1"],
    ["172.32.0.1", "172.32.0.1"], // just outside 172.16.0.0/12
    ["100.128.0.1", "100.128.0.1"], // just outside 100.64.0.0/10
    ["2001:4860:4860::8888", "2001:4860:4860::8888"],
    ["2620:fe::fe", "2620:fe::fe"],
    ["2a00:1450:4001:0829:0000:0000:0000:201b", "2a00:1450:4001:829::201b"],
    ["::ffff:8.8.8.8", "8.8.8.8"],
    ["01.02.03.004", "1.2.3.4"],
  ])("dials %s as %s", (literal, address) => {
    expect(checkTarget(literal, false)).toEqual({ ok: true, address });
  });

  it.each(["", "mx.example.com", "8.8.8.8.", " 8.8.8.8", "[::1]", "1.2.3.4/32", "::gggg", "999.1.1.1"])(
    "refuses %j as not an IP address",
    (literal) => {
      expect(checkTarget(literal, false)).toEqual({ ok: false, reason: "not an IP address" });
    },
  );
});

describe("checkTarget with private targets allowed (tests only)", () => {
  it("dials loopback and private addresses, in canonical form", () => {
    expect(checkTarget("127.0.0.20", true)).toEqual({ ok: true, address: "127.0.0.20" });
    expect(checkTarget("::ffff:10.0.0.1", true)).toEqual({ ok: true, address: "10.0.0.1" });
    expect(checkTarget("127.1", true)).toEqual({ ok: true, address: "127.0.0.1" });
  });

  it("still refuses what is not an address", () => {
    expect(checkTarget("mx.example.com", true)).toEqual({ ok: false, reason: "not an IP address" });
  });
});
