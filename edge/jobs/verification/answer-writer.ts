/**
 * Answers written as they come, without holding up the checks: a write starts once `writeBatch` are
 * waiting (or `flushAfterMs` after the first, so a slow job's results still show up), and takes
 * everything that came in while the one before it was in flight, up to `maxWrite`. Only when the
 * database falls `maxPending` behind does an answer wait for it. A failed write fails the rest
 * (finish() throws), so the message is retried and nothing is acknowledged that was not written.
 *
 * At most one write is in flight. `inFlight` is set before the write starts and cleared when it
 * ends, never the other way round: a drain that found nothing to write once left a settled promise
 * in `inFlight`, and finish() then awaited it in a loop of microtasks that never yielded, freezing
 * the whole isolate (every request to the Worker hung).
 */
import type { JobRow } from "../store/job-rows.ts";
import type { LineAnswer } from "../store/lines.ts";

export type AnswerWriterLimits = { writeBatch: number; maxWrite: number; maxPending: number; flushAfterMs: number };

export const ANSWER_WRITER_LIMITS: AnswerWriterLimits = {
  /** A write of answers starts once this many wait (one database round trip each write). */
  writeBatch: 100,
  /** The most answers in one write (two statements each). */
  maxWrite: 500,
  /** Beyond this many answers not yet written, checking waits for the database. */
  maxPending: 2_000,
  /** Answers wait at most this long for others to share their write. */
  flushAfterMs: 1_000,
};

export type AnswerWriter = {
  /** Positions answered "recheck" (asked again later) and "defer" or "move" / "release" (back to pending). */
  rechecks: Set<number>;
  deferred: Set<number>;
  released: Set<number>;
  /** Positions parked on a receiver's budget, and until when. */
  parked: Map<number, number>;
  add(answer: LineAnswer): Promise<void>;
  /** Writes what is left; the job, when one of the writes completed it. */
  finish(): Promise<JobRow | null>;
};

/**
 * `write` stores one batch of answers and returns the job if that write completed it; `onWritten` is
 * told which answers are stored (until then their lines are still the consumer's to hold).
 */
export function answerWriter(
  write: (answers: LineAnswer[]) => Promise<JobRow | null>,
  { limits = ANSWER_WRITER_LIMITS, onWritten = () => {} }: { limits?: AnswerWriterLimits; onWritten?: (answers: readonly LineAnswer[]) => void } = {},
): AnswerWriter {
  const pending: LineAnswer[] = [];
  const rechecks = new Set<number>();
  const deferred = new Set<number>();
  const released = new Set<number>();
  const parked = new Map<number, number>();
  let inFlight: Promise<void> | null = null;
  let failure: unknown = null;
  let completed: JobRow | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const writeAll = async (): Promise<void> => {
    try {
      while (pending.length > 0 && failure === null) {
        const answers = pending.splice(0, limits.maxWrite);
        const done = await write(answers);
        completed ??= done;
        onWritten(answers);
      }
    } catch (err) {
      failure ??= err;
    } finally {
      inFlight = null;
    }
  };
  const drain = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    if (inFlight !== null) return inFlight;
    if (pending.length === 0 || failure !== null) return Promise.resolve();
    // Started on the next microtask, so that inFlight holds it before its finally can clear it.
    const started = Promise.resolve().then(writeAll);
    inFlight = started;
    return started;
  };

  return {
    rechecks,
    deferred,
    released,
    parked,
    async add(a) {
      if (failure !== null) throw failure;
      if (a.kind === "recheck") rechecks.add(a.position);
      if (a.kind === "defer" || a.kind === "move") deferred.add(a.position);
      if (a.kind === "release") released.add(a.position);
      if (a.kind === "park") parked.set(a.position, a.until);
      pending.push(a);
      if (pending.length >= limits.maxPending) await drain();
      else if (pending.length >= limits.writeBatch) void drain();
      else timer ??= setTimeout(() => void drain(), limits.flushAfterMs);
    },
    async finish() {
      while ((inFlight !== null || pending.length > 0) && failure === null) await drain();
      clearTimeout(timer);
      timer = undefined;
      if (failure !== null) throw failure;
      return completed;
    },
  };
}
