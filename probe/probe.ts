/**
 * One probe request: walk the MX hosts by preference and each host's addresses in turn until a
 * server answers RCPT TO, then read that answer (docs/probe.md "The SMTP probe", "Across MX hosts"). Only an answer about the
 * mailbox stops the walk; a refused connection, a timeout, a refused greeting or a server that
 * breaks the protocol moves on to the next address. Nothing runs past the request's deadline.
 */
import { countCheck, countFamilyEvent } from "./counters.ts";
import type { ProbeAttempt, ProbeOutcome, ProbeRequestParsed, ProbeResponse, SmtpReplySummary } from "../shared/probe-contract.ts";
import type { ProbeConfig } from "./config.ts";
import type { CheckOutcome, Scheduler } from "./qmgr/scheduler.ts";
import { classifyRcptReply, outcomeOfRcptClass } from "./smtp/classify.ts";
import type { SmtpReply } from "./smtp/reply.ts";
import { checkTarget } from "../shared/targets.ts";
import { monotonicNow } from "./clock.ts";

export type ProbeDeps = {
  config: Pick<ProbeConfig, "allowPrivateTargets">;
  scheduler: Scheduler;
};

/** Kept back from the deadline for writing the HTTP answer. */
const ANSWER_RESERVE_MS = 50;
const MAX_REPLY_TEXT = 512;

/**
 * When no server answered RCPT, the most informative failure wins: a server that refused us
 * says more than one that timed out, which says more than one we never reached.
 */
const FAILURE_RANK: ProbeOutcome[] = [
  // Our probe refused (a block): nothing about the mailbox, and when to ask again (retry_after_ms).
  "blocked",
  "policy_block",
  "temporary_failure",
  "rejected_unclear",
  "timeout",
  "protocol_error",
  "connection_failed",
  "refused_target",
];

function summarizeReply(reply: SmtpReply): SmtpReplySummary {
  return { code: reply.code, enhanced_code: reply.enhanced, text: reply.text.slice(0, MAX_REPLY_TEXT) };
}

/** Outcome of a check that ended before an answer to RCPT, from the failure and the refusing reply. */
function failureOutcome(check: CheckOutcome): ProbeOutcome {
  const failure = check.failure!;
  switch (failure.kind) {
    case "rejected": {
      const code = check.rejectedReply!.code;
      // A refused greeting, EHLO or MAIL FROM is about us (our IP, our name, our sender), never the mailbox.
      return code >= 500 ? "policy_block" : "temporary_failure";
    }
    case "timeout":
      return "timeout";
    case "connect":
      return "connection_failed";
    case "closed":
      // Hanging up right after connecting is how many servers refuse a client they dislike.
      return check.stage === "connect" || check.stage === "greeting" ? "connection_failed" : "protocol_error";
    case "tls":
      return "connection_failed";
    case "protocol":
    case "unsupported":
      return "protocol_error";
  }
}

/**
 * A batch check handed back unasked: when its receiver's budget next has room (ms from now), and which family, when
 * that is what held it; `refused` when it was a block of our probe (docs/probe.md "Blocks").
 */
export type Deferral = { deferred: true; retryAfterMs: number | null; waitingOn: string | null; refused: boolean };

export async function runProbe(request: ProbeRequestParsed, deps: ProbeDeps, startedAt = monotonicNow()): Promise<ProbeResponse> {
  const response = (await walkHosts(request, deps, startedAt)) as ProbeResponse;
  countCheck(response.outcome);
  return response;
}

/**
 * A check of a batch, for `tenant`: as runProbe, except that an address still waiting its turn at
 * `deferAt`, at a server busy answering the ones ahead of it, is handed back unasked (null) for a
 * later batch, and that it waits in its tenant's lane at each destination (qmgr/fair-queue.ts).
 */
export async function runBatchProbe(
  request: ProbeRequestParsed,
  deps: ProbeDeps,
  startedAt: number,
  batch: { deferAt: number | undefined; tenant: string },
): Promise<ProbeResponse | Deferral> {
  const response = await walkHosts(request, deps, startedAt, batch);
  countCheck("deferred" in response ? "deferred" : response.outcome);
  return response;
}

