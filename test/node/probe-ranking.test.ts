/**
 * A degraded probe gets less work: two real probes, each auditing itself against the DoH fixture,
 * one of them listed on a blocklist; the Worker's probe client (edge/verification/probe-ranking.ts) learns each
 * probe's status from the header on its answers and ranks the listed one last for new domains,
 * keeping the rendezvous order among the healthy ones. Which probe asked is read from the EHLO name
 * the fixture mail server saw.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { callProbe } from "../../edge/verification/probe-call.ts";
import { forgetProbeReputations, probeOrder } from "../../edge/verification/probe-ranking.ts";
import { loadProbeConfig } from "../../probe/config.ts";
import { startProbeServer, type RunningProbe } from "../../probe/http/server.ts";
import { PROBE_REPUTATION_HEADER } from "../../shared/probe-contract.ts";
import { startDohServer, type DohServer, type Zone } from "../fixtures/doh-server.ts";
import { startMtaFixture, type MtaFixture } from "../fixtures/mta-fixture.ts";
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";

const MAIL_IP = "127.0.0.181";
const PROBES = [
  { helo: "probe-a.verify.example", ip: "192.0.2.21", reverse: "21.2.0.192" },
  { helo: "probe-b.verify.example", ip: "192.0.2.22", reverse: "22.2.0.192" },
];
const DNSBL = "bl.example";

function zone(listed: string[]): Zone {
  const z: Zone = {};
  for (const p of PROBES) {
    z[`${p.reverse}.in-addr.arpa`] = { PTR: [p.helo] };
    z[p.helo] = { A: [p.ip], TXT: [`v=spf1 ip4:${p.ip} -all`] };
    if (listed.includes(p.ip)) z[`${p.reverse}.${DNSBL}`] = { A: ["127.0.0.2"] };
  }
  return z;
}

let doh: DohServer;
let mail: MtaFixture;
let probes: RunningProbe[] = [];
let urls: string[] = [];

beforeAll(async () => {
  doh = await startDohServer({ zone: zone([PROBES[1]!.ip]) });
  mail = await startMtaFixture({ host: MAIL_IP, port: 0, mailboxPrefix: "user" });
  probes = await Promise.all(
    PROBES.map((p) =>
      startProbeServer(
        loadProbeConfig({
          PORT: "0",
          PROBE_LISTEN_HOST: "127.0.0.1",
          PROBE_SECRET: TEST_PROBE_SECRET,
          PROBE_HELO_NAME: p.helo,
          PROBE_SMTP_PORT: String(mail.port),
          PROBE_ALLOW_PRIVATE_TARGETS: "true",
          PROBE_PUBLIC_IPS: p.ip,
          PROBE_DOH_URL: doh.url,
          PROBE_DNSBL_ZONES: DNSBL,
        }),
      ),
    ),
  );
  urls = probes.map((p) => p.url);
  // Both audits have run (they start with the server).
  for (const p of probes) await p.service.audit.run();
});

afterAll(async () => {
  await Promise.all(probes.map((p) => p.close()));
  await mail.close();
  await doh.close();
});

afterEach(() => forgetProbeReputations());

/** Asks through the Worker's client; returns the name of the probe that asked the mail server. */
let asked = 0;
async function ask(domain: string): Promise<string> {
  const email = `user${++asked}@${domain}`;
  const r = await callProbe(urls, TEST_PROBE_SECRET, {
    email,
    mx: [{ host: `mx.${domain}`, preference: 10, addresses: [MAIL_IP] }],
    deadline_ms: 5_000,
    catch_all_check: false,
  });
  expect(r.ok && r.response.outcome).toBe("accepted");
  // The session that carried it (a warm one may have carried others before) began with the probe's name.
  const session = mail.connections.find((c) => c.commands.includes(`RCPT TO:<${email}>`));
  return session!.commands.find((c) => c.startsWith("EHLO"))!.slice(5);
}

/** Domains whose rendezvous choice (with nothing known) is probe `i`. */
function domainsFirstAt(i: number, n: number): string[] {
  const found: string[] = [];
  for (let k = 0; found.length < n; k++) if (probeOrder(urls, `d${k}.rank.test`)[0] === urls[i]) found.push(`d${k}.rank.test`);
  return found;
}

describe("a degraded probe gets less work", () => {
  it("the probes' own answers say how their audit found them", async () => {
    const healthz = await Promise.all(probes.map((p) => fetch(new URL("/healthz", p.url))));
    expect(healthz.map((r) => r.headers.get(PROBE_REPUTATION_HEADER))).toEqual(["ok", "degraded"]);
    expect(await healthz[1]!.json()).toEqual({ ok: true, reputation: "degraded" });
    expect(probes[1]!.service.audit.snapshot().problems).toEqual([expect.objectContaining({ address: PROBES[1]!.ip, problem: "dnsbl_listed" })]);
  });

  it("once the listed probe has answered, new domains whose first choice it is go to the healthy one; the healthy one's keep theirs", async () => {
    const [toB1, toB2] = domainsFirstAt(1, 2);
    const [toA] = domainsFirstAt(0, 1);
    // Nothing known yet: the rendezvous choice, the listed probe, asks (and its answer says degraded).
    expect(await ask(toB1!)).toBe(PROBES[1]!.helo);
    expect(probeOrder(urls, toB2!)).toEqual([urls[0], urls[1]]);
    expect(await ask(toB2!)).toBe(PROBES[0]!.helo);
    expect(await ask(toA!)).toBe(PROBES[0]!.helo);
    // Among healthy probes the rendezvous order is untouched: with a third, healthy URL the two healthy ones keep their relative order.
    const third = "http://127.0.0.1:9/";
    for (const d of domainsFirstAt(0, 20)) {
      const order = probeOrder([...urls, third], d);
      expect(order.at(-1)).toBe(urls[1]);
      expect(order.slice(0, 2)).toEqual(probeOrder([urls[0]!, third], d));
    }
  });

  it("when every probe is degraded they are all still used, in rendezvous order", async () => {
    doh.setZone(zone(PROBES.map((p) => p.ip)));
    for (const p of probes) await p.service.audit.run();
    try {
      const [toA] = domainsFirstAt(0, 1);
      const [toB] = domainsFirstAt(1, 1);
      await ask(toA!);
      await ask(toB!);
      // Both have said "degraded" now: each domain still goes to its own rendezvous choice.
      expect(await ask(toA!)).toBe(PROBES[0]!.helo);
      expect(await ask(toB!)).toBe(PROBES[1]!.helo);
    } finally {
      doh.setZone(zone([PROBES[1]!.ip]));
      for (const p of probes) await p.service.audit.run();
    }
  });
});
