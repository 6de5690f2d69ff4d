/**
 * The SMTP outcome of one address, one vocabulary from the socket to the JSON (docs/api.md, the
 * smtp_outcome table): what the mail server said (ProbeOutcome, in the probe's answer), or why no
 * probe answered (ProbeCallFailure); the public `details.smtp_outcome` is one of the two, the second
 * with a `probe_` prefix. The probe's reply classifier, the Worker's verdict and the OpenAPI document read
 * these lists; what each outcome proves is shared/email/reasons.ts's table; nothing spells an outcome by hand.
 */
import { z } from "zod";

/**
 * What the mail server said about the address itself.
 * - accepted: RCPT TO got 2xx.
 * - mailbox_not_found: 5xx that means "no such user" (5.1.x, 550/553 user-unknown wording).
 * - mailbox_full: 5.2.2 / 552 over quota: the mailbox exists but cannot take mail now.
 * - policy_block: 5.7.x, blocklist / spam / reputation / reverse-DNS wording: says nothing about the mailbox.
 * - rejected_unclear: a 5xx that says neither "no such mailbox" nor why (a bare "550 Rejected"): no evidence either way.
 * - temporary_failure: 4xx, greylisting.
 * - connection_failed: no MX host could be reached (refused, reset, TLS failure, bad greeting).
 * - timeout: the deadline ran out before an answer to RCPT TO.
 * - protocol_error: the server spoke something that is not SMTP (oversized lines, garbage), or the
 *   address needs SMTPUTF8 and the server does not offer it.
 * - refused_target: every address was private/reserved and the probe is not allowed to dial it.
 * - budget_spent: nothing was sent: the receiving server's unknown-recipient budget for this customer
 *   is spent, or the server asked us to back off (docs/probe.md "Receiver policy").
 * - not_probed: nothing was sent: the receiver's family is not probed (its policy forbids it, or RCPT
 *   there accepts every address), shared/email/receivers.ts.
 * - blocked: nothing was asked about the mailbox: the receiving server refuses our probe itself (its IP, its
 *   reputation, by policy: docs/probe.md "Blocks"), so the probe waits for the block to end (retry_after_ms).
 */
export const ProbeOutcome = z.enum([
  "accepted",
  "mailbox_not_found",
  "mailbox_full",
  "policy_block",
  "rejected_unclear",
  "temporary_failure",
  "connection_failed",
  "timeout",
  "protocol_error",
  "refused_target",
  "budget_spent",
  "not_probed",
  "blocked",
]);
export type ProbeOutcome = z.infer<typeof ProbeOutcome>;

/** Why the Worker has no answer from the probe: none configured, out of reach, an error status, an answer that breaks the contract, or no answer in time. */
export const ProbeCallFailure = z.enum(["not_configured", "unreachable", "error_status", "bad_response", "deadline"]);
export type ProbeCallFailure = z.infer<typeof ProbeCallFailure>;

/** The public `details.smtp_outcome`. */
export const SmtpOutcome = z.enum([...ProbeOutcome.options, ...ProbeCallFailure.options.map((f) => `probe_${f}` as const)]);
export type SmtpOutcome = z.infer<typeof SmtpOutcome>;

export const smtpOutcomeOfCallFailure = (failure: ProbeCallFailure): SmtpOutcome => `probe_${failure}`;
