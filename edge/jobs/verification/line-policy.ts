/**
 * What becomes of a claimed job line, decided in one place (docs/jobs.md "How a job runs"). A line ends
 * a consumer's run in one of four ways:
 * - done: answered for good;
 * - recheck: its answer was temporary (greylisting, a 421, a timeout, a DNS failure) and this was its
 *   first try: asked once more, `recheckDelaySeconds` later, at the same probe;
 * - defer: the probe handed it back unasked (its mail server paces us and was busy with the lines
 *   ahead of it): asked again at once, at no cost;
 * - park: the probe handed it back unasked because the receiver's budget holds it, and said when it
 *   next has room: not claimed again before then, at no cost (docs/jobs.md "Waiting on a receiver");
 *   a line that would wait past `receiverWaitMaxMs` since it was first parked is answered at once,
 *   risky with the budget's reason, so every job ends;
 * - move: the probe handed it back unasked because the receiver refuses that probe itself (a block of its
 *   address, docs/jobs.md "While our probe is blocked"): asked at once at the next probe of its ranking that
 *   has not had it yet, at no cost; with none left it is parked until the block ends (waiting on
 *   `refused:<family>`), and a block that outlasts `receiverWaitMaxMs` answers it risky, `probe_refused`: our
 *   block is never its answer otherwise, and never `policy_block`;
 * - release: its probe could not be asked (unreachable, an error status, a broken answer): asked
 *   again after a pause, at the next probe in the ranking, and answered "no SMTP check" once that
 *   has happened `maxProbeFailures` times.
 * Three counters stay apart: `claims` (every claim, whatever became of it: a consumer that died, a
 * database error), `probeFailures` (only releases) and whether the line is on its recheck. Only
 * probe failures move a line to another probe, so a recheck goes where greylisting remembers us.
 */
import { REDELIVER_DELAY_SECONDS } from "../messages.ts";
import { outcomeMeaning, REASON_MEANING } from "../../../shared/email/reasons.ts";
import type { SmtpOutcome } from "../../../shared/smtp-outcome.ts";
import type { EmailVerificationResult } from "../../../shared/api.ts";

export const LINE_POLICY = {
  /** Releases (the probe could not be asked) before a line is answered without an SMTP check. */
  maxProbeFailures: 5,
  /**
   * Claims of any kind before a line is answered without an SMTP check: a line whose checks keep
   * ending in a dead consumer must not hold its job (and its callback) back for ever.
   */
  maxClaims: 20,
  /** Before released lines are claimed again (the probe may be restarting). */
  releaseDelaySeconds: 30,
  /** Before a queue message whose work failed (the database out of reach) is delivered again (the engine's rule). */
  redeliverDelaySeconds: REDELIVER_DELAY_SECONDS,
} as const;

/**
 * What a claim knows of its line's history; `waitingSince`: when a receiver's budget (or a block) first parked it
 * (null: never); `waitingOn`: what it was parked on last (a family, or refusedWaitingOn's `refused:<family>`).
 */
export type LineHistory = { claims: number; probeFailures: number; rechecking: boolean; waitingSince: number | null; waitingOn?: string | null };

export type LineOutcome =
  | { kind: "done" }
  | { kind: "recheck"; recheckAt: number }
  | { kind: "defer" }
  | { kind: "park"; until: number }
  | { kind: "move" }
  | { kind: "release" };

/** The `waiting_on` of a line parked because the receiver refuses our probe (a block), not on a budget. */
export const refusedWaitingOn = (family: string | null) => `refused:${family ?? "unknown"}`;
/** Whether a parked line waits on a block of our probe (refusedWaitingOn). */
export const waitsOnBlock = (waitingOn: string | null | undefined) => waitingOn?.startsWith("refused:") === true;

/**
 * An answer that may change if asked again (shared/email/reasons.ts, recheckSoon): by its SMTP outcome (a 4xx, a
 * timeout), or an assumption after a DNS failure, whatever reason comes first in precedence.
 */
