/**
 * The probe's HTTP service over real HTTP: signatures, body bounds, validation, the admission
 * bound, the batch endpoint's NDJSON stream, draining on close, and signed requests that end in
 * real SMTP conversations. Also its configuration rules.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadProbeConfig, type ProbeConfig } from "../../probe/config.ts";
import { startProbeServer, type RunningProbe } from "../../probe/http/server.ts";
import {
  PROBE_BATCH_PATH,
  ProbeBatchNotice,
  PROBE_MAX_BATCH_ADDRESSES,
  PROBE_PATH,
  ProbeBatchAnswer,
  ProbeResponse,
  probeOrigin,
  signProbeRequest,
  type ProbeBatchRequest,
  type ProbeRequest,
} from "../../shared/probe-contract.ts";
import { freePortOn, startMailServer, type RunningServer } from "../fixtures/smtp-servers.ts";
import { OTHER_PROBE_SECRET, TEST_PROBE_SECRET } from "../fixtures/secrets.ts";

const SECRET = TEST_PROBE_SECRET;
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

async function post(target: RunningProbe, payload: string, headers: Record<string, string> | null = null, path = PROBE_PATH) {
  const signed = headers ?? (await signProbeRequest(SECRET, { origin: probeOrigin(target.url), method: "POST", path, body: payload }));
  const res = await fetch(`${target.url}${path}`, {
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
  busyProbe = await startProbeServer(config({ PROBE_MAX_QUEUED: "1" }));
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

  it("401 without a signature, with another secret, a stale timestamp, an old v1 signature, or a changed body", async () => {
    const payload = JSON.stringify(body("ana@svc.test"));
    const request = { origin: probeOrigin(probe.url), method: "POST", path: PROBE_PATH, body: payload };
    const other = await signProbeRequest(OTHER_PROBE_SECRET, request);
    const stale = await signProbeRequest(SECRET, request, Math.floor(Date.now() / 1000) - 360);
    const future = await signProbeRequest(SECRET, request, Math.floor(Date.now() / 1000) + 360);
    const good = await signProbeRequest(SECRET, request);
    const noNonce = Object.fromEntries(Object.entries(await signProbeRequest(SECRET, request)).filter(([k]) => k !== "x-probe-nonce"));
    for (const headers of [{}, other, stale, future, noNonce, { ...good, "x-probe-signature": "v1=" + "0".repeat(64) }]) {
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

  it("503 with Retry-After when the probe already holds its maximum of checks", async () => {
    const results = await Promise.all(
      Array.from({ length: 3 }, () => post(busyProbe, JSON.stringify(body("ana@svc.test", SLOW_MX)))),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 503, 503]);
    const busy = results.find((r) => r.status === 503)!;
    expect(busy.json).toEqual({ error: "Probe busy" });
    expect(busy.headers.get("retry-after")).toBe("1");
  });

  it("GET /healthz answers ok and the reputation status only, unknown routes are JSON 404s", async () => {
    const health = await fetch(`${probe.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true, reputation: "ok" });
    const missing = await fetch(`${probe.url}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: "Not found" });
  });
});

describe("signed requests cannot be replayed, redirected or pushed in unchecked", () => {
  const payload = () => JSON.stringify(body("ana@svc.test"));

  it("a captured request is taken once: sent again within the window it is 401", async () => {
    const text = payload();
    const headers = await signProbeRequest(SECRET, { origin: probeOrigin(probe.url), method: "POST", path: PROBE_PATH, body: text });
    expect((await post(probe, text, headers)).status).toBe(200);
    const again = await post(probe, text, headers);
    expect(again).toMatchObject({ status: 401, json: { error: "Unauthorized" } });
  });

  it("the probe's origin is signed: a request captured in front of one probe is 401 on another with the same secret", async () => {
    const text = payload();
    const forProbe = await signProbeRequest(SECRET, { origin: probeOrigin(probe.url), method: "POST", path: PROBE_PATH, body: text });
    expect((await post(busyProbe, text, forProbe)).status).toBe(401);
    // Its own PROBE_ORIGIN (behind a TLS proxy) is what a probe checks; its loopback URLs are then refused.
    const proxied = await startProbeServer(config({ PROBE_ORIGIN: "https://probe1.verify.example" }));
    try {
      const signedForName = await signProbeRequest(SECRET, { origin: "https://probe1.verify.example", method: "POST", path: PROBE_PATH, body: text });
      expect((await post(proxied, text, signedForName)).status).toBe(200);
      expect((await post(proxied, text)).status).toBe(401);
    } finally {
      await proxied.close();
    }
    expect((await post(probe, text, forProbe)).status).toBe(200);
  });

  it("the path and the method are signed: a request signed for one path or method is 401 on another", async () => {
    const batch = JSON.stringify({ deadline_ms: 3000, groups: [{ mx: body("ana@svc.test").mx, emails: ["ana@svc.test"] }] });
    const forSingle = await signProbeRequest(SECRET, { origin: probeOrigin(probe.url), method: "POST", path: PROBE_PATH, body: batch });
    const res = await fetch(`${probe.url}${PROBE_BATCH_PATH}`, { method: "POST", headers: { "content-type": "application/json", ...forSingle }, body: batch });
    expect(res.status).toBe(401);
    await res.body?.cancel();
    const text = payload();
    const forPut = await signProbeRequest(SECRET, { origin: probeOrigin(probe.url), method: "PUT", path: PROBE_PATH, body: text });
    expect((await post(probe, text, forPut)).status).toBe(401);
  });

  it("a stale timestamp is refused from the headers alone, before the body arrives", async () => {
    const url = new URL(probe.url);
    const stale = await signProbeRequest(SECRET, { origin: probeOrigin(probe.url), method: "POST", path: PROBE_BATCH_PATH, body: "" }, Math.floor(Date.now() / 1000) - 3600);
    // Headers for a 1,000,000-byte body (under the batch limit), then only 1,000 bytes of it: the
    // answer can only come now if the server did not wait to read the rest.
    const head = [
      `POST ${PROBE_BATCH_PATH} HTTP/1.1`,
      `Host: ${url.host}`,
      "Content-Type: application/json",
      "Content-Length: 1000000",
      ...Object.entries(stale).map(([k, v]) => `${k}: ${v}`),
      "",
      "",
    ].join("\r\n");
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write(head + "x".repeat(1000)));
      let got = "";
      socket.on("data", (d) => {
        got += d.toString("latin1");
        if (got.includes("\r\n\r\n")) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.on("error", reject);
    });
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
  });
});

describe("one bad check never takes the probe down", () => {
  const batch = (emails: string[], address = MX) =>
    JSON.stringify({ deadline_ms: 5000, groups: [{ mx: [{ host: "mx.svc.test", preference: 10, addresses: [address] }], emails }] });
  async function postBatch(target: RunningProbe, text: string) {
    const headers = await signProbeRequest(SECRET, { origin: probeOrigin(target.url), method: "POST", path: PROBE_BATCH_PATH, body: text });
    const res = await fetch(`${target.url}${PROBE_BATCH_PATH}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: text });
    expect(res.status).toBe(200);
    return (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it("a check that throws is handed back deferred; the others in its batch are answered, and so is the next request", async () => {
    const fresh = await startProbeServer(config());
    try {
      const check = fresh.service.scheduler.check.bind(fresh.service.scheduler);
      // A fault injected into the real scheduler for one address: stands for any bug in one check.
      fresh.service.scheduler.check = (req) => (req.recipient === "boom@svc.test" ? Promise.reject(new Error("injected fault")) : check(req));
      const lines = await postBatch(fresh, batch(["ana@svc.test", "boom@svc.test"]));
      expect(lines.find((l) => l.email === "boom@svc.test")).toEqual({ email: "boom@svc.test", deferred: true });
      expect(ProbeBatchAnswer.parse(lines.find((l) => l.email === "ana@svc.test")).result.outcome).toBe("accepted");
      const next = await postBatch(fresh, batch(["ana@svc.test"]));
      expect(ProbeBatchAnswer.parse(next[0]).result.outcome).toBe("accepted");
    } finally {
      await fresh.close();
    }
  });

  it("every batch answer ends with the notices of answers no longer trusted (probe/policy/untrusted.ts), in the shared contract's shape", async () => {
    const fresh = await startProbeServer(config());
    try {
      const noted = Date.now();
      fresh.service.scheduler.untrusted.note({ domains: ["gw.example"], sinceMs: noted - 60_000, untilMs: noted });
      const lines = await postBatch(fresh, batch(["ana@svc.test"]));
      expect(lines).toHaveLength(2);
      expect(ProbeBatchAnswer.parse(lines[0]).result.outcome).toBe("accepted");
      expect(ProbeBatchNotice.parse(lines[1])).toEqual({ untrusted: { domains: ["gw.example"], since_ms: noted - 60_000, until_ms: noted } });
    } finally {
      await fresh.close();
    }
  });

  it("a wall clock stepped back an hour mid-check gives no negative duration and no crash", async () => {
    const fresh = await startProbeServer(config());
    const realNow = Date.now.bind(Date);
    try {
      const text = batch(["ana@svc.test"], SLOW_MX);
      const headers = await signProbeRequest(SECRET, { origin: probeOrigin(fresh.url), method: "POST", path: PROBE_BATCH_PATH, body: text });
      const pending = fetch(`${fresh.url}${PROBE_BATCH_PATH}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: text });
      // The slow server answers each command 300 ms later: the step lands inside the conversation.
      await new Promise((r) => setTimeout(r, 150));
      vi.spyOn(Date, "now").mockImplementation(() => realNow() - 3_600_000);
      const res = await pending;
      const [line] = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as unknown);
      const answer = ProbeBatchAnswer.parse(line);
      expect(answer.result.outcome).toBe("accepted");
      expect(answer.result.attempts.every((a) => a.ms >= 0)).toBe(true);
      vi.restoreAllMocks();
      const next = await postBatch(fresh, batch(["ana@svc.test"]));
      expect(ProbeBatchAnswer.parse(next[0]).result.outcome).toBe("accepted");
    } finally {
      vi.restoreAllMocks();
      await fresh.close();
    }
  });
});

describe("POST /v1/probe/batch", () => {
  const batchBody = (emails: string[][], deadline = 5000): ProbeBatchRequest => ({
    deadline_ms: deadline,
    groups: emails.map((list, i) => ({ mx: [{ host: `mx${i}.svc.test`, preference: 10, addresses: [MX] }], emails: list })),
  });

  async function postBatch(target: RunningProbe, payload: string) {
    const signed = await signProbeRequest(SECRET, { origin: probeOrigin(target.url), method: "POST", path: PROBE_BATCH_PATH, body: payload });
    return fetch(`${target.url}${PROBE_BATCH_PATH}`, { method: "POST", headers: { "content-type": "application/json", ...signed }, body: payload });
  }

  it("streams one NDJSON line per distinct address, each a full ProbeResponse, over shared sessions", async () => {
    const fresh = await startProbeServer(config());
    try {
      const before = { connections: mail.record.connections, mail: mail.record.mailFrom.length };
      const emails = ["ana@svc.test", "nobody@svc.test", "ghost@svc.test", "ana@svc.test"];
      const res = await postBatch(fresh, JSON.stringify(batchBody([emails])));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/x-ndjson");
      const lines = (await res.text()).trim().split("\n").map((l) => ProbeBatchAnswer.parse(JSON.parse(l)));
      expect(lines.map((l) => l.email).sort()).toEqual(["ana@svc.test", "ghost@svc.test", "nobody@svc.test"]);
      const byEmail = Object.fromEntries(lines.map((l) => [l.email, l.result]));
      expect(byEmail["ana@svc.test"]).toMatchObject({ outcome: "accepted", catch_all: false });
      expect(byEmail["nobody@svc.test"]).toMatchObject({ outcome: "mailbox_not_found", catch_all: false });
      // Three addresses, one session, one transaction (their RCPTs and the random one together).
      expect(mail.record.connections - before.connections).toBe(1);
      expect(mail.record.mailFrom.length - before.mail).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  it("401 unsigned, 400 outside the contract (naming the field), 413 over the body bound", async () => {
    const payload = JSON.stringify(batchBody([["ana@svc.test"]]));
    expect((await post(probe, payload, {}, PROBE_BATCH_PATH)).status).toBe(401);
    const tooMany = Array.from({ length: PROBE_MAX_BATCH_ADDRESSES + 1 }, (_, i) => `user${i}@svc.test`);
    const r = await post(probe, JSON.stringify(batchBody([tooMany.slice(0, 1500), tooMany.slice(1500)])), null, PROBE_BATCH_PATH);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/^Invalid probe request: groups: at most 2000 addresses/);
    const injected = await post(probe, JSON.stringify(batchBody([["ana@svc.test\r\nQUIT"]])), null, PROBE_BATCH_PATH);
    expect(injected.json.error).toMatch(/^Invalid probe request: groups\.0\.emails\.0: /);
    const big = await post(probe, JSON.stringify({ ...batchBody([["ana@svc.test"]]), pad: "x".repeat(1_100_000) }), null, PROBE_BATCH_PATH);
    expect(big).toMatchObject({ status: 413, json: { error: "Request body too large" } });
  });

  it("503 when the batch does not fit under the admission bound", async () => {
    const r = await post(busyProbe, JSON.stringify(batchBody([["ana@svc.test", "ben@svc.test"]])), null, PROBE_BATCH_PATH);
    expect(r).toMatchObject({ status: 503, json: { error: "Probe busy" } });
    expect(r.headers.get("retry-after")).toBe("1");
  });
});

describe("stopping", () => {
  it("close() lets a check in flight finish, refuses new work meanwhile, then QUITs its sessions", async () => {
    const draining = await startProbeServer(config());
    const inFlight = post(draining, JSON.stringify(body("ana@svc.test", SLOW_MX, 5000)));
    await new Promise((r) => setTimeout(r, 100));
    const closed = draining.close();
    const late = await fetch(`${draining.url}${PROBE_PATH}`, { method: "POST", body: "{}" }).then(
      (r) => r.status,
      () => "refused",
    );
    expect([503, "refused"]).toContain(late);
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ outcome: "accepted" });
    await closed;
    expect(draining.service.scheduler.stats()).toMatchObject({ checks_in_flight: 0, sessions_open: 0 });
  });
});

describe("configuration", () => {
  const base = { PROBE_SECRET: SECRET, PROBE_HELO_NAME: "probe1.verify.example", PROBE_PUBLIC_IPS: "192.0.2.10" };

  it("defaults: port 25, no private targets, MAIL FROM on our own HELO name", () => {
    const c = loadProbeConfig(base);
    expect(c).toMatchObject({ port: 8788, smtpPort: 25, allowPrivateTargets: false, mailFrom: "verify@probe1.verify.example" });
  });

  it.each([
    [{ PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET is required/],
    [{ PROBE_SECRET: "short", PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET must hold at least 32 random bytes/],
    [{ PROBE_SECRET: "a".repeat(16), PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET must hold at least 32 random bytes/],
    [{ PROBE_SECRET: "a".repeat(64), PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET repeats a shorter string/],
    [{ PROBE_SECRET: "0123456789".repeat(5), PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET repeats a shorter string/],
    [{ PROBE_SECRET: `${"ab".repeat(30)}xyz`, PROBE_HELO_NAME: "probe1.verify.example" }, /PROBE_SECRET is too regular/],
    [{ PROBE_SECRET: SECRET }, /PROBE_HELO_NAME is required/],
    [{ ...base, PROBE_HELO_NAME: "localhost" }, /fully qualified/],
    [{ ...base, PROBE_HELO_NAME: "192.0.2.1" }, /fully qualified/],
    [{ ...base, PROBE_MAIL_FROM: "not an address" }, /PROBE_MAIL_FROM must be an email address/],
    [{ ...base, PROBE_ALLOW_PRIVATE_TARGETS: "yes" }, /must be true or false/],
    [{ ...base, PROBE_SMTP_PORT: "0" }, /PROBE_SMTP_PORT/],
    [{ ...base, PROBE_MAX_CONCURRENCY: "-1" }, /PROBE_MAX_CONCURRENCY/],
    [{ ...base, PROBE_MAX_REJECTIONS_PER_SESSION: "0" }, /PROBE_MAX_REJECTIONS_PER_SESSION/],
    [{ ...base, PROBE_MAX_RCPTS_PER_TRANSACTION: "101" }, /PROBE_MAX_RCPTS_PER_TRANSACTION/],
    [{ ...base, PROBE_SESSION_IDLE_MS: "x" }, /PROBE_SESSION_IDLE_MS/],
    [{ ...base, PROBE_ORIGIN: "probe1.verify.example" }, /PROBE_ORIGIN: PROBE_ORIGIN must be URL origins .*"probe1.verify.example" is not one/],
    [{ ...base, PROBE_ORIGIN: "https://probe1.verify.example/v1" }, /PROBE_ORIGIN must be URL origins/],
    [{ ...base, PROBE_ORIGIN: "ftp://probe1.verify.example" }, /PROBE_ORIGIN must be URL origins/],
    [{ ...base, PROBE_ORIGIN: " , " }, /PROBE_ORIGIN must list at least one origin/],
  ])("refuses %j", (env, message) => {
    expect(() => loadProbeConfig(env)).toThrow(message);
  });

  it("PROBE_ORIGIN is read with the other settings: origins as the Worker signs them; unset, none (the loopback URLs)", () => {
    expect(loadProbeConfig({ ...base, PROBE_ORIGIN: "https://Probe1.Verify.example/, http://10.0.0.7:8788" }).origins).toEqual([
      "https://probe1.verify.example",
      "http://10.0.0.7:8788",
    ]);
    expect(loadProbeConfig(base).origins).toBeUndefined();
  });
});
