/**
 * The probe's self-audit (probe/reputation.ts) against the DoH fixture: PTR, forward-confirmed
 * reverse DNS, SPF (mailauth through our DoH client), DNS blocklists; the status, the logs, /healthz
 * and /metrics; and the settings that drive it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createProbeApp, createProbeService } from "../../probe/http/app.ts";
import { loadProbeConfig, ProbeConfigError, type ProbeConfig } from "../../probe/config.ts";
import { startMetricsServer } from "../../probe/http/metrics.ts";
import { displayZone, reverseName, reversedLabels, ReputationAudit } from "../../probe/reputation.ts";
import { startDohServer, type DohServer, type Zone } from "../fixtures/doh-server.ts";
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";

const HELO = "probe1.verify.example";
const V4 = "192.0.2.10";
const V6 = "2001:db8::10";
const V6_REVERSE = "0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2";
const ZONES = ["zen.spamhaus.example", "bl.other.example"];

/** A zone where everything is right for both addresses; each test spoils one thing. */
function goodZone(): Zone {
  return {
    "10.2.0.192.in-addr.arpa": { PTR: [`${HELO}.`] },
    [`${V6_REVERSE}.ip6.arpa`]: { PTR: [HELO] },
    [HELO]: { A: [V4], AAAA: [V6], TXT: [`v=spf1 ip4:${V4} ip6:${V6} -all`] },
  };
}

let doh: DohServer;
beforeAll(async () => {
  doh = await startDohServer({ zone: goodZone() });
});
afterAll(() => doh.close());
afterEach(() => vi.restoreAllMocks());

function config(overrides: Partial<ProbeConfig> = {}): ProbeConfig {
  return {
    ...loadProbeConfig({ PROBE_SECRET: TEST_PROBE_SECRET, PROBE_HELO_NAME: HELO, PROBE_PUBLIC_IPS: V4, PROBE_DOH_URL: doh.url, PROBE_DNSBL_ZONES: ZONES.join(",") }),
    ...overrides,
  };
}

async function audit(zone: Zone, overrides: Partial<ProbeConfig> = {}) {
  doh.setZone(zone);
  const a = new ReputationAudit({ ...config(overrides), queryTimeoutMs: 1_000 });
  const snapshot = await a.run();
  a.close();
  return { audit: a, snapshot };
}

const quiet = () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  vi.spyOn(console, "log").mockImplementation(() => {});
};

