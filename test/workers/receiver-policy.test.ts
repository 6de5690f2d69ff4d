/**
 * Receivers by their own rules, as the Worker applies them to single checks (docs/probe.md "Receiver
 * policy"): a family that must not be probed (outlook-consumer) or that accepts every address at RCPT
 * (yahoo) is answered without asking any probe; every check carries its account's opaque tenant, so the
 * probe keeps each customer's budget apart; and a probe that says the receiver's budget is spent is
 * answered risky with the reason and the time it gives. The stand-in probe (test/fixtures/probe-fixture.ts)
 * records what it was asked and answers `spent@` as the real probe's budgets do.
 */
import { beforeEach, describe, expect, inject, it } from "vitest";
import { EmailVerificationResult } from "../../shared/api.ts";
import { WARNINGS } from "../../shared/email/verdict.ts";
import { probeTenant } from "../../edge/verification/probe-ranking.ts";
import { verifyEmail } from "../../edge/verification/verify.ts";
import { SPENT_RETRY_AFTER_MS, type FixtureSingle } from "../fixtures/probe-fixture.ts";
import { callWith, newAccount } from "./helpers.ts";

let account: Awaited<ReturnType<typeof newAccount>>;
beforeEach(async () => {
  account = await newAccount(0);
});

const fixture = () => inject("probeFixtureUrl");
const singles = async () => (await (await fetch(`${fixture()}/__singles`)).json()) as FixtureSingle[];

/** GET /v1/email_verifications through the Worker, with the probes given. */
async function verifyVia(probeUrls: string, email: string) {
  const res = await callWith({ PROBE_URL: probeUrls }, `/v1/email_verifications?${new URLSearchParams({ email_address: email })}`, { token: account.token });
  expect(res.status).toBe(200);
  return EmailVerificationResult.strict().parse(await res.json());
}

describe("receivers that are not probed are answered without a probe call", () => {
  it("outlook.com consumer mail: risky, provider_forbids_probing, a warning that says why, nothing sent", async () => {
    const email = `ana${crypto.randomUUID().slice(0, 8)}@hotmail-hosted.test`;
    const r = await verifyVia(fixture(), email);
    expect(r).toMatchObject({
      classification: "risky",
      valid: true,
      reason: "provider_forbids_probing",
      score: 20 + 40 + 20 - 5,
      warnings: [WARNINGS.providerForbidsProbing],
    });
    expect(r.checks).toMatchObject({ syntax: true, mx_record: true, smtp_deliverable: null, accepts_any_email: null, disposable: false, typo_suggestion: null });
    expect(r.score_details).toMatchObject({ smtp_verified: false, smtp_failed_assumption: false });
    expect(r.details).toMatchObject({ smtp_outcome: "not_probed", receiver_family: "outlook-consumer", smtp_host: null, smtp_reply: null, mx_provider: "microsoft" });
    // The probe never heard of the address.
    expect((await singles()).map((s) => s.email)).not.toContain(email);
  });

  it("yahoo: the catch-all answer, risky, accepts_any_email, and honest that no RCPT was sent", async () => {
    const email = `ana${crypto.randomUUID().slice(0, 8)}@yahoo-hosted.test`;
    const r = await verifyVia(fixture(), email);
    expect(r).toMatchObject({ classification: "risky", reason: "catch_all", score: 20 + 40 + 15 - 5, warnings: [WARNINGS.catchAll] });
    expect(r.checks).toMatchObject({ smtp_deliverable: null, accepts_any_email: true });
    expect(r.score_details).toMatchObject({ accepts_any_email: true, smtp_verified: false });
    expect(r.details).toMatchObject({ smtp_outcome: "not_probed", receiver_family: "yahoo", mx_provider: "yahoo" });
    expect((await singles()).map((s) => s.email)).not.toContain(email);
  });

  it("with no probe reachable at all the answer is the same: nothing was going to be asked", async () => {
    const r = await verifyEmail("ana@hotmail-hosted.test", { dohUrl: inject("dohUrl"), probeUrls: ["http://127.0.0.1:9"], probeSecret: inject("probeSecret"), smtpTimeoutSeconds: 2 });
    expect([r.reason, r.details!.smtp_outcome]).toEqual(["provider_forbids_probing", "not_probed"]);
  });

  it("syntax, disposable and typo checks still run first", async () => {
    const bad = await verifyVia(fixture(), "not an address@hotmail-hosted.test");
    expect([bad.classification, bad.reason]).toEqual(["invalid", "syntax"]);
    // A probed family is still probed: ok.test is self-hosted.
    const ok = await verifyVia(fixture(), "ana@ok.test");
    expect(ok.details).toMatchObject({ smtp_outcome: "accepted", receiver_family: "self-hosted" });
  });
});

describe("single checks carry the account's tenant", () => {
  it("the probe is told whose check it is: the account's opaque digest, the same its jobs use, never its id", async () => {
    const email = `ana${crypto.randomUUID().slice(0, 8)}@ok.test`;
    await verifyVia(fixture(), email);
    const seen = (await singles()).filter((s) => s.email === email);
    expect(seen).toEqual([{ email, tenant: await probeTenant(account.accountId) }]);
    expect(seen[0]!.tenant).not.toContain(account.accountId);
    const other = await newAccount(0);
    expect(await probeTenant(other.accountId)).not.toBe(seen[0]!.tenant);
  });

  it("a receiver's budget spent for this account: risky, receiver_budget_spent, nothing sent, and when to try again", async () => {
    const before = Date.now();
    const r = await verifyVia(fixture(), "spent@ok.test");
    expect(r).toMatchObject({ classification: "risky", valid: true, reason: "receiver_budget_spent", score: 20 + 40 + 20 - 5, warnings: [WARNINGS.receiverBudgetSpent] });
    expect(r.checks.smtp_deliverable).toBeNull();
    expect(r.details!.smtp_outcome).toBe("budget_spent");
    const retryAt = Date.parse(r.details!.smtp_retry_at!);
    expect(retryAt).toBeGreaterThanOrEqual(before + SPENT_RETRY_AFTER_MS);
    expect(retryAt).toBeLessThanOrEqual(Date.now() + SPENT_RETRY_AFTER_MS);
  });
});
