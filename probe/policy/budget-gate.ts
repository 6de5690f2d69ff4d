/**
 * The gate a receiver's budget keeps at one destination (docs/probe.md "Receiver policy", "Unknown recipients"):
 * which waiting checks it lets through now, which wait in the queue, which are answered at once with nothing sent
 * (a single check over its customer's budget: budget_spent; a batch check whose relief comes after it could be
 * asked: handed back, deferred), and what one transaction may carry. The budget's arithmetic is policy/budget.ts's;
 * the queue manager (qmgr/destination.ts) asks here and applies the answer.
 *
 * Pure, as qmgr/pacing.ts is: no timers, no I/O; every decision takes `now` (the probe's clock).
 */
import type { CheckRequest } from "../check.ts";
import { CATCH_ALL_LANE, type BudgetPlan, type BudgetRcpt, type ReceiverBudget } from "./budget.ts";

/** What the gate reads of a waiting check. */
export type GateCheck = { req: Pick<CheckRequest, "tenant" | "bulk" | "deferAt" | "deadline"> };

/** Whose budget a check spends: its customer's tenant ("" when nobody was named), single checks and batches alike. */
export const tenantOf = (p: GateCheck): string => p.req.tenant ?? "";

/** What holds a check back: when its budget next has room, when known. */
export type Hold = { reliefAt: number | null };

/**
 * What holds `p`'s tenant back now (its budget, or a pause the receiver asked for), or null. When only RCPTs
 * awaiting their reply hold it (they count at worst until answered), the relief is now: those replies come
 * within the transaction, not a window later, so a check waits in the queue for them instead of being answered
 * (a single check: budget_spent) or going back to the Worker to be parked for a window. So it is while the
 * limits are `provisional` (the destination's greeting, which may loosen them, is not read yet); a stop or pause
 * the receiver asked for is no such thing.
 */
export function holdOf(budget: ReceiverBudget, p: GateCheck, now: number, provisional = false): Hold | null {
  const tenant = tenantOf(p);
  if (budget.admits(tenant, now)) return null;
  const paused = budget.pausedUntil(now);
  if (paused !== null) return { reliefAt: paused };
  const soon = provisional || (budget.awaitingReplies > 0 && budget.admits(tenant, now, 1, true));
  return { reliefAt: soon ? now : budget.nextRelief(now) };
}

/**
 * Whether a check held as it arrives is answered at once rather than queued: when its relief comes no sooner than
 * it could be asked (a batch check's deferAt, any check's deadline). A single check is a person waiting: it waits
 * only for a relief within its own deadline (replies in flight, a greeting), never for a window.
 */
export function answeredOnArrival(hold: Hold, p: GateCheck): boolean {
  return hold.reliefAt === null || hold.reliefAt >= Math.min(p.req.deferAt ?? p.req.deadline, p.req.deadline);
}

/** How a held check is answered when it is answered at once: a batch check is handed back, a single check is budget_spent. */
export const heldAnswer = (p: GateCheck): "deferred" | "budget_spent" => (p.req.bulk ? "deferred" : "budget_spent");

/** What the budget does now with the checks waiting at a destination. */
export type Admission<T> = {
  /** How many of them it lets through now: what is worth opening sessions for. */
  send: number;
  /** Batch checks whose tenant it holds: they wait in the queue for the relief. */
  hold: T[];
  /** Single checks whose tenant it holds, with no relief before their deadline: answered at once (budget_spent), nothing sent. */
  answerNow: T[];
  /** When the budget next has room, for the checks answered now (null when there are none, or it is not known). */
  reliefAt: number | null;
};

/**
 * The checks waiting at a destination (in queue order), as the budget takes them now. A held single check waits (in
 * `hold`) while its relief comes before its deadline (holdOf: replies in flight, a provisional limit).
 */
export function admit<T extends GateCheck>(queue: Iterable<T>, budget: ReceiverBudget, now: number, provisional = false): Admission<T> {
  const hold: T[] = [];
  const answerNow: T[] = [];
  let send = 0;
  if (!budget.enabled) {
    for (const _ of queue) send++;
    return { send, hold, answerNow, reliefAt: null };
  }
  const holds = new Map<string, Hold | null>();
  for (const p of queue) {
    const tenant = tenantOf(p);
    let held = holds.get(tenant);
    if (held === undefined) holds.set(tenant, (held = holdOf(budget, p, now, provisional)));
    if (!held) send++;
    else if (p.req.bulk || !answeredOnArrival(held, p)) hold.push(p);
    else answerNow.push(p);
  }
  return { send, hold, answerNow, reliefAt: answerNow.length > 0 ? budget.nextRelief(now) : null };
}

