/**
 * A delivered message's settling, the same for every kind (docs/jobs.md "How a job runs"): acknowledged once its work is
 * written, retried after REDELIVER_DELAY_SECONDS when the database or the probe failed it. A leaf of the engine.
 */
import { describeError, writeLog } from "../log.ts";

/** The parts of a delivered message (workerd's Message) that the consumer uses. */
export type DeliveredMessage = { readonly body: unknown; ack(): void; retry(options?: { delaySeconds?: number }): void };

/** How long a message whose work failed (the database or the probe was down) waits before it is delivered again. */
export const REDELIVER_DELAY_SECONDS = 30;

/** Runs a message's work; its messages are acknowledged when it succeeds, retried later when it fails (logged). */
export async function settle(messages: readonly DeliveredMessage[], jobId: string | null, run: () => Promise<void>, event = "job_message_failed"): Promise<void> {
  try {
    await run();
    for (const m of messages) m.ack();
  } catch (err) {
    writeLog("error", { event, job_id: jobId, messages: messages.length, retry_in_s: REDELIVER_DELAY_SECONDS, error: describeError(err) });
    for (const m of messages) m.retry({ delaySeconds: REDELIVER_DELAY_SECONDS });
  }
}
