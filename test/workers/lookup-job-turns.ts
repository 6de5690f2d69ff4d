/**
 * Lookup jobs by hand, for tests that drive the Worker's own queue handler: a lookup-jobs queue that records what is
 * sent instead of delivering it, and messages delivered to the handler as the queue (or a redelivery) would.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { JobMessage } from "../../shared/jobs.ts";
import worker from "../../edge/index.ts";
import type { Bindings, JobsQueue } from "../../edge/env.ts";

export const LOOKUP_QUEUE = "lookup-jobs-dev";

/** What the consumer and the routes put on the lookup-jobs queue, recorded and not delivered. */
export function recordingLookupQueue() {
  const sent: { body: JobMessage; delaySeconds?: number }[] = [];
  const queue: JobsQueue = {
    send: async (body, options) => void sent.push({ body, ...options }),
    sendBatch: async (messages) => void sent.push(...messages),
  };
  return { sent, queue };
}

/** A lookup job's message of this type, as the engine sends it (shared/jobs.ts JobMessage). */
export const lookupMessage = (type: "turn" | "resume" | "phase" | "callback", job: string, attempt?: number): JobMessage => ({ kind: "lookup", type, job, ...(attempt === undefined ? {} : { attempt }) });

/** Hands messages to the Worker's queue handler as one delivery; returns what it acknowledged and retried. */
export async function deliverLookup(messages: JobMessage[], bindings: Partial<Bindings> = {}) {
  const batch = createMessageBatch<JobMessage>(
    LOOKUP_QUEUE,
    messages.map((body, i) => ({ id: `lk-${crypto.randomUUID()}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, { ...env, ...bindings } as never);
  return getQueueResult(batch, ctx);
}
