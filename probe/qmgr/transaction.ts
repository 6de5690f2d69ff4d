/**
 * One transaction on one warm session: MAIL FROM, the RCPTs of the checks the destination put in
 * it and the catch-all tests riding along, then what each reply means for its check: an answer, a
 * retry in a later transaction, or a failure. What the replies teach about the server (a tarpit, a
 * recipient limit, a session that died when reused) goes to pacing; whether the server pushed back
 * goes to the caller, which backs off and closes the session.
 */
import { countRcptReply, destinationEvent } from "../counters.ts";
import type { CatchAllCache, CatchAllTest } from "./catch-all-cache.ts";
import { blankOutcome, type CheckOutcome, type QueuedCheck } from "../check.ts";
import type { Pacing } from "./pacing.ts";
import type { Slot } from "./session-pool.ts";
import { classifyRcptReply, isThrottling } from "../smtp/classify.ts";
import type { SmtpReply } from "../smtp/reply.ts";
import { isPositive, type SmtpSession } from "../smtp/session.ts";
import { monotonicNow } from "../clock.ts";
import { isUnknownUser } from "../policy/budget.ts";
import type { RcptReply } from "../policy/block.ts";

export type TransactionDeps = {
  address: string;
  mailFrom: string;
  pacing: Pacing;
  catchAll: CatchAllCache;
  /** Answers a check; a check already answered stays as it is. */
  finish(p: QueuedCheck, outcome: CheckOutcome): void;
  /** The server answered a RCPT: it is working, however slowly. */
  answered(now: number): void;
  /** Every reply to RCPT (`unknown`: refused as an unknown user) and every refusal of MAIL FROM or RSET: the family's rules read them. */
  replied?(reply: SmtpReply, unknown: boolean, now: number): void;
  /** A catch-all test's answer: the random address accepted (true) or refused (false). */
  catchAllAnswered?(catchAll: boolean, now: number): void;
  /** RCPTs this transaction asks: counted when they go, a deferred catch-all test only if it is asked. */
  rcptsAsked?(n: number): void;
  /** Catch-all tests the dispatch took RCPT tokens for and that were never asked (their batch's replies settled it). */
  testsUnasked?(n: number, now: number): void;
  /** For a transaction of catch-all tests alone (a server that takes one RCPT per transaction): its deadline. */
  testsDeadline?: number;
  /**
   * Whether these refusals are a block of our probe (policy/block.ts), recorded as one when they are: the
   * refusal of RSET or MAIL FROM, or the replies to this transaction's RCPTs. Its checks then go back unasked.
   */
  blocked?(stage: "mail" | "rcpt", replies: readonly RcptReply<SmtpReply>[], now: number): false | "all" | ReadonlySet<string>;
  /** The recipient domains whose RCPTs this transaction answered (accepted, or refused as a mailbox's answer): evidence a tenant's block is its own. */
  rcptAnswered?(domains: string[]): void;
};

export type TransactionEnd = {
  /** Checks to put back at the front of the queue, in this order, each counting one more retry. */
  retry: QueuedCheck[];
  /** Checks a session that turned out dead never asked: straight back to the queue, no retry counted. */
  unasked: QueuedCheck[];
  /** Why the server pushed back, when it did (421, a rate limit, a dropped session). */
  pushback: string | null;
  /** Neither a failure nor a refusal. */
  clean: boolean;
};

/** What the answer to the random address says about catch-all: accepted yes, any permanent refusal no. */
function catchAllFromReply(reply: SmtpReply): boolean | null {
  const cls = classifyRcptReply(reply);
  if (cls === "accepted") return true;
  if (reply.code >= 500 && cls !== "too_many_recipients") return false;
  return null;
}

