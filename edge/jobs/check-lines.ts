/**
 * Checks a job's claimed lines the way a single verification checks one address, with the I/O
 * shared: each domain resolved once, and the addresses sent to their probe's batch endpoint grouped
 * by domain, so one warm SMTP session checks many of them. Each answer is handed over as it comes
 * (the caller writes it at once: results are readable while the job runs).
 *
 * A line the probe hands back unasked (its mail server paces us and was still busy with the lines
 * ahead of it) is deferred: asked again in the job's next message, at no cost to its attempts.
 *
 * An answer that is temporary (greylisting, a 421 or a timeout at the mail server, a DNS lookup that
 * failed) is retried once, `retryDelaySeconds` later, before it is reported: greylisting exists to
 * turn away senders that never come back. A line the probe could not be asked about (unreachable,
 * an error status) goes back to pending and onto the queue after a pause, a few times, and is then
 * answered "no SMTP check", as a single verification would be.
 */
import { PROBE_MAX_BATCH_ADDRESSES, type ProbeBatchRequest, type ProbeMxHost } from "../../shared/probe-contract.ts";
import type { MailHostResolution } from "../mx/resolve.ts";
import { probeOrder } from "../probe-client.ts";
import { completeVerification, prepareAddress, probeHostsFor, resolveDomain, type PreparedAddress } from "../verify.ts";
import { callProbeBatch } from "./probe-batch.ts";
import type { ClaimedItem, LineAnswer } from "./store.ts";

export type CheckLinesConfig = {
  dohUrl: string;
  probeUrls: string[];
  probeSecret: string | undefined;
  smtpTimeoutSeconds: number;
  retryDelaySeconds: number;
};

/** After this many claims without the probe answering, a line is answered without an SMTP check. */
export const MAX_PROBE_ATTEMPTS = 5;
/** Domains resolved at once. */
const DNS_CONCURRENCY = 16;
/**
 * How long a line may wait its turn at a mail server that paces us (the probe's queue for it) before
 * the probe hands it back unasked; it is then asked in the job's next message, not timed out.
 */
const QUEUE_ALLOWANCE_MS = 30_000;
const MAX_BATCH_DEADLINE_MS = 120_000;

/** The probe's deadline for a job's batch: time to wait its turn, then the SMTP timeout. */
export const batchDeadlineMs = (smtpTimeoutSeconds: number) => Math.min(MAX_BATCH_DEADLINE_MS, smtpTimeoutSeconds * 1000 + QUEUE_ALLOWANCE_MS);

const TEMPORARY_OUTCOMES = new Set(["temporary_failure", "timeout"]);

type Line = { item: ClaimedItem; prepared: Extract<PreparedAddress, { ok: true }>; dns: MailHostResolution; mx: ProbeMxHost[] | null };

async function resolveAll(domains: string[], dohUrl: string): Promise<Map<string, MailHostResolution>> {
  const out = new Map<string, MailHostResolution>();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(DNS_CONCURRENCY, domains.length) }, async () => {
      while (next < domains.length) {
        const domain = domains[next++]!;
        out.set(domain, await resolveDomain(domain, dohUrl));
      }
    }),
  );
  return out;
}

