/**
 * Score and classification of a verification (docs/api.md "Score" and "Classification"), as pure
 * functions of the facts the checks established. Warning and error texts are stable: users match
 * them in code.
 */
import type { EmailVerificationResult, ScoreDetails, ValidationChecks, VerificationReason } from "../api.ts";
import { reasonOfSmtpOutcome, type SmtpStatus } from "./reasons.ts";
import type { SmtpOutcome } from "../smtp-outcome.ts";

export const WARNINGS = {
  typo: "The domain looks like a typo of a common provider; see checks.typo_suggestion.",
  disposable: "The domain is a disposable email provider.",
  catchAll: "The mail server accepts any address (catch-all), so the mailbox itself could not be confirmed.",
  implicitMx: "The domain has no MX record; mail would be delivered to its address record (implicit MX).",
  dnsAssumed: "The DNS lookup failed, so the MX record was assumed.",
  mxHostsAssumed: "The addresses of the MX hosts could not be looked up, so the MX record was assumed.",
  smtpAssumed: "The SMTP check was inconclusive, so deliverability was assumed.",
  smtpNotChecked: "No SMTP check was performed.",
  providerForbidsProbing: "The mail provider forbids checking addresses without sending mail, so no SMTP check was made.",
  receiverBudgetSpent: "The receiving mail server's budget of checks for this account is spent, so no SMTP check was made; try again later (details.smtp_retry_at says when, if known).",
  probeRefused: "The receiving mail server refused our checking server (its address, not this mailbox), so no SMTP check was made; try again later (details.smtp_retry_at says when the refusal should end, if known).",
  mailboxFull: "The mailbox is full.",
  quotedLocal: "The local part is a quoted string, which many systems do not accept.",
  nonAsciiLocal: "The local part has non-ASCII characters, which need a mail server with SMTPUTF8.",
} as const;

export const ERRORS = {
  nullMx: "The domain does not accept email (null MX).",
  nxdomain: "The domain does not exist.",
  noMail: "The domain has no MX or address records.",
  mxHostsAbsent: "The domain's MX hosts do not exist or have no address records.",
  mailboxNotFound: "The mail server rejected the mailbox as non-existent.",
} as const;

/**
 * What DNS said about the domain's mail hosts. assumed: the MX query failed; hosts_assumed: MX
 * records, but every host's address lookup failed or was absent with at least one failure;
 * hosts_absent: MX records whose hosts all authoritatively do not exist.
 */
export type MxFact =
  | "verified"
  | "implicit"
  | "assumed"
  | "hosts_assumed"
  | "hosts_absent"
  | "null_mx"
  | "nxdomain"
  | "no_mail"
  | "not_checked";

/**
 * What the SMTP probe said about the mailbox: its status (shared/email/reasons.ts SmtpStatus, one per probe
 * outcome in its BY_OUTCOME table). not_probed with catchAll true: RCPT there accepts every address (answered
 * as the catch-all it behaves as); with catchAll null: the provider forbids verifying without sending.
 */
export type SmtpFact = {
  status: SmtpStatus;
  /** Whether the server accepts any address, whenever the probe learned it (any status); null when not. */
  catchAll: boolean | null;
};

export type VerificationFacts = {
  email: string;
  syntax: { ok: true; quotedLocal: boolean; nonAsciiLocal: boolean } | { ok: false; error: string };
  disposable: boolean;
  freeProvider: boolean;
  roleAccount: boolean;
  typoSuggestion: string | null;
  mx: MxFact;
  smtp: SmtpFact;
};

/** The facts of an address that failed the syntax check: nothing else is looked at. */
export function syntaxFailureFacts(email: string, error: string): VerificationFacts {
  return {
    email,
    syntax: { ok: false, error },
    disposable: false,
    freeProvider: false,
    roleAccount: false,
    typoSuggestion: null,
    mx: "not_checked",
    smtp: { status: "not_checked", catchAll: null },
  };
}

export const WARNING_PENALTY = 5;
export const MAX_WARNING_PENALTY = 25;

