/**
 * The probe's HTTP service over real HTTP: signatures, body bounds, validation, the global limit,
 * and a signed request that ends in a real SMTP conversation. Also its configuration rules.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProbeConfig, type ProbeConfig } from "../../probe/config.ts";
import { startProbeServer, type RunningProbe } from "../../probe/server.ts";
import { PROBE_PATH, ProbeResponse, signProbeRequest, type ProbeRequest } from "../../shared/probe-contract.ts";
import { freePortOn, startMailServer, type RunningServer } from "../fixtures/smtp-servers.ts";

const SECRET = "service-test-secret-0123456789";
const MX = "127.0.0.60";
const SLOW_MX = "127.0.0.61";

let mail: RunningServer;
let slowMail: RunningServer;
let probe: RunningProbe;
let busyProbe: RunningProbe;

function config(overrides: Record<string, string> = {}): ProbeConfig {
  return loadProbeConfig({
    PORT: "0",
    PROBE_LISTEN_HOST: "127.0.0.1",
    PROBE_SECRET: SECRET,
    PROBE_HELO_NAME: "probe1.verify.example",
    PROBE_SMTP_PORT: String(mail.port),
    PROBE_ALLOW_PRIVATE_TARGETS: "true",
    ...overrides,
  });
}

const body = (email: string, address = MX, deadline = 3000): ProbeRequest => ({
  email,
  mx: [{ host: "mx.svc.test", preference: 10, addresses: [address] }],
  deadline_ms: deadline,
});

async function post(target: RunningProbe, payload: string, headers: Record<string, string> | null = null) {
  const signed = headers ?? (await signProbeRequest(SECRET, payload));
  const res = await fetch(`${target.url}${PROBE_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...signed },
    body: payload,
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

beforeAll(async () => {
  const port = await freePortOn([MX, SLOW_MX]);
  mail = await startMailServer({ host: MX, port, mailboxes: ["ana@svc.test"] });
  slowMail = await startMailServer({ host: SLOW_MX, port, mailboxes: ["ana@svc.test"], delayMs: 300 });
  probe = await startProbeServer(config());
  busyProbe = await startProbeServer(config({ PROBE_MAX_CONCURRENCY: "1", PROBE_QUEUE_WAIT_MS: "100" }));
});

afterAll(async () => {
  await Promise.all([probe?.close(), busyProbe?.close(), mail?.close(), slowMail?.close()]);
});

describe("POST /v1/probe", () => {
  it("a signed request gets a real SMTP verdict in the shared contract's shape", async () => {
    const { status, json } = await post(probe, JSON.stringify(body("ana@svc.test")));
    expect(status).toBe(200);
    expect(ProbeResponse.parse(json)).toMatchObject({ outcome: "accepted", catch_all: false, mx_address: MX });
    expect(mail.record.mailFrom.at(-1)!.address).toBe("verify@probe1.verify.example");
  });

  it("401 without a signature, with another secret, a stale timestamp, or a changed body", async () => {
    const payload = JSON.stringify(body("ana@svc.test"));
    const other = await signProbeRequest("another-secret-0123456789", payload);
    const stale = await signProbeRequest(SECRET, payload, Math.floor(Date.now() / 1000) - 360);
    const future = await signProbeRequest(SECRET, payload, Math.floor(Date.now() / 1000) + 360);
    const good = await signProbeRequest(SECRET, payload);
    for (const headers of [{}, other, stale, future, { ...good, "x-probe-signature": "v1=" + "0".repeat(64) }]) {
      const r = await post(probe, payload, headers);
      expect(r.status, JSON.stringify(headers)).toBe(401);
      expect(r.json).toEqual({ error: "Unauthorized" });
    }
    const tampered = await post(probe, payload.replace("ana@", "bob@"), good);
    expect(tampered.status).toBe(401);
    expect(mail.record.rcptTo).not.toContain("bob@svc.test");
  });

  it("400 for malformed JSON or a body outside the contract, naming the field", async () => {
    expect(await post(probe, "{not json")).toMatchObject({ status: 400, json: { error: "Malformed JSON body" } });
    const noMx = await post(probe, JSON.stringify({ email: "ana@svc.test", mx: [], deadline_ms: 1000 }));
    expect(noMx.status).toBe(400);
    expect(noMx.json.error).toMatch(/^Invalid probe request: mx: /);
    const longDeadline = await post(probe, JSON.stringify({ ...body("ana@svc.test"), deadline_ms: 600_000 }));
    expect(longDeadline.json.error).toMatch(/deadline_ms/);
    for (const email of ["ana@svc.test\r\nRCPT TO:<x@y.test>", "ana\u0000@svc.test", "ana@bücher.test", "ana@"]) {
      const injected = await post(probe, JSON.stringify(body(email)));
      expect(injected.status, JSON.stringify(email)).toBe(400);
      expect(injected.json.error).toMatch(/^Invalid probe request: email: /);
    }
    expect(mail.record.rcptTo).not.toContain("x@y.test");
  });

  it("a quoted local part with an @ in it is sent as it is, not refused as malformed", async () => {
    const { status, json } = await post(probe, JSON.stringify(body('"a@b"@svc.test')));
    expect(status).toBe(200);
    // smtp-server does not take quoted local parts: its 501 is the server's answer to our RCPT.
    expect(json).toMatchObject({ outcome: "rejected_unclear", reply: { code: 501 } });
  });

  it("413 for a body over 16 KiB, before reading the rest", async () => {
    const big = JSON.stringify({ ...body("ana@svc.test"), padding: "x".repeat(20_000) });
    const r = await post(probe, big);
    expect(r).toMatchObject({ status: 413, json: { error: "Request body too large" } });
  });

  it("503 with Retry-After when every slot stays busy past the queue bound", async () => {
    const results = await Promise.all(
      Array.from({ length: 3 }, () => post(busyProbe, JSON.stringify(body("ana@svc.test", SLOW_MX)))),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 503, 503]);
    const busy = results.find((r) => r.status === 503)!;
    expect(busy.json).toEqual({ error: "Probe busy" });
    expect(busy.headers.get("retry-after")).toBe("1");
  });

  it("GET /healthz answers, unknown routes are JSON 404s", async () => {
    const health = await fetch(`${probe.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true });
    const missing = await fetch(`${probe.url}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: "Not found" });
  });
});

describe("configuration", () => {
  const base = { PROBE_SECRET: SECRET, PROBE_HELO_NAME: "probe1.verify.example" };

  it("defaults: port 25, no private targets, MAIL FROM on our own HELO name", () => {
    const c = loadProbeConfig(base);
    expect(c).toMatchObject({ port: 8788, smtpPort: 25, allowPrivateTargets: false, mailFrom: "verify@probe1.verify.example" });
  });

  it.each([
    [{ PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET is required/],
    [{ PROBE_SECRET: "short", PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET must be at least 16/],
    [{ PROBE_SECRET: SECRET }, /PROBE_HELO_NAME is required/],
    [{ ...base, PROBE_HELO_NAME: "localhost" }, /fully qualified/],
    [{ ...base, PROBE_HELO_NAME: "192.0.2.1" }, /fully qualified/],
    [{ ...base, PROBE_MAIL_FROM: "not an address" }, /PROBE_MAIL_FROM must be an email address/],
    [{ ...base, PROBE_ALLOW_PRIVATE_TARGETS: "yes" }, /must be true or false/],
    [{ ...base, PROBE_SMTP_PORT: "0" }, /PROBE_SMTP_PORT/],
    [{ ...base, PROBE_MAX_CONCURRENCY: "-1" }, /PROBE_MAX_CONCURRENCY/],
  ])("refuses %j", (env, message) => {
    expect(() => loadProbeConfig(env)).toThrow(message);
  });
});
