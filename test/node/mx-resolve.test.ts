/**
 * Longer than 400 lines on purpose: a table of DNS answers, one case each.
 * resolveMailHosts and the DNS cache against the DoH fixture over real HTTP (docs/api.md "The checks, in order", step 4).
 */
import { Buffer } from "node:buffer";
import dnsPacket from "dns-packet";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createDnsCache, MAX_ADDRESSES_PER_HOST, MAX_MX_HOSTS, resolveMailHosts } from "../../edge/verification/mx.ts";
import { startDohServer, type DohServer, type Zone } from "../fixtures/doh-server.ts";
import { testZone } from "../fixtures/test-zone.ts";

const hostsOf = (n: number, pref: (i: number) => number) =>
  Array.from({ length: n }, (_, i) => ({ preference: pref(i), exchange: `mx${i}.many.test` }));

const zone: Zone = {
  ...testZone,
  "refused.test": "REFUSED",
  "http500.test": "HTTP_500",
  "garbage.test": "GARBAGE",
  "badid.test": "BAD_ID",
  // 12 hosts: preferences 30,20,10,30,20,10,... (ties keep order), plus a duplicate.
  "many.test": { MX: [...hostsOf(12, (i) => [30, 20, 10][i % 3]!), { preference: 5, exchange: "MX0.many.test." }] },
  "dual.test": { MX: [{ preference: 10, exchange: "mx.dual.test" }] },
  "mx.dual.test": { A: ["127.0.0.41"], AAAA: ["::1"] },
  "glue.test": { MX: [{ preference: 10, exchange: "mx.glue.test" }], glue: true },
  "mx.glue.test": { A: ["127.0.0.42"] },
  "broken-host.test": {
    MX: [
      { preference: 10, exchange: "mx.broken-host.test" },
      { preference: 20, exchange: "ok-host.broken-host.test" },
      { preference: 30, exchange: "gone.broken-host.test" },
    ],
  },
  "mx.broken-host.test": "SERVFAIL",
  "ok-host.broken-host.test": { A: ["127.0.0.43"] },
  "lots.test": { MX: [{ preference: 10, exchange: "mx.lots.test" }] },
  "mx.lots.test": { A: Array.from({ length: 10 }, (_, i) => `127.0.1.${i}`), AAAA: ["::1"] },
  "nullmx-pref.test": { MX: [{ preference: 10, exchange: "" }] },
  "mixed-null.test": { MX: [{ preference: 0, exchange: "." }, { preference: 10, exchange: "mx.dual.test" }] },
  "implicit6.test": { AAAA: ["2001:db8::5"] },
  "concurrent.test": {
    MX: [
      { preference: 10, exchange: "c1.concurrent.test" },
      { preference: 20, exchange: "c2.concurrent.test" },
      { preference: 30, exchange: "c3.concurrent.test" },
    ],
  },
  "c1.concurrent.test": { A: ["127.0.0.51"], delayMs: 200 },
  "c2.concurrent.test": { A: ["127.0.0.52"], delayMs: 200 },
  "c3.concurrent.test": { A: ["127.0.0.53"], delayMs: 200 },
  "slow-hosts.test": { MX: [{ preference: 10, exchange: "mx.slow-hosts.test" }] },
  "mx.slow-hosts.test": { A: ["127.0.0.54"], delayMs: 2000 },
  "retry.test": { MX: [{ preference: 10, exchange: "mx1.ok.test" }], delayMs: 300, delayCount: 1 },
  "short-ttl.test": { MX: [{ preference: 10, exchange: "mx1.ok.test" }], ttl: 5 },
  "long-ttl.test": { MX: [{ preference: 10, exchange: "mx1.ok.test" }], ttl: 86_400 },
  // MX hosts that are aliases: chased by the resolver, or answered with the CNAME alone.
  "cname-chased.test": { MX: [{ preference: 10, exchange: "alias.cname-chased.test" }] },
  "alias.cname-chased.test": { CNAME: "real.cname-chased.test" },
  "real.cname-chased.test": { A: ["127.0.0.61"] },
  "cname-stops.test": { MX: [{ preference: 10, exchange: "alias.cname-stops.test" }] },
  "alias.cname-stops.test": { CNAME: "hop.cname-stops.test", cnameOnly: true },
  "hop.cname-stops.test": { CNAME: "real.cname-stops.test", cnameOnly: true },
  "real.cname-stops.test": { A: ["127.0.0.62"], AAAA: ["2001:db8::62"] },
  "cname-dangling.test": { MX: [{ preference: 10, exchange: "alias.cname-dangling.test" }] },
  "alias.cname-dangling.test": { CNAME: "nowhere.cname-dangling.test", cnameOnly: true },
  "cname-loop.test": { MX: [{ preference: 10, exchange: "a.cname-loop.test" }] },
  "a.cname-loop.test": { CNAME: "b.cname-loop.test", cnameOnly: true },
  "b.cname-loop.test": { CNAME: "a.cname-loop.test", cnameOnly: true },
  // Every MX host absent: one NXDOMAIN, one that exists without any address (NODATA).
  "gone-hosts.test": {
    MX: [
      { preference: 10, exchange: "nx.gone-hosts.test" },
      { preference: 20, exchange: "empty.gone-hosts.test" },
    ],
  },
  "empty.gone-hosts.test": {},
  // No host with an address, one of them unknown (SERVFAIL): not evidence that the domain has no mail.
  "half-failed-hosts.test": {
    MX: [
      { preference: 10, exchange: "nx.half-failed-hosts.test" },
      { preference: 20, exchange: "broken.half-failed-hosts.test" },
    ],
  },
  "broken.half-failed-hosts.test": "SERVFAIL",
  // One host absent, one with an address: usable.
  "one-gone.test": {
    MX: [
      { preference: 10, exchange: "nx.one-gone.test" },
      { preference: 20, exchange: "mx1.ok.test" },
    ],
  },
};