describe("ReputationAudit", () => {
  it("all good: status ok, no problems, every query of the run at once", async () => {
    // Each name answers after 150 ms: only queries sent together finish well within 4 x 150 ms.
    const slow = goodZone();
    for (const name of Object.keys(slow)) slow[name] = { ...(slow[name] as object), delayMs: 150 };
    for (const zone of ZONES) slow[`10.2.0.192.${zone}`] = { delayMs: 150 };
    doh.resetStats();
    const started = Date.now();
    const { snapshot, audit: a } = await audit(slow);
    expect(Date.now() - started).toBeLessThan(550);
    expect(snapshot).toMatchObject({ status: "ok", problems: [], audited: true });
    expect(Date.parse(snapshot.checked_at!)).toBeGreaterThan(Date.now() - 10_000);
    expect(doh.queries).toEqual(
      expect.arrayContaining([
        { name: "10.2.0.192.in-addr.arpa", type: "PTR" },
        { name: HELO, type: "A" },
        { name: HELO, type: "TXT" },
        { name: "10.2.0.192.zen.spamhaus.example", type: "A" },
        { name: "10.2.0.192.bl.other.example", type: "A" },
      ]),
    );
    // PTR, the forward A, the SPF TXT and both blocklists go out together.
    expect(doh.maxInFlight).toBeGreaterThanOrEqual(4);
    for (const check of ["ptr", "fcrdns", "spf", "dnsbl"] as const) expect(a.checkOk(check)).toBe(true);
  });

  it("a PTR naming another host is ptr_mismatch; none at all says so", async () => {
    quiet();
    const other = await audit({ ...goodZone(), "10.2.0.192.in-addr.arpa": { PTR: ["static-10.isp.example"] } });
    expect(other.snapshot.status).toBe("degraded");
    expect(other.snapshot.problems).toEqual([
      { address: V4, check: "ptr", problem: "ptr_mismatch", detail: expect.stringContaining("static-10.isp.example"), severity: "error" },
    ]);
    const zone = goodZone();
    delete zone["10.2.0.192.in-addr.arpa"];
    const none = await audit(zone);
    expect(none.snapshot.problems).toEqual([expect.objectContaining({ check: "ptr", problem: "ptr_mismatch", detail: expect.stringContaining("no PTR record") })]);
    expect(none.audit.checkOk("ptr")).toBe(false);
    expect(none.audit.checkOk("fcrdns")).toBe(true);
  });

  it("the PTR matches case-insensitively, but the name's A records must hold the address (no_forward_match)", async () => {
    quiet();
    const { snapshot } = await audit({
      ...goodZone(),
      "10.2.0.192.in-addr.arpa": { PTR: ["PROBE1.Verify.Example."] },
      [HELO]: { A: ["198.51.100.7"], TXT: [`v=spf1 ip4:${V4} -all`] },
    });
    expect(snapshot.status).toBe("degraded");
    expect(snapshot.problems).toEqual([
      { address: V4, check: "fcrdns", problem: "no_forward_match", detail: expect.stringContaining("198.51.100.7"), severity: "error" },
    ]);
  });

  it("SPF: -all alone is spf_fail; ip4: with our address passes; so does an include: that allows it", async () => {
    quiet();
    const fail = await audit({ ...goodZone(), [HELO]: { A: [V4], TXT: ["v=spf1 -all"] } });
    expect(fail.snapshot.status).toBe("degraded");
    expect(fail.snapshot.problems).toEqual([{ address: V4, check: "spf", problem: "spf_fail", detail: expect.stringMatching(/^spf=fail/), severity: "error" }]);

    const pass = await audit({ ...goodZone(), [HELO]: { A: [V4], TXT: ["v=spf1 ip4:192.0.2.10 -all"] } });
    expect(pass.snapshot).toMatchObject({ status: "ok", problems: [] });

    doh.resetStats();
    const include = await audit({
      ...goodZone(),
      [HELO]: { A: [V4], TXT: ["v=spf1 include:_spf.senders.example -all", "google-site-verification=abc"] },
      "_spf.senders.example": { TXT: ["v=spf1 ip4:192.0.2.0/24 ~all"] },
    });
    expect(include.snapshot).toMatchObject({ status: "ok", problems: [] });
    expect(doh.queries).toContainEqual({ name: "_spf.senders.example", type: "TXT" });
  });

  it("SPF: softfail, neutral and none are problems too, each with its result", async () => {
    quiet();
    const soft = await audit({ ...goodZone(), [HELO]: { A: [V4], TXT: ["v=spf1 ~all"] } });
    expect(soft.snapshot.problems).toEqual([expect.objectContaining({ problem: "spf_softfail", severity: "error" })]);
    const none = await audit({ ...goodZone(), [HELO]: { A: [V4] } });
    expect(none.snapshot.problems).toEqual([expect.objectContaining({ problem: "spf_none", detail: expect.stringMatching(/^spf=none/) })]);
    // An envelope sender on another domain is what SPF is about (not the HELO name).
    const other = await audit({ ...goodZone(), "senders.example": { TXT: ["v=spf1 ?all"] } }, { mailFrom: "bounce@senders.example" });
    expect(other.snapshot.problems).toEqual([expect.objectContaining({ problem: "spf_neutral" })]);
  });

  it("listed on one blocklist (127.0.0.2): dnsbl_listed with the zone and the code", async () => {
    quiet();
    const { snapshot, audit: a } = await audit({ ...goodZone(), "10.2.0.192.bl.other.example": { A: ["127.0.0.2"] } });
    expect(snapshot.status).toBe("degraded");
    expect(snapshot.problems).toEqual([
      { address: V4, check: "dnsbl", problem: "dnsbl_listed", zone: "bl.other.example", detail: "listed on bl.other.example: 127.0.0.2", severity: "error" },
    ]);
    expect(a.checkOk("dnsbl")).toBe(false);
  });

  it("Spamhaus's 127.255.255.254 (public resolver) is a refusal: a warning, status ok; an answer outside 127/8 is no listing", async () => {
    quiet();
    const { snapshot, audit: a } = await audit({
      ...goodZone(),
      "10.2.0.192.zen.spamhaus.example": { A: ["127.255.255.254"] },
      "10.2.0.192.bl.other.example": { A: ["198.51.100.99"] },
    });
    expect(snapshot.status).toBe("ok");
    expect(snapshot.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ check: "dnsbl", problem: "dnsbl_refused", zone: "zen.spamhaus.example", severity: "warning", detail: expect.stringContaining("127.255.255.254") }),
        expect.objectContaining({ check: "dnsbl", problem: "dnsbl_unexpected", zone: "bl.other.example", severity: "warning" }),
      ]),
    );
    expect(snapshot.problems).toHaveLength(2);
    expect(a.checkOk("dnsbl")).toBe(true);
  });

  it("a resolver that fails is check_failed, a warning: the status does not flap", async () => {
    quiet();
    const { snapshot } = await audit({ ...goodZone(), "10.2.0.192.in-addr.arpa": "SERVFAIL", [HELO]: { A: [V4], TXT: [`v=spf1 ip4:${V4} -all`], failTypes: ["A"] } });
    expect(snapshot.status).toBe("ok");
    expect(snapshot.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ check: "ptr", problem: "check_failed", severity: "warning" }),
        expect.objectContaining({ check: "fcrdns", problem: "check_failed", severity: "warning" }),
      ]),
    );
    const unreachable = await startDohServer({ zone: {} });
    const url = unreachable.url;
    await unreachable.close();
    const down = await audit(goodZone(), { dohUrl: url });
    expect(down.snapshot.status).toBe("ok");
    expect(down.snapshot.problems.length).toBeGreaterThanOrEqual(4);
    for (const p of down.snapshot.problems) expect(p).toMatchObject({ problem: "check_failed", severity: "warning" });
  });

  it("each query is bounded in time, its retry included", async () => {
    quiet();
    doh.setZone({ ...goodZone(), "10.2.0.192.in-addr.arpa": { PTR: [HELO], delayMs: 3_000 } });
    const a = new ReputationAudit({ ...config(), queryTimeoutMs: 200 });
    const started = Date.now();
    const snapshot = await a.run();
    a.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(snapshot).toMatchObject({ status: "ok", problems: [expect.objectContaining({ check: "ptr", problem: "check_failed", severity: "warning" })] });
  });

  it("an IPv6 address: ip6.arpa PTR, AAAA forward match, ip6 SPF, nibble-reversed blocklist names", async () => {
    quiet();
    doh.resetStats();
    const good = await audit(goodZone(), { publicIps: [V4, V6] });
    expect(good.snapshot).toMatchObject({ status: "ok", problems: [] });
    expect(doh.queries).toEqual(
      expect.arrayContaining([
        { name: `${V6_REVERSE}.ip6.arpa`, type: "PTR" },
        { name: HELO, type: "AAAA" },
        { name: `${V6_REVERSE}.zen.spamhaus.example`, type: "A" },
      ]),
    );
    const bad = await audit({ ...goodZone(), [HELO]: { A: [V4], AAAA: ["2001:db8::99"], TXT: [`v=spf1 ip4:${V4} -all`] } }, { publicIps: [V6] });
    expect(bad.snapshot.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ address: V6, check: "fcrdns", problem: "no_forward_match" }),
        expect.objectContaining({ address: V6, check: "spf", problem: "spf_fail" }),
      ]),
    );
    expect(bad.snapshot.problems).toHaveLength(2);
  });

  it("logs a problem once when it appears and once when it clears", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const a = new ReputationAudit({ ...config(), queryTimeoutMs: 1_000 });
    doh.setZone({ ...goodZone(), "10.2.0.192.bl.other.example": { A: ["127.0.0.2"] } });
    await a.run();
    await a.run();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(JSON.parse(warn.mock.calls[0]![0] as string)).toMatchObject({
      level: "warn",
      msg: "reputation problem appeared",
      address: V4,
      check: "dnsbl",
      problem: "dnsbl_listed",
      detail: expect.stringContaining("127.0.0.2"),
    });
    expect(log).not.toHaveBeenCalled();
    doh.setZone(goodZone());
    await a.run();
    await a.run();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(log).toHaveBeenCalledTimes(1);
    expect(JSON.parse(log.mock.calls[0]![0] as string)).toMatchObject({ level: "info", msg: "reputation problem cleared", address: V4, check: "dnsbl", problem: "dnsbl_listed" });
    a.close();
  });

  it("runs never overlap; start() runs at once and close() stops it", async () => {
    doh.setZone(goodZone());
    const a = new ReputationAudit({ ...config(), queryTimeoutMs: 1_000 });
    const first = a.run();
    expect(a.run()).toBe(first);
    await first;
    const b = new ReputationAudit({ ...config({ auditIntervalMs: 10_000 }), queryTimeoutMs: 1_000 });
    expect(b.snapshot()).toEqual({ status: "ok", checked_at: null, problems: [], audited: true });
    b.start();
    await vi.waitFor(() => expect(b.snapshot().checked_at).not.toBeNull());
    b.close();
    a.close();
  });

  it("without public addresses nothing is checked", async () => {
    doh.resetStats();
    const a = new ReputationAudit({ ...config(), publicIps: [] });
    a.start();
    expect(await a.run()).toEqual({ status: "ok", checked_at: null, problems: [], audited: false });
    a.close();
    expect(doh.queries).toEqual([]);
  });

  it("names: reverse names, blocklist prefixes, a Spamhaus DQS key kept out of sight", () => {
    expect(reverseName("192.0.2.10")).toBe("10.2.0.192.in-addr.arpa");
    expect(reverseName(V6)).toBe(`${V6_REVERSE}.ip6.arpa`);
    expect(reversedLabels("203.0.113.7")).toBe("7.113.0.203");
    expect(displayZone("zen.spamhaus.org")).toBe("zen.spamhaus.org");
    expect(displayZone("abcdefsecretkey.zen.dq.spamhaus.net")).toBe("[key].zen.dq.spamhaus.net");
  });
});