const MX_POINTS: Record<MxFact, number> = {
  verified: 40,
  implicit: 40,
  assumed: 15,
  hosts_assumed: 15,
  hosts_absent: 0,
  null_mx: 0,
  nxdomain: 0,
  no_mail: 0,
  not_checked: 0,
};

function smtpPoints(smtp: SmtpFact): number {
  switch (smtp.status) {
    case "deliverable":
      return smtp.catchAll ? 15 : 35;
    // A receiver known to accept every address scores as the catch-all it is; one we may not ask, as no check.
    case "not_probed":
      return smtp.catchAll ? 15 : 20;
    case "mailbox_full":
    case "assumed":
      return 10;
    // Nothing was sent: "no SMTP check performed" (docs/api.md "Score").
    case "budget_spent":
    case "probe_refused":
    case "not_checked":
      return 20;
    case "rejected":
      return 0;
  }
}

function collectErrors(f: VerificationFacts): string[] {
  if (!f.syntax.ok) return [f.syntax.error];
  const errors: string[] = [];
  if (f.mx === "null_mx") errors.push(ERRORS.nullMx);
  if (f.mx === "nxdomain") errors.push(ERRORS.nxdomain);
  if (f.mx === "no_mail") errors.push(ERRORS.noMail);
  if (f.mx === "hosts_absent") errors.push(ERRORS.mxHostsAbsent);
  if (f.smtp.status === "rejected") errors.push(ERRORS.mailboxNotFound);
  return errors;
}

function collectWarnings(f: VerificationFacts): string[] {
  const w: string[] = [];
  if (f.syntax.ok && f.syntax.quotedLocal) w.push(WARNINGS.quotedLocal);
  if (f.syntax.ok && f.syntax.nonAsciiLocal) w.push(WARNINGS.nonAsciiLocal);
  if (f.typoSuggestion) w.push(WARNINGS.typo);
  // A typo-squat on a disposable list (gmial.com) is reported as the typo, the thing the user can fix.
  if (f.disposable && !f.typoSuggestion) w.push(WARNINGS.disposable);
  if (f.mx === "implicit") w.push(WARNINGS.implicitMx);
  if (f.mx === "assumed") w.push(WARNINGS.dnsAssumed);
  if (f.mx === "hosts_assumed") w.push(WARNINGS.mxHostsAssumed);
  if ((f.smtp.status === "deliverable" || f.smtp.status === "not_probed") && f.smtp.catchAll) w.push(WARNINGS.catchAll);
  if (f.smtp.status === "not_probed" && !f.smtp.catchAll) w.push(WARNINGS.providerForbidsProbing);
  if (f.smtp.status === "budget_spent") w.push(WARNINGS.receiverBudgetSpent);
  if (f.smtp.status === "probe_refused") w.push(WARNINGS.probeRefused);
  if (f.smtp.status === "assumed") w.push(WARNINGS.smtpAssumed);
  if (f.smtp.status === "mailbox_full") w.push(WARNINGS.mailboxFull);
  if (f.smtp.status === "not_checked" && f.syntax.ok && MX_POINTS[f.mx] > 0) w.push(WARNINGS.smtpNotChecked);
  return w;
}

export function scoreVerification(f: VerificationFacts, warningCount: number): number {
  if (collectErrors(f).length > 0) return 0;
  const raw =
    20 + MX_POINTS[f.mx] + smtpPoints(f.smtp) - Math.min(warningCount * WARNING_PENALTY, MAX_WARNING_PENALTY);
  return Math.max(0, Math.min(100, raw));
}

export function classifyVerification(
  f: VerificationFacts,
  errors: string[],
  warnings: string[],
): EmailVerificationResult["classification"] {
  if (errors.length > 0) return "invalid";
  const assumption = f.mx === "assumed" || f.mx === "hosts_assumed" || f.smtp.status === "assumed";
  const catchAll = (f.smtp.status === "deliverable" || f.smtp.status === "not_probed") && f.smtp.catchAll === true;
  if (warnings.length > 0 || assumption || catchAll || f.disposable) return "risky";
  return "valid";
}