async function walkHosts(request: ProbeRequestParsed, deps: ProbeDeps, startedAt: number, batch?: { deferAt: number | undefined; tenant: string }): Promise<ProbeResponse | Deferral> {
  const deferAt = batch?.deferAt;
  const deadline = startedAt + request.deadline_ms - ANSWER_RESERVE_MS;
  const attempts: ProbeAttempt[] = [];
  let decided: { check: CheckOutcome; attempt: ProbeAttempt } | null = null;
  const hosts = [...request.mx].sort((a, b) => a.preference - b.preference);
  // A family whose policy forbids probing, or whose RCPT accepts anything, is never dialled.
  const policy = deps.scheduler.receivers.policyOf(hosts[0]!.host);
  if (policy.probe !== "yes") {
    countFamilyEvent(policy.family, "not_probed");
    return notProbed(hosts[0]!.host, startedAt);
  }
  const tenant = batch?.tenant ?? request.tenant;
  /** A block of our probe at an address walked past (the next one may not refuse us): what to say if none answers. */
  let refused: { relief: number | null; family: string } | null = null;
  const noteRefused = (relief: number | null, family: string) => {
    if (!refused || (relief !== null && (refused.relief === null || relief < refused.relief))) refused = { relief, family };
  };

  walk: for (const host of hosts) {
    for (const literal of host.addresses) {
      if (monotonicNow() >= deadline) break walk;
      const target = checkTarget(literal, deps.config.allowPrivateTargets);
      if (!target.ok) {
        attempts.push(skippedAttempt(host.host, literal, "refused_target", `refused to dial a ${target.reason}`));
        continue;
      }
      const check = await deps.scheduler.check({
        recipient: request.email,
        host: host.host,
        address: target.address,
        catchAllCheck: request.catch_all_check,
        deadline,
        ...(deferAt !== undefined ? { deferAt } : {}),
        ...(tenant !== undefined ? { tenant } : {}),
        ...(batch ? { bulk: true } : {}),
      });
      if (check.heldBy?.refused) {
        // Our probe is refused at this address (a block): no answer; another address of the domain may take us.
        noteRefused(check.heldBy.reliefAt, check.heldBy.family);
        const reply = check.rejectedReply ? summarizeReply(check.rejectedReply) : null;
        attempts.push({ ...skippedAttempt(host.host, target.address, "blocked", `the ${check.heldBy.family} receiver refuses this probe (a block of its address), not the mailbox`), reply, ms: check.ms });
        continue;
      }
      if (check.deferred) {
        const relief = check.heldBy?.reliefAt ?? null;
        return { deferred: true, retryAfterMs: relief === null ? null : Math.max(0, relief - monotonicNow()), waitingOn: check.heldBy?.family ?? null, refused: check.heldBy?.refused === true };
      }
      if (check.heldBy) {
        // Nothing was sent: the receiver's budget for this customer is spent (or it asked us to back off).
        const attempt = { ...skippedAttempt(host.host, target.address, "budget_spent", `the ${check.heldBy.family} receiver's budget for this customer is spent`), ms: check.ms };
        attempts.push(attempt);
        decided = { check, attempt };
        break walk;
      }
      if (check.rcpt) {
        const attempt = toAttempt(host.host, target.address, check, outcomeOfRcptClass(classifyRcptReply(check.rcpt)));
        attempts.push(attempt);
        decided = { check, attempt };
        break walk;
      }
      const attempt = toAttempt(host.host, target.address, check, failureOutcome(check));
      attempts.push(attempt);
      // MAIL FROM refused, or the deadline ran out once the envelope was sent: another MX of the
      // same domain would judge the same sender the same way, and there is no time left anyway.
      if (check.stage === "mail" || check.stage === "rcpt" || attempt.outcome === "timeout") {
        decided = { check, attempt };
        break walk;
      }
    }
  }

  const blockedAt = refused as { relief: number | null; family: string } | null;
  // A batch check no address answered because our probe is refused: handed back, to wait or go to another probe.
  if (!decided && blockedAt && batch) {
    return { deferred: true, retryAfterMs: blockedAt.relief === null ? null : Math.max(0, blockedAt.relief - monotonicNow()), waitingOn: blockedAt.family, refused: true };
  }
  const outcome = decided?.attempt.outcome ?? mostInformativeFailure(attempts);
  const last = decided?.attempt ?? attempts[attempts.length - 1] ?? null;
  const decidingReply = decided ? (decided.check.rcpt ?? decided.check.rejectedReply) : null;
  const relief = decided?.check.heldBy?.reliefAt ?? (outcome === "blocked" ? (blockedAt?.relief ?? null) : null);
  return {
    ...(relief !== null ? { retry_after_ms: Math.min(7 * 86_400_000, Math.max(0, relief - monotonicNow())) } : {}),
    outcome,
    catch_all: decided ? decided.check.catchAll : null,
    catch_all_cached: decided ? decided.check.catchAllCached : false,
    reply: decidingReply ? summarizeReply(decidingReply) : lastReply(attempts),
    mx_host: last?.host ?? null,
    mx_address: last?.address ?? null,
    tls: decided ? decided.check.tls : null,
    pipelining: decided ? decided.check.pipelining : null,
    attempts: attempts.slice(0, 64),
    elapsed_ms: Math.max(0, monotonicNow() - startedAt),
  };
}

function mostInformativeFailure(attempts: ProbeAttempt[]): ProbeOutcome {
  if (attempts.length === 0) return "timeout";
  for (const outcome of FAILURE_RANK) if (attempts.some((a) => a.outcome === outcome)) return outcome;
  return attempts[attempts.length - 1]!.outcome;
}

/** The reply of the most informative failed attempt, if it had one. */
function lastReply(attempts: ProbeAttempt[]): SmtpReplySummary | null {
  for (const outcome of FAILURE_RANK) {
    const hit = attempts.find((a) => a.outcome === outcome && a.reply);
    if (hit) return hit.reply;
  }
  return null;
}

function toAttempt(host: string, address: string, check: CheckOutcome, outcome: ProbeOutcome): ProbeAttempt {
  const reply = check.rcpt ?? check.rejectedReply;
  const error = check.failure?.message ?? check.note;
  return {
    host,
    address,
    stage: check.stage,
    outcome,
    reply: reply ? summarizeReply(reply) : null,
    error: error ? error.slice(0, 256) : null,
    tls: check.tls,
    round_trips: check.roundTrips,
    reused_session: check.reusedSession,
    ms: check.ms,
  };
}

function notProbed(host: string, startedAt: number): ProbeResponse {
  return {
    outcome: "not_probed",
    catch_all: null,
    catch_all_cached: false,
    reply: null,
    mx_host: host,
    mx_address: null,
    tls: null,
    pipelining: null,
    attempts: [],
    elapsed_ms: Math.max(0, monotonicNow() - startedAt),
  };
}

function skippedAttempt(host: string, address: string, outcome: ProbeOutcome, error: string): ProbeAttempt {
  return { host, address, stage: "connect", outcome, reply: null, error, tls: false, round_trips: 0, reused_session: false, ms: 0 };
}