let server: DohServer;
let url: string;
beforeAll(async () => {
  server = await startDohServer({ zone });
  url = server.url;
});
afterAll(() => server.close());
beforeEach(() => server.resetStats());

const resolve = (domain: string, extra: Partial<Parameters<typeof resolveMailHosts>[1]> = {}) =>
  resolveMailHosts(domain, { dohUrl: url, deadlineMs: 2000, ...extra });

describe("statuses", () => {
  it("mx: hosts by preference, each with its A records", async () => {
    const r = await resolve("ok.test");
    expect(r).toMatchObject({
      status: "mx",
      cached: false,
      hosts: [
        { host: "mx1.ok.test", preference: 10, addresses: ["127.0.0.21"] },
        { host: "mx2.ok.test", preference: 20, addresses: ["127.0.0.22"] },
      ],
    });
    expect(r.error).toBeUndefined();
    expect(r.ms).toBeGreaterThanOrEqual(0);
    expect(server.queries.map((q) => `${q.name} ${q.type}`).sort()).toEqual(
      ["ok.test MX", "mx1.ok.test A", "mx1.ok.test AAAA", "mx2.ok.test A", "mx2.ok.test AAAA"].sort(),
    );
  });

  it("mx: stable sort on ties, duplicates dropped, capped at 10 hosts", async () => {
    const r = await resolve("many.test");
    expect(r.status).toBe("mx_hosts_absent");
    expect(r.hosts).toHaveLength(MAX_MX_HOSTS);
    expect(r.hosts.map((h) => `${h.preference} ${h.host}`)).toEqual([
      "5 mx0.many.test",
      "10 mx2.many.test",
      "10 mx5.many.test",
      "10 mx8.many.test",
      "10 mx11.many.test",
      "20 mx1.many.test",
      "20 mx4.many.test",
      "20 mx7.many.test",
      "20 mx10.many.test",
      "30 mx3.many.test", // mx0 (30) was the duplicate, already listed at 5
    ]);
    // Hosts not in the zone are NXDOMAIN: listed with no addresses, and the domain has nowhere to deliver.
    expect(r.hosts.every((h) => h.addresses.length === 0)).toBe(true);
  });

  it("mx: A and AAAA both, capped at 8 addresses per host", async () => {
    expect((await resolve("dual.test")).hosts).toEqual([{ host: "mx.dual.test", preference: 10, addresses: ["127.0.0.41", "::1"] }]);
    const lots = await resolve("lots.test");
    expect(lots.hosts[0]!.addresses).toHaveLength(MAX_ADDRESSES_PER_HOST);
    expect(lots.hosts[0]!.addresses[0]).toBe("127.0.1.0");
  });

  it("mx: addresses from the additional section are used without querying that type", async () => {
    const r = await resolve("glue.test");
    expect(r.hosts).toEqual([{ host: "mx.glue.test", preference: 10, addresses: ["127.0.0.42"] }]);
    const types = server.queries.filter((q) => q.name === "mx.glue.test").map((q) => q.type);
    expect(types).toEqual(["AAAA"]); // A came as glue; AAAA was not in the additional section
  });

  it("mx: a host whose lookups fail stays listed with no addresses", async () => {
    const r = await resolve("broken-host.test");
    expect(r).toMatchObject({
      status: "mx",
      hosts: [
        { host: "mx.broken-host.test", addresses: [] },
        { host: "ok-host.broken-host.test", addresses: ["127.0.0.43"] },
        { host: "gone.broken-host.test", addresses: [] },
      ],
    });
  });

  it("an MX host that is a CNAME: the resolver's chased answer is used", async () => {
    const r = await resolve("cname-chased.test");
    expect(r).toMatchObject({ status: "mx", hosts: [{ host: "alias.cname-chased.test", addresses: ["127.0.0.61"] }] });
  });

  it("an answer that stops at a CNAME is followed to the target's addresses, hop by hop", async () => {
    const r = await resolve("cname-stops.test");
    expect(r).toMatchObject({
      status: "mx",
      hosts: [{ host: "alias.cname-stops.test", addresses: ["127.0.0.62", "2001:db8::62"] }],
    });
    const asked = server.queries.filter((q) => q.type === "A").map((q) => q.name);
    expect(asked).toEqual(["alias.cname-stops.test", "hop.cname-stops.test", "real.cname-stops.test"]);
  });

  it("mx_hosts_absent: every MX host is NXDOMAIN or has no address (a dangling CNAME included)", async () => {
    const gone = await resolve("gone-hosts.test");
    expect(gone).toMatchObject({
      status: "mx_hosts_absent",
      hosts: [
        { host: "nx.gone-hosts.test", addresses: [] },
        { host: "empty.gone-hosts.test", addresses: [] },
      ],
    });
    expect(gone.error).toBeUndefined();
    expect((await resolve("cname-dangling.test")).status).toBe("mx_hosts_absent");
  });

  it("mx_hosts_failed: no host has an address and a lookup failed (SERVFAIL, a CNAME loop)", async () => {
    const r = await resolve("half-failed-hosts.test");
    expect(r).toMatchObject({ status: "mx_hosts_failed", error: "SERVFAIL" });
    expect(await resolve("cname-loop.test")).toMatchObject({ status: "mx_hosts_failed", error: "CNAME loop" });
  });

  it("one absent host beside one with an address is still a usable MX", async () => {
    const r = await resolve("one-gone.test");
    expect(r).toMatchObject({
      status: "mx",
      hosts: [
        { host: "nx.one-gone.test", addresses: [] },
        { host: "mx1.ok.test", addresses: ["127.0.0.21"] },
      ],
    });
  });

  it("null_mx: a single MX 0 '.'; also a lone empty exchange", async () => {
    expect(await resolve("nullmx.test")).toMatchObject({ status: "null_mx", hosts: [] });
    expect(await resolve("nullmx-pref.test")).toMatchObject({ status: "null_mx", hosts: [] });
  });

  it("a '.' exchange beside real MX records is skipped, not a null MX", async () => {
    expect(await resolve("mixed-null.test")).toMatchObject({ status: "mx", hosts: [{ host: "mx.dual.test" }] });
  });

  it("nxdomain (listed, and not in the zone at all)", async () => {
    expect(await resolve("nx.test")).toMatchObject({ status: "nxdomain", hosts: [] });
    expect(await resolve("absent.test")).toMatchObject({ status: "nxdomain", hosts: [] });
  });

  it("implicit: no MX but an A or AAAA record", async () => {
    expect(await resolve("implicit.test")).toMatchObject({
      status: "implicit",
      hosts: [{ host: "implicit.test", preference: 0, addresses: ["127.0.0.23"] }],
    });
    expect(await resolve("implicit6.test")).toMatchObject({
      status: "implicit",
      hosts: [{ host: "implicit6.test", preference: 0, addresses: ["2001:db8::5"] }],
    });
  });

  it("no_mail: NOERROR without MX, A or AAAA", async () => {
    expect(await resolve("nomail.test")).toMatchObject({ status: "no_mail", hosts: [] });
    expect(server.queries.map((q) => q.type).sort()).toEqual(["A", "AAAA", "MX"]);
  });

  it("failed: SERVFAIL, REFUSED, HTTP 500, garbage, bad id, oversized, compression loop, unreachable", async () => {
    const dead = await startDohServer({ zone: {} });
    await dead.close();
    const cases: [string, string, RegExp][] = [
      ["servfail.test", url, /SERVFAIL/],
      ["refused.test", url, /REFUSED/],
      ["http500.test", url, /http_status/],
      ["garbage.test", url, /malformed/],
      ["badid.test", url, /id_mismatch/],
      ["big.test", url, /oversized/],
      ["loop.test", url, /malformed.*loop/],
      ["ok.test", dead.url, /network/],
    ];
    for (const [domain, dohUrl, error] of cases) {
      const r = await resolveMailHosts(domain, { dohUrl, deadlineMs: 2000 });
      expect(r, domain).toMatchObject({ status: "failed", hosts: [], cached: false });
      expect(r.error, domain).toMatch(error);
    }
  });

  it("failed (not no_mail) when the implicit-MX address lookups fail", async () => {
    const fetcher = failTypes(["A", "AAAA"]);
    const r = await resolve("nomail.test", { fetcher });
    expect(r).toMatchObject({ status: "failed", error: expect.stringMatching(/http_status/) });
  });

  it("an A-record failure with an AAAA answer is still implicit", async () => {
    const r = await resolve("implicit6.test", { fetcher: failTypes(["A"]) });
    expect(r).toMatchObject({ status: "implicit", hosts: [{ addresses: ["2001:db8::5"] }] });
  });

  it("upper case and a trailing dot are normalised", async () => {
    expect(await resolve("OK.TEST.")).toMatchObject({ status: "mx", hosts: [{ host: "mx1.ok.test" }, { host: "mx2.ok.test" }] });
  });

  it("never throws: invalid names, a throwing fetcher", async () => {
    for (const d of ["", "..", "a".repeat(300), "bad name.test"]) {
      expect(await resolve(d)).toMatchObject({ status: "failed", error: expect.stringMatching(/invalid_name/) });
    }
    const fetcher = (() => {
      throw new Error("boom");
    }) as unknown as typeof fetch;
    expect(await resolve("ok.test", { fetcher })).toMatchObject({ status: "failed", error: expect.stringMatching(/network/) });
  });
});

