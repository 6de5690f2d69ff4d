/**
 * The answer vocabulary and what each answer proves, in one place (docs/api.md "Reasons"). Every rule about what an
 * answer means reads these tables: how the Worker counts a probe's outcome (edge/verify.ts) and the verdict's reason
 * for it (shared/email/verdict.ts), which answers a job line asks again (edge/jobs/verification/line-policy.ts), which answers
 * bring back, keep or retry a stored address (edge/personal-data-cron.ts), and which RCPT replies a receiver's
 * harvest defence counts (probe/policy/budget.ts). A reason or an outcome without a row fails the type check and
 * test/node/answer-meaning.test.ts.
 */
import type { ProbeOutcome, SmtpOutcome } from "../smtp-outcome.ts";

/**
 * Why a result is what it is, in one word: the vocabulary of job summaries and result filters, in order of
 * precedence (verificationReason picks the first that applies).
 */
export const VERIFICATION_REASONS = [
  "syntax",
  "no_mail_domain",
  "mailbox_not_found",
  "typo",
  "disposable",
  "catch_all",
  "policy_block",
  "probe_refused",
  "temporary_failure",
  "mailbox_full",
  "connection_failed",
  "smtp_inconclusive",
  "receiver_budget_spent",
  "provider_forbids_probing",
  "dns_failure",
  "no_smtp_check",
  "deliverable",
] as const;
export type VerificationReason = (typeof VERIFICATION_REASONS)[number];

/**
 * What an answer proves about the address's mailbox:
 * - mailbox_exists: the server knows the mailbox (it took the address, or refused it only for being over quota);
 * - no_mailbox: the server refused the mailbox as non-existent;
 * - no_mail: the address cannot take mail at all (its syntax, or a domain without mail);
 * - accepts_any: the server takes every address, so its yes says nothing about this one;
 * - settled_elsewhere: nothing about the mailbox, and asking again would not change that (a typo or a disposable
 *   domain, a provider we may not ask);
 * - nothing_yet: nothing about the mailbox so far; a later check may tell (blocks, 4xx, unreachable, no check).
 */
export type AnswerProof = "mailbox_exists" | "no_mailbox" | "no_mail" | "accepts_any" | "settled_elsewhere" | "nothing_yet";

export type AnswerMeaning = {
  proves: AnswerProof;
  /** Worth one more try in the same job a few minutes later: the answer is known to change (greylisting, a timeout, DNS). */
  recheckSoon: boolean;
};

/** Reason -> what it proves. */
export const REASON_MEANING: Readonly<Record<VerificationReason, AnswerMeaning>> = {
  syntax: { proves: "no_mail", recheckSoon: false },
  no_mail_domain: { proves: "no_mail", recheckSoon: false },
  mailbox_not_found: { proves: "no_mailbox", recheckSoon: false },
  typo: { proves: "settled_elsewhere", recheckSoon: false },
  disposable: { proves: "settled_elsewhere", recheckSoon: false },
  catch_all: { proves: "accepts_any", recheckSoon: false },
  policy_block: { proves: "nothing_yet", recheckSoon: false },
  // Our probe was refused, not the mailbox: a job's line waits for the block to end (edge/jobs/verification/line-policy.ts).
  probe_refused: { proves: "nothing_yet", recheckSoon: false },
  temporary_failure: { proves: "nothing_yet", recheckSoon: true },
  // An over-quota refusal (5.2.2, 552, 4.2.2) names a mailbox the server has: proof that it exists, though mail may
  // bounce until it is emptied (so the verdict is risky).
  mailbox_full: { proves: "mailbox_exists", recheckSoon: false },
  connection_failed: { proves: "nothing_yet", recheckSoon: false },
  smtp_inconclusive: { proves: "nothing_yet", recheckSoon: false },
  receiver_budget_spent: { proves: "nothing_yet", recheckSoon: false },
  provider_forbids_probing: { proves: "settled_elsewhere", recheckSoon: false },
  dns_failure: { proves: "nothing_yet", recheckSoon: true },
  no_smtp_check: { proves: "nothing_yet", recheckSoon: false },
  deliverable: { proves: "mailbox_exists", recheckSoon: false },
};

