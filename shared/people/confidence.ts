/**
 * How far to trust a stored address (docs/api.md "Confidence"): a score from 0 to 100, read as the chance in percent that
 * mail to it is delivered, and a label a person can read. One table (CONFIDENCE_TABLE) and one pure function over it,
 * `confidence()`, from five inputs: our own last check of the address and its outcome, how long ago that check was, how
 * many independent sources reported the address, how long ago any last did, and what independent accounts reported
 * sending to it. The lookup must filter and charge on the score inside its one database round trip, so it evaluates
 * the same table in SQL (edge/people/confidence-sql.ts, the table passed as a parameter); test/workers/confidence.test.ts
 * holds the two to the same answer for every combination of inputs.
 *
 * Where the numbers come from (docs/api.md "Confidence" says it to customers): an address our probe found deliverable
 * bounces about 2% of the time right after (FullEnrich publishes 2% for its DELIVERABLE), and a mailbox dies at about 2%
 * a month after that (B2B lists decay by a fifth to a quarter a year). An address we could not confirm (catch-all, a
 * server that would not say, never checked) rests on its suppliers: one supplier is right 75-85% of the time over its
 * list (agencies' figure), but an address only one of several suppliers has is its weakest kind, deliverable about 40%
 * of the time in the labelled worlds of bench/confidence-world.ts and bench/confidence-smtp.ts (which first had these at
 * 74-75 and found that band 22 points too high); two that agree make it about 83%, three about 95%, less the longer
 * since any of them saw it. A catch-all answer adds nothing to the suppliers' word.
 */
import { REASON_MEANING, type AnswerProof, type VerificationReason } from "../email/reasons.ts";

/** Our own last check of the address, by what its answer proves (shared/email/reasons.ts). */
export const OUR_CHECKS = ["valid", "catch_all", "invalid", "unknown", "never"] as const;
export type OurCheck = (typeof OUR_CHECKS)[number];

/** What a check's answer proves, as an input of the confidence: a mailbox found, a server that takes any address, none. */
export const CHECK_OF_PROOF: Readonly<Record<AnswerProof, OurCheck>> = {
  mailbox_exists: "valid",
  accepts_any: "catch_all",
  no_mailbox: "invalid",
  no_mail: "invalid",
  // Nothing about the mailbox: as good as never checked, and the table treats the two alike.
  settled_elsewhere: "unknown",
  nothing_yet: "unknown",
};

/** Our check of an address from its stored reason and time (null: never checked). */
export function ourCheck(reason: VerificationReason | null, checkedAt: number | null): OurCheck {
  if (checkedAt === null || reason === null) return "never";
  return CHECK_OF_PROOF[REASON_MEANING[reason].proves];
}

/**
 * What other accounts' reports say, counted only when independent accounts agree (docs/api.md "Bounce feedback"): at least
 * INDEPENDENT_ACCOUNTS reported hard bounces since our last check that found the mailbox, and not as many deliveries after
 * ("bounced"); or at least as many reported deliveries or replies in the last DELIVERIES_WINDOW_DAYS and not as many hard
 * bounces after ("delivered"); otherwise "none". One account's report never undoes what independent accounts agreed on.
 */
export const FEEDBACK_VERDICTS = ["none", "bounced", "delivered"] as const;
export type FeedbackVerdict = (typeof FEEDBACK_VERDICTS)[number];

/** How many different accounts must agree before their reports change what anyone else sees. */
export const INDEPENDENT_ACCOUNTS = 3;
/** Deliveries and replies older than this do not settle a catch-all address. */
export const DELIVERIES_WINDOW_DAYS = 90;

/** Report outcomes that prove mail reached the mailbox: a delivery, a reply, and a spam complaint (someone read it). */
export const REACHED_MAILBOX = ["delivered", "replied", "complaint"] as const;

/**
 * What the reports about one address add up to: hard bounces counted since our last check that found the mailbox,
 * deliveries within DELIVERIES_WINDOW_DAYS; each only when INDEPENDENT_ACCOUNTS accounts agree and the other kind did not
 * come later. Soft bounces say nothing either way. Counts are of distinct accounts; times in ms (null: none).
 */
export type FeedbackTally = { bounceAccounts: number; lastBounceAt: number | null; deliveredAccounts: number; lastDeliveredAt: number | null };

