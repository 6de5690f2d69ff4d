/**
 * Whose bulk work a consumer takes next (docs/jobs.md "Scheduling"). Turns go round the accounts that
 * have due lines, weighted by what each already has in hand: the next turn goes to the account whose
 * consumers hold the fewest lines now, ties to the one served longest ago; within an account, to its
 * job served longest ago. So each account with work gets an equal share of the consumers, however
 * long its lists, and splitting a list into ten jobs buys nothing: the share belongs to the account.
 *
 * It is computed afresh from the database at each delivery (bulkCandidates), not kept in a counter:
 * consumers run in many isolates at once, and a count that only they maintain would drift with every
 * one that dies. Pure: it plans a delivery's turns (`take`), and the caller claims them in one go.
 */
import type { BulkCandidate } from "./store/scheduling.ts";

type Account = { id: string; inHand: number; lastTurn: number; jobs: Job[] };
type Job = { id: string; account: Account; due: number; lastTurn: number; createdAt: number };

/** Never served sorts before any time. */
const NEVER = -1;

export class FairShare {
  readonly #accounts = new Map<string, Account>();
  readonly #jobs = new Map<string, Job>();
  /** Turns given in this delivery are later than any in the database, and ordered among themselves. */
  #clock: number;

  constructor(candidates: readonly BulkCandidate[], now = Date.now()) {
    this.#clock = now;
    for (const c of candidates) {
      let account = this.#accounts.get(c.account);
      if (!account) this.#accounts.set(c.account, (account = { id: c.account, inHand: 0, lastTurn: NEVER, jobs: [] }));
      const lastTurn = c.lastClaimAt ?? NEVER;
      const job: Job = { id: c.job, account, due: c.due, lastTurn, createdAt: c.createdAt };
      account.inHand += c.inHand;
      account.lastTurn = Math.max(account.lastTurn, lastTurn);
      account.jobs.push(job);
      this.#jobs.set(c.job, job);
      this.#clock = Math.max(this.#clock, lastTurn);
    }
  }

  /** The job whose turn it is, or null when no job has due lines. */
  #next(): { job: string; account: string } | null {
    let best: Account | null = null;
    for (const a of this.#accounts.values()) {
      if (!a.jobs.some((j) => j.due > 0)) continue;
      if (!best || a.inHand < best.inHand || (a.inHand === best.inHand && (a.lastTurn < best.lastTurn || (a.lastTurn === best.lastTurn && a.id < best.id)))) best = a;
    }
    if (!best) return null;
    const job = best.jobs
      .filter((j) => j.due > 0)
      .reduce((x, y) => (y.lastTurn < x.lastTurn || (y.lastTurn === x.lastTurn && (y.createdAt < x.createdAt || (y.createdAt === x.createdAt && y.id < x.id))) ? y : x));
    return { job: job.id, account: best.id };
  }

  /**
   * The next turn, of at most `max` lines, planned as served: null when no job has due lines, or
   * (`onlyIdle`) when the account whose turn it is already has lines in hand.
   */
  take(max: number, { onlyIdle = false } = {}): { job: string; account: string; lines: number } | null {
    const turn = this.#next();
    if (!turn) return null;
    const job = this.#jobs.get(turn.job)!;
    if (onlyIdle && job.account.inHand > 0) return null;
    const lines = Math.min(max, job.due);
    this.#clock += 1;
    job.lastTurn = job.account.lastTurn = this.#clock;
    job.account.inHand += lines;
    job.due -= lines;
    return { ...turn, lines };
  }

  /** Lines in hand per account with unfinished work, for the logs. */
  shares(): Record<string, number> {
    return Object.fromEntries([...this.#accounts.values()].map((a) => [a.id, a.inHand]));
  }

  /** Accounts with due lines. */
  get waiting(): number {
    return [...this.#accounts.values()].filter((a) => a.jobs.some((j) => j.due > 0)).length;
  }
}