export async function checkLines(items: ClaimedItem[], config: CheckLinesConfig, answer: (a: LineAnswer) => Promise<void>): Promise<void> {
  const lines: Line[] = [];
  for (const item of items) {
    const prepared = prepareAddress(item.email);
    if (!prepared.ok) await answer({ position: item.position, kind: "done", result: prepared.result });
    else lines.push({ item, prepared, dns: undefined as never, mx: null });
  }
  const dnsByDomain = await resolveAll([...new Set(lines.map((l) => l.prepared.parsed.domain))], config.dohUrl);
  for (const line of lines) {
    line.dns = dnsByDomain.get(line.prepared.parsed.domain)!;
    line.mx = probeHostsFor(line.dns);
  }

  /** Done, or a retry when the answer is temporary and this was the first try. */
  const settle = (line: Line, result: ReturnType<typeof completeVerification>) => {
    const temporary = TEMPORARY_OUTCOMES.has(result.details?.smtp_outcome ?? "") || result.score_details.dns_failed_assumption === true;
    if (temporary && !line.item.retried && config.retryDelaySeconds > 0) {
      return answer({ position: line.item.position, kind: "retry", result, retryAt: Date.now() + config.retryDelaySeconds * 1000 });
    }
    return answer({ position: line.item.position, kind: "done", result });
  };

  // Nothing to dial (invalid domain, DNS failure) or no probe: answered now, as a single check would be.
  const toProbe = new Map<string, Line[]>();
  for (const line of lines) {
    if (!line.mx || config.probeUrls.length === 0 || !config.probeSecret) {
      await settle(line, completeVerification(line.prepared, line.dns, line.mx ? { ok: false, reason: "not_configured", ms: 0 } : null));
      continue;
    }
    const probe = probeFor(config.probeUrls, line);
    toProbe.set(probe, [...(toProbe.get(probe) ?? []), line]);
  }

  await Promise.all(
    [...toProbe].map(async ([probeUrl, probeLines]) => {
      for (let start = 0; start < probeLines.length; start += PROBE_MAX_BATCH_ADDRESSES) {
        await askProbe(probeUrl, probeLines.slice(start, start + PROBE_MAX_BATCH_ADDRESSES), config, settle, answer);
      }
    }),
  );
}

/**
 * The domain's probe in the rendezvous ranking (README "Several probes"), moving one place down the
 * ranking for each earlier claim that ended without an answer: a probe that cannot be reached (or is
 * busy) hands its lines to the next one at their next claim, as a single verification fails over at
 * once. The second try of a temporary answer stays where the first went: greylisting remembers the
 * sending address, and only the same probe's retry gets through.
 */
function probeFor(probeUrls: string[], line: Line): string {
  const order = probeOrder(probeUrls, line.prepared.parsed.domain);
  const unanswered = Math.max(0, line.item.attempts - 1 - (line.item.retried ? 1 : 0));
  return order[unanswered % order.length]!;
}

async function askProbe(
  probeUrl: string,
  lines: Line[],
  config: CheckLinesConfig,
  settle: (line: Line, result: ReturnType<typeof completeVerification>) => Promise<void>,
  answer: (a: LineAnswer) => Promise<void>,
): Promise<void> {
  const byEmail = new Map<string, Line[]>();
  const groups = new Map<string, { mx: ProbeMxHost[]; emails: string[] }>();
  for (const line of lines) {
    const email = `${line.prepared.parsed.local}@${line.prepared.parsed.domain}`;
    byEmail.set(email, [...(byEmail.get(email) ?? []), line]);
    const domain = line.prepared.parsed.domain;
    const group = groups.get(domain) ?? { mx: line.mx!, emails: [] };
    if (!group.emails.includes(email)) group.emails.push(email);
    groups.set(domain, group);
  }
  const request: ProbeBatchRequest = {
    deadline_ms: batchDeadlineMs(config.smtpTimeoutSeconds),
    queue_ms: QUEUE_ALLOWANCE_MS,
    catch_all_check: true,
    groups: [...groups.values()],
  };
  const answered = new Set<string>();
  const end = await callProbeBatch(probeUrl, config.probeSecret!, request, async (probeLine) => {
    answered.add(probeLine.email);
    for (const line of byEmail.get(probeLine.email) ?? []) {
      if ("deferred" in probeLine) await answer({ position: line.item.position, kind: "defer" });
      else await settle(line, completeVerification(line.prepared, line.dns, { ok: true, response: probeLine.result, ms: probeLine.result.elapsed_ms }));
    }
  });
  for (const [email, emailLines] of byEmail) {
    if (answered.has(email)) continue;
    for (const line of emailLines) {
      // The probe did not answer for this line: back to pending, unless it has failed too often.
      if (line.item.attempts < MAX_PROBE_ATTEMPTS) await answer({ position: line.item.position, kind: "release" });
      else await settle(line, completeVerification(line.prepared, line.dns, { ok: false, reason: end.ok ? "bad_response" : end.reason, ms: 0 }));
    }
  }
}