/** Where a check goes in the transaction being assembled ("wait": a single check that replies in flight may let through). */
export type Fit = "with-test" | "without-test" | "hold" | "wait" | "answer-now";

/**
 * One transaction being assembled under the budget: each RCPT is charged its tenant's risk, and the random
 * address of a catch-all test is an unknown user wherever it is refused. A check fits with its test, without it
 * when only the test does not fit, or not at all: then a batch check's tenant waits ("hold") and a single check
 * is answered at once ("answer-now"). With the budget off, everything fits and nothing is counted.
 */
export class TransactionBudget {
  readonly #budget: ReceiverBudget;
  readonly #now: number;
  readonly #plan: BudgetPlan | null;
  /** Each tenant's risk, read once per transaction. */
  readonly #risks = new Map<string, number>();
  /** RCPTs of each tenant put in this transaction so far: in flight, as far as the budget is concerned. */
  readonly #added = new Map<string, number>();

  constructor(budget: ReceiverBudget, now: number) {
    this.#budget = budget;
    this.#now = now;
    this.#plan = budget.enabled ? budget.plan(now) : null;
  }

  #risk(tenant: string): number {
    let risk = this.#risks.get(tenant);
    if (risk === undefined) this.#risks.set(tenant, (risk = this.#budget.risk(tenant, this.#now)));
    return risk;
  }

  /** Where `p` goes, asked for with its catch-all test (`withTest`) or without; what fits is added to the transaction. */
  fit(p: GateCheck, withTest: boolean): Fit {
    const plan = this.#plan;
    if (!plan) return withTest ? "with-test" : "without-test";
    const budget = this.#budget;
    const tenant = tenantOf(p);
    const fits = (test: boolean) =>
      budget.fits(plan, test ? 2 : 1, this.#risk(tenant) + (test ? 1 : 0), !test && budget.lowersShare(tenant, (this.#added.get(tenant) ?? 0) + 1, this.#now), tenant);
    let test = withTest;
    if (test && !fits(true) && fits(false)) test = false;
    if (!fits(test)) {
      if (p.req.bulk) return "hold";
      // RCPTs in flight (this transaction's or earlier ones) count at worst until answered: their replies may make room.
      const inFlight = budget.awaitingReplies > 0 || this.#added.size > 0;
      return inFlight && this.#now < p.req.deadline && budget.admits(tenant, this.#now, 1, true) ? "wait" : "answer-now";
    }
    budget.add(plan, test ? 2 : 1, this.#risk(tenant) + (test ? 1 : 0), tenant);
    this.#added.set(tenant, (this.#added.get(tenant) ?? 0) + 1);
    return test ? "with-test" : "without-test";
  }

  /** Whether `p`'s catch-all test fits as a transaction of its own (a server that takes one RCPT per transaction). */
  fitsTestAlone(p: GateCheck): boolean {
    return !this.#plan || this.#budget.fits(this.#plan, 1, 1, false, tenantOf(p));
  }

  /** When the budget next has room, for a check answered now. */
  reliefAt(): number | null {
    return this.#budget.nextRelief(this.#now);
  }

  /** A check put in the transaction goes out: its RCPT, counted in the budget (none with the budget off). */
  sent(p: GateCheck): BudgetRcpt | undefined {
    if (!this.#plan) return undefined;
    const tenant = tenantOf(p);
    return this.#budget.sent(tenant, this.#risk(tenant), this.#now);
  }

  /** A catch-all test goes out with `p`'s check, or alone before it: a certain unknown user, charged to that customer. */
  sentTest(p: GateCheck): BudgetRcpt | undefined {
    if (!this.#plan) return undefined;
    return this.#budget.sent(CATCH_ALL_LANE, 1, this.#now, tenantOf(p));
  }
}

/** When to log that the budget started holding work back at a destination: once per window at most, however often it flips. */
export class HoldNotice {
  #holding = false;
  #loggedAt = -Infinity;

  constructor(private readonly windowMs: number) {}

  /** The budget holds work back (or no longer does) as of `now`: whether that is worth a log line. */
  note(holding: boolean, now: number): boolean {
    if (holding === this.#holding) return false;
    this.#holding = holding;
    if (!holding || now - this.#loggedAt < this.windowMs) return false;
    this.#loggedAt = now;
    return true;
  }
}
