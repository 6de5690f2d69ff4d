/**
 * The confidence table of shared/people/confidence.ts evaluated in SQL, so that the lookup filters on it (`min_confidence`)
 * and charges only when something is left, in its one database round trip (edge/people/store.ts). Built from the same
 * table and the same buckets as `confidence()`, never restated; test/workers/confidence.test.ts checks that both give
 * the same score for every combination of inputs. Every value goes in as a bound parameter.
 */
import { sql, type SQL } from "drizzle-orm";
import { reasonsProving, type AnswerProof } from "../../shared/email/reasons.ts";
import {
  CHECK_AGE_DAYS,
  CHECK_OF_PROOF,
  CONFIDENCE_TABLE,
  DELIVERIES_WINDOW_DAYS,
  INDEPENDENT_ACCOUNTS,
  MAX_SOURCES_COUNTED,
  OUR_CHECKS,
  REACHED_MAILBOX,
  SEEN_AGE_DAYS,
  type OurCheck,
} from "../../shared/people/confidence.ts";

const DAY_MS = 86_400_000;

/** The inputs as SQL expressions: our check's name, the three buckets (0-based) and the feedback verdict's name. */
export type ConfidenceSqlInputs = { check: SQL; checkAgeBucket: SQL; sourcesBucket: SQL; seenAgeBucket: SQL; feedback: SQL };

/** `case <check> when 'valid' then <points> ... else 0 end`, for a table row with a value per check (and per bucket). */
function byCheck(check: SQL, points: (c: OurCheck) => SQL | null): SQL {
  const branches = OUR_CHECKS.flatMap((c) => {
    const p = points(c);
    return p === null ? [] : [sql`when ${c} then ${p}`];
  });
  return branches.length === 0 ? sql`0` : sql`(case ${check} ${sql.join(branches, sql` `)} else 0 end)`;
}

function byBucket(bucket: SQL, points: readonly number[] | undefined): SQL | null {
  if (!points) return null;
  return sql`(case ${bucket} ${sql.join(points.map((p, i) => sql`when ${i} then ${p}`), sql` `)} else 0 end)`;
}

/** The score, 0..100, of the inputs (the table's rule: points added, held to 0..100, then feedback's cap or floor). */
export function confidenceOfInputsSql(i: ConfidenceSqlInputs): SQL {
  const t = CONFIDENCE_TABLE;
  const row = (r: Partial<Record<OurCheck, readonly number[]>>, bucket: SQL) => byCheck(i.check, (c) => byBucket(bucket, r[c]));
  const sum = sql`${byCheck(i.check, (c) => sql`${t.base[c]}`)} + ${row(t.checkAge, i.checkAgeBucket)} + ${row(t.sources, i.sourcesBucket)} + ${row(t.seen, i.seenAgeBucket)}`;
  const score = sql`max(0, min(100, ${sum}))`;
  const floors = t.deliveredFloor as Partial<Record<OurCheck, number>>;
  const floor = byCheck(i.check, (c) => (floors[c] === undefined ? null : sql`${floors[c]}`));
  return sql`(case ${i.feedback} when 'bounced' then min(${score}, ${t.bouncedCap}) when 'delivered' then max(${score}, ${floor}) else ${score} end)`;
}

/** How many of `bounds` (days) an age in ms is past: the bucket. */
const ageBucketSql = (ageMs: SQL, bounds: readonly number[]) => sql`(${sql.join(bounds.map((d) => sql`(${ageMs} > ${d * DAY_MS})`), sql` + `)})`;

const inList = (values: readonly string[]) => sql`(select value from json_each(${JSON.stringify(values)}))`;