describe("time", () => {
  it("the overall deadline is respected when the MX query hangs", async () => {
    const started = Date.now();
    const r = await resolve("slow.test", { deadlineMs: 250 });
    const took = Date.now() - started;
    expect(r).toMatchObject({ status: "failed", error: expect.stringMatching(/timeout/) });
    expect(took).toBeGreaterThanOrEqual(240);
    expect(took).toBeLessThan(400);
    expect(r.ms).toBeLessThan(400);
  });

  it("the per-query timeout is capped below the deadline, leaving room for the retry", async () => {
    const r = await resolve("retry.test", { deadlineMs: 1000, perQueryTimeoutMs: 100 });
    expect(r).toMatchObject({ status: "mx", hosts: [{ host: "mx1.ok.test", addresses: ["127.0.0.21"] }] });
    expect(server.queries.filter((q) => q.name === "retry.test")).toHaveLength(2);
    expect(r.ms).toBeLessThan(300);
  });

  it("the deadline hitting during host lookups keeps the MX, hosts without addresses", async () => {
    const started = Date.now();
    const r = await resolve("slow-hosts.test", { deadlineMs: 300 });
    expect(r).toMatchObject({ status: "mx_hosts_failed", hosts: [{ host: "mx.slow-hosts.test", addresses: [] }] });
    expect(Date.now() - started).toBeLessThan(450);
  });

  it("host lookups run concurrently (A and AAAA of every host at once)", async () => {
    const started = Date.now();
    const r = await resolve("concurrent.test");
    const took = Date.now() - started;
    expect(r.hosts.map((h) => h.addresses)).toEqual([["127.0.0.51"], ["127.0.0.52"], ["127.0.0.53"]]);
    // Six delayed lookups of 200 ms each: sequential would take 1.2 s.
    expect(took).toBeLessThan(450);
    expect(server.maxInFlight).toBe(6);
  });
});

