/**
 * A fleet shares the big providers (docs/probe.md "Several probes"): at a family that counts by our
 * sending IP (google, microsoft-eop: fleetSpread in shared/email/receivers.ts) one domain's
 * addresses are ranked by rendezvous on the address, so they spread over the probes and each probe's
 * batch carries its share; any other domain keeps its affinity to one probe. Two real probes behind
 * one fixture mail server, the job path's checkLines and the single check's callProbe as the Worker
 * runs them; which probe asked is read from the EHLO name the mail server saw.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callProbe } from "../../edge/verification/probe-call.ts";
import { probeOrder, rankingKey } from "../../edge/verification/probe-ranking.ts";
import { checkLines } from "../../edge/jobs/verification/check-lines.ts";
import type { LineAnswer } from "../../edge/jobs/store/lines.ts";
import { loadProbeConfig } from "../../probe/config.ts";
import { startProbeServer, type RunningProbe } from "../../probe/http/server.ts";
import { startDohServer, type DohServer } from "../fixtures/doh-server.ts";
import { startMtaFixture, type MtaFixture } from "../fixtures/mta-fixture.ts";
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";

const MAIL_IP = "127.0.0.182";
const HELOS = ["probe-a.spread.example", "probe-b.spread.example"];
const GOOGLE_MX = "spread-test.aspmx.l.google.com";

let doh: DohServer;
let mail: MtaFixture;
let probes: RunningProbe[] = [];
let urls: string[] = [];

beforeAll(async () => {
  doh = await startDohServer({
    zone: {
      // A Workspace domain (Google's MX names) and a self-hosted one, both served by the fixture.
      "big.spread.test": { MX: [{ preference: 1, exchange: GOOGLE_MX }] },
      [GOOGLE_MX]: { A: [MAIL_IP] },
      "small.spread.test": { MX: [{ preference: 10, exchange: "mx.small.spread.test" }] },
      "mx.small.spread.test": { A: [MAIL_IP] },
    },
  });
  mail = await startMtaFixture({ host: MAIL_IP, port: 0, mailboxPrefix: "user" });
  probes = await Promise.all(
    HELOS.map((helo) =>
      startProbeServer(
        loadProbeConfig({
          PORT: "0",
          PROBE_LISTEN_HOST: "127.0.0.1",
          PROBE_SECRET: TEST_PROBE_SECRET,
          PROBE_HELO_NAME: helo,
          PROBE_SMTP_PORT: String(mail.port),
          PROBE_ALLOW_PRIVATE_TARGETS: "true",
        }),
      ),
    ),
  );
  urls = probes.map((p) => p.url);
});

afterAll(async () => {
  await Promise.all(probes.map((p) => p.close()));
  await mail.close();
  await doh.close();
});

/** The probe (by its URL) whose session carried the RCPT for `email`. */
function askedBy(email: string): string {
  const session = mail.connections.find((c) => c.commands.includes(`RCPT TO:<${email}>`));
  expect(session, email).toBeDefined();
  const helo = session!.commands.find((c) => c.startsWith("EHLO"))!.slice(5);
  return urls[HELOS.indexOf(helo)]!;
}

describe("rankingKey", () => {
  it("is the address at a fleetSpread family, the domain anywhere else", () => {
    const google = [{ host: "alt2.aspmx.l.google.com", preference: 5 }];
    const eop = [{ host: "contoso-com.mail.protection.outlook.com", preference: 0 }];
    const own = [{ host: "mx.example.org", preference: 10 }];
    expect(rankingKey("Ana@Example.com", google)).toBe("ana@example.com");
    expect(rankingKey("ana@example.com", eop)).toBe("ana@example.com");
    expect(rankingKey("ana@example.org", own)).toBe("example.org");
  });
});

describe("a job's lines over two probes", () => {
  it("spreads one Google-hosted domain's addresses over both, by address; keeps a self-hosted domain on one", async () => {
    const big = Array.from({ length: 16 }, (_, i) => `user${i}@big.spread.test`);
    const small = Array.from({ length: 8 }, (_, i) => `user${i}@small.spread.test`);
    const claimed = [...big, ...small].map((email, position) => ({ position, email, claims: 1, probeFailures: 0, rechecking: false, waitingSince: null }));
    const answers: LineAnswer[] = [];
    await checkLines(
      claimed,
      { dohUrl: doh.url, probeUrls: urls, probeSecret: TEST_PROBE_SECRET, smtpTimeoutSeconds: 5, recheckDelaySeconds: 0, receiverWaitMaxMs: 86_400_000, tenant: "spread-test" },
      async (a) => void answers.push(a),
    );
    const outcomes = answers.map((a) => [a.position, a.kind === "done" && a.result.details?.smtp_outcome] as const).sort((x, y) => x[0] - y[0]);
    expect(outcomes).toEqual(claimed.map((c) => [c.position, "accepted"]));

    const bigProbes = big.map(askedBy);
    // Each address at the probe the rendezvous on the address ranks first, and both probes used.
    expect(bigProbes).toEqual(big.map((email) => probeOrder(urls, email)[0]));
    expect(new Set(bigProbes).size).toBe(2);
    // The self-hosted domain: every address at its domain's probe (warm session, catch-all answer, budget there).
    expect(new Set(small.map(askedBy))).toEqual(new Set([probeOrder(urls, "small.spread.test")[0]]));
  });
});

describe("a single check", () => {
  it("at a Google-hosted domain goes to its address's probe", async () => {
    const emails = Array.from({ length: 6 }, (_, i) => `user${100 + i}@big.spread.test`);
    for (const email of emails) {
      const r = await callProbe(urls, TEST_PROBE_SECRET, { email, mx: [{ host: GOOGLE_MX, preference: 1, addresses: [MAIL_IP] }], deadline_ms: 5_000, catch_all_check: false });
      expect(r.ok && r.response.outcome).toBe("accepted");
    }
    expect(emails.map(askedBy)).toEqual(emails.map((email) => probeOrder(urls, email)[0]));
  });
});
