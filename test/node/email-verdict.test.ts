import { describe, expect, it } from "vitest";
import { EmailVerificationResult } from "../../shared/api.ts";
import {
  buildVerificationResult,
  ERRORS,
  scoreVerification,
  WARNINGS,
  type MxFact,
  type SmtpFact,
  type VerificationFacts,
} from "../../shared/email/verdict.ts";

const clean: VerificationFacts = {
  email: "ana@example.com",
  syntax: { ok: true, quotedLocal: false, nonAsciiLocal: false },
  disposable: false,
  freeProvider: false,
  roleAccount: false,
  typoSuggestion: null,
  mx: "verified",
  smtp: { status: "deliverable", catchAll: false },
};
const facts = (over: Partial<VerificationFacts>): VerificationFacts => ({ ...clean, ...over });
const verdict = (over: Partial<VerificationFacts>) => {
  const r = buildVerificationResult(facts(over));
  // Every result satisfies the public schema exactly.
  EmailVerificationResult.strict().parse(r);
  return r;
};

describe("score table (docs/api.md \"Score\")", () => {
  // [mx, smtp, expected score, expected warnings]: syntax +20 always here.
  const rows: [MxFact, SmtpFact, number, string[]][] = [
    ["verified", { status: "deliverable", catchAll: false }, 20 + 40 + 35, []],
    ["verified", { status: "deliverable", catchAll: null }, 20 + 40 + 35, []],
    ["verified", { status: "deliverable", catchAll: true }, 20 + 40 + 15 - 5, [WARNINGS.catchAll]],
    ["verified", { status: "assumed", catchAll: null }, 20 + 40 + 10 - 5, [WARNINGS.smtpAssumed]],
    ["verified", { status: "not_checked", catchAll: null }, 20 + 40 + 20 - 5, [WARNINGS.smtpNotChecked]],
    ["verified", { status: "mailbox_full", catchAll: null }, 20 + 40 + 10 - 5, [WARNINGS.mailboxFull]],
    // Nothing sent: the receiver's budget spent, or a provider that forbids probing, score as no SMTP check;
    // a receiver that accepts every address (not probed) as the catch-all it is.
    ["verified", { status: "budget_spent", catchAll: null }, 20 + 40 + 20 - 5, [WARNINGS.receiverBudgetSpent]],
    ["verified", { status: "not_probed", catchAll: null }, 20 + 40 + 20 - 5, [WARNINGS.providerForbidsProbing]],
    ["verified", { status: "not_probed", catchAll: true }, 20 + 40 + 15 - 5, [WARNINGS.catchAll]],
    ["implicit", { status: "deliverable", catchAll: false }, 20 + 40 + 35 - 5, [WARNINGS.implicitMx]],
    ["assumed", { status: "not_checked", catchAll: null }, 20 + 15 + 20 - 10, [WARNINGS.dnsAssumed, WARNINGS.smtpNotChecked]],
    ["assumed", { status: "deliverable", catchAll: false }, 20 + 15 + 35 - 5, [WARNINGS.dnsAssumed]],
    ["hosts_assumed", { status: "not_checked", catchAll: null }, 20 + 15 + 20 - 10, [WARNINGS.mxHostsAssumed, WARNINGS.smtpNotChecked]],
  ];
  it.each(rows)("mx %s, smtp %j -> %i", (mx, smtp, score, warnings) => {
    const r = verdict({ mx, smtp });
    expect(r.score).toBe(score);
    expect(r.warnings).toEqual(warnings);
  });

  it("a clean valid address with an SMTP check scores 95", () => {
    const r = verdict({});
    expect(r).toMatchObject({ score: 95, classification: "valid", valid: true, errors: [], warnings: [] });
  });

  it("syntax invalid scores 0", () => {
    const r = verdict({ syntax: { ok: false, error: "The email address has invalid syntax." }, mx: "not_checked", smtp: { status: "not_checked", catchAll: null } });
    expect(r.score).toBe(0);
    expect(r.errors).toEqual(["The email address has invalid syntax."]);
    expect(r.warnings).toEqual([]);
    expect(r.score_details.syntax_valid).toBe(false);
    expect(r.checks).toMatchObject({ syntax: false, mx_record: false, smtp_deliverable: null, accepts_any_email: null });
  });

  it("5 points per warning, at most 25", () => {
    // quoted + non-ASCII + typo + implicit + catch-all = 5 warnings -> 25
    const five = verdict({
      syntax: { ok: true, quotedLocal: true, nonAsciiLocal: true },
      typoSuggestion: "ana@gmail.com",
      mx: "implicit",
      smtp: { status: "deliverable", catchAll: true },
    });
    expect(five.warnings).toHaveLength(5);
    expect(five.score).toBe(20 + 40 + 15 - 25);
    // A typo-squat on a disposable list warns once, of the typo.
    const squat = verdict({ typoSuggestion: "ana@gmail.com", disposable: true, mx: "implicit" });
    expect(squat.warnings).toEqual([WARNINGS.typo, WARNINGS.implicitMx]);
    expect(squat.score).toBe(95 - 10);
    // More warnings than five still cost 25.
    const many = facts({ mx: "implicit", smtp: { status: "deliverable", catchAll: true } });
    expect(scoreVerification(many, 6)).toBe(scoreVerification(many, 5));
  });

  it("scores stay within 0..100 and are integers", () => {
    const mxs: MxFact[] = ["verified", "implicit", "assumed", "hosts_assumed", "hosts_absent", "null_mx", "nxdomain", "no_mail"];
    const smtps: SmtpFact[] = [
      { status: "deliverable", catchAll: false },
      { status: "deliverable", catchAll: true },
      { status: "rejected", catchAll: null },
      { status: "mailbox_full", catchAll: null },
      { status: "assumed", catchAll: null },
      { status: "not_checked", catchAll: null },
    ];
    for (const mx of mxs)
      for (const smtp of smtps)
        for (const disposable of [false, true]) {
          const r = verdict({ mx, smtp, disposable, typoSuggestion: disposable ? "a@b.com" : null });
          expect(Number.isInteger(r.score)).toBe(true);
          expect(r.score).toBeGreaterThanOrEqual(0);
          expect(r.score).toBeLessThanOrEqual(100);
        }
  });
});