export async function runTransaction(slot: Slot & { session: SmtpSession }, batch: QueuedCheck[], tests: CatchAllTest[], deps: TransactionDeps): Promise<TransactionEnd> {
  const s = slot.session;
  const { pacing } = deps;
  for (const t of tests) t.finish = deps.catchAll.begin(t.domain, t.host);
  const firstUse = s.transactions === 0;
  const started = monotonicNow();
  let lastReplyAt: number | null = null;
  let throttled = false;
  let sawReply = false;
  const retry: QueuedCheck[] = [];
  const unasked: QueuedCheck[] = [];
  /** Checks refused by policy (5.7.x): answered once the transaction shows whether the refusal was a block of us. */
  const policyRefused: { p: QueuedCheck; reply: SmtpReply; replyMs: number }[] = [];
  for (const p of batch) p.waitingFor = "a reply to RCPT TO";

  // Sequential waits of this transaction so far: one with PIPELINING; otherwise RSET (on a reused
  // session), MAIL FROM, then one per RCPT answered.
  let roundTrips = s.pipelining ? 1 : firstUse ? 1 : 2;
  const facts = (): CheckOutcome => ({
    ...blankOutcome(),
    tls: s.tls,
    pipelining: s.pipelining,
    reusedSession: !firstUse,
    note: slot.note,
    roundTrips: (firstUse ? s.setupRoundTrips : 0) + roundTrips,
  });

  const onReply = (index: number, reply: SmtpReply) => {
    sawReply = true;
    countRcptReply(reply.code);
    const now = monotonicNow();
    deps.answered(now);
    const gap = pacing.rcptReplied(reply.code, lastReplyAt, now);
    if (gap !== null) destinationEvent("tarpit", deps.address, { reply_ms: gap });
    lastReplyAt = now;
    if (!s.pipelining) roundTrips++;
    const cls = classifyRcptReply(reply);
    const unknown = isUnknownUser(cls, reply);
    (index >= batch.length ? tests[index - batch.length]?.budgetRcpt : batch[index]?.budgetRcpt)?.replied(unknown, now);
    deps.replied?.(reply, unknown, now);
    if (index >= batch.length) {
      const catchAll = catchAllFromReply(reply);
      if (catchAll !== null) deps.catchAllAnswered?.(catchAll, now);
      tests[index - batch.length]?.finish(catchAll);
      return;
    }
    const p = batch[index]!;
    if (p.finished) return;
    if (cls === "policy_block" && deps.blocked) return void policyRefused.push({ p, reply, replyMs: now - started });
    if (cls === "too_many_recipients" || isThrottling(reply)) {
      if (!(cls === "too_many_recipients" && pacing.recipientLimitReached(index, now))) throttled = true;
      if (pacing.mayRetry(p.retries)) return void retry.push(p);
    }
    answer(p, reply, cls === "mailbox_not_found", () => ({ ...facts(), stage: "rcpt", rcpt: reply }), now - started, deps);
  };

  // A transaction of tests alone asks them outright. Otherwise a test is asked after the batch's replies
  // (deferred) without PIPELINING, and with it where the batch holds two or more of the test's domain or a
  // job's line there: the answers about those addresses may settle catch-all on their own (one refused as an
  // unknown user: the server is not accepting every address), and the random address, a certain unknown user
  // to a receiver counting them, is then never sent. One more round trip when it is. A test beside one single
  // check goes in the same write, as a sign-up check's latency wants.
  const testsAlone = batch.length === 0;
  const keyOf = (domain: string, host: string) => `${domain} ${host.toLowerCase()}`;
  const askedAfter = (t: CatchAllTest) => {
    const atDomain = batch.filter((p) => keyOf(p.domain, p.req.host) === keyOf(t.domain, t.host));
    return !s.pipelining || atDomain.length >= 2 || atDomain.some((p) => p.req.bulk);
  };
  const deferred = testsAlone ? [] : tests.filter(askedAfter);
  // The order of `tests` is the order their RCPTs go: the ones in the first write, then the deferred ones asked.
  tests.splice(0, tests.length, ...tests.filter((t) => !deferred.includes(t)), ...deferred);
  const early = tests.length - deferred.length;
  const followUp = (replies: readonly (SmtpReply | null)[]) => {
    // The random address is only asked about for a domain with an accepted address and no unknown user.
    const accepted = new Set<string>();
    const refused = new Set<string>();
    batch.forEach((p, i) => {
      const reply = replies[i];
      if (!reply) return;
      if (isPositive(reply)) accepted.add(keyOf(p.domain, p.req.host));
      else if (isUnknownUser(classifyRcptReply(reply), reply)) refused.add(keyOf(p.domain, p.req.host));
    });
    const asked = deferred.filter((t) => accepted.has(keyOf(t.domain, t.host)) && !refused.has(keyOf(t.domain, t.host)));
    for (const t of deferred) {
      if (asked.includes(t)) continue;
      // A server that refused one address as unknown is not accepting every address: that is the test's answer.
      t.finish(refused.has(keyOf(t.domain, t.host)) ? false : null);
      t.budgetRcpt?.cancel(monotonicNow());
    }
    tests.splice(early, tests.length - early, ...asked);
    if (asked.length > 0 && s.pipelining) roundTrips++;
    unaskedTests = deferred.length - asked.length;
    if (asked.length > 0) deps.rcptsAsked?.(asked.length);
    return asked.map((t) => t.recipient);
  };
  // Until the batch's replies are in, none of the deferred tests is asked (a transaction cut short never asks them).
  let unaskedTests = deferred.length;
  deps.rcptsAsked?.(batch.length + early);

  const result = await s.transaction({
    mailFrom: deps.mailFrom,
    utf8: batch.some((p) => p.utf8),
    recipients: [...batch.map((p) => p.req.recipient), ...tests.slice(0, early).map((t) => t.recipient)],
    ...(deferred.length > 0 ? { followUp } : {}),
    deadline: testsAlone ? (deps.testsDeadline ?? monotonicNow()) : Math.max(...batch.map((p) => p.req.deadline)),
    onReply,
  });
  for (const t of tests) t.finish(null);
  if (unaskedTests > 0) deps.testsUnasked?.(unaskedTests, monotonicNow());

  // Each RCPT's reply with its recipient domain (the batch's, then the tests' in the order they went).
  const rcptReplies: RcptReply<SmtpReply>[] = [];
  result.replies.forEach((reply, i) => {
    const domain = i < batch.length ? batch[i]!.domain : tests[i - batch.length]?.domain;
    if (reply && domain !== undefined) rcptReplies.push({ domain, reply });
  });
  const answeredDomains = [...new Set(rcptReplies.filter((r) => answersForDomain(r.reply)).map((r) => r.domain))];
  if (answeredDomains.length > 0) deps.rcptAnswered?.(answeredDomains);
  const refusedByPolicy = new Set(policyRefused.map((h) => h.p));
  const rcptBlock = policyRefused.length > 0 ? deps.blocked!("rcpt", rcptReplies, monotonicNow()) : false;
  for (const { p, reply, replyMs } of policyRefused) {
    // A block of our probe is no answer about the mailbox: the check goes back, to wait for the block's end (its domain's, or the key's).
    if (rcptBlock === "all" || (rcptBlock && rcptBlock.has(p.domain))) unasked.push(p);
    else answer(p, reply, false, () => ({ ...facts(), stage: "rcpt", rcpt: reply }), replyMs, deps);
  }
  const unanswered = batch.filter((p) => !p.finished && !retry.includes(p) && !refusedByPolicy.has(p));
  const refusal = result.reset && !isPositive(result.reset) ? result.reset : result.mail && !isPositive(result.mail) ? result.mail : null;
  if (refusal) deps.replied?.(refusal, false, monotonicNow());
  if (refusal && deps.blocked && deps.blocked("mail", [{ domain: "", reply: refusal }], monotonicNow())) {
    unasked.push(...unanswered);
  } else if (refusal && isThrottling(refusal)) {
    throttled = true;
    retry.push(...unanswered);
  } else if (refusal === result.reset && refusal) {
    retry.push(...unanswered);
  } else if (refusal) {
    // A refused MAIL FROM is about us (our name, our address), never the mailbox: it ends the walk.
    for (const p of unanswered) {
      deps.finish(p, { ...facts(), stage: "mail", rejectedReply: refusal, failure: { kind: "rejected", message: `mail refused: ${refusal.code}` } });
    }
  } else if (result.failure) {
    const stale = !firstUse && !sawReply && result.reset === null && result.mail === null && result.failure.kind === "closed";
    if (stale) {
      // The server had closed the idle session, or closes after each transaction: not a refusal.
      pacing.staleSession(monotonicNow());
      unasked.push(...unanswered);
    } else if (result.failure.kind === "closed") {
      throttled = true;
      retry.push(...unanswered);
    } else {
      for (const p of unanswered) deps.finish(p, { ...facts(), stage: "rcpt", failure: result.failure });
    }
  }

  const pushback = !throttled
    ? null
    : refusal
      ? `${refusal.code} to ${refusal === result.reset ? "RSET" : "MAIL FROM"}`
      : result.failure
        ? "session dropped"
        : "a throttling or too-many-recipients reply to RCPT";
  return { retry, unasked, pushback, clean: !result.failure && !refusal };
}

