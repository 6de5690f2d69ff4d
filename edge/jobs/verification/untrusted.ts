/**
 * A probe's notice that a receiver's answers are not trusted (probe/policy/untrusted.ts; docs/jobs.md "Answers taken back"): a
 * gateway that refused a random address and now accepts one, or that said "too many invalid recipients",
 * may have accepted unknown users silently since its last refusal. The `valid` lines of unfinished jobs
 * at the domains it names, answered in that span, go back to be checked again after the hour (a line
 * becomes a recheck: its second answer is final, as for a temporary first answer); a duplicate line
 * waits for its original again. The job's counts follow (migration 0016's trigger): the job is running
 * again until they are answered. The probe answers such a recheck catch-all while the receiver is
 * distrusted, so it is never `valid` on that answer alone. The statements are edge/jobs/store/lines.ts's
 * `untrustValids`, beside the lease guards they must agree with.
 *
 * A notice is believed only within the probe's documented window (untrustedSpan): whatever span it claims, no answer
 * older than that window is taken back, so a probe's bug or a forged clock cannot reopen a job's whole history.
 *
 * Left alone: jobs that completed before the notice (their results were delivered; reopening them would
 * change what a customer already read) and single verifications (answered, not stored).
 */
import { UNTRUSTED_NOTICE_WINDOW_MS, type ProbeBatchNotice } from "../../../shared/probe-contract.ts";

/** A probe's notice that what a receiver accepted in a span of time is not trusted (wall-clock milliseconds). */
export type UntrustedNotice = ProbeBatchNotice["untrusted"];

/** How long an untrusted `valid` waits for its recheck: the receiver is stopped for an hour (docs/probe.md). */
export const UNTRUSTED_RECHECK_DELAY_MS = 3_600_000;

/** How far a probe's clock may run ahead of the Worker's: a notice's `until` later than that is taken as now. */
export const NOTICE_CLOCK_SKEW_MS = 60_000;

/**
 * The answers a notice may take back: from its `since`, but no earlier than the window before its `until` nor the
 * window before now; to its `until`, but no later than now and the skew. A notice claiming since 0 takes back the
 * window's answers only.
 */
export function untrustedSpan(notice: UntrustedNotice, now: number): { sinceMs: number; untilMs: number } {
  const untilMs = Math.min(notice.until_ms, now + NOTICE_CLOCK_SKEW_MS);
  return { sinceMs: Math.max(notice.since_ms, untilMs - UNTRUSTED_NOTICE_WINDOW_MS, now - UNTRUSTED_NOTICE_WINDOW_MS), untilMs };
}
