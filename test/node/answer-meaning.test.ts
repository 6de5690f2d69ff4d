/**
 * One table says what each answer proves (shared/email/reasons.ts); the Worker's count of a probe outcome, the verdict,
 * the job engine's recheck rule and the probe's harvest accounting read it and agree with it (the stored-address
 * rules: test/workers/personal-data-cron.test.ts).
 */
import { describe, expect, it } from "vitest";
import { isTemporary } from "../../edge/jobs/verification/line-policy.ts";
import { isUnknownUser } from "../../probe/policy/budget.ts";
import type { RcptClass } from "../../probe/smtp/classify.ts";
import { BY_OUTCOME, REASON_MEANING, VERIFICATION_REASONS, outcomeMeaning, reasonsProving } from "../../shared/email/reasons.ts";
import { buildVerificationResult, verificationReason, type VerificationFacts } from "../../shared/email/verdict.ts";
import { ProbeOutcome, SmtpOutcome } from "../../shared/smtp-outcome.ts";
import type { EmailVerificationResult } from "../../shared/api.ts";
import type { ProbeResponse } from "../../shared/probe-contract.ts";
import { completeVerification, prepareAddress } from "../../edge/verification/verify.ts";

/** A result for an address whose only notable fact is its SMTP outcome, counted as the table says (as the Worker counts it). */
function resultWith(outcome: SmtpOutcome, dnsFailed = false): EmailVerificationResult {
  const facts: VerificationFacts = {
    email: "ana@example.com",
    syntax: { ok: true, quotedLocal: false, nonAsciiLocal: false },
    disposable: false,
    freeProvider: false,
    roleAccount: false,
    typoSuggestion: null,
    mx: dnsFailed ? "assumed" : "verified",
    // A server that refuses a random address, wherever it answered about the mailbox (so an accepted address is no catch-all's).
    smtp: outcome in BY_OUTCOME
      ? { status: BY_OUTCOME[outcome as ProbeOutcome].smtpStatus, catchAll: ["accepted", "mailbox_not_found", "mailbox_full"].includes(outcome) ? false : null }
      : { status: "not_checked", catchAll: null },
  };
  const built = buildVerificationResult(facts);
  const result = {
    ...built,
    details: { domain: "example.com", mx_hosts: [], implicit_mx: false, smtp_host: null, smtp_reply: null, smtp_outcome: outcome, smtp_tls: null, dns_ms: null, smtp_ms: null, dns_cached: null, catch_all_cached: null, mx_provider: null },
  };
  return { ...result, reason: verificationReason(result) };
}

describe("the table", () => {
  it("has one row per reason, and no row for anything else", () => {
    expect(Object.keys(REASON_MEANING).sort()).toEqual([...VERIFICATION_REASONS].sort());
  });

  it("gives every SMTP outcome a reason of the vocabulary", () => {
    expect(Object.keys(BY_OUTCOME).sort()).toEqual([...ProbeOutcome.options].sort());
    for (const { reason } of Object.values(BY_OUTCOME)) expect(VERIFICATION_REASONS).toContain(reason);
  });

  it("counts only no such mailbox against the address, and nothing as checked where nothing was sent", () => {
    expect(Object.entries(BY_OUTCOME).filter(([, row]) => row.smtpStatus === "rejected").map(([outcome]) => outcome)).toEqual(["mailbox_not_found"]);
    for (const outcome of ["refused_target", "budget_spent", "not_probed"] as const) expect(BY_OUTCOME[outcome].smtpStatus).not.toMatch(/deliverable|rejected|assumed/);
  });

  it("says an over-quota mailbox exists, and only deliverable answers besides", () => {
    expect(reasonsProving("mailbox_exists")).toEqual(["mailbox_full", "deliverable"]);
    expect(reasonsProving("no_mailbox")).toEqual(["mailbox_not_found"]);
  });
});

describe("every place reads it", () => {
  it.each(SmtpOutcome.options)("the verdict gives %s the table's reason", (outcome) => {
    const expected = outcome in BY_OUTCOME ? BY_OUTCOME[outcome as ProbeOutcome].reason : "no_smtp_check";
    expect(resultWith(outcome).reason).toBe(expected);
  });

  it.each(ProbeOutcome.options)("the Worker counts a probe's %s as the table says: the same verdict, score, warnings, checks and reason", (outcome) => {
    const prepared = prepareAddress("ana@example.com");
    if (!prepared.ok) throw new Error("bad address");
    const expected = resultWith(outcome);
    const response: ProbeResponse = {
      outcome,
      catch_all: expected.checks.accepts_any_email ?? null,
      catch_all_cached: false,
      reply: null,
      mx_host: "mx.example.com",
      mx_address: "192.0.2.1",
      tls: true,
      pipelining: true,
      attempts: [],
      elapsed_ms: 5,
    };
    const dns = { status: "mx" as const, hosts: [{ host: "mx.example.com", preference: 10, addresses: ["192.0.2.1"] }], ms: 1, cached: false };
    const { details: _details, ...result } = completeVerification(prepared, dns as never, { ok: true, response, ms: 5 });
    const { details: _expectedDetails, ...counted } = expected;
    expect(result).toEqual(counted);
    expect(result.reason).toBe(BY_OUTCOME[outcome].reason);
  });

  it.each(SmtpOutcome.options)("a job line with %s is asked again soon exactly when the table says so", (outcome) => {
    expect(isTemporary(resultWith(outcome))).toBe(outcomeMeaning(outcome).recheckSoon);
  });

  it("a DNS failure is asked again soon, as the table says of dns_failure", () => {
    const result = resultWith("probe_not_configured", true);
    expect(result.reason).toBe("dns_failure");
    expect(isTemporary(result)).toBe(REASON_MEANING.dns_failure.recheckSoon);
  });

  const classes: Exclude<RcptClass, "too_many_recipients">[] = ["accepted", "mailbox_not_found", "mailbox_full", "policy_block", "temporary_failure", "rejected_unclear"];
  it.each(classes)("the receiver's budget counts a RCPT reply of class %s as an unknown user exactly when the table says it proves no mailbox", (cls) => {
    // A reply without an enhanced code, so that only the class decides.
    expect(isUnknownUser(cls, { code: cls === "accepted" ? 250 : 550, enhanced: null })).toBe(outcomeMeaning(cls).proves === "no_mailbox");
  });

  it("a permanent 5.1.x is an unknown user whatever its class; too many recipients is not", () => {
    expect(isUnknownUser("rejected_unclear", { code: 550, enhanced: "5.1.1" })).toBe(true);
    expect(isUnknownUser("too_many_recipients", { code: 452, enhanced: "4.5.3" })).toBe(false);
  });
});
