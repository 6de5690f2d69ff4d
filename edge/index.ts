/**
 * The Worker: the HTTP API, and the queue consumer and cron of the one job engine (edge/jobs/), which runs bulk
 * verification jobs (docs/jobs.md "Bulk verification jobs") and lookup jobs (docs/lookup-jobs.md).
 */
import { createApp } from "./app.ts";
import { openRequestDatabase } from "./db/client.ts";
import { loadConfig, type Bindings, type EdgeConfig } from "./env.ts";
import { handleJobMessages } from "./jobs/consumer.ts";
import { runJobsCron } from "./jobs/cron.ts";
import type { EngineDeps } from "./jobs/deps.ts";
import { jobQueues } from "./jobs/queue.ts";
import { describeError, writeLog } from "./log.ts";
import { runPersonalDataCron } from "./personal-data-cron.ts";
import { runPeopleEventsCron, type PeopleEventsDeps } from "./people-events.ts";
import { deleteExpiredBatches } from "./people/bulk-store.ts";
import { recordExpiredKeys } from "./identity/store/keys.ts";
import { deleteOldAuditEvents } from "./identity/store/audit.ts";
import { cleanUpSignInData } from "./identity/sessions.ts";
import { stopJobsOfGoneMakersNow } from "./jobs/makers.ts";

const app = createApp();

/**
 * The cron's tasks, in the order they run, each named by the log line it writes when it did something (docs/operations.md
 * "Logs") and the one it writes when it failed.
 */
type CronTask = { event: string; failedEvent: string; run(deps: EngineDeps, config: EdgeConfig): Promise<Record<string, number | string | null>> };
const CRON_TASKS: CronTask[] = [
  // Every kind's stalled work, due callbacks and retention (edge/jobs/cron.ts).
  { event: "jobs_cron", failedEvent: "jobs_cron_failed", run: (deps, config) => runJobsCron(deps, config.JOB_RETENTION_SECONDS) },
  {
    event: "people_data_cron",
    failedEvent: "people_data_cron_failed",
    run: (deps, config) =>
      runPersonalDataCron(deps.db, deps.queues, {
        maxAgeSeconds: config.EMAIL_MAX_AGE_SECONDS,
        recheckSeconds: config.EMAIL_RECHECK_SECONDS,
        refreshBatch: config.EMAIL_REFRESH_BATCH,
        accessLogRetentionSeconds: config.ACCESS_LOG_RETENTION_SECONDS,
        jobRetentionSeconds: config.JOB_RETENTION_SECONDS,
        feedbackHashKey: config.FEEDBACK_HASH_KEY,
        feedbackRetentionSeconds: config.FEEDBACK_RETENTION_SECONDS,
      }),
  },
  {
    event: "audit_cron",
    failedEvent: "audit_cron_failed",
    run: async (deps, config) => {
      const now = Date.now();
      return {
        keys_expired_recorded: await recordExpiredKeys(deps.db, now),
        // A key that expired (and was not rolled) stops its jobs, as a revocation does at once.
        jobs_of_gone_makers_stopped: await stopJobsOfGoneMakersNow(deps.db, now),
        audit_events_deleted: await deleteOldAuditEvents(deps.db, now - config.AUDIT_RETENTION_SECONDS * 1000),
      };
    },
  },
  { event: "sign_in_cron", failedEvent: "sign_in_cron_failed", run: (deps, config) => cleanUpSignInData(deps.db, Date.now(), config.SESSION_IDLE_SECONDS * 1000) },
  // The batch call's answers kept for their Idempotency-Keys (docs/api.md "Batch lookups"): gone after 24 hours.
  { event: "batch_answers_cron", failedEvent: "batch_answers_cron_failed", run: async (deps) => ({ batch_answers_deleted: await deleteExpiredBatches(deps.db, Date.now()) }) },
  // After the personal-data part, whose answers may have made addresses undeliverable: their events go out in this run.
  { event: "people_events_cron", failedEvent: "people_events_cron_failed", run: (deps, config) => runPeopleEventsCron(peopleEventsDeps(deps), config.PEOPLE_EVENTS_WINDOW_SECONDS) },
];

function peopleEventsDeps(deps: EngineDeps): PeopleEventsDeps {
  return { db: deps.db, queue: deps.queues.verification, dohUrl: deps.dohUrl, allowPrivateCallbacks: deps.allowPrivateCallbacks, webhookSecretKey: deps.webhookSecretKey };
}

/** What the engine needs (edge/jobs/deps.ts), from the bindings and the configuration. */
function engineDeps(env: Bindings): EngineDeps {
  const config = loadConfig(env);
  return {
    db: openRequestDatabase(config.DATABASE_URL, config.DATABASE_AUTH_TOKEN, config.DATABASE_TIMEOUT_MS),
    queues: jobQueues(env),
    dohUrl: config.DOH_URL,
    probeUrls: config.PROBE_URL,
    probeSecret: config.PROBE_SECRET,
    recheckDelaySeconds: config.JOB_RETRY_DELAY_SECONDS,
    receiverWaitMaxMs: config.JOB_RECEIVER_WAIT_MAX_SECONDS * 1000,
    stallMs: config.JOB_STALL_SECONDS * 1000,
    idleAccountCheckMs: config.JOB_IDLE_CHECK_MS,
    allowPrivateCallbacks: config.CALLBACK_ALLOW_PRIVATE_TARGETS,
    webhookSecretKey: config.WEBHOOK_SECRET_KEY,
    verifyMaxAgeSeconds: config.LOOKUP_VERIFY_MAX_AGE_SECONDS,
    maxPauseMs: config.LOOKUP_JOB_MAX_PAUSE_SECONDS * 1000,
    storedEmailRules: { maxAgeSeconds: config.EMAIL_MAX_AGE_SECONDS, recheckSeconds: config.EMAIL_RECHECK_SECONDS },
    finderConfig: config,
  };
}

export default {
  fetch: app.fetch,
  async queue(batch: MessageBatch<unknown>, env: Bindings): Promise<void> {
    const started = Date.now();
    // Either queue: every message says its kind (edge/jobs/consumer.ts).
    await handleJobMessages(batch.messages, engineDeps(env));
    writeLog("info", { event: "queue_batch", queue: batch.queue, messages: batch.messages.length, duration_ms: Date.now() - started });
  },
  async scheduled(_controller: ScheduledController, env: Bindings): Promise<void> {
    const deps = engineDeps(env);
    const config = loadConfig(env);
    // Each task on its own: one that fails (logged) does not keep the others from running.
    for (const task of CRON_TASKS) {
      try {
        const report = await task.run(deps, config);
        if (Object.values(report).some((v) => v !== 0 && v !== null)) writeLog("info", { event: task.event, ...report });
      } catch (error) {
        writeLog("error", { event: task.failedEvent, error: describeError(error) });
      }
    }
  },
} satisfies ExportedHandler<Bindings>;
