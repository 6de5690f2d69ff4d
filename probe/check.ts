/**
 * One check at one destination address, as the scheduler's parts pass it between them: what the
 * caller asks (CheckRequest), what it gets back (CheckOutcome), and the check while it waits in a
 * destination's queue or rides a transaction (QueuedCheck).
 */
import type { SmtpReply } from "./smtp/reply.ts";
import type { SessionFailure, SmtpStage } from "./smtp/session.ts";

export type CheckRequest = {
  /** The address to check, its domain in A-label form. */
  recipient: string;
  /** The MX host name: TLS SNI, and half of the catch-all cache key. */
  host: string;
  /** The IP literal to dial (already allowed by checkTarget). */
  address: string;
  /** Whether the caller wants to know if the server accepts any address. */
  catchAllCheck: boolean;
  /** Absolute time (ms since the epoch) by which this check answers, whatever happens. */
  deadline: number;
  /**
   * For a batch check (absolute time): if it has not been sent by then because the server is still
   * working through the checks ahead of it (it paces us), it is handed back unasked (`deferred`)
   * rather than left to time out. A server that answers nothing is not pacing: then the deadline
   * rules, as for any check.
   */
  deferAt?: number;
  /**
   * Whose check this is: the customer's tenant ("" when nobody was named), its lane in the
   * receiver's budget (policy/budget.ts), so one customer cannot spend another's.
   */
  tenant?: string;
  /** A batch's check, served after the single checks in its tenant's turn (qmgr/fair-queue.ts); absent: a single check (a person waiting). */
  bulk?: boolean;
};

export type CheckFailure = SessionFailure | { kind: "unsupported"; message: string };

/** What one check learned at one address: the server's answer about it, or why there was none. */
export type CheckOutcome = {
  /** The last SMTP stage reached for this check. */
  stage: SmtpStage;
  /** The reply to RCPT TO for the address, when there was one. */
  rcpt: SmtpReply | null;
  /** The reply that refused us before RCPT (greeting, EHLO, MAIL FROM). */
  rejectedReply: SmtpReply | null;
  failure: CheckFailure | null;
  catchAll: boolean | null;
  catchAllCached: boolean;
  tls: boolean;
  pipelining: boolean;
  /** Sequential round trips this answer waited for: the session's setup when it rode the first transaction. */
  roundTrips: number;
  reusedSession: boolean;
  /** From the check's arrival at this destination to its answer. */
  ms: number;
  /** How the answer was got, when it is worth saying ("STARTTLS failed; continued in plain text"). */
  note: string | null;
  /** Not asked: handed back at its deferAt while the server worked through others (see CheckRequest). */
  deferred: boolean;
  /**
   * Not asked because the receiver's budget holds this customer's lane, or the receiver asked us to
   * back off: its family, and when the budget next has room (probe clock), when known. A single check
   * so held is answered at once (`budget_spent`); a batch check is handed back (`deferred`).
   */
  heldBy: { family: string; reliefAt: number | null; refused?: boolean } | null;
};

/** A check in a destination's hands, from its arrival to its answer. */
export type QueuedCheck = {
  req: CheckRequest;
  domain: string;
  utf8: boolean;
  submittedAt: number;
  retries: number;
  /** Answered: its promise resolved, whatever else still holds it (a timer, a transaction in flight). */
  finished: boolean;
  resolve: (outcome: CheckOutcome) => void;
  timer: NodeJS.Timeout;
  deferTimer: NodeJS.Timeout | undefined;
  /** An answer already in hand (the address accepted) while the catch-all answer is awaited. */
  provisional: CheckOutcome | null;
  /** Where the check is now, for the timeout message. */
  waitingFor: string;
  /** Its RCPT in the receiver's budget, once sent. */
  budgetRcpt?: SentRcpt;
};

/**
 * A RCPT sent under a receiver's budget, told how it ended (policy/budget.ts BudgetRcpt is one): declared here so
 * that the probe's basic types need nothing of the policy that counts them.
 */
export type SentRcpt = {
  /** The reply came: refused as an unknown user, or anything else. */
  replied(unknown: boolean, now: number): void;
  /** Never sent after all. */
  cancel(now: number): void;
  /** The transaction ended without a reply to it. */
  close(now: number): void;
};

/** The lane of a check in its destination's queue: its bulk tenant, or null for a single check. */
export const laneOf = (p: QueuedCheck): string | null => (p.req.bulk ? (p.req.tenant ?? "") : null);

export const needsSmtpUtf8 = (address: string) => /[^\x00-\x7f]/.test(address);

export function blankOutcome(): CheckOutcome {
  return {
    stage: "connect",
    rcpt: null,
    rejectedReply: null,
    failure: null,
    catchAll: null,
    catchAllCached: false,
    tls: false,
    pipelining: false,
    roundTrips: 0,
    reusedSession: false,
    ms: 0,
    note: null,
    deferred: false,
    heldBy: null,
  };
}