describe("cache", () => {
  function clock(start = 1_000_000) {
    let t = start;
    return { now: () => t, advance: (s: number) => (t += s * 1000) };
  }

  it("serves repeated lookups from the cache until the TTL expires", async () => {
    const c = clock();
    const cache = createDnsCache({ now: c.now });
    const first = await resolve("ok.test", { cache });
    expect(first.cached).toBe(false);
    const n = server.queries.length;
    expect(n).toBe(5);

    const second = await resolve("ok.test", { cache });
    expect(second).toMatchObject({ status: "mx", cached: true, hosts: first.hosts });
    expect(server.queries).toHaveLength(n);

    c.advance(299); // zone TTL 300 s
    expect((await resolve("ok.test", { cache })).cached).toBe(true);
    c.advance(2);
    const third = await resolve("ok.test", { cache });
    expect(third).toMatchObject({ status: "mx", cached: false });
    expect(server.queries).toHaveLength(2 * n);
  });

  it("applies the TTL floor and ceiling", async () => {
    const c = clock();
    const cache = createDnsCache({ now: c.now, minTtlSeconds: 30, maxTtlSeconds: 3600 });
    await resolve("short-ttl.test", { cache });
    await resolve("long-ttl.test", { cache });
    c.advance(29);
    expect(cache.get("short-ttl.test", "MX", url)).toBeDefined(); // 5 s raised to 30 s
    c.advance(2);
    expect(cache.get("short-ttl.test", "MX", url)).toBeUndefined();
    c.advance(3600 - 31 - 1);
    expect(cache.get("long-ttl.test", "MX", url)).toBeDefined(); // 1 day capped at 1 h
    c.advance(2);
    expect(cache.get("long-ttl.test", "MX", url)).toBeUndefined();
  });

  it("caches negative answers: NXDOMAIN and NODATA", async () => {
    const c = clock();
    const cache = createDnsCache({ now: c.now });
    await resolve("nx.test", { cache });
    await resolve("nomail.test", { cache });
    server.resetStats();
    expect(await resolve("nx.test", { cache })).toMatchObject({ status: "nxdomain", cached: true });
    expect(await resolve("nomail.test", { cache })).toMatchObject({ status: "no_mail", cached: true });
    expect(server.queries).toHaveLength(0);
    c.advance(61); // negative TTL from the SOA: min(300, 60)
    expect(await resolve("nx.test", { cache })).toMatchObject({ status: "nxdomain", cached: false });
  });

  it("does not cache failures (SERVFAIL, HTTP errors, oversized)", async () => {
    const cache = createDnsCache();
    for (const d of ["servfail.test", "http500.test", "big.test"]) {
      await resolve(d, { cache });
      expect(await resolve(d, { cache })).toMatchObject({ status: "failed", cached: false });
    }
    expect(cache.size).toBe(0);
    expect(server.queries.filter((q) => q.name === "servfail.test")).toHaveLength(2);
  });

  it("cached is false when only some answers came from the cache", async () => {
    const cache = createDnsCache();
    await resolve("ok.test", { cache });
    // A fresh cache holding only the MX answer: the host lookups still go to the resolver.
    const partial = createDnsCache();
    partial.set("ok.test", "MX", cache.get("ok.test", "MX", url)!, url);
    server.resetStats();
    const r = await resolve("ok.test", { cache: partial });
    expect(r).toMatchObject({ status: "mx", cached: false });
    expect(server.queries.map((q) => q.name)).not.toContain("ok.test");
    expect((await resolve("ok.test", { cache: partial })).cached).toBe(true);
  });

  it("keeps answers from different resolvers apart", async () => {
    const cache = createDnsCache();
    await resolve("ok.test", { cache });
    expect(cache.get("ok.test", "MX", url)).toBeDefined();
    expect(cache.get("ok.test", "MX")).toBeUndefined();
    const r = await resolveMailHosts("ok.test", { dohUrl: "http://127.0.0.1:9/dns-query", deadlineMs: 1000, cache });
    expect(r).toMatchObject({ status: "failed", cached: false });
  });

  it("evicts the oldest entry beyond maxEntries", async () => {
    const cache = createDnsCache({ maxEntries: 2 });
    await resolve("nx.test", { cache }); // 1 entry
    await resolve("nullmx.test", { cache }); // 2 entries
    await resolve("absent.test", { cache }); // evicts nx.test
    expect(cache.size).toBe(2);
    expect(cache.get("nx.test", "MX", url)).toBeUndefined();
    expect(cache.get("nullmx.test", "MX", url)).toBeDefined();
    expect(cache.get("ABSENT.test.", "MX", url)).toBeDefined();
  });
});

/** A fetcher answering HTTP 500 for the given query types and passing the rest to the fixture. */
function failTypes(types: string[]): typeof fetch {
  return async (input, init) => {
    const q = dnsPacket.decode(Buffer.from(init!.body as Uint8Array));
    if (types.includes(q.questions![0]!.type)) return new Response("no", { status: 500 });
    return fetch(input, init);
  };
}