/**
 * What SMTP established about the mailbox, as the verdict scores it (shared/email/verdict.ts SmtpFact).
 * - deliverable: RCPT TO accepted.
 * - rejected: the server said the mailbox does not exist.
 * - mailbox_full: the mailbox exists but is over quota; the address may bounce, so risky.
 * - assumed: inconclusive (policy block, greylisting, timeouts, connection failures on every MX).
 * - not_checked: no probe configured, unreachable, or nothing to dial.
 * - budget_spent: nothing was sent: the receiving server's budget of checks for this customer is
 *   spent, or it asked us to back off (docs/probe.md "Receiver policy").
 * - not_probed: nothing was sent, by the receiver's policy (shared/email/receivers.ts).
 * - probe_refused: nothing was asked: the receiving server refuses our probe (a block), not the mailbox.
 */
export type SmtpStatus = "deliverable" | "rejected" | "mailbox_full" | "assumed" | "not_checked" | "budget_spent" | "not_probed" | "probe_refused";

/**
 * What each thing a mail server can say (or the probe's reason for saying nothing) is, one row an outcome:
 * - reason: its reason. The verdict only uses it after the checks that come first in precedence (syntax, domain,
 *   typo, disposable, catch-all): an accepted address may still be a catch-all's, and one refused as unknown is
 *   decided by its check.
 * - smtpStatus: how the Worker counts it in the verdict (docs/api.md, the smtp_outcome table): only "no such
 *   mailbox" is evidence against the address.
 */
export const BY_OUTCOME: Readonly<Record<ProbeOutcome, { reason: VerificationReason; smtpStatus: SmtpStatus }>> = {
  accepted: { reason: "deliverable", smtpStatus: "deliverable" },
  mailbox_not_found: { reason: "mailbox_not_found", smtpStatus: "rejected" },
  mailbox_full: { reason: "mailbox_full", smtpStatus: "mailbox_full" },
  policy_block: { reason: "policy_block", smtpStatus: "assumed" },
  rejected_unclear: { reason: "smtp_inconclusive", smtpStatus: "assumed" },
  temporary_failure: { reason: "temporary_failure", smtpStatus: "assumed" },
  timeout: { reason: "temporary_failure", smtpStatus: "assumed" },
  connection_failed: { reason: "connection_failed", smtpStatus: "assumed" },
  protocol_error: { reason: "smtp_inconclusive", smtpStatus: "assumed" },
  // The probe would not dial the hosts (private or reserved addresses): nothing was checked.
  refused_target: { reason: "no_smtp_check", smtpStatus: "not_checked" },
  // Nothing was sent: the receiver's budget for this customer is spent, or its family is not probed.
  budget_spent: { reason: "receiver_budget_spent", smtpStatus: "budget_spent" },
  not_probed: { reason: "provider_forbids_probing", smtpStatus: "not_probed" },
  // Nothing was asked: the receiving server refuses our probe itself (a block of its address).
  blocked: { reason: "probe_refused", smtpStatus: "probe_refused" },
};

/** The reason for a public smtp_outcome: a probe that did not answer is no SMTP check. */
export function reasonOfSmtpOutcome(outcome: SmtpOutcome): VerificationReason {
  return outcome in BY_OUTCOME ? BY_OUTCOME[outcome as ProbeOutcome].reason : "no_smtp_check";
}

/** What an SMTP outcome proves (the probe's RCPT classes are outcomes too). */
export function outcomeMeaning(outcome: SmtpOutcome): AnswerMeaning {
  return REASON_MEANING[reasonOfSmtpOutcome(outcome)];
}

/** The reasons that prove one of `proofs`, in the vocabulary's order. */
export function reasonsProving(...proofs: AnswerProof[]): VerificationReason[] {
  return VERIFICATION_REASONS.filter((reason) => proofs.includes(REASON_MEANING[reason].proves));
}