/** Our check of a stored address, from its reason and time, as shared/people/confidence.ts `ourCheck` says. */
function ourCheckSql(reason: SQL, checkedAt: SQL): SQL {
  const proofsOf = (check: OurCheck) => (Object.keys(CHECK_OF_PROOF) as AnswerProof[]).filter((p) => CHECK_OF_PROOF[p] === check);
  const branches = OUR_CHECKS.filter((c) => c !== "never" && c !== "unknown").map((c) => sql`when ${reason} in ${inList(reasonsProving(...proofsOf(c)))} then ${c}`);
  return sql`(case when ${checkedAt} is null or ${reason} is null then 'never' ${sql.join(branches, sql` `)} else 'unknown' end)`;
}

/** A tally of reports (shared/people/confidence.ts FeedbackTally) as SQL expressions. */
export type FeedbackTallySql = { bounceAccounts: SQL; lastBounceAt: SQL; deliveredAccounts: SQL; lastDeliveredAt: SQL };

/** `feedbackVerdict()` of a tally: 'bounced', 'delivered' or 'none'. */
export function feedbackVerdictOfTallySql(t: FeedbackTallySql): SQL {
  return sql`(case
    when ${t.bounceAccounts} >= ${INDEPENDENT_ACCOUNTS} and (${t.deliveredAccounts} < ${INDEPENDENT_ACCOUNTS} or ${t.lastBounceAt} > ${t.lastDeliveredAt}) then 'bounced'
    when ${t.deliveredAccounts} >= ${INDEPENDENT_ACCOUNTS} and (${t.bounceAccounts} < ${INDEPENDENT_ACCOUNTS} or ${t.lastDeliveredAt} > ${t.lastBounceAt}) then 'delivered'
    else 'none' end)`;
}

/**
 * The verdict of the reports about the person_emails row `e` at `now` (docs/api.md "POST /v1/email_feedback"): its
 * reports are found by its address_hash (none while the cron has not named the row yet); hard bounces count from our
 * last check that found the mailbox, deliveries from DELIVERIES_WINDOW_DAYS ago.
 */
export function storedAddressFeedbackSql(e: string, now: number): SQL {
  const col = (name: string) => sql.raw(`${e}.${name}`);
  const since = sql`(case when ${col("reason")} in ${inList(reasonsProving("mailbox_exists"))} then ${col("checked_at")} else 0 end)`;
  const bounce = sql`(f.outcome = 'hard_bounce' and f.occurred_at > ${since})`;
  const reached = sql`(f.outcome in ${inList(REACHED_MAILBOX)} and f.occurred_at > ${now - DELIVERIES_WINDOW_DAYS * DAY_MS})`;
  const verdict = feedbackVerdictOfTallySql({ bounceAccounts: sql`ba`, lastBounceAt: sql`lb`, deliveredAccounts: sql`da`, lastDeliveredAt: sql`ld` });
  return sql`(select ${verdict} from (select
      count(distinct case when ${bounce} then f.account_id end) as ba, max(case when ${bounce} then f.occurred_at end) as lb,
      count(distinct case when ${reached} then f.account_id end) as da, max(case when ${reached} then f.occurred_at end) as ld
    from email_feedback f where f.address_hash = ${col("address_hash")}))`;
}

/**
 * The confidence of the person_emails row `e` (an alias in the surrounding statement) at `now`, with `feedback` the
 * verdict of the reports about it (an SQL expression naming a FEEDBACK_VERDICTS value).
 */
export function storedAddressConfidenceSql(e: string, now: number, feedback: SQL = storedAddressFeedbackSql(e, now)): SQL {
  const col = (name: string) => sql.raw(`${e}.${name}`);
  const sources = sql`(select count(*) from person_email_sources s where s.email_id = ${col("id")})`;
  return confidenceOfInputsSql({
    check: ourCheckSql(col("reason"), col("checked_at")),
    checkAgeBucket: ageBucketSql(sql`(${now} - ${col("checked_at")})`, CHECK_AGE_DAYS),
    sourcesBucket: sql`(min(max(${sources}, 1), ${MAX_SOURCES_COUNTED}) - 1)`,
    seenAgeBucket: ageBucketSql(sql`(${now} - ${col("last_seen_at")})`, SEEN_AGE_DAYS),
    feedback,
  });
}
