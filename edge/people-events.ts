/**
 * People events (docs/api.md "People events"): what changed about a person to the accounts that received them lately,
 * pushed to each account's subscription URL, signed and retried exactly as job callbacks are (edge/webhooks/delivery.ts: the
 * same URL rules, the account's whsec_ secret, the same schedule). Three events: an address the account received became
 * undeliverable, a new address appeared, the person was erased (with what to delete; the erasures feed stays for those
 * who poll). The statements are edge/people/events-store.ts; the admin CLI's erasure writes its events there too.
 */
import type { Database } from "./db/client.ts";
import type { JobsQueue } from "./env.ts";
import { enqueuePeopleEvent } from "./jobs/queue.ts";
import { describeError, writeLog } from "./log.ts";
import { sendWebhook } from "./webhooks/send.ts";
import { claimOverdueEvent, deleteFailedEvents, fanOutChanges, overdueEvents, pendingEvent, recordEventAttempt } from "./people/events-store.ts";

export type PeopleEventsDeps = {
  db: Database;
  queue: JobsQueue;
  dohUrl: string;
  allowPrivateCallbacks: boolean;
  webhookSecretKey: string | undefined;
};

/** An event whose attempt is this overdue was lost on the way (or written by the admin CLI): the cron sends it again. */
export const EVENT_OVERDUE_MS = 60_000;
/** Events given up are kept this long (they hold personal data), then deleted. */
export const FAILED_EVENT_RETENTION_MS = 7 * 86_400_000;

/** One delivery attempt of an event; `attempt` counts those tried before it. */
export async function deliverPeopleEvent(deps: PeopleEventsDeps, id: string, attempt: number): Promise<void> {
  const event = await pendingEvent(deps.db, id);
  // Delivered, given up, erased, or unsubscribed meanwhile: nothing to send.
  if (!event || !event.people_events_url) return;
  const outgoing = {
    kind: "people_event" as const,
    id,
    accountId: event.account_id,
    account: { active: Boolean(event.active), storedSecret: event.webhook_secret },
    url: event.people_events_url,
    eventId: id,
    body: event.body,
  };
  await sendWebhook(deps, outgoing, attempt, {
    record: (outcome) => recordEventAttempt(deps.db, id, outcome),
    retry: (next, delay) => enqueuePeopleEvent(deps.queue, id, next, delay),
  });
}

/**
 * The cron's part: the changes recorded since the last run become events and go on the queue; events overdue (a lost
 * message, or written by an erasure) go on it again; events given up a week ago are deleted.
 */
export async function runPeopleEventsCron(deps: PeopleEventsDeps, windowSeconds: number, now = Date.now()): Promise<{ people_events_created: number; people_events_resent: number; people_events_deleted: number }> {
  const created = await fanOutChanges(deps.db, now, windowSeconds * 1000);
  for (const id of created) await enqueuePeopleEvent(deps.queue, id, 0);
  let resent = 0;
  for (const { id, attempts } of await overdueEvents(deps.db, now - EVENT_OVERDUE_MS)) {
    // Its next attempt is now this one; a cron run meanwhile finds it not overdue.
    if (!(await claimOverdueEvent(deps.db, id, now - EVENT_OVERDUE_MS, now))) continue;
    await enqueuePeopleEvent(deps.queue, id, attempts);
    resent++;
  }
  return { people_events_created: created.length, people_events_resent: resent, people_events_deleted: await deleteFailedEvents(deps.db, now - FAILED_EVENT_RETENTION_MS) };
}

/** The queue's people-event messages: each one attempt; a failure of our own (the database) retries the message. */
export async function handlePeopleEventMessages(messages: readonly { body: unknown; ack(): void; retry(o?: { delaySeconds?: number }): void }[], deps: PeopleEventsDeps): Promise<void> {
  await Promise.all(
    messages.map(async (message) => {
      const body = message.body as { event: string; attempt: number };
      try {
        await deliverPeopleEvent(deps, body.event, body.attempt);
        message.ack();
      } catch (error) {
        writeLog("error", { event: "people_event_failed", people_event_id: body.event, error: describeError(error) });
        message.retry({ delaySeconds: 30 });
      }
    }),
  );
}
