/**
 * Checks a job's claimed lines the way a single verification checks one address, with the I/O
 * shared: each domain resolved once, and the addresses sent to their probe's batch endpoint grouped
 * by domain, so one warm SMTP session checks many of them. Each answer is handed over as it comes
 * (the caller writes it at once: results are readable while the job runs).
 *
 * What becomes of each line (done, recheck, defer, release, give up) is decided in
 * edge/jobs/verification/line-policy.ts; this file only gathers the facts and hands the answers over.
 */
import { addressKey } from "../../../shared/email/syntax.ts";
import { PROBE_MAX_BATCH_ADDRESSES, type ProbeBatchRequest, type ProbeMxHost } from "../../../shared/probe-contract.ts";
import type { MailHostResolution } from "../../verification/mx.ts";
import { probeOrder, rankingKey } from "../../verification/probe-ranking.ts";
import { completeVerification, nothingSentAnswer, prepareAddress, probeHostsFor, resolveDomain, unprobedAnswer, type PreparedAddress } from "../../verification/verify.ts";
import { receiverFamily } from "../../../shared/email/receivers.ts";
import { afterAnswer, afterDeferral, afterProbeFailure, afterRefusal, overClaimed, probeRank, refusedWaitingOn, waitedTooLong, waitsOnBlock } from "./line-policy.ts";
import { callProbeBatch } from "../../verification/probe-batch.ts";
import { lessonKeys } from "../store/receiver-lessons.ts";
import type { ClaimedLine, LineAnswer } from "../store/lines.ts";
import type { UntrustedNotice } from "./untrusted.ts";
import type { LearnedRuleWire } from "../../../shared/probe-contract.ts";

/**
 * What a probe says after its answers (shared/probe-contract.ts): answers no longer trusted, refusals that were its
 * block (answers to take back), and what receivers taught it (for the fleet), each for the caller to apply.
 */
export type ProbeNotices = {
  untrusted?(notice: UntrustedNotice): Promise<void>;
  refused?(notice: UntrustedNotice): Promise<void>;
  learned?(rules: LearnedRuleWire[]): Promise<void>;
};

export type CheckLinesConfig = {
  dohUrl: string;
  probeUrls: string[];
  probeSecret: string | undefined;
  smtpTimeoutSeconds: number;
  /** JOB_RETRY_DELAY_SECONDS: how long a temporary answer waits for its recheck (0: no recheck). */
  recheckDelaySeconds: number;
  /** JOB_RECEIVER_WAIT_MAX_SECONDS in ms: how long a line may wait on a receiver's budget before it is answered. */
  receiverWaitMaxMs: number;
  /** The account's opaque tenant: each probe shares a mail server's turns between tenants. */
  tenant: string;
  /**
   * What the fleet learned by being blocked or throttled at these budget keys (edge/jobs/store/receiver-lessons.ts,
   * docs/probe.md "What is learned"): sent with every batch, so every probe keeps the stricter rule.
   */
  lessonsFor?(keys: string[]): Promise<LearnedRuleWire[]>;
};

/** Domains resolved at once. */
const DNS_CONCURRENCY = 16;
/**
 * How long a line may wait its turn at a mail server that paces us (the probe's queue for it) before
 * the probe hands it back unasked; it is then claimed again in a later turn, not timed out.
 */
export const QUEUE_ALLOWANCE_MS = 30_000;
const MAX_BATCH_DEADLINE_MS = 120_000;

/** The probe's deadline for a job's batch: time to wait its turn, then the SMTP timeout. */
export const batchDeadlineMs = (smtpTimeoutSeconds: number) => Math.min(MAX_BATCH_DEADLINE_MS, smtpTimeoutSeconds * 1000 + QUEUE_ALLOWANCE_MS);

type Line = { claimed: ClaimedLine; prepared: Extract<PreparedAddress, { ok: true }>; dns: MailHostResolution; mx: ProbeMxHost[] | null };

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

