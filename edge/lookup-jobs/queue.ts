/**
 * The lookup-jobs queue as the Worker's parts use it: turns and the messages that follow a job's life (a resume check, its
 * verification phase, its callback). A leaf, so the route that creates jobs need not import the consumer that runs them.
 */
import type { LookupJobMessage } from "../../shared/lookup-jobs.ts";
import type { LookupJobsQueue } from "../env.ts";
import { LOOKUP_LINES_PER_TURN } from "./store/lines.ts";

/** Queue messages per send (the Queues limit for sendBatch is 100). */
const SEND_BATCH = 100;
/** How long a paused job waits between two looks at the balance: it resumes within this of credits being added. */
export const RESUME_CHECK_SECONDS = 30;
/** How long a job in its verification phase waits between two looks at its verification job. */
export const VERIFY_CHECK_SECONDS = 5;

/** One turn per LOOKUP_LINES_PER_TURN lines waiting. */
export async function enqueueLookupTurns(queue: LookupJobsQueue, job: string, lines: number, delaySeconds = 0): Promise<void> {
  const turns = Math.ceil(lines / LOOKUP_LINES_PER_TURN);
  for (let i = 0; i < turns; i += SEND_BATCH) {
    await queue.sendBatch(Array.from({ length: Math.min(SEND_BATCH, turns - i) }, () => ({ body: { kind: "lookup_turn" as const, job }, delaySeconds })));
  }
}

export async function enqueueLookupMessage(queue: LookupJobsQueue, body: LookupJobMessage, delaySeconds?: number): Promise<void> {
  await (delaySeconds === undefined ? queue.send(body) : queue.send(body, { delaySeconds }));
}

/** Whether a delivered batch came from the lookup-jobs queue (wrangler.toml names it lookup-jobs, and lookup-jobs-dev locally). */
export const isLookupJobsQueue = (name: string) => name === "lookup-jobs" || name.startsWith("lookup-jobs-");
