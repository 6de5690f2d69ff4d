/**
 * One probe request: walk the MX hosts by preference and each host's addresses in turn until a
 * server answers RCPT TO, then read that answer (README "The SMTP probe", "Across MX hosts"). Only an answer about the
 * mailbox stops the walk; a refused connection, a timeout, a refused greeting or a server that
 * breaks the protocol moves on to the next address. Nothing runs past the request's deadline.
 */
import { randomBytes } from "node:crypto";
import type { ProbeAttempt, ProbeOutcome, ProbeRequestParsed, ProbeResponse, SmtpReplySummary } from "../shared/probe-contract.ts";
import type { CatchAllCache } from "./catch-all-cache.ts";
import type { ProbeConfig } from "./config.ts";
import type { KeyedLimiter } from "./limits.ts";
import { classifyRcptReply, type RcptClass } from "./smtp/classify.ts";
import type { SmtpReply } from "./smtp/reply.ts";
import { runSmtpSession, type SessionResult } from "./smtp/session.ts";
import { checkTarget } from "./targets.ts";

export type ProbeDeps = {
  config: Pick<ProbeConfig, "heloName" | "mailFrom" | "smtpPort" | "allowPrivateTargets" | "connectTimeoutMs">;
  perDestination: KeyedLimiter;
  catchAllCache: CatchAllCache;
};

/** Kept back from the deadline for writing the HTTP answer. */
const ANSWER_RESERVE_MS = 50;
const MAX_REPLY_TEXT = 512;

/** What a RCPT answer about the address means for the outcome. */
const RCPT_OUTCOME: Record<RcptClass, ProbeOutcome> = {
  accepted: "accepted",
  mailbox_not_found: "mailbox_not_found",
  mailbox_full: "mailbox_full",
  policy_block: "policy_block",
  temporary_failure: "temporary_failure",
  // Only possible on the first RCPT when the server allows no recipients at all right now.
  too_many_recipients: "temporary_failure",
  rejected_unclear: "rejected_unclear",
};

/** What the random address's answer says about catch-all; anything but a clear yes or no is unknown. */
const CATCH_ALL: Partial<Record<RcptClass, boolean>> = { accepted: true, mailbox_not_found: false };

/**
 * When no server answered RCPT, the most informative failure wins: a server that refused us
 * says more than one that timed out, which says more than one we never reached.
 */