export async function checkLines(
  claimed: ClaimedLine[],
  config: CheckLinesConfig,
  answer: (a: LineAnswer) => Promise<void>,
  notices: ProbeNotices = {},
): Promise<void> {
  const lines: Line[] = [];
  for (const line of claimed) {
    const prepared = prepareAddress(line.email);
    if (!prepared.ok) await answer({ position: line.position, kind: "done", result: prepared.result });
    else lines.push({ claimed: line, prepared, dns: undefined as never, mx: null });
  }
  const dnsByDomain = await resolveAll([...new Set(lines.map((l) => l.prepared.parsed.domain))], config.dohUrl);
  for (const line of lines) {
    line.dns = dnsByDomain.get(line.prepared.parsed.domain)!;
    line.mx = probeHostsFor(line.dns);
  }

  /** An answer in hand: done, or its recheck. */
  const answerOrRecheck = (line: Line, result: ReturnType<typeof completeVerification>) => {
    const outcome = afterAnswer(line.claimed, result, config.recheckDelaySeconds);
    if (outcome.kind === "recheck") return answer({ position: line.claimed.position, kind: "recheck", result, recheckAt: outcome.recheckAt });
    return answer({ position: line.claimed.position, kind: "done", result });
  };

  // Nothing to dial (invalid domain, DNS failure) or no probe: answered now, as a single check would
  // be; so is a line claimed too often (its checks keep ending with their consumer), one at a receiver
  // that is not probed (shared/email/receivers.ts), and one that waited on a receiver's budget
  // for longer than the longest wait.
  const toProbe = new Map<string, Line[]>();
  for (const line of lines) {
    const unprobed = line.mx ? unprobedAnswer(receiverFamily(line.mx)) : null;
    if (unprobed) {
      await answerOrRecheck(line, completeVerification(line.prepared, line.dns, unprobed));
      continue;
    }
    if (line.mx && waitedTooLong(line.claimed, config.receiverWaitMaxMs)) {
      // It waited the longest wait: on a budget (receiver_budget_spent), or on a block of our probe (probe_refused).
      await answerOrRecheck(line, completeVerification(line.prepared, line.dns, nothingSentAnswer(waitsOnBlock(line.claimed.waitingOn) ? "blocked" : "budget_spent")));
      continue;
    }
    if (!line.mx || config.probeUrls.length === 0 || !config.probeSecret || overClaimed(line.claimed)) {
      const reason = config.probeUrls.length === 0 || !config.probeSecret ? "not_configured" : "unreachable";
      await answerOrRecheck(line, completeVerification(line.prepared, line.dns, line.mx ? { ok: false, reason, ms: 0 } : null));
      continue;
    }
    const probe = probeFor(config.probeUrls, line);
    toProbe.set(probe, [...(toProbe.get(probe) ?? []), line]);
  }

  await Promise.all(
    [...toProbe].map(async ([probeUrl, probeLines]) => {
      for (let start = 0; start < probeLines.length; start += PROBE_MAX_BATCH_ADDRESSES) {
        await askProbe(probeUrl, probeLines.slice(start, start + PROBE_MAX_BATCH_ADDRESSES), config, answerOrRecheck, answer, notices);
      }
    }),
  );
}

/**
 * The line's probe in the rendezvous ranking (docs/probe.md "Several probes"): its domain's, or at a
 * family that counts by our sending IP (google, microsoft-eop) its address's, so one big domain's
 * lines spread over the fleet and each probe's batch carries its share. At the place line-policy
 * gives the line: a probe that cannot be reached (or is busy) hands its lines to the next one at
 * their next claim, as a single verification fails over at once, while a recheck goes where the
 * first answer came from (greylisting remembers the sending address).
 */
function probeFor(probeUrls: string[], line: Line): string {
  const order = probeOrder(probeUrls, rankingKey(addressKey(line.prepared.parsed), line.mx!));
  return order[probeRank(line.claimed, order.length)]!;
}

const mxKey = (mx: ProbeMxHost[]) => mx.map((h) => h.host).join(" ");

