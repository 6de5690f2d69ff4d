/**
 * The lookup-jobs queue's consumer and cron (docs/lookup-jobs.md "How a job runs"). A turn message is a turn for
 * whichever account's job is next (edge/jobs/fair-share.ts, the verification jobs' rule: accounts in turn, an account's
 * jobs in turn), one transaction each (store/lines.ts). A turn that pauses its job sends a resume check, which looks at
 * the balance every RESUME_CHECK_SECONDS; a job whose lines are all answered moves to its verification phase
 * (verify_emails) or completes; a job that ended sends its signed callback. The lookup jobs have their own queue: a turn
 * is tens of milliseconds of database work, and must never wait behind a delivery of SMTP checks.
 */
import { LookupJobMessage } from "../../shared/lookup-jobs.ts";
import type { Database } from "../db/client.ts";
import type { JobsQueue, LookupJobsQueue } from "../env.ts";
import { CALLBACK_RETRY_DELAYS_SECONDS, deliverCallback } from "../jobs/callback.ts";
import { FairShare } from "../jobs/fair-share.ts";
import { LINE_POLICY } from "../jobs/line-policy.ts";
import { callbackAccount } from "../jobs/store/cleanup.ts";
import { isSealed, openWebhookSecret, WebhookKeyError } from "../jobs/webhook.ts";
import { accountWebhookSecret } from "../jobs/webhook-secret.ts";
import { describeError, writeLog } from "../log.ts";
import type { StoredEmailRules } from "../people/store.ts";
import { enqueueLookupMessage, enqueueLookupTurns, RESUME_CHECK_SECONDS, VERIFY_CHECK_SECONDS } from "./queue.ts";
import { lookupJobById, lookupJobJson, type LookupJobRow } from "./store/job-rows.ts";
import { LOOKUP_LINES_PER_TURN, resumeIfCovered, runTurn } from "./store/lines.ts";
import { applyLookupRetention } from "./store/retention.ts";
import { lookupCandidates, recordLookupCallback, stalledLookupWork } from "./store/scheduling.ts";
import { stepVerification } from "./verification.ts";

/** The parts of a delivered message (workerd's Message) that the consumer uses. */
export type DeliveredMessage = { readonly body: unknown; ack(): void; retry(options?: { delaySeconds?: number }): void };

export type LookupJobsDeps = {
  db: Database;
  queue: LookupJobsQueue;
  /** The verification jobs' queue: verify_emails' verification job runs there. */
  jobsQueue: JobsQueue;
  dohUrl: string;
  allowPrivateCallbacks: boolean;
  webhookSecretKey: string | undefined;
  /** LOOKUP_VERIFY_MAX_AGE_SECONDS in ms. */
  verifyMaxAgeMs: number;
  verifyMaxAgeSeconds: number;
  /** LOOKUP_JOB_MAX_PAUSE_SECONDS in ms. */
  maxPauseMs: number;
  /** JOB_STALL_SECONDS in ms. */
  stallMs: number;
  storedEmailRules: StoredEmailRules;
};

/** After a turn or a resume: what its job needs next (a resume check, its verification phase, its callback). */
async function followUp(deps: LookupJobsDeps, job: LookupJobRow | null, completed: boolean): Promise<void> {
  if (!job) return;
  if (job.status === "paused") await enqueueLookupMessage(deps.queue, { kind: "lookup_resume", job: job.id }, RESUME_CHECK_SECONDS);
  else if (completed && job.callback_state === "pending") await enqueueLookupMessage(deps.queue, { kind: "lookup_callback", job: job.id, attempt: 0 });
  else if (job.status === "running" && Number(job.verify_emails) === 1 && job.verify_state === null && Number(job.found) + Number(job.not_found) + Number(job.invalid) + Number(job.erased) >= Number(job.total)) {
    await enqueueLookupMessage(deps.queue, { kind: "lookup_verify", job: job.id });
  }
}

/** A delivery's turns: planned in fair order, each one transaction, one after the other. */
async function runTurns(deps: LookupJobsDeps, messages: DeliveredMessage[]): Promise<void> {
  let share: FairShare;
  try {
    share = new FairShare(await lookupCandidates(deps.db));
  } catch (error) {
    return settle(messages, null, () => Promise.reject(error));
  }
  for (const message of messages) {
    const turn = share.take(LOOKUP_LINES_PER_TURN);
    if (!turn) {
      message.ack();
      continue;
    }
    await settle([message], turn.job, async () => {
      const job = await lookupJobById(deps.db, turn.job);
      if (!job) return;
      const now = Date.now();
      const done = await runTurn(deps.db, job, crypto.randomUUID(), LOOKUP_LINES_PER_TURN, now, now - deps.verifyMaxAgeMs);
      await followUp(deps, done.job, done.completed);
    });
  }
}

async function resume(deps: LookupJobsDeps, jobId: string): Promise<void> {
  const job = await lookupJobById(deps.db, jobId);
  if (!job || job.status !== "paused") return;
  const after = await resumeIfCovered(deps.db, job, Date.now(), deps.maxPauseMs);
  if (after.cancelled) return followUp(deps, after.job, true);
  if (after.job?.status === "running") return enqueueLookupTurns(deps.queue, jobId, after.pending);
  await followUp(deps, after.job, false);
}