export function feedbackVerdict(t: FeedbackTally): FeedbackVerdict {
  // The other kind only stands in the way when independent accounts agree on it too: one account's report alone
  // never undoes what independent accounts settled (bench/confidence-world.ts found that hole).
  const bounced = t.bounceAccounts >= INDEPENDENT_ACCOUNTS;
  const delivered = t.deliveredAccounts >= INDEPENDENT_ACCOUNTS;
  if (bounced && (!delivered || t.lastBounceAt! > t.lastDeliveredAt!)) return "bounced";
  if (delivered && (!bounced || t.lastDeliveredAt! > t.lastBounceAt!)) return "delivered";
  return "none";
}

/** The age buckets, in days: an age up to the first bound is bucket 0, up to the second bucket 1, and so on. */
export const CHECK_AGE_DAYS = [30, 90] as const;
export const SEEN_AGE_DAYS = [90, 365, 730] as const;
/** Sources are counted 1, 2, and 3 or more. */
export const MAX_SOURCES_COUNTED = 3;

/**
 * The table. Points are added (`base` for our check, then the check's age, the sources and the last sighting, where a
 * row has a value for that check), the sum is held to 0..100, then feedback applies: "bounced" caps it, "delivered"
 * raises it to a floor. A missing row adds nothing: a confirmed mailbox's score does not care which supplier said so.
 */
export const CONFIDENCE_TABLE = {
  base: { valid: 97, catch_all: 40, unknown: 40, never: 40, invalid: 5 } satisfies Record<OurCheck, number>,
  /** By CHECK_AGE_DAYS bucket: a mailbox we confirmed may have died since. */
  checkAge: { valid: [0, -2, -7] } satisfies Partial<Record<OurCheck, number[]>>,
  /** Sources 1, 2, 3+: independent suppliers that agree are rarely all wrong; one alone is right less than half the time. */
  sources: { catch_all: [0, 43, 55], unknown: [0, 43, 55], never: [0, 43, 55] } satisfies Partial<Record<OurCheck, number[]>>,
  /** By SEEN_AGE_DAYS bucket: nobody has seen the address for a while. */
  seen: { catch_all: [0, -8, -20, -35], unknown: [0, -8, -20, -35], never: [0, -8, -20, -35] } satisfies Partial<Record<OurCheck, number[]>>,
  /** Independent accounts' hard bounces since our last confirmation: at most this. */
  bouncedCap: 10,
  /** Independent accounts' recent deliveries, where our check could not decide: at least this. */
  deliveredFloor: { catch_all: 95, unknown: 95, never: 95 } satisfies Partial<Record<OurCheck, number>>,
} as const;

export type ConfidenceInputs = {
  check: OurCheck;
  /** Days since our last check (ignored when never checked). */
  checkAgeDays: number;
  /** Independent sources that reported the address (at least 1 counted). */
  sources: number;
  /** Days since any source last reported it. */
  seenAgeDays: number;
  feedback: FeedbackVerdict;
};

/** The bucket of an age: how many bounds it is past. */
export function ageBucket(days: number, bounds: readonly number[]): number {
  return bounds.filter((bound) => days > bound).length;
}

export const sourcesBucket = (sources: number) => Math.min(Math.max(sources, 1), MAX_SOURCES_COUNTED) - 1;

const at = (row: Partial<Record<OurCheck, readonly number[]>>, check: OurCheck, bucket: number) => row[check]?.[bucket] ?? 0;

/** The confidence of an address, 0..100. */
export function confidence(inputs: ConfidenceInputs): number {
  const t = CONFIDENCE_TABLE;
  const { check } = inputs;
  const sum =
    t.base[check] +
    at(t.checkAge, check, ageBucket(inputs.checkAgeDays, CHECK_AGE_DAYS)) +
    at(t.sources, check, sourcesBucket(inputs.sources)) +
    at(t.seen, check, ageBucket(inputs.seenAgeDays, SEEN_AGE_DAYS));
  const score = Math.max(0, Math.min(100, sum));
  if (inputs.feedback === "bounced") return Math.min(score, t.bouncedCap);
  if (inputs.feedback === "delivered") return Math.max(score, (t.deliveredFloor as Partial<Record<OurCheck, number>>)[check] ?? 0);
  return score;
}

export const CONFIDENCE_LABELS = ["high", "medium", "low"] as const;
export type ConfidenceLabel = (typeof CONFIDENCE_LABELS)[number];
/** The lowest score of each label. */
export const LABEL_FLOORS = { high: 80, medium: 50, low: 0 } as const satisfies Record<ConfidenceLabel, number>;

export function confidenceLabel(score: number): ConfidenceLabel {
  return score >= LABEL_FLOORS.high ? "high" : score >= LABEL_FLOORS.medium ? "medium" : "low";
}
