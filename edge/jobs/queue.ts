/**
 * The engine's two queues as the Worker's parts use them (docs/jobs.md "How a job runs"): each kind of job has its own
 * queue (a lookup turn is tens of milliseconds of database work and must never wait behind a delivery of SMTP checks),
 * and every message says which kind and job it is for (shared/jobs.ts JobMessage), so whichever queue delivers it, the
 * one consumer (edge/jobs/consumer.ts) knows what to do. People events' deliveries ride on the verification queue. A
 * leaf, so the routes and the crons that start jobs need not import the consumer that runs them.
 */
import type { JobKind, JobKindMessage } from "../../shared/jobs.ts";
import type { Bindings, JobsQueue } from "../env.ts";

/** Each kind's queue. */
export type JobQueues = Record<JobKind, JobsQueue>;

/** The queues from the Worker's bindings (wrangler.toml), or an error naming the one a deployment forgot. */
export function jobQueues(env: Pick<Bindings, "JOBS_QUEUE" | "LOOKUP_JOBS_QUEUE">): JobQueues {
  if (!env.JOBS_QUEUE) throw new Error("The JOBS_QUEUE binding is missing: declare the queue in wrangler.toml for this environment");
  if (!env.LOOKUP_JOBS_QUEUE) throw new Error("The LOOKUP_JOBS_QUEUE binding is missing: declare the queue in wrangler.toml for this environment");
  return { verification: env.JOBS_QUEUE, lookup: env.LOOKUP_JOBS_QUEUE };
}

/**
 * Lines per turn (one queue message), by kind: a verification turn claims at most this many lines for the probe; a
 * lookup turn answers at most this many in one transaction (store/lookup-lines.ts runTurn: set-based, so a turn of
 * 2,000 lines costs about what one of 500 did before 1.11).
 */
export const LINES_PER_TURN: Record<JobKind, number> = { verification: 200, lookup: 2_000 };

/** Queue messages per send (the Queues limit for sendBatch is 100). */
const SEND_BATCH = 100;

/** Puts turns on a kind's queue, one per LINES_PER_TURN[kind] lines waiting: at creation, after a run, and from the cron. */
export async function enqueueTurns(queues: JobQueues, kind: JobKind, job: string, lines: number, delaySeconds = 0): Promise<void> {
  const turns = Math.ceil(lines / LINES_PER_TURN[kind]);
  for (let i = 0; i < turns; i += SEND_BATCH) {
    await queues[kind].sendBatch(Array.from({ length: Math.min(SEND_BATCH, turns - i) }, () => ({ body: { kind, type: "turn" as const, job }, delaySeconds })));
  }
}

/** Puts one message about a job on its kind's queue: now, or after `delaySeconds`. */
export async function enqueueJobMessage(queues: JobQueues, message: JobKindMessage, delaySeconds?: number): Promise<void> {
  const queue = queues[message.kind];
  await (delaySeconds === undefined ? queue.send(message) : queue.send(message, { delaySeconds }));
}

/** A job's callback: its first attempt when the job ends (and from the cron), a retry after `delaySeconds`. */
export const enqueueCallback = (queues: JobQueues, kind: JobKind, job: string, attempt: number, delaySeconds?: number) =>
  enqueueJobMessage(queues, { kind, type: "callback", job, attempt }, delaySeconds);

/** Puts a people event's delivery on the queue (edge/people-events.ts): at once, or a retry after `delaySeconds`. */
export async function enqueuePeopleEvent(queue: JobsQueue, event: string, attempt: number, delaySeconds?: number): Promise<void> {
  const body = { kind: "people_event" as const, event, attempt };
  await (delaySeconds === undefined ? queue.send(body) : queue.send(body, { delaySeconds }));
}
