/**
 * An email verification: the cheap checks (syntax, lists, typo), MX over DoH, then the probe, and
 * the verdict. Every I/O step is bounded in time; no failure here becomes a 500 or a hang.
 * `verifyEmail` is one address end to end (GET /v1/email_verifications); a job's lines go through the same steps
 * (`prepareAddress`, `resolveDomain`, `probeHostsFor`, `completeVerification`) with their I/O shared
 * (edge/jobs/verification/check-lines.ts).
 */
import type { EmailVerificationResult, VerificationDetails } from "../../shared/api.ts";
import { addressKey, parseEmailAddress, type ParsedEmailAddress } from "../../shared/email/syntax.ts";
import { isDisposableDomain, isFreeProviderDomain, isRoleAccount } from "../../shared/email/lists.ts";
import { suggestTypo } from "../../shared/email/typo.ts";
import { buildVerificationResult, syntaxFailureFacts, verificationReason, type MxFact, type SmtpFact } from "../../shared/email/verdict.ts";
import { BY_OUTCOME } from "../../shared/email/reasons.ts";
import type { ProbeMxHost, ProbeResponse } from "../../shared/probe-contract.ts";
import { mxProvider, rcptProvesNothing, receiverFamily, receiverPolicy, type ReceiverFamily } from "../../shared/email/receivers.ts";
import { smtpOutcomeOfCallFailure, type ProbeOutcome } from "../../shared/smtp-outcome.ts";
import { createDnsCache, resolveMailHosts, type MailHostResolution } from "./mx.ts";
import { callProbe, type ProbeCallResult } from "./probe-call.ts";

/** DNS gets its own budget on top of smtp_timeout (the whole answer within about smtp_timeout + 2 s). */
export const DNS_DEADLINE_MS = 2_000;

// One cache per isolate: answers are shared by every request this isolate serves.
const isolateDnsCache = createDnsCache();

export type VerifyOptions = {
  dohUrl: string;
  /** The probes to ask, in no particular order (see callProbe); empty: no SMTP check. */
  probeUrls?: string[];
  probeSecret?: string;
  smtpTimeoutSeconds: number;
  /** For the log lines the probe call may write. */
  requestId?: string;
  /** The account's opaque tenant (probeTenant): its own lane in every receiver's budget. */
  tenant?: string;
};

const MX_FACT: Record<MailHostResolution["status"], MxFact> = {
  mx: "verified",
  implicit: "implicit",
  mx_hosts_absent: "hosts_absent",
  mx_hosts_failed: "hosts_assumed",
  failed: "assumed",
  null_mx: "null_mx",
  nxdomain: "nxdomain",
  no_mail: "no_mail",
};

/**
 * What SMTP established. At a provider that accepts every recipient at RCPT time (Yahoo, most Microsoft 365
 * tenants: rcptProvesNothing in shared/email/receivers.ts), an accepted address whose catch-all test gave no answer counts as
 * catch-all: the acceptance proves nothing there, so it is never `valid` on its own.
 */
function smtpFact(call: ProbeCallResult | null, provider: string | null): SmtpFact {
  if (!call || !call.ok) return { status: "not_checked", catchAll: null };
  const catchAll = call.response.catch_all ?? (rcptProvesNothing(provider) && call.response.outcome === "accepted" ? true : null);
  return { status: BY_OUTCOME[call.response.outcome].smtpStatus, catchAll };
}

/**
 * An answer for which nothing was sent, in the probe's own shape (one vocabulary from the probe to the
 * JSON): not_probed (catchAll true where RCPT accepts every address), budget_spent (when the
 * receiver's budget next has room, if known), or blocked (the receiver refuses our probe: when that ends, if known).
 */
export function nothingSentAnswer(outcome: "not_probed" | "budget_spent" | "blocked", { catchAll = null, retryAfterMs }: { catchAll?: boolean | null; retryAfterMs?: number } = {}): ProbeCallResult {
  const response: ProbeResponse = {
    outcome,
    catch_all: catchAll,
    catch_all_cached: false,
    reply: null,
    mx_host: null,
    mx_address: null,
    tls: null,
    pipelining: null,
    attempts: [],
    elapsed_ms: 0,
    ...(retryAfterMs === undefined ? {} : { retry_after_ms: retryAfterMs }),
  };
  return { ok: true, response, ms: 0 };
}

/**
 * The answer for a family that is not probed, given without a conversation (docs/probe.md "Receiver
 * policy"): RCPT there accepts every address (yahoo: the catch-all it behaves as), or the provider
 * forbids verifying without sending (outlook-consumer). Null: the family is probed.
 */
export function unprobedAnswer(family: ReceiverFamily): ProbeCallResult | null {
  const { probe } = receiverPolicy(family);
  if (probe === "yes") return null;
  return nothingSentAnswer("not_probed", { catchAll: probe === "accepts_all" ? true : null });
}

/** An address after the checks that need no I/O: its final answer (bad syntax), or what the rest needs. */
export type PreparedAddress =
  | { ok: false; result: EmailVerificationResult }
  | { ok: true; parsed: ParsedEmailAddress; disposable: boolean; freeProvider: boolean; roleAccount: boolean; typoSuggestion: string | null };