describe("GET /healthz, /status and /metrics", () => {
  it("the public /healthz says only ok and the audit's status; the findings are on the metrics listener's /status", async () => {
    quiet();
    doh.setZone({ ...goodZone(), "10.2.0.192.zen.spamhaus.example": { A: ["127.0.0.4"] } });
    const audit = new ReputationAudit({ ...config(), queryTimeoutMs: 1_000 });
    await audit.run();
    const service = createProbeService(config(), { audit });
    const app = createProbeApp(service);
    // No public address, PTR name, listing or scheduler figure on the public port.
    expect(await (await app.request("/healthz")).json()).toEqual({ ok: true, reputation: "degraded" });
    const metrics = await startMetricsServer(service, "127.0.0.1", 0);
    try {
      const status = (await (await fetch(new URL("/status", metrics.url))).json()) as { reputation: unknown; checks_in_flight: number; draining: boolean };
      expect(status.reputation).toMatchObject({ status: "degraded", audited: true, problems: [expect.objectContaining({ address: V4, problem: "dnsbl_listed", zone: "zen.spamhaus.example" })] });
      expect(status).toMatchObject({ draining: false, checks_in_flight: 0 });
    } finally {
      await metrics.close();
      audit.close();
    }
    // A service built without public addresses reports an audit that is off.
    const off = createProbeApp(createProbeService(loadProbeConfig({ PROBE_SECRET: TEST_PROBE_SECRET, PROBE_HELO_NAME: HELO, PROBE_ALLOW_PRIVATE_TARGETS: "true" })));
    expect(await (await off.request("/healthz")).json()).toEqual({ ok: true, reputation: "ok" });
  });

  it("/metrics shows probe_reputation_degraded and probe_audit_check_ok by check", async () => {
    quiet();
    doh.setZone({ ...goodZone(), [HELO]: { A: [V4], TXT: ["v=spf1 -all"] } });
    const audit = new ReputationAudit({ ...config(), queryTimeoutMs: 1_000 });
    const service = createProbeService(config(), { audit });
    const metrics = await startMetricsServer(service, "127.0.0.1", 0);
    try {
      const scrape = async () => {
        const text = await (await fetch(metrics.url)).text();
        return new Map(text.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => [l.slice(0, l.lastIndexOf(" ")), Number(l.slice(l.lastIndexOf(" ") + 1))]));
      };
      let samples = await scrape();
      expect(samples.get("probe_reputation_degraded")).toBe(0);
      await audit.run();
      samples = await scrape();
      expect(samples.get("probe_reputation_degraded")).toBe(1);
      expect(samples.get('probe_audit_check_ok{check="spf"}')).toBe(0);
      for (const check of ["ptr", "fcrdns", "dnsbl"]) expect(samples.get(`probe_audit_check_ok{check="${check}"}`)).toBe(1);
      for (const name of samples.keys()) expect(name).not.toContain(V4);
    } finally {
      audit.close();
      await metrics.close();
    }
  });
});

