/**
 * POST /v1/email_feedback's body, checked whole before anything is written (docs/api.md "POST /v1/email_feedback"): one
 * report, or `{"feedback": [...]}` with 1 to 1,000; the first thing wrong is a 400 that names it (`feedback[3].outcome
 * ...`). Pure: the route reads the body, the store writes what this returns.
 */
import { FEEDBACK_LIMITS, FEEDBACK_OUTCOMES } from "../../shared/api.ts";
import { parseEmailAddress } from "../../shared/email/syntax.ts";
import { ApiError } from "../lib/errors.ts";

export type FeedbackOutcome = (typeof FEEDBACK_OUTCOMES)[number];

/** A report as the store takes it: the address only to be hashed and matched, never stored. */
export type FeedbackReport = { email: string; outcome: FeedbackOutcome; occurredAt: number; smtpReply: string | null };

/** A clock a few minutes ahead of ours is the caller's, not a report from the future. */
export const FUTURE_TOLERANCE_MS = 5 * 60_000;

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
const FIELDS = new Set(["email_address", "outcome", "occurred_at", "smtp_reply"]);
/** Anything shaped like an address in an SMTP reply: kept out of what is stored. */
const ADDRESS_IN_TEXT = /[^\s@"'<>(),;:[\]]+@[^\s@"'<>(),;:[\]]+/g;

export const FEEDBACK_MESSAGES = {
  notAnObject: "The JSON body must be an object: one report, or {\"feedback\": [...]}",
  notAList: `feedback must be an array of 1 to ${FEEDBACK_LIMITS.maxReports} reports`,
  tooMany: (n: number) => `feedback holds ${n} reports: at most ${FEEDBACK_LIMITS.maxReports} per call`,
} as const;

function parseReport(raw: unknown, name: string, now: number, retentionMs: number): FeedbackReport {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new ApiError(400, `${name || "The report"} must be an object`);
  const report = raw as Record<string, unknown>;
  const unknown = Object.keys(report).find((key) => !FIELDS.has(key));
  if (unknown !== undefined) throw new ApiError(400, `${name || "The report"} has an unknown field ${JSON.stringify(unknown.slice(0, 40))}`);
  const field = (f: string) => (name ? `${name}.${f}` : f);

  if (typeof report.email_address !== "string" || report.email_address.trim() === "") throw new ApiError(400, `${field("email_address")} is required`);
  const parsed = parseEmailAddress(report.email_address);
  if (!parsed.ok) throw new ApiError(400, `${field("email_address")} is not an email address: ${parsed.error}`);

  if (typeof report.outcome !== "string" || !(FEEDBACK_OUTCOMES as readonly string[]).includes(report.outcome)) {
    throw new ApiError(400, `${field("outcome")} must be one of ${FEEDBACK_OUTCOMES.join(", ")}`);
  }

  if (report.occurred_at === undefined) throw new ApiError(400, `${field("occurred_at")} is required (RFC 3339, such as 2026-11-26T14:03:00Z)`);
  const at = typeof report.occurred_at === "string" && RFC3339.test(report.occurred_at.trim()) ? Date.parse(report.occurred_at.trim().replace(" ", "T")) : Number.NaN;
  if (!Number.isFinite(at)) throw new ApiError(400, `${field("occurred_at")} must be an RFC 3339 date-time, such as 2026-11-26T14:03:00Z`);
  if (at > now + FUTURE_TOLERANCE_MS) throw new ApiError(400, `${field("occurred_at")} is in the future`);
  if (at < now - retentionMs) throw new ApiError(400, `${field("occurred_at")} is more than ${Math.round(retentionMs / 86_400_000)} days ago, older than feedback is kept`);

  let smtpReply: string | null = null;
  if (report.smtp_reply !== undefined && report.smtp_reply !== null) {
    if (typeof report.smtp_reply !== "string") throw new ApiError(400, `${field("smtp_reply")} must be a string`);
    if (report.smtp_reply.length > FEEDBACK_LIMITS.maxSmtpReply) throw new ApiError(400, `${field("smtp_reply")} must be at most ${FEEDBACK_LIMITS.maxSmtpReply} characters`);
    smtpReply = report.smtp_reply.replace(ADDRESS_IN_TEXT, "[address]").trim() || null;
  }
  return { email: parsed.email, outcome: report.outcome as FeedbackOutcome, occurredAt: at, smtpReply };
}

/** The reports of a body already parsed as JSON, at `now`, with feedback kept `retentionMs`; throws a 400 for the first thing wrong. */
export function parseFeedbackBody(body: unknown, now: number, retentionMs: number): FeedbackReport[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new ApiError(400, FEEDBACK_MESSAGES.notAnObject);
  if (!("feedback" in body)) return [parseReport(body, "", now, retentionMs)];
  const { feedback, ...rest } = body as { feedback: unknown };
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw new ApiError(400, `The body has an unknown field ${JSON.stringify(extra.slice(0, 40))} beside feedback`);
  if (!Array.isArray(feedback) || feedback.length === 0) throw new ApiError(400, FEEDBACK_MESSAGES.notAList);
  if (feedback.length > FEEDBACK_LIMITS.maxReports) throw new ApiError(400, FEEDBACK_MESSAGES.tooMany(feedback.length));
  return feedback.map((report, i) => parseReport(report, `feedback[${i}]`, now, retentionMs));
}