const FAILURE_RANK: ProbeOutcome[] = [
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

/** A local part nobody has: 16 random letters and digits. */
function randomLocalPart(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from(randomBytes(16), (b) => alphabet[b % alphabet.length]).join("");
}

/** Outcome of a conversation that ended before RCPT, from the failure and the refusing reply. */
function failureOutcome(session: SessionResult): ProbeOutcome {
  const failure = session.failure!;
  switch (failure.kind) {
    case "rejected": {
      const code = session.rejectedReply!.code;
      // A refused greeting, EHLO or MAIL FROM is about us (our IP, our name, our sender), never the mailbox.
      return code >= 500 ? "policy_block" : "temporary_failure";
    }
    case "timeout":
      return "timeout";
    case "connect":
      return "connection_failed";
    case "closed":
      // Hanging up right after connecting is how many servers refuse a client they dislike.
      return session.stage === "connect" || session.stage === "greeting" ? "connection_failed" : "protocol_error";
    case "tls":
      return "connection_failed";
    case "protocol":
    case "unsupported":
      return "protocol_error";
  }
}

export async function runProbe(request: ProbeRequestParsed, deps: ProbeDeps, startedAt = Date.now()): Promise<ProbeResponse> {
  const deadline = startedAt + request.deadline_ms - ANSWER_RESERVE_MS;
  const at = request.email.lastIndexOf("@");
  const domain = request.email.slice(at + 1).toLowerCase();
  const cachedCatchAll = request.catch_all_check ? deps.catchAllCache.get(domain) : null;
  const catchAllRecipient = request.catch_all_check && cachedCatchAll === null ? `${randomLocalPart()}@${request.email.slice(at + 1)}` : null;

  const attempts: ProbeAttempt[] = [];
  let decided: { session: SessionResult; attempt: ProbeAttempt; rcptClass: RcptClass | null } | null = null;
  const hosts = [...request.mx].sort((a, b) => a.preference - b.preference);

  walk: for (const host of hosts) {
    for (const literal of host.addresses) {
      if (Date.now() >= deadline) break walk;
      const target = checkTarget(literal, deps.config.allowPrivateTargets);
      if (!target.ok) {
        attempts.push(skippedAttempt(host.host, literal, "refused_target", `refused to dial a ${target.reason}`));
        continue;
      }
      const release = await deps.perDestination.acquire(target.address, deadline);
      if (!release) {
        attempts.push(skippedAttempt(host.host, target.address, "timeout", "no free connection slot for this address before the deadline"));
        continue;
      }
      let session: SessionResult;
      try {
        const plan = {
          host: host.host,
          address: target.address,
          port: deps.config.smtpPort,
          heloName: deps.config.heloName,
          mailFrom: deps.config.mailFrom,
          recipient: request.email,
          catchAllRecipient,
          deadline,
          connectTimeoutMs: deps.config.connectTimeoutMs,
          startTls: true,
        };
        session = await runSmtpSession(plan);
        if (session.failure?.kind === "tls" && Date.now() < deadline) {
          // As MTAs do with opportunistic TLS: a broken handshake is retried once in plain text.
          attempts.push(toAttempt(host.host, target.address, session, failureOutcome(session)));
          session = await runSmtpSession({ ...plan, startTls: false });
        }
      } finally {
        release();
      }

      if (session.rcpt) {
        const rcptClass = classifyRcptReply(session.rcpt);
        const attempt = toAttempt(host.host, target.address, session, RCPT_OUTCOME[rcptClass]);
        attempts.push(attempt);
        decided = { session, attempt, rcptClass };
        break walk;
      }
      const attempt = toAttempt(host.host, target.address, session, failureOutcome(session));
      attempts.push(attempt);
      // MAIL FROM refused, or the deadline ran out once the envelope was sent: another MX of the
      // same domain would judge the same sender the same way, and there is no time left anyway.
      if (session.stage === "mail" || session.stage === "rcpt" || attempt.outcome === "timeout") {
        decided = { session, attempt, rcptClass: null };
        break walk;
      }
    }
  }

  const outcome = decided?.attempt.outcome ?? mostInformativeFailure(attempts);
  let catchAll: boolean | null = cachedCatchAll;
  if (decided?.rcptClass === "accepted" && cachedCatchAll === null && decided.session.catchAll) {
    catchAll = CATCH_ALL[classifyRcptReply(decided.session.catchAll)] ?? null;
  } else if (decided?.rcptClass === "mailbox_not_found") {
    // A server that refuses one address is not accepting every address.
    catchAll = false;
  }
  if (catchAll !== null && cachedCatchAll === null) deps.catchAllCache.set(domain, catchAll);

  const last = decided?.attempt ?? attempts[attempts.length - 1] ?? null;
  const decidingReply = decided ? (decided.session.rcpt ?? decided.session.rejectedReply) : null;
  return {
    outcome,
    catch_all: catchAll,
    catch_all_cached: cachedCatchAll !== null,
    reply: decidingReply ? summarizeReply(decidingReply) : lastReply(attempts),
    mx_host: last?.host ?? null,
    mx_address: last?.address ?? null,
    tls: decided ? decided.session.tls : null,
    pipelining: decided ? decided.session.pipelining : null,
    attempts: attempts.slice(0, 64),
    elapsed_ms: Math.max(0, Date.now() - startedAt),
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

function toAttempt(host: string, address: string, session: SessionResult, outcome: ProbeOutcome): ProbeAttempt {
  const reply = session.rcpt ?? session.rejectedReply;
  return {
    host,
    address,
    stage: session.stage,
    outcome,
    reply: reply ? summarizeReply(reply) : null,
    error: session.failure ? session.failure.message.slice(0, 256) : null,
    tls: session.tls,
    round_trips: session.roundTrips,
    ms: session.ms,
  };
}

function skippedAttempt(host: string, address: string, outcome: ProbeOutcome, error: string): ProbeAttempt {
  return { host, address, stage: "connect", outcome, reply: null, error, tls: false, round_trips: 0, ms: 0 };
}
