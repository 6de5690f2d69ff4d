/**
 * The jobs queue as the Worker's parts use it: turns of bulk work, callbacks and people events put on it (the binding's shape, JobsQueue, is
 * edge/env.ts's, beside the other bindings). A leaf, so the routes and the personal-data cron that start jobs need not
 * import the consumer (edge/jobs/consumer.ts) that runs them.
 */
import type { JobsQueue } from "../env.ts";

/** Lines per turn (one queue message): a consumer claims at most this many of a job's lines per message. */
export const LINES_PER_TURN = 200;
/** Queue messages per send (the Queues limit for sendBatch is 100). */
const SEND_BATCH = 100;

/** Puts turns of bulk work on the queue, one per LINES_PER_TURN lines: at creation, after a run (what line-policy sends back), and from the cron. */
export async function enqueueTurns(queue: JobsQueue, job: string, lines: number, delaySeconds = 0): Promise<void> {
  const turns = Math.ceil(lines / LINES_PER_TURN);
  for (let i = 0; i < turns; i += SEND_BATCH) {
    await queue.sendBatch(Array.from({ length: Math.min(SEND_BATCH, turns - i) }, () => ({ body: { kind: "work" as const, job }, delaySeconds })));
  }
}

/** Puts a job's callback on the queue: its first attempt when the job ends (and from the cron), a retry after `delaySeconds`. */
export async function enqueueCallback(queue: JobsQueue, job: string, attempt: number, delaySeconds?: number): Promise<void> {
  const body = { kind: "callback" as const, job, attempt };
  await (delaySeconds === undefined ? queue.send(body) : queue.send(body, { delaySeconds }));
}

/** Puts a people event's delivery on the queue (edge/people-events.ts): at once, or a retry after `delaySeconds`. */
export async function enqueuePeopleEvent(queue: JobsQueue, event: string, attempt: number, delaySeconds?: number): Promise<void> {
  const body = { kind: "people_event" as const, event, attempt };
  await (delaySeconds === undefined ? queue.send(body) : queue.send(body, { delaySeconds }));
}
