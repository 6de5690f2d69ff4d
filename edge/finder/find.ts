/**
 * The email finder (docs/api.md "GET /v1/email_finder"): a work address from a name and a domain, in this order,
 * stopping at the first step that settles it:
 *
 * 1. the person is in our data with an address at the domain: that address (no probe);
 * 2. the domain's patterns, learned from every name and address pair we hold there (shared/people/patterns.ts), make
 *    the candidates, most probable first; a candidate an erased person held is never used (erased_addresses), nor one we
 *    hold for someone of another name (it is theirs);
 * 3. at most one RCPT, for the first candidate, at a domain whose receiver allows probing and does not accept every
 *    address (a second only where our evidence holds two patterns of similar share: secondWorthProbing), through the
 *    probe and so within the same receiver budgets and harvest rules as every check; the catch-all test rides along
 *    once and is kept per domain (domain_facts), so later finds there ask nothing; a receiver's answer is kept by the
 *    address's keyed hash (finder_checks), so a repeat asks nothing either.
 *
 * Where the receiver accepts everything or forbids probing (FINDER_NO_PROBE), the pattern's evidence grades the answer
 * (patternConfidence). Pure apart from its `io`: the route and the batch give it the database and the probe.
 */
import type { EmailFinderResult } from "../../shared/api.ts";
import { isRoleAccount } from "../../shared/email/lists.ts";
import { rcptProvesNothing, receiverFamily, receiverPolicy, mxProvider, type ReceiverFamily } from "../../shared/email/receivers.ts";
import { confidence, confidenceLabel, DELIVERIES_WINDOW_DAYS, feedbackVerdict, REACHED_MAILBOX, type FeedbackVerdict } from "../../shared/people/confidence.ts";
import { candidatesFor, learnPatterns, secondWorthProbing, type Candidate, type KnownPair, type NameTokens } from "../../shared/people/patterns.ts";
import type { NameParts } from "../../shared/people/names.ts";
import { iso } from "../db/rows.ts";
import type { MailHostResolution } from "../verification/mx.ts";
import type { ProbeCallResult } from "../verification/probe-call.ts";
import { completeVerification, prepareAddress, probeHostsFor } from "../verification/verify.ts";
import type { CheckRow, DomainFactsRow, KnownAddressRow, PairRow } from "../people/finder-store.ts";

const DAY_MS = 86_400_000;
/** A repeat of a charged find by the same account within this many days is free. */
export const FIND_REPEAT_DAYS = 30;
/** Our own check of a candidate, and a domain's catch-all test, stand this long. */
export const FINDER_CHECK_DAYS = 30;

/**
 * Families the finder never sends a RCPT to: those the receiver policy does not probe (Yahoo accepts every address,
 * Outlook.com forbids checking), Microsoft 365 (its RCPT proves nothing: rcptProvesNothing), and Cisco's gateway, which
 * hides refusals past its harvest threshold (it accepts unknown recipients silently: research/provider-limits.md).
 */
export function finderMayProbe(family: ReceiverFamily, provider: string | null): boolean {
  if (receiverPolicy(family).probe !== "yes") return false;
  if (rcptProvesNothing(provider)) return false;
  return family !== "cisco";
}

/** The pattern answer's highest score without the receiver's word (medium at best), and from the prior alone. */
export const PATTERN_CEILING = 75;
/** A receiver-accepted address whose pattern does not hold the family name: at most this (medium). */
export const UNNAMED_CEILING = 70;
/** A receiver's answer that said nothing (greylisted, budget spent, blocked, timeout) stands this long: no new RCPT meanwhile. */
export const NO_ANSWER_HOLD_MS = 15 * 60_000;
export const PRIOR_CEILING = 30;

/**
 * How far a pattern-made address is trusted without the receiver's word: its pattern's share, discounted while few
 * known addresses show it (count / (count + 3)), at most PATTERN_CEILING (PRIOR_CEILING from the prior); then feedback:
 * deliveries (the caller's own, or INDEPENDENT_ACCOUNTS accounts') raise it to 90, a bounce never returns it at all.
 */
