/**
 * The probe's container image (probe/Dockerfile, built by scripts/container-check.sh) started as production starts it,
 * with podman on the host's network, and asked by the Worker's own client (edge/verification/probe-call.ts) over a signed request:
 * a real SMTP conversation with a fixture mail server on a loopback address. Private targets are allowed for this test
 * only (PROBE_ALLOW_PRIVATE_TARGETS); the mail server listens on a high port (PROBE_SMTP_PORT), not 25.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callProbe } from "../../edge/verification/probe-call.ts";
import { PROBE_PATH, probeOrigin, signProbeRequest, type ProbeRequest } from "../../shared/probe-contract.ts";
import { freePortOn, startMailServer, type RunningServer } from "../fixtures/smtp-servers.ts";
import { OTHER_PROBE_SECRET, TEST_PROBE_SECRET } from "../fixtures/secrets.ts";

const run = promisify(execFile);
const IMAGE = process.env.PROBE_IMAGE ?? "localhost/contact-verify-probe:ci";
const CONTAINERS_CONF = fileURLToPath(new URL("./containers.conf", import.meta.url));
const NAME = `contact-verify-probe-check-${process.pid}`;
const MX = "127.0.0.63";

const podman = (...args: string[]) => run("podman", ["--runtime", "runc", ...args], { env: { ...process.env, CONTAINERS_CONF }, maxBuffer: 4 << 20 });

let mail: RunningServer;
let probeUrl: string;
let metricsPort: number;

const request = (email: string): ProbeRequest => ({
  email,
  mx: [{ host: "mx.container.test", preference: 10, addresses: [MX] }],
  deadline_ms: 5_000,
});

async function waitForHealth(url: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) {
      const { stdout, stderr } = await podman("logs", NAME).catch((err: { stdout?: string; stderr?: string }) => err);
      throw new Error(`the probe's container did not answer /healthz within ${ms} ms; its log:\n${stdout ?? ""}${stderr ?? ""}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  mail = await startMailServer({ host: MX, port: await freePortOn([MX]), mailboxes: ["ana@container.test"] });
  const port = await freePortOn(["127.0.0.1"]);
  metricsPort = await freePortOn(["127.0.0.1"]);
  probeUrl = `http://127.0.0.1:${port}`;
  const env = {
    PORT: String(port),
    PROBE_LISTEN_HOST: "127.0.0.1",
    PROBE_SECRET: TEST_PROBE_SECRET,
    PROBE_HELO_NAME: "probe1.container.test",
    PROBE_ORIGIN: probeUrl,
    PROBE_SMTP_PORT: String(mail.port),
    PROBE_ALLOW_PRIVATE_TARGETS: "true",
    PROBE_METRICS_LISTEN: `127.0.0.1:${metricsPort}`,
  };
  await podman("run", "-d", "--name", NAME, "--network=host", ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]), IMAGE);
  await waitForHealth(probeUrl, 30_000);
});

afterAll(async () => {
  await podman("rm", "-f", "-t", "0", NAME).catch(() => undefined);
  await mail?.close();
});

describe("the probe's container image", () => {
  it("answers a signed check from the Worker's client with a real SMTP verdict", async () => {
    const known = await callProbe([probeUrl], TEST_PROBE_SECRET, request("ana@container.test"));
    expect(known).toMatchObject({ ok: true, response: { outcome: "accepted", catch_all: false, mx_address: MX } });
    const unknown = await callProbe([probeUrl], TEST_PROBE_SECRET, request("nobody@container.test"));
    expect(unknown).toMatchObject({ ok: true, response: { outcome: "mailbox_not_found" } });
    expect(mail.record.mailFrom.at(-1)!.address).toBe("verify@probe1.container.test");
  });

  it("refuses (401) a request signed with another secret or for another origin than its PROBE_ORIGIN", async () => {
    expect(await callProbe([probeUrl], OTHER_PROBE_SECRET, request("ana@container.test"))).toMatchObject({ ok: false, status: 401 });
    const body = JSON.stringify(request("ana@container.test"));
    const forLocalhost = await signProbeRequest(TEST_PROBE_SECRET, { origin: probeOrigin(probeUrl.replace("127.0.0.1", "localhost")), method: "POST", path: PROBE_PATH, body });
    const res = await fetch(`${probeUrl}${PROBE_PATH}`, { method: "POST", headers: { "content-type": "application/json", ...forLocalhost }, body });
    expect(res.status).toBe(401);
    await res.body?.cancel();
  });

  it("serves its metrics on PROBE_METRICS_LISTEN, the checks above counted", async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(/^probe_checks_total\{[^}]*outcome="accepted"[^}]*\} [1-9]/m);
  });

  it("stops on SIGTERM by draining: its log ends with 'probe stopped'", async () => {
    await podman("stop", "-t", "20", NAME);
    const { stdout } = await podman("logs", NAME);
    expect(stdout.trim().split("\n").at(-1)).toContain('"msg":"probe stopped"');
  });
});