export function prepareAddress(email: string): PreparedAddress {
  const parsed = parseEmailAddress(email);
  if (!parsed.ok) {
    const result = { ...buildVerificationResult(syntaxFailureFacts(parsed.email, parsed.error)), details: emptyDetails(null) };
    return { ok: false, result: { ...result, reason: verificationReason(result) } };
  }
  return {
    ok: true,
    parsed,
    disposable: isDisposableDomain(parsed.domain),
    freeProvider: isFreeProviderDomain(parsed.domain),
    roleAccount: isRoleAccount(parsed.local),
    typoSuggestion: suggestTypo(parsed.local, parsed.domain),
  };
}

/** MX hosts and their addresses over DoH, within the DNS budget, from this isolate's cache when it can. */
export function resolveDomain(domain: string, dohUrl: string): Promise<MailHostResolution> {
  return resolveMailHosts(domain, { dohUrl, deadlineMs: DNS_DEADLINE_MS, cache: isolateDnsCache });
}

/** What the probe is given to dial: the MX hosts with addresses, or null when DNS left nothing to dial. */
export function probeHostsFor(dns: MailHostResolution): ProbeMxHost[] | null {
  if (dns.status !== "mx" && dns.status !== "implicit") return null;
  const dialable = dns.hosts.filter((h) => h.addresses.length > 0);
  if (dialable.length === 0) return null;
  return dialable.slice(0, 10).map((h) => ({ host: h.host, preference: h.preference, addresses: h.addresses.slice(0, 16) }));
}

/** The result, from what the checks, DNS and the probe (null: not asked) established. */
export function completeVerification(
  prepared: Extract<PreparedAddress, { ok: true }>,
  dns: MailHostResolution,
  probe: ProbeCallResult | null,
  now = Date.now(),
): EmailVerificationResult {
  const { parsed } = prepared;
  const mx = probeHostsFor(dns);
  const provider = mxProvider(dns.hosts);
  const result = buildVerificationResult({
    email: parsed.email,
    syntax: { ok: true, quotedLocal: parsed.quotedLocal, nonAsciiLocal: parsed.nonAsciiLocal },
    disposable: prepared.disposable,
    freeProvider: prepared.freeProvider,
    roleAccount: prepared.roleAccount,
    typoSuggestion: prepared.typoSuggestion,
    mx: MX_FACT[dns.status],
    smtp: smtpFact(probe, provider),
  });
  const reply = probe?.ok ? probe.response.reply : null;
  const complete = {
    ...result,
    details: {
      domain: parsed.domain,
      mx_hosts: dns.hosts.map((h) => ({ host: h.host, preference: h.preference })),
      implicit_mx: dns.status === "implicit",
      smtp_host: probe?.ok ? probe.response.mx_host : null,
      smtp_reply: reply,
      smtp_outcome: probe ? (probe.ok ? probe.response.outcome : smtpOutcomeOfCallFailure(probe.reason)) : null,
      smtp_tls: probe?.ok ? probe.response.tls : null,
      dns_ms: dns.ms,
      smtp_ms: probe ? probe.ms : null,
      dns_cached: dns.cached,
      catch_all_cached: probe?.ok ? probe.response.catch_all_cached : null,
      mx_provider: provider,
      receiver_family: mx ? receiverFamily(mx) : null,
      smtp_retry_at:
        probe?.ok && (probe.response.outcome === "budget_spent" || probe.response.outcome === "blocked") && probe.response.retry_after_ms !== undefined
          ? new Date(now + probe.response.retry_after_ms).toISOString()
          : null,
    },
  };
  return { ...complete, reason: verificationReason(complete) };
}

export async function verifyEmail(email: string, options: VerifyOptions): Promise<EmailVerificationResult> {
  const prepared = prepareAddress(email);
  if (!prepared.ok) return prepared.result;
  const dns = await resolveDomain(prepared.parsed.domain, options.dohUrl);
  const mx = probeHostsFor(dns);
  const probe = mx
    ? (unprobedAnswer(receiverFamily(mx)) ??
      (await callProbe(
        options.probeUrls ?? [],
        options.probeSecret,
        {
          email: addressKey(prepared.parsed),
          mx,
          deadline_ms: options.smtpTimeoutSeconds * 1000,
          catch_all_check: true,
          ...(options.tenant ? { tenant: options.tenant } : {}),
        },
        options.requestId,
      )))
    : null;
  return completeVerification(prepared, dns, probe);
}

function emptyDetails(domain: string | null): VerificationDetails {
  return {
    domain,
    mx_hosts: [],
    implicit_mx: false,
    smtp_host: null,
    smtp_reply: null,
    smtp_outcome: null,
    smtp_tls: null,
    dns_ms: null,
    smtp_ms: null,
    dns_cached: null,
    catch_all_cached: null,
    mx_provider: null,
    receiver_family: null,
    smtp_retry_at: null,
  };
}