async function verify(deps: LookupJobsDeps, jobId: string): Promise<void> {
  const job = await lookupJobById(deps.db, jobId);
  if (!job) return;
  const step = await stepVerification({ db: deps.db, jobsQueue: deps.jobsQueue, storedEmailRules: deps.storedEmailRules }, job);
  if (step.kind === "verifying" || (step.kind === "started" && step.verifying)) return enqueueLookupMessage(deps.queue, { kind: "lookup_verify", job: jobId }, VERIFY_CHECK_SECONDS);
  if (step.kind === "finished" || step.kind === "started") await followUp(deps, await lookupJobById(deps.db, jobId), true);
}

/** The signing secret of the account's callbacks, or null when there is nobody to sign for (a disabled or gone account). */
async function callbackSecret(deps: LookupJobsDeps, accountId: string): Promise<{ secret: string } | { skip: true } | { error: string }> {
  const account = await callbackAccount(deps.db, accountId);
  // A disabled account's callback waits, pending and not counted; the cron sends it once the account is enabled.
  if (!account?.active) return { skip: true };
  try {
    const secret =
      account.storedSecret !== null && isSealed(account.storedSecret)
        ? await openWebhookSecret(account.storedSecret, accountId, deps.webhookSecretKey)
        : await accountWebhookSecret(deps.db, accountId, deps.webhookSecretKey);
    return secret === null ? { skip: true } : { secret };
  } catch (error) {
    if (!(error instanceof WebhookKeyError)) throw error;
    writeLog("error", { event: "webhook_secret_unavailable", account_id: accountId, error: describeError(error) });
    return { error: "callback not signed: WEBHOOK_SECRET_KEY is missing or wrong" };
  }
}

async function callback(deps: LookupJobsDeps, jobId: string, attempt: number): Promise<void> {
  const job = await lookupJobById(deps.db, jobId);
  if (!job || job.callback_state !== "pending" || !job.callback_url) return;
  const signing = await callbackSecret(deps, job.account_id);
  if ("skip" in signing) return;
  const delivery =
    "error" in signing
      ? { ok: false as const, error: signing.error }
      : await deliverCallback({
          url: job.callback_url,
          secret: signing.secret,
          eventId: `evt_${job.id}_${job.status}`,
          body: JSON.stringify(lookupJobJson(job, deps.verifyMaxAgeSeconds)),
          dohUrl: deps.dohUrl,
          allowPrivate: deps.allowPrivateCallbacks,
        });
  if (delivery.ok) return recordLookupCallback(deps.db, jobId, { delivered: true });
  const delay = CALLBACK_RETRY_DELAYS_SECONDS[attempt];
  await recordLookupCallback(deps.db, jobId, { delivered: false, error: delivery.error, nextAt: delay === undefined ? null : Date.now() + delay * 1000 });
  if (delay !== undefined) await enqueueLookupMessage(deps.queue, { kind: "lookup_callback", job: jobId, attempt: attempt + 1 }, delay);
}

async function settle(messages: DeliveredMessage[], jobId: string | null, run: () => Promise<void>): Promise<void> {
  try {
    await run();
    for (const m of messages) m.ack();
  } catch (err) {
    writeLog("error", { event: "lookup_job_message_failed", job_id: jobId, messages: messages.length, retry_in_s: LINE_POLICY.redeliverDelaySeconds, error: describeError(err) });
    for (const m of messages) m.retry({ delaySeconds: LINE_POLICY.redeliverDelaySeconds });
  }
}

/** One delivery from the lookup-jobs queue. */
export async function handleLookupJobMessages(messages: readonly DeliveredMessage[], deps: LookupJobsDeps): Promise<void> {
  const turns: DeliveredMessage[] = [];
  for (const message of messages) {
    const parsed = LookupJobMessage.safeParse(message.body);
    if (!parsed.success) {
      message.ack(); // not ours to understand; retrying it would not help
      continue;
    }
    const body = parsed.data;
    if (body.kind === "lookup_turn") turns.push(message);
    else if (body.kind === "lookup_resume") await settle([message], body.job, () => resume(deps, body.job));
    else if (body.kind === "lookup_verify") await settle([message], body.job, () => verify(deps, body.job));
    else await settle([message], body.job, () => callback(deps, body.job, body.attempt));
  }
  if (turns.length > 0) await runTurns(deps, turns);
}

/** The cron's part: stalled work back on the queue (turns, resume checks, verification phases, callbacks), then retention. */
export async function runLookupJobsCron(deps: LookupJobsDeps, defaultRetentionSeconds: number): Promise<Record<string, number>> {
  const work = await stalledLookupWork(deps.db, Date.now() - deps.stallMs);
  for (const t of work.turns) await enqueueLookupTurns(deps.queue, t.job, t.turns * LOOKUP_LINES_PER_TURN);
  for (const job of work.resumes) await enqueueLookupMessage(deps.queue, { kind: "lookup_resume", job });
  for (const job of work.verifications) await enqueueLookupMessage(deps.queue, { kind: "lookup_verify", job });
  for (const c of work.callbacks) await enqueueLookupMessage(deps.queue, { kind: "lookup_callback", job: c.job, attempt: c.attempt });
  return {
    lookup_turns_requeued: work.turns.reduce((n, t) => n + t.turns, 0),
    lookup_resumes_requeued: work.resumes.length,
    lookup_verifications_requeued: work.verifications.length,
    lookup_callbacks_requeued: work.callbacks.length,
    ...(await applyLookupRetention(deps.db, defaultRetentionSeconds)),
  };
}