export function isTemporary(result: EmailVerificationResult): boolean {
  const outcome = result.details?.smtp_outcome as SmtpOutcome | null | undefined;
  return (outcome != null && outcomeMeaning(outcome).recheckSoon) || (result.score_details.dns_failed_assumption === true && REASON_MEANING.dns_failure.recheckSoon);
}

/** An answer in hand: done, or a recheck when it is temporary, this was the first try and rechecks are on. */
export function afterAnswer(line: LineHistory, result: EmailVerificationResult, recheckDelaySeconds: number, now = Date.now()): LineOutcome {
  if (isTemporary(result) && !line.rechecking && recheckDelaySeconds > 0) return { kind: "recheck", recheckAt: now + recheckDelaySeconds * 1000 };
  return { kind: "done" };
}

/** The probe could not be asked about the line: released for another try, or "give up" (answered without an SMTP check). */
export function afterProbeFailure(line: LineHistory): "release" | "give_up" {
  return line.probeFailures + 1 < LINE_POLICY.maxProbeFailures ? "release" : "give_up";
}

/**
 * A line the probe handed back unasked: asked again at once (its server was busy), parked until the
 * receiver's budget has room (`retryAfterMs` given), or "give_up" when that would end past the
 * line's longest wait: answered at once, risky, the receiver's budget spent.
 */
export function afterDeferral(line: LineHistory, retryAfterMs: number | undefined, receiverWaitMaxMs: number, now = Date.now()): { kind: "defer" } | { kind: "park"; until: number } | { kind: "give_up" } {
  if (retryAfterMs === undefined) return { kind: "defer" };
  const until = now + retryAfterMs;
  return until >= (line.waitingSince ?? now) + receiverWaitMaxMs ? { kind: "give_up" } : { kind: "park", until };
}

/**
 * A line the probe handed back because the receiver refuses that probe (a block), until `retryAfterMs` from now: to
 * the next probe of its ranking while one has not had it yet (`probes` in the ranking), else parked until the block
 * ends, or "give_up" (answered risky, probe_refused) when that is past the line's longest wait.
 */
export function afterRefusal(line: LineHistory, retryAfterMs: number | undefined, probes: number, receiverWaitMaxMs: number, now = Date.now()): { kind: "move" } | { kind: "park"; until: number } | { kind: "give_up" } {
  if (line.probeFailures + 1 < probes) return { kind: "move" };
  // A block whose end the probe did not say: a day, the longest block of the receiver table.
  const until = now + (retryAfterMs ?? 86_400_000);
  return until > (line.waitingSince ?? now) + receiverWaitMaxMs ? { kind: "give_up" } : { kind: "park", until };
}

/** Parked for longer than the longest wait (a budget that kept it past its first estimate): answered at once, budget spent. */
export function waitedTooLong(line: LineHistory, receiverWaitMaxMs: number, now = Date.now()): boolean {
  return line.waitingSince !== null && now - line.waitingSince >= receiverWaitMaxMs;
}

/** Claimed too often to be tried again: answered without an SMTP check at once. */
export function overClaimed(line: LineHistory): boolean {
  return line.claims > LINE_POLICY.maxClaims;
}

/** Which probe of the domain's ranking asks about the line: one place down per probe failure. */
export function probeRank(line: LineHistory, probes: number): number {
  return line.probeFailures % probes;
}

/**
 * The longest delay a queue message may carry (Cloudflare Queues: 12 hours); a line parked for longer
 * is found by the cron, which requeues a stalled job's due lines.
 */
export const MAX_QUEUE_DELAY_SECONDS = 43_200;

/** When a parked line's turn goes back on the queue: at its relief (seconds from now, rounded up). */
export function parkedDelaySeconds(until: number, now = Date.now()): number {
  return Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, Math.ceil((until - now) / 1000)));
}

/** When the lines that end a run this way go back on the queue (seconds from now). */
export function requeueDelaySeconds(kind: "defer" | "move" | "release" | "recheck", recheckDelaySeconds: number): number {
  if (kind === "defer" || kind === "move") return 0;
  if (kind === "release") return LINE_POLICY.releaseDelaySeconds;
  return recheckDelaySeconds;
}
