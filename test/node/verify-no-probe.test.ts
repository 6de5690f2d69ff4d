/** verifyEmail without a probe, against the DoH fixture: the "no SMTP check performed" path. */
import { afterAll, beforeAll, expect, it } from "vitest";
import { verifyEmail } from "../../edge/verification/verify.ts";
import { WARNINGS } from "../../shared/email/verdict.ts";
import { startDohServer } from "../fixtures/doh-server.ts";
import { testZone } from "../fixtures/test-zone.ts";

let doh: Awaited<ReturnType<typeof startDohServer>>;
beforeAll(async () => {
  doh = await startDohServer({ zone: testZone });
});
afterAll(() => doh.close());

it("scores 75 and is risky when no probe is configured", async () => {
  const r = await verifyEmail("ana@ok.test", { dohUrl: doh.url, smtpTimeoutSeconds: 5 });
  expect(r).toMatchObject({ classification: "risky", valid: true, score: 75, warnings: [WARNINGS.smtpNotChecked] });
  expect(r.checks.smtp_deliverable).toBeNull();
  expect(r.details!.smtp_outcome).toBe("probe_not_configured");
});

it("an unreachable probe degrades the same way, quickly", async () => {
  const started = Date.now();
  const r = await verifyEmail("ana@ok.test", {
    dohUrl: doh.url,
    probeUrls: ["http://127.0.0.1:9"],
    probeSecret: "x".repeat(32),
    smtpTimeoutSeconds: 5,
  });
  expect(r.warnings).toEqual([WARNINGS.smtpNotChecked]);
  expect(r.details!.smtp_outcome).toBe("probe_unreachable");
  expect(Date.now() - started).toBeLessThan(2000);
});

it("an unreachable resolver assumes the MX within the DNS deadline", async () => {
  const started = Date.now();
  const r = await verifyEmail("ana@ok.test", { dohUrl: "http://127.0.0.1:9/dns-query", smtpTimeoutSeconds: 5 });
  expect(r).toMatchObject({ classification: "risky", score: 45 });
  expect(r.score_details.dns_failed_assumption).toBe(true);
  expect(Date.now() - started).toBeLessThan(2500);
});