export function patternConfidence(candidate: Candidate, feedback: FeedbackVerdict): number {
  const ceiling = candidate.prior ? PRIOR_CEILING : PATTERN_CEILING;
  const evidence = candidate.prior ? candidate.share : candidate.share * (candidate.count / (candidate.count + 3));
  const score = Math.min(ceiling, Math.round(100 * evidence));
  return feedback === "delivered" ? Math.max(score, 90) : score;
}

/** The weight a known pair carries in learning: nothing when it is undeliverable, found invalid or bounced; twice when delivered. */
export function pairWeight(row: Pick<PairRow, "undeliverable" | "reason" | "feedback">): number {
  if (Number(row.undeliverable) === 1 || row.reason === "mailbox_not_found" || row.feedback === "bounced") return 0;
  return row.feedback === "delivered" ? 2 : 1;
}

/** The known pairs of a domain as learning reads them (role accounts and names we cannot split left out). */
export function pairsFromRows(rows: readonly PairRow[]): KnownPair[] {
  const pairs: KnownPair[] = [];
  for (const row of rows) {
    if (row.name === null) continue;
    const local = row.email.slice(0, row.email.lastIndexOf("@"));
    if (isRoleAccount(local)) continue;
    const [given, family, full] = JSON.parse(row.name) as [string | null, string | null, string];
    const name: NameParts = given && family ? { given, family } : splitFull(full);
    pairs.push({ name, local, weight: pairWeight(row) });
  }
  return pairs;
}

function splitFull(full: string): NameParts {
  const parts = full.trim().split(/\s+/);
  return parts.length < 2 ? { given: parts[0] } : { given: parts[0], family: parts.slice(1).join(" ") };
}

/**
 * What the reports about a candidate say for this caller: its own latest report first (a delivery or a hard bounce of
 * its own mail), else other accounts' only when INDEPENDENT_ACCOUNTS agree (feedbackVerdict), so one account cannot
 * poison another's answers.
 */
export function candidateFeedback(reports: readonly { account_id: string; outcome: string; occurred_at: number }[], accountId: string, now: number): FeedbackVerdict {
  const own = reports.filter((r) => r.account_id === accountId && (r.outcome === "hard_bounce" || (REACHED_MAILBOX as readonly string[]).includes(r.outcome)));
  own.sort((a, b) => Number(b.occurred_at) - Number(a.occurred_at));
  if (own[0]) return own[0].outcome === "hard_bounce" ? "bounced" : "delivered";
  const bounces = reports.filter((r) => r.outcome === "hard_bounce");
  const reached = reports.filter((r) => (REACHED_MAILBOX as readonly string[]).includes(r.outcome) && Number(r.occurred_at) > now - DELIVERIES_WINDOW_DAYS * DAY_MS);
  const latest = (rs: typeof reports) => (rs.length ? Math.max(...rs.map((r) => Number(r.occurred_at))) : null);
  const verdict = feedbackVerdict({
    bounceAccounts: new Set(bounces.map((r) => r.account_id)).size,
    lastBounceAt: latest(bounces),
    deliveredAccounts: new Set(reached.map((r) => r.account_id)).size,
    lastDeliveredAt: latest(reached),
  });
  return verdict;
}

/** One find's inputs, parsed (edge/finder/query.ts). */
export type FindInput = { tokens: NameTokens; nameKey: string; firstName: string | null; lastName: string | null; domain: string; minConfidence: number | null };

/** What the finder needs from the outside world, for one find. */
export type FinderIo = {
  now: number;
  accountId: string;
  /** Our data: the person's known addresses at the domain, the domain's pairs, its facts (one round trip, with DNS beside it). */
  known: KnownAddressRow[];
  pairs: PairRow[];
  facts: DomainFactsRow | undefined;
  dns: MailHostResolution;
  /** The keyed hash of an address (FEEDBACK_HASH_KEY). */
  hash(email: string): Promise<string>;
  /** Our checks, erasures and reports of these candidates (by hash), and those we hold for someone of another name (one round trip). */
  candidateFacts(
    hashes: string[],
    emails: string[],
  ): Promise<{ checks: CheckRow[]; erased: Set<string>; reports: { address_hash: string; account_id: string; outcome: string; occurred_at: number }[]; heldByOthers: Set<string> }>;
  /** Asks the receiver about one address (the probe); null: the check is already under way elsewhere. */
  probe(email: string, hash: string, catchAllCheck: boolean): Promise<ProbeCallResult | null>;
  /** Keeps what a probe answered (the check by hash, the domain's catch-all). */
  record(hash: string, check: { outcome: string; reason: string; classification: string; catchAll: boolean | null; checkedAt: number } | null, acceptAll: boolean | null): Promise<void>;
};