/**
 * The reasons the verdict reaches through its checks rather than the SMTP outcome: a refusal (checks.smtp_deliverable),
 * and the two that come after a DNS failure in precedence.
 */
const DECIDED_BY_CHECKS: ReadonlySet<VerificationReason> = new Set(["mailbox_not_found", "no_smtp_check", "deliverable"]);

/**
 * Why a result is what it is, in one word (docs/api.md "Reasons"), read from the result itself so a
 * stored one gives the same answer; the first that applies: the syntax, a domain without mail, the
 * mailbox refused, a typo of a provider's domain (with its suggestion, even when the typo-squat is on a
 * disposable list: the typo is what the user can act on), a disposable domain, a catch-all server (one
 * that accepted the address and a random one, or a receiver not probed because it accepts every
 * address), an inconclusive SMTP answer or none sent (by its outcome: the receiver's budget spent, a
 * provider that forbids probing), a failed DNS lookup, no SMTP check, and otherwise deliverable. The
 * 0009 migration spells the rules of its day in SQL for results stored before the field existed (none
 * of which has `typo` or the outcomes that came later, budget_spent and not_probed: every result since
 * stores its reason).
 */
export function verificationReason(r: Omit<EmailVerificationResult, "reason">): VerificationReason {
  if (r.checks.syntax === false) return "syntax";
  if (r.checks.mx_record === false) return "no_mail_domain";
  if (r.checks.smtp_deliverable === false) return "mailbox_not_found";
  if (r.checks.typo_suggestion) return "typo";
  if (r.checks.disposable === true) return "disposable";
  const outcome = r.details?.smtp_outcome;
  if (r.checks.accepts_any_email === true && (r.checks.smtp_deliverable === true || outcome === "not_probed")) return "catch_all";
  const byOutcome = outcome ? reasonOfSmtpOutcome(outcome) : undefined;
  if (byOutcome && !DECIDED_BY_CHECKS.has(byOutcome)) return byOutcome;
  if (r.score_details.dns_failed_assumption === true) return "dns_failure";
  if (r.checks.smtp_deliverable !== true) return "no_smtp_check";
  return "deliverable";
}

/** The public result for a set of facts (without the additive `details` and the `reason` that reads them). */
export function buildVerificationResult(f: VerificationFacts): Omit<EmailVerificationResult, "details" | "reason"> {
  const errors = collectErrors(f);
  const warnings = collectWarnings(f);
  const classification = classifyVerification(f, errors, warnings);
  const smtpAccepted = f.smtp.status === "deliverable";

  const score_details: ScoreDetails = {
    syntax_valid: f.syntax.ok,
    mx_verified: f.mx === "verified" || f.mx === "implicit",
    smtp_verified: smtpAccepted,
    // The check failed and SMTP verification was assumed (issue 44 item 5): a refusal of our probe is such a failure.
    smtp_failed_assumption: f.smtp.status === "assumed" || f.smtp.status === "mailbox_full" || f.smtp.status === "probe_refused",
    dns_failed_assumption: f.mx === "assumed" || f.mx === "hosts_assumed",
    has_warnings: warnings.length > 0,
    accepts_any_email: f.smtp.catchAll === true,
  };
  const checks: ValidationChecks = {
    syntax: f.syntax.ok,
    mx_record: f.mx === "verified" || f.mx === "implicit" || f.mx === "assumed" || f.mx === "hosts_assumed",
    smtp_deliverable: smtpAccepted ? true : f.smtp.status === "rejected" ? false : null,
    disposable: f.disposable,
    typo_suggestion: f.typoSuggestion,
    // What the probe learned, on any verdict (an invalid one included); null only when it learned nothing.
    accepts_any_email: f.smtp.catchAll,
    role_account: f.roleAccount,
    free_provider: f.freeProvider,
  };
  return {
    email: f.email,
    valid: classification !== "invalid",
    classification,
    score: scoreVerification(f, warnings.length),
    score_details,
    errors,
    warnings,
    checks,
  };
}