async function askProbe(
  probeUrl: string,
  lines: Line[],
  config: CheckLinesConfig,
  answerOrRecheck: (line: Line, result: ReturnType<typeof completeVerification>) => Promise<void>,
  answer: (a: LineAnswer) => Promise<void>,
  notices: ProbeNotices,
): Promise<void> {
  const byEmail = new Map<string, Line[]>();
  const groups = new Map<string, { mx: ProbeMxHost[]; emails: string[] }>();
  for (const line of lines) {
    const email = addressKey(line.prepared.parsed);
    byEmail.set(email, [...(byEmail.get(email) ?? []), line]);
    const domain = line.prepared.parsed.domain;
    const group = groups.get(domain) ?? { mx: line.mx!, emails: [] };
    if (!group.emails.includes(email)) group.emails.push(email);
    groups.set(domain, group);
  }
  const learned = config.lessonsFor ? await config.lessonsFor(lessonKeys([...groups.values()])) : [];
  const request: ProbeBatchRequest = {
    deadline_ms: batchDeadlineMs(config.smtpTimeoutSeconds),
    queue_ms: QUEUE_ALLOWANCE_MS,
    catch_all_check: true,
    tenant: config.tenant,
    ...(learned.length > 0 ? { learned } : {}),
    // Domains that share MX hosts side by side: they reach the same mail servers' queues together.
    groups: [...groups.values()].sort((a, b) => mxKey(a.mx).localeCompare(mxKey(b.mx))),
  };
  const answered = new Set<string>();
  const end = await callProbeBatch(probeUrl, config.probeSecret!, request, async (probeLine) => {
    if ("untrusted" in probeLine) return notices.untrusted?.(probeLine.untrusted);
    if ("refused" in probeLine && !("email" in probeLine)) return notices.refused?.(probeLine.refused);
    if ("learned" in probeLine) return notices.learned?.(probeLine.learned);
    answered.add(probeLine.email);
    for (const line of byEmail.get(probeLine.email) ?? []) {
      if ("deferred" in probeLine && probeLine.refused) {
        // Our probe is refused there (a block): never an answer; another probe, or wait for the block's end.
        const next = afterRefusal(line.claimed, probeLine.retry_after_ms, config.probeUrls.length, config.receiverWaitMaxMs);
        if (next.kind === "move") await answer({ position: line.claimed.position, kind: "move" });
        else if (next.kind === "park") await answer({ position: line.claimed.position, kind: "park", until: next.until, waitingOn: refusedWaitingOn(probeLine.waiting_on ?? null) });
        else await answerOrRecheck(line, completeVerification(line.prepared, line.dns, nothingSentAnswer("blocked", { retryAfterMs: probeLine.retry_after_ms })));
      } else if ("deferred" in probeLine) {
        const next = afterDeferral(line.claimed, probeLine.retry_after_ms, config.receiverWaitMaxMs);
        if (next.kind === "defer") await answer({ position: line.claimed.position, kind: "defer" });
        else if (next.kind === "park") await answer({ position: line.claimed.position, kind: "park", until: next.until, waitingOn: probeLine.waiting_on ?? null });
        else await answerOrRecheck(line, completeVerification(line.prepared, line.dns, nothingSentAnswer("budget_spent", { retryAfterMs: probeLine.retry_after_ms })));
      } else await answerOrRecheck(line, completeVerification(line.prepared, line.dns, { ok: true, response: probeLine.result, ms: probeLine.result.elapsed_ms }));
    }
  });
  for (const [email, emailLines] of byEmail) {
    if (answered.has(email)) continue;
    for (const line of emailLines) {
      // The probe did not answer for this line: back to pending, unless it has failed too often.
      if (afterProbeFailure(line.claimed) === "release") await answer({ position: line.claimed.position, kind: "release" });
      else await answerOrRecheck(line, completeVerification(line.prepared, line.dns, { ok: false, reason: end.ok ? "bad_response" : end.reason, ms: 0 }));
    }
  }
}