/** A find's outcome: an answer (with the person disclosed, for a known address), a miss, or a check still under way. */
export type FindOutcome =
  | { kind: "found"; result: Omit<EmailFinderResult, "repeat">; personId: number | null }
  | { kind: "not_found"; ambiguous: boolean }
  | { kind: "pending" };

const verificationOf = (classification: string | null, reason: string | null, outcome: string | null, at: number | null) => ({
  status: (classification as "valid" | "risky" | "invalid" | null) ?? null,
  reason,
  smtp_outcome: outcome,
  date: at === null ? null : iso(Number(at)),
});

export async function findEmail(input: FindInput, io: FinderIo): Promise<FindOutcome> {
  const { now } = io;
  const mx = probeHostsFor(io.dns);
  const provider = mxProvider(io.dns.hosts);
  const family = mx ? receiverFamily(mx) : null;
  const base = { domain: input.domain, first_name: input.firstName, last_name: input.lastName, mx_provider: provider, receiver_family: family };
  const learned = learnPatterns(pairsFromRows(io.pairs));
  const acceptAllKnown = io.facts?.accept_all != null && Number(io.facts.accept_all_checked_at ?? 0) >= now - FINDER_CHECK_DAYS * DAY_MS ? Number(io.facts.accept_all) === 1 : null;

  // 1. The person's own address at the domain.
  const persons = new Set(io.known.map((k) => Number(k.person_id)));
  if (persons.size > 1) return { kind: "not_found", ambiguous: true };
  const known = io.known[0];
  if (known) {
    const score = Number(known.confidence);
    const local = known.email.slice(0, known.email.lastIndexOf("@"));
    const follows = learned.patterns.find((p) => candidatesFor(input.tokens, { ...learned, patterns: [p] }, 1)[0]?.local === local.toLowerCase());
    return {
      kind: "found",
      personId: Number(known.person_id),
      result: {
        ...base,
        email: known.email,
        confidence: score,
        confidence_label: confidenceLabel(score),
        method: "known_address",
        confirmed: input.minConfidence === null || score >= input.minConfidence,
        accept_all: acceptAllKnown,
        evidence: { pattern: follows?.pattern ?? null, share: follows?.share ?? null, count: follows?.count ?? 0, known_at_domain: learned.known, feedback: known.feedback as FeedbackVerdict },
        verification: verificationOf(known.classification, known.reason, known.smtp_outcome, known.checked_at),
        sources: { count: Number(known.sources), first_seen_at: iso(Number(known.first_seen_at)), last_seen_at: iso(Number(known.last_seen_at)) },
      },
    };
  }

  // 2. Candidates from the domain's patterns (or the prior), never an erased person's address.
  const candidates = candidatesFor(input.tokens, learned, 3);
  const emails = candidates.map((c) => `${c.local}@${input.domain}`);
  const hashes = await Promise.all(emails.map((e) => io.hash(e)));
  const facts = await io.candidateFacts(hashes, emails);
  const usable = candidates
    .map((c, i) => ({ c, email: emails[i]!, hash: hashes[i]!, check: facts.checks.find((k) => k.address_hash === hashes[i]), feedback: candidateFeedback(facts.reports.filter((r) => r.address_hash === hashes[i]), io.accountId, now) }))
    .filter((x) => !facts.erased.has(x.hash) && !facts.heldByOthers.has(x.email) && x.feedback !== "bounced");

  const answer = (x: (typeof usable)[number], how: "receiver_accepted" | "pattern", acceptAll: boolean | null, check: { classification: string | null; reason: string | null; outcome: string | null; at: number | null } | null): FindOutcome => {
    const accepted = how === "receiver_accepted";
    // An address made without the family name ({first}, {first}.{l}) is accepted for whoever holds it: it proves a
    // mailbox, not whose. Returned, not confirmed, free, and at most medium.
    const identifies = x.c.pattern.includes("{last}");
    const valid = confidence({ check: "valid", checkAgeDays: (now - Number(check?.at ?? now)) / DAY_MS, sources: 1, seenAgeDays: 0, feedback: x.feedback });
    const score = accepted ? (identifies ? valid : Math.min(valid, UNNAMED_CEILING)) : patternConfidence(x.c, x.feedback);
    return {
      kind: "found",
      personId: null,
      result: {
        ...base,
        email: x.email,
        confidence: score,
        confidence_label: confidenceLabel(score),
        method: how,
        confirmed: accepted && identifies,
        accept_all: acceptAll,
        evidence: { pattern: x.c.pattern, share: x.c.share, count: x.c.count, known_at_domain: learned.known, feedback: x.feedback },
        verification: check ? verificationOf(check.classification, check.reason, check.outcome, check.at) : verificationOf(null, null, null, null),
        sources: null,
      },
    };
  };

  const first = usable[0];
  if (!first) return { kind: "not_found", ambiguous: false };
  const mayProbe = mx !== null && family !== null && finderMayProbe(family, provider);
  const storedAnswer = (x: (typeof usable)[number]) => x.check && x.check.outcome !== null ? x.check : undefined;

  // A receiver's earlier answer to one of these candidates settles it without a new RCPT.
  for (const x of usable.slice(0, 2)) {
    const stored = storedAnswer(x);
    if (!stored) continue;
    const at = { classification: stored.classification, reason: stored.reason, outcome: stored.outcome, at: stored.checked_at };
    // A check made without the catch-all test (the domain's answer was known then) goes by the domain's answer.
    const acceptAll = stored.catch_all === null ? acceptAllKnown : Number(stored.catch_all) === 1;
    if (stored.outcome === "accepted" && acceptAll === false) return answer(x, "receiver_accepted", false, at);
    if (stored.outcome === "accepted") return answer(x, "pattern", acceptAll, at);
    // The receiver said nothing a moment ago (its budget for us was spent, it greylisted, it blocked): the pattern
    // answers, unconfirmed, until NO_ANSWER_HOLD_MS has passed, rather than a new RCPT each time the find is asked.
    if (stored.outcome !== "mailbox_not_found" && Number(stored.checked_at) >= now - NO_ANSWER_HOLD_MS) return answer(x, "pattern", acceptAllKnown, at);
  }
  if (usable.some((x) => x.check && x.check.outcome === null && Number(x.check.pending_until) >= now)) return { kind: "pending" };

  // 3. No probe where it proves nothing or is not ours to ask, where the domain accepts everything, or without evidence worth a RCPT.
  if (!mayProbe || acceptAllKnown === true) {
    return answer(first, "pattern", acceptAllKnown ?? (family !== null && !finderMayProbe(family, provider) && receiverPolicy(family).probe === "accepts_all" ? true : null), null);
  }
  const tries = secondWorthProbing(first.c, usable[1]?.c) ? usable.slice(0, 2) : usable.slice(0, 1);
  for (const x of tries) {
    if (storedAnswer(x)?.outcome === "mailbox_not_found") continue;
    const catchAllCheck = acceptAllKnown === null;
    const call = await io.probe(x.email, x.hash, catchAllCheck);
    if (call === null) return { kind: "pending" };
    const prepared = prepareAddress(x.email);
    const verdict = prepared.ok ? completeVerification(prepared, io.dns, call, now) : null;
    const outcome = call.ok ? call.response.outcome : null;
    const catchAll = call.ok ? call.response.catch_all : null;
    const kept = verdict && outcome ? { outcome, reason: verdict.reason ?? "unknown", classification: verdict.classification, catchAll, checkedAt: now } : null;
    await io.record(x.hash, kept, catchAll);
    const at = { classification: verdict?.classification ?? null, reason: verdict?.reason ?? null, outcome, at: now };
    if (outcome === "accepted") {
      const acceptAll = catchAll ?? acceptAllKnown;
      return acceptAll === false ? answer(x, "receiver_accepted", false, at) : answer(x, "pattern", acceptAll, at);
    }
    if (outcome === "mailbox_not_found") continue;
    // Greylisted, a spent budget, a block, a timeout: the receiver said nothing; the pattern answers, unconfirmed.
    return answer(x, "pattern", acceptAllKnown, at);
  }
  return { kind: "not_found", ambiguous: false };
}

