/**
 * The probe's GET /metrics (Prometheus text format, probe/http/metrics.ts) against a fixture mail server: checks by
 * outcome, RCPT replies by class, the scheduler's gauges, the replay guard's size; the listener's Host check; npm
 * start's probe serving it; and PROBE_METRICS_LISTEN's rules.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProbeConfig, ProbeConfigError } from "../../probe/config.ts";
import { startMetricsServer, type MetricsServer } from "../../probe/http/metrics.ts";
import { startProbeServer, type RunningProbe } from "../../probe/http/server.ts";
import { startLocalProbe } from "../../scripts/lib/local-probe.ts";
import { PROBE_PATH, ProbeResponse, probeOrigin, signProbeRequest } from "../../shared/probe-contract.ts";
import { freePortOn, startMailServer, type RunningServer } from "../fixtures/smtp-servers.ts";
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";

const MX = "127.0.0.62";
let mail: RunningServer;
let probe: RunningProbe;
let metrics: MetricsServer;

const baseEnv = () => ({
  PORT: "0",
  PROBE_LISTEN_HOST: "127.0.0.1",
  PROBE_SECRET: TEST_PROBE_SECRET,
  PROBE_HELO_NAME: "probe1.verify.example",
  PROBE_SMTP_PORT: String(mail.port),
  PROBE_ALLOW_PRIVATE_TARGETS: "true",
});

beforeAll(async () => {
  mail = await startMailServer({ host: MX, port: await freePortOn([MX]), mailboxes: ["ana@metrics.test"] });
  probe = await startProbeServer(loadProbeConfig(baseEnv()));
  metrics = await startMetricsServer(probe.service, "127.0.0.1", 0);
});

afterAll(async () => {
  await Promise.all([metrics?.close(), probe?.close(), mail?.close()]);
});

async function check(email: string) {
  const payload = JSON.stringify({ email, mx: [{ host: "mx.metrics.test", preference: 10, addresses: [MX] }], deadline_ms: 3000 });
  const headers = await signProbeRequest(TEST_PROBE_SECRET, { origin: probeOrigin(probe.url), method: "POST", path: PROBE_PATH, body: payload });
  const res = await fetch(`${probe.url}${PROBE_PATH}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: payload });
  return ProbeResponse.parse(await res.json());
}

/** The samples of a scrape: "name{labels}" -> value. */
async function scrape(): Promise<{ contentType: string | null; samples: Map<string, number> }> {
  const res = await fetch(metrics.url);
  expect(res.status).toBe(200);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { contentType: res.headers.get("content-type"), samples };
}

describe("GET /metrics", () => {
  it("counts checks by outcome and RCPT replies by class, and reads the scheduler's gauges at each scrape", async () => {
    const before = (await scrape()).samples;
    const at = (s: Map<string, number>, name: string) => s.get(name) ?? 0;
    expect((await check("ana@metrics.test")).outcome).toBe("accepted");
    expect((await check("nobody@metrics.test")).outcome).toBe("mailbox_not_found");
    const { contentType, samples } = await scrape();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(at(samples, 'probe_checks_total{outcome="accepted"}') - at(before, 'probe_checks_total{outcome="accepted"}')).toBe(1);
    expect(at(samples, 'probe_checks_total{outcome="mailbox_not_found"}') - at(before, 'probe_checks_total{outcome="mailbox_not_found"}')).toBe(1);
    // ana accepted; her domain's random address refused (the catch-all test); nobody refused.
    expect(at(samples, 'probe_rcpt_replies_total{class="2xx"}') - at(before, 'probe_rcpt_replies_total{class="2xx"}')).toBe(1);
    expect(at(samples, 'probe_rcpt_replies_total{class="5xx"}') - at(before, 'probe_rcpt_replies_total{class="5xx"}')).toBeGreaterThanOrEqual(2);
    expect(samples.get("probe_destinations")).toBe(1);
    expect(samples.get("probe_sessions_open")).toBe(samples.get("probe_sessions_idle"));
    expect(samples.get("probe_checks_in_flight")).toBe(0);
    expect(samples.get("probe_queue_depth")).toBe(0);
    expect(samples.has("process_resident_memory_bytes")).toBe(true);
    // No label names a recipient, a domain or an address.
    for (const name of samples.keys()) expect(name).not.toMatch(/metrics\.test|127\.0\.0\.62|@/);
  });

  it("answers 404 to anything but GET /metrics and GET /status", async () => {
    expect((await fetch(metrics.url.replace("/metrics", "/"))).status).toBe(404);
    expect((await fetch(metrics.url, { method: "POST" })).status).toBe(404);
  });

  it("shows the replay guard's size: each accepted signed request adds a nonce", async () => {
    const before = (await scrape()).samples.get("probe_replay_guard_nonces") ?? 0;
    await check("ana@metrics.test");
    const { samples } = await scrape();
    expect(samples.get("probe_replay_guard_nonces")).toBe(before + 1);
    expect(samples.get("probe_replay_guard_capacity")).toBe(probe.service.replays.capacity);
  });

  it("refuses (421) a Host that is not an IP address or localhost with its port: no DNS rebinding", async () => {
    const { port } = new URL(metrics.url);
    const get = (host: string, path = "/metrics") =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port: Number(port), path, headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end();
      });
    expect(await get(`rebind.attacker.example:${port}`)).toBe(421);
    expect(await get(`rebind.attacker.example:${port}`, "/status")).toBe(421);
    expect(await get("127.0.0.1:1")).toBe(421);
    expect(await get(`127.0.0.1:${port}`)).toBe(200);
    expect(await get(`localhost:${port}`)).toBe(200);
    expect(await get(`[::1]:${port}`)).toBe(200);
  });
});

describe("npm start's probe", () => {
  it("runs with its metrics listener, as probe/main.ts does", async () => {
    const local = await startLocalProbe(
      { PROBE_PORT: "0", PROBE_METRICS_LISTEN: "127.0.0.1:0", PROBE_ALLOW_PRIVATE_TARGETS: "true", PROBE_SMTP_PORT: String(mail.port) },
      "127.0.0.1",
      TEST_PROBE_SECRET,
    );
    try {
      expect(local.metricsUrl).not.toBeNull();
      const res = await fetch(local.metricsUrl!);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("probe_checks_in_flight");
      expect(await (await fetch(new URL("/status", local.metricsUrl!))).json()).toMatchObject({ draining: false, checks_in_flight: 0 });
    } finally {
      await local.close();
    }
  });
});

describe("PROBE_METRICS_LISTEN", () => {
  const load = (value: string | undefined, port = "8788") => loadProbeConfig({ ...baseEnv(), PORT: port, PROBE_METRICS_LISTEN: value });
  it("defaults to 127.0.0.1:9788; takes host:port, [v6]:port or off", () => {
    expect(load(undefined).metricsListen).toEqual({ host: "127.0.0.1", port: 9788 });
    expect(load("0.0.0.0:9100").metricsListen).toEqual({ host: "0.0.0.0", port: 9100 });
    expect(load("[::1]:9100").metricsListen).toEqual({ host: "::1", port: 9100 });
    expect(load("off").metricsListen).toBeNull();
  });
  it("refuses the public port and anything that is not host:port", () => {
    expect(() => load("127.0.0.1:8788")).toThrow(/PROBE_METRICS_LISTEN must be a port of its own/);
    for (const bad of ["9788", "localhost", "127.0.0.1:99999", "http://127.0.0.1:9788"]) expect(() => load(bad), bad).toThrow(ProbeConfigError);
  });
});
