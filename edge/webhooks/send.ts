/**
 * One attempt of an outgoing webhook, the same for every kind we send (docs/jobs.md "Callbacks", docs/api.md "People
 * events"): a verification job's callback, a lookup job's, a people event. The account's whsec_ secret is opened (or
 * made on first use: secret.ts), the body POSTed signed (delivery.ts: the URL rules, no redirects, a bounded wait), and
 * the outcome handed to the caller's own statement to record; a failure is tried again on the one schedule
 * (CALLBACK_RETRY_DELAYS_SECONDS) through the caller's queue. A disabled account's webhooks wait, pending and not
 * counted as attempts: the cron sends them once it is enabled. One log line shape for every kind.
 */
import type { Db } from "../db/rows.ts";
import { describeError, writeLog } from "../log.ts";
import { CALLBACK_RETRY_DELAYS_SECONDS, deliverCallback } from "./delivery.ts";
import { accountWebhookSecret } from "./secret.ts";
import { isSealed, openWebhookSecret, WebhookKeyError } from "./signing.ts";

export type WebhookKind = "verification_job_callback" | "lookup_job_callback" | "people_event";

export type WebhookDeps = { db: Db; dohUrl: string; allowPrivateCallbacks: boolean; webhookSecretKey: string | undefined };

/** What one webhook is: whose, where to, its event id (the same on every attempt) and its body; and the account as read. */
export type Outgoing = {
  kind: WebhookKind;
  /** The job's or the event's id, for the logs. */
  id: string;
  accountId: string;
  /** The account's status and stored secret, read with the webhook (null: the account is gone). */
  account: { active: boolean; storedSecret: string | null } | null;
  url: string;
  eventId: string;
  body: string;
};

/** An attempt's outcome, as the caller records it: delivered, or failed, with the next attempt's time (null: given up). */
export type AttemptOutcome = { delivered: true } | { delivered: false; error: string; nextAt: number | null };

export type WebhookIo = {
  record(outcome: AttemptOutcome): Promise<void>;
  /** Puts attempt `attempt` on the queue in `delaySeconds`. */
  retry(attempt: number, delaySeconds: number): Promise<void>;
};

/** One attempt (`attempt` counts those tried before it): sent, recorded, and retried on the schedule when it failed. */
export async function sendWebhook(deps: WebhookDeps, w: Outgoing, attempt: number, io: WebhookIo): Promise<void> {
  if (!w.account?.active) return;
  let secret: string | null;
  try {
    secret =
      w.account.storedSecret !== null && isSealed(w.account.storedSecret)
        ? await openWebhookSecret(w.account.storedSecret, w.accountId, deps.webhookSecretKey)
        : await accountWebhookSecret(deps.db, w.accountId, deps.webhookSecretKey);
  } catch (error) {
    if (!(error instanceof WebhookKeyError)) throw error;
    // A configuration error: logged, and the attempt fails like any other, to be retried.
    writeLog("error", { event: "webhook_secret_unavailable", webhook: w.kind, id: w.id, account_id: w.accountId, error: describeError(error) });
    return fail(io, attempt, "not signed: WEBHOOK_SECRET_KEY is missing or wrong");
  }
  // The account is gone (deleted since it was read): nobody to sign for.
  if (secret === null) return;
  const delivery = await deliverCallback({ url: w.url, secret, eventId: w.eventId, body: w.body, dohUrl: deps.dohUrl, allowPrivate: deps.allowPrivateCallbacks });
  if (delivery.ok) return io.record({ delivered: true });
  return fail(io, attempt, delivery.error);
}

async function fail(io: WebhookIo, attempt: number, error: string): Promise<void> {
  const delay = CALLBACK_RETRY_DELAYS_SECONDS[attempt];
  await io.record({ delivered: false, error, nextAt: delay === undefined ? null : Date.now() + delay * 1000 });
  if (delay !== undefined) await io.retry(attempt + 1, delay);
}