describe("settings", () => {
  const base = { PROBE_SECRET: TEST_PROBE_SECRET, PROBE_HELO_NAME: HELO };

  it("defaults, and the lists parsed into canonical form", () => {
    const c = loadProbeConfig({ ...base, PROBE_PUBLIC_IPS: " 192.0.2.10, 2001:DB8:0::10 ,192.0.2.10,::ffff:198.51.100.1" });
    expect(c.publicIps).toEqual(["192.0.2.10", "2001:db8::10", "198.51.100.1"]);
    expect(c.dohUrl).toBe("https://cloudflare-dns.com/dns-query");
    expect(c.auditIntervalMs).toBe(900_000);
    expect(c.dnsblZones).toEqual(["zen.spamhaus.org", "b.barracudacentral.org", "bl.spamcop.net"]);
    expect(loadProbeConfig({ ...base, PROBE_PUBLIC_IPS: V4, PROBE_DNSBL_ZONES: "" }).dnsblZones).toEqual([]);
    expect(loadProbeConfig({ ...base, PROBE_PUBLIC_IPS: V4, PROBE_DNSBL_ZONES: "Bl.Example.", PROBE_AUDIT_INTERVAL_SECONDS: "60" })).toMatchObject({
      dnsblZones: ["bl.example"],
      auditIntervalMs: 60_000,
    });
  });

  it("PROBE_PUBLIC_IPS is required when private targets are refused, optional when allowed (the audit is then off)", () => {
    expect(() => loadProbeConfig(base)).toThrow(/PROBE_PUBLIC_IPS is required \(set it to this probe's public IPv4\/IPv6 addresses/);
    expect(loadProbeConfig({ ...base, PROBE_ALLOW_PRIVATE_TARGETS: "true" }).publicIps).toEqual([]);
    expect(loadProbeConfig(base, { publicIpsOptional: true }).publicIps).toEqual([]);
  });

  it.each([
    [{ PROBE_PUBLIC_IPS: "192.0.2.300" }, /PROBE_PUBLIC_IPS must be comma-separated unicast IPv4\/IPv6 addresses; "192.0.2.300"/],
    [{ PROBE_PUBLIC_IPS: "192.0.2.10,probe1.example.net" }, /PROBE_PUBLIC_IPS must be .*"probe1.example.net"/],
    [{ PROBE_PUBLIC_IPS: "0.0.0.0" }, /PROBE_PUBLIC_IPS/],
    [{ PROBE_PUBLIC_IPS: "ff02::1" }, /PROBE_PUBLIC_IPS/],
    [{ PROBE_PUBLIC_IPS: "," }, /PROBE_PUBLIC_IPS must list at least one/],
    [{ PROBE_PUBLIC_IPS: V4, PROBE_DOH_URL: "ftp://dns.example/dns-query" }, /PROBE_DOH_URL must be an http\(s\) URL/],
    [{ PROBE_PUBLIC_IPS: V4, PROBE_DOH_URL: "not a url" }, /PROBE_DOH_URL/],
    [{ PROBE_PUBLIC_IPS: V4, PROBE_AUDIT_INTERVAL_SECONDS: "5" }, /PROBE_AUDIT_INTERVAL_SECONDS/],
    [{ PROBE_PUBLIC_IPS: V4, PROBE_AUDIT_INTERVAL_SECONDS: "86401" }, /PROBE_AUDIT_INTERVAL_SECONDS/],
    [{ PROBE_PUBLIC_IPS: V4, PROBE_DNSBL_ZONES: "zen.spamhaus.org,bad zone" }, /PROBE_DNSBL_ZONES must be comma-separated DNS names; "bad zone"/],
  ])("refuses %j", (env, message) => {
    expect(() => loadProbeConfig({ ...base, ...env })).toThrow(ProbeConfigError);
    expect(() => loadProbeConfig({ ...base, ...env })).toThrow(message);
  });
});
