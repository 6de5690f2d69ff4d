/**
 * One table says what each answer proves (shared/email/reasons.ts); the verdict, the job engine's recheck rule and
 * the probe's harvest accounting read it and agree with it (the stored-address rules: test/workers/personal-data-cron.test.ts).
 */
import { describe, expect, it } from "vitest";
import { isTemporary } from "../../edge/jobs/line-policy.ts";
import { isUnknownUser } from "../../probe/harvest-budget.ts";
import type { RcptClass } from "../../probe/smtp/classify.ts";
import { REASON_MEANING, REASON_OF_OUTCOME, VERIFICATION_REASONS, outcomeMeaning, reasonsProving } from "../../shared/email/reasons.ts";
import { buildVerificationResult, verificationReason, type VerificationFacts } from "../../shared/email/verdict.ts";
import { ProbeOutcome, SmtpOutcome } from "../../shared/smtp-outcome.ts";
import type { EmailVerificationResult } from "../../shared/api.ts";

/** A result for an address whose only notable fact is its SMTP outcome (as the Worker builds it). */
function resultWith(outcome: SmtpOutcome, dnsFailed = false): EmailVerificationResult {
  const facts: VerificationFacts = {
    email: "ana@example.com",
    syntax: { ok: true, quotedLocal: false, nonAsciiLocal: false },
    disposable: false,
    freeProvider: false,
    roleAccount: false,
    typoSuggestion: null,
    mx: dnsFailed ? "assumed" : "verified",
    smtp:
      outcome === "accepted"
        ? { status: "deliverable", catchAll: false }
        : outcome === "mailbox_not_found"
          ? { status: "rejected", catchAll: false }
          : outcome === "mailbox_full"
            ? { status: "mailbox_full", catchAll: false }
            : outcome === "budget_spent"
              ? { status: "budget_spent", catchAll: null }
              : outcome === "not_probed"
                ? { status: "not_probed", catchAll: null }
                : outcome.startsWith("probe_") || outcome === "refused_target"
                  ? { status: "not_checked", catchAll: null }
                  : { status: "assumed", catchAll: null },
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
    expect(Object.keys(REASON_OF_OUTCOME).sort()).toEqual([...ProbeOutcome.options].sort());
    for (const reason of Object.values(REASON_OF_OUTCOME)) expect(VERIFICATION_REASONS).toContain(reason);
  });

  it("says an over-quota mailbox exists, and only deliverable answers besides", () => {
    expect(reasonsProving("mailbox_exists")).toEqual(["mailbox_full", "deliverable"]);
    expect(reasonsProving("no_mailbox")).toEqual(["mailbox_not_found"]);
  });
});

describe("every place reads it", () => {
  it.each(SmtpOutcome.options)("the verdict gives %s the table's reason", (outcome) => {
    const expected = outcome in REASON_OF_OUTCOME ? REASON_OF_OUTCOME[outcome as ProbeOutcome] : "no_smtp_check";
    expect(resultWith(outcome).reason).toBe(expected);
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
  it.each(classes)("the harvest budget counts a RCPT reply of class %s as an unknown user exactly when the table says it proves no mailbox", (cls) => {
    // A reply without an enhanced code, so that only the class decides.
    expect(isUnknownUser(cls, { code: cls === "accepted" ? 250 : 550, enhanced: null })).toBe(outcomeMeaning(cls).proves === "no_mailbox");
  });

  it("a permanent 5.1.x is an unknown user whatever its class; too many recipients is not", () => {
    expect(isUnknownUser("rejected_unclear", { code: 550, enhanced: "5.1.1" })).toBe(true);
    expect(isUnknownUser("too_many_recipients", { code: 452, enhanced: "4.5.3" })).toBe(false);
  });
});
