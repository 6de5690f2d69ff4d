/**
 * Job turns by hand, for tests that drive the Worker's own queue handler with the stand-in probe
 * (test/fixtures/probe-fixture.ts): a queue that records what the consumer sends instead of
 * delivering it, one turn delivered, and a queued job written straight into the database.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { inject } from "vitest";
import { sql } from "drizzle-orm";
import type { JobMessage } from "../../shared/jobs.ts";
import worker from "../../edge/index.ts";
import type { Bindings, JobsQueue } from "../../edge/env.ts";
import { db } from "./helpers.ts";

/** What the consumer puts on the queue, recorded and not delivered: the test delivers every turn itself. */
export function recordingQueue() {
  const sent: { body: JobMessage; delaySeconds?: number }[] = [];
  const queue: JobsQueue = {
    send: async (body, options) => void sent.push({ body, ...options }),
    sendBatch: async (messages) => void sent.push(...messages),
  };
  return { sent, queue };
}

/** Hands one turn to the Worker's queue handler, with the stand-in probe. */
export async function deliverTurn(job: string, bindings: Partial<Bindings>) {
  const batch = createMessageBatch<JobMessage>("verification-jobs-dev", [{ id: `t-${crypto.randomUUID()}`, timestamp: new Date(), attempts: 1, body: { kind: "verification", type: "turn", job } }]);
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, { ...env, PROBE_URL: inject("probeFixtureUrl"), ...bindings } as never);
  return getQueueResult(batch, ctx);
}

/** A queued job of `emails` in the given order; a repeated address is a duplicate of its first occurrence. */
export async function queuedJob(accountId: string, emails: string[]) {
  const id = `job_turn${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const now = Date.now();
  await db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash, created_at, updated_at)
    values (${id}, ${accountId}, 'queued', ${emails.length}, 5, 'test', ${now}, ${now})`);
  for (const [position, email] of emails.entries()) {
    const first = emails.indexOf(email);
    await db.run(sql`insert into verification_job_items (job_id, position, seq, email, state, duplicate_of)
      values (${id}, ${position}, ${position}, ${email}, 'pending', ${first < position ? first : null})`);
  }
  return id;
}