/** Answers a check whose RCPT was answered, with the catch-all knowledge that goes with it. */
function answer(p: QueuedCheck, reply: SmtpReply, notFound: boolean, base: () => CheckOutcome, replyMs: number, deps: TransactionDeps): void {
  const cache = deps.catchAll;
  if (notFound) {
    // A server that refuses one address is not accepting every address; this replaces a cached "yes".
    if (p.req.catchAllCheck) cache.set(p.domain, p.req.host, false);
    return deps.finish(p, { ...base(), catchAll: p.req.catchAllCheck ? false : null, catchAllCached: false });
  }
  const known = p.req.catchAllCheck ? cache.get(p.domain, p.req.host) : null;
  const pending = p.req.catchAllCheck && known === null && isPositive(reply) ? cache.pending(p.domain, p.req.host) : null;
  if (!pending) return deps.finish(p, { ...base(), catchAll: known, catchAllCached: known !== null });
  // The address is accepted; its answer waits for the random one, but not for long.
  p.provisional = { ...base(), catchAll: null, catchAllCached: false };
  let timer: NodeJS.Timeout | undefined;
  void Promise.race([pending, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), deps.pacing.catchAllWaitMs(replyMs))))]).then((catchAll) => {
    clearTimeout(timer);
    deps.finish(p, { ...base(), catchAll, catchAllCached: false });
  });
}

/** Whether a RCPT reply answered for its domain (accepted, or refused as that mailbox's answer), not a block or a 4xx. */
export function answersForDomain(reply: SmtpReply): boolean {
  if (reply.code >= 200 && reply.code < 300) return true;
  return reply.code >= 500 && !(reply.enhanced ?? "").startsWith("5.7.");
}