describe("classification rules", () => {
  it("invalid on any error, with score 0 and valid false", () => {
    for (const [over, error] of [
      [{ mx: "null_mx" as MxFact, smtp: { status: "not_checked", catchAll: null } as SmtpFact }, ERRORS.nullMx],
      [{ mx: "nxdomain" as MxFact, smtp: { status: "not_checked", catchAll: null } as SmtpFact }, ERRORS.nxdomain],
      [{ mx: "no_mail" as MxFact, smtp: { status: "not_checked", catchAll: null } as SmtpFact }, ERRORS.noMail],
      [{ mx: "hosts_absent" as MxFact, smtp: { status: "not_checked", catchAll: null } as SmtpFact }, ERRORS.mxHostsAbsent],
      [{ smtp: { status: "rejected", catchAll: false } as SmtpFact }, ERRORS.mailboxNotFound],
    ] as const) {
      const r = verdict(over);
      expect(r.classification).toBe("invalid");
      expect(r.valid).toBe(false);
      expect(r.score).toBe(0);
      expect(r.errors).toEqual([error]);
    }
  });

  it("a rejected mailbox has smtp_deliverable false", () => {
    expect(verdict({ smtp: { status: "rejected", catchAll: null } }).checks.smtp_deliverable).toBe(false);
  });

  it("domains without mail do not also warn that SMTP was not checked", () => {
    expect(verdict({ mx: "nxdomain", smtp: { status: "not_checked", catchAll: null } }).warnings).toEqual([]);
  });

  it("invalid results still carry a typo suggestion and its warning", () => {
    const r = verdict({ mx: "nxdomain", smtp: { status: "not_checked", catchAll: null }, typoSuggestion: "ana@gmail.com" });
    expect(r.classification).toBe("invalid");
    expect(r.checks.typo_suggestion).toBe("ana@gmail.com");
    expect(r.warnings).toEqual([WARNINGS.typo]);
  });

  const risky: [string, Partial<VerificationFacts>][] = [
    ["a warning (typo)", { typoSuggestion: "ana@gmail.com" }],
    ["a DNS assumption", { mx: "assumed" }],
    ["MX hosts whose lookups failed", { mx: "hosts_assumed", smtp: { status: "not_checked", catchAll: null } }],
    ["an SMTP assumption", { smtp: { status: "assumed", catchAll: null } }],
    ["a catch-all server", { smtp: { status: "deliverable", catchAll: true } }],
    ["a disposable domain", { disposable: true }],
    ["no SMTP check", { smtp: { status: "not_checked", catchAll: null } }],
    ["an implicit MX", { mx: "implicit" }],
    ["a quoted local part", { syntax: { ok: true, quotedLocal: true, nonAsciiLocal: false } }],
    ["a non-ASCII local part", { syntax: { ok: true, quotedLocal: false, nonAsciiLocal: true } }],
    ["a full mailbox", { smtp: { status: "mailbox_full", catchAll: null } }],
    ["the receiver's budget spent", { smtp: { status: "budget_spent", catchAll: null } }],
    ["a provider that forbids probing", { smtp: { status: "not_probed", catchAll: null } }],
    ["a provider that accepts every address, not probed", { smtp: { status: "not_probed", catchAll: true } }],
  ];
  it.each(risky)("risky (valid true) with %s", (_name, over) => {
    const r = verdict(over);
    expect(r.classification).toBe("risky");
    expect(r.valid).toBe(true);
    expect(r.errors).toEqual([]);
    expect(r.score_details.has_warnings).toBe(true);
  });

  it("role accounts and free providers are flags, not warnings", () => {
    const r = verdict({ roleAccount: true, freeProvider: true });
    expect(r.classification).toBe("valid");
    expect(r.checks).toMatchObject({ role_account: true, free_provider: true });
  });

  it("score_details and checks reflect each assumption", () => {
    const dns = verdict({ mx: "assumed", smtp: { status: "not_checked", catchAll: null } });
    expect(dns.score_details).toMatchObject({ dns_failed_assumption: true, mx_verified: false, smtp_verified: false });
    expect(dns.checks).toMatchObject({ mx_record: true, smtp_deliverable: null, accepts_any_email: null });
    const smtp = verdict({ smtp: { status: "assumed", catchAll: null } });
    expect(smtp.score_details).toMatchObject({ smtp_failed_assumption: true, mx_verified: true, smtp_verified: false });
    const catchAll = verdict({ smtp: { status: "deliverable", catchAll: true } });
    expect(catchAll.score_details).toMatchObject({ accepts_any_email: true, smtp_verified: true });
    expect(catchAll.checks).toMatchObject({ accepts_any_email: true, smtp_deliverable: true });
    expect(verdict({}).checks.accepts_any_email).toBe(false);
    // A refusal of our probe is a check that failed (issue 44 item 5): assumed, not verified.
    const refused = verdict({ smtp: { status: "probe_refused", catchAll: null } });
    expect(refused.score_details).toMatchObject({ smtp_failed_assumption: true, smtp_verified: false });
    // Nothing sent is no assumption and no verification; a known catch-all says so, without a deliverable RCPT.
    for (const smtpFact of [{ status: "budget_spent", catchAll: null }, { status: "not_probed", catchAll: null }, { status: "not_probed", catchAll: true }] as const) {
      const r = verdict({ smtp: smtpFact });
      expect(r.score_details, smtpFact.status).toMatchObject({ smtp_failed_assumption: false, smtp_verified: false, accepts_any_email: smtpFact.catchAll === true });
      expect(r.checks, smtpFact.status).toMatchObject({ smtp_deliverable: null, accepts_any_email: smtpFact.catchAll });
    }
  });

  it("MX hosts that do not exist: invalid, mx_record false, no SMTP warning", () => {
    const r = verdict({ mx: "hosts_absent", smtp: { status: "not_checked", catchAll: null } });
    expect(r).toMatchObject({ classification: "invalid", valid: false, score: 0, errors: [ERRORS.mxHostsAbsent], warnings: [] });
    expect(r.checks.mx_record).toBe(false);
    expect(r.score_details).toMatchObject({ mx_verified: false, dns_failed_assumption: false });
  });

  it("MX hosts whose lookups failed: the DNS assumption, with its own warning", () => {
    const r = verdict({ mx: "hosts_assumed", smtp: { status: "not_checked", catchAll: null } });
    expect(r.checks.mx_record).toBe(true);
    expect(r.score_details).toMatchObject({ mx_verified: false, dns_failed_assumption: true });
    expect(r.warnings).toContain(WARNINGS.mxHostsAssumed);
    expect(r.warnings).not.toContain(WARNINGS.dnsAssumed);
  });

  it("accepts_any_email says what the probe learned on every verdict, and agrees with score_details", () => {
    for (const status of ["deliverable", "rejected", "mailbox_full", "assumed"] as const) {
      for (const catchAll of [true, false, null]) {
        const r = verdict({ smtp: { status, catchAll } });
        expect(r.checks.accepts_any_email).toBe(catchAll);
        expect(r.score_details.accepts_any_email).toBe(catchAll === true);
      }
    }
    // A rejected mailbox on a server known not to be a catch-all: invalid, and false rather than null.
    const rejected = verdict({ smtp: { status: "rejected", catchAll: false } });
    expect(rejected.classification).toBe("invalid");
    expect(rejected.checks.accepts_any_email).toBe(false);
  });
});
