/**
 * The Worker: the HTTP API, and the queue consumers and cron that run bulk verification jobs
 * (docs/jobs.md "Bulk verification jobs") and lookup jobs (docs/lookup-jobs.md).
 */
import { createApp } from "./app.ts";
import { openRequestDatabase } from "./db/client.ts";
import { loadConfig, type Bindings, type EdgeConfig } from "./env.ts";
import { handleJobMessages, requeueStalledWork, type JobsDeps } from "./jobs/consumer.ts";
import { applyJobRetention } from "./jobs/store/retention.ts";
import { describeError, writeLog } from "./log.ts";
import { runPersonalDataCron } from "./personal-data-cron.ts";
import { handlePeopleEventMessages, runPeopleEventsCron, type PeopleEventsDeps } from "./people-events.ts";
import { recordExpiredKeys } from "./identity/store/keys.ts";
import { deleteOldAuditEvents } from "./identity/store/audit.ts";
import { cleanUpSignInData } from "./identity/sessions.ts";
import { handleLookupJobMessages, runLookupJobsCron, type LookupJobsDeps } from "./lookup-jobs/consumer.ts";
import { isLookupJobsQueue } from "./lookup-jobs/queue.ts";
import { stopJobsOfGoneMakersNow } from "./lookup-jobs/gone-makers.ts";

const app = createApp();

/**
 * The cron's tasks, in the order they run, each named by the log line it writes when it did something (docs/operations.md
 * "Logs") and the one it writes when it failed.
 */
type CronTask = { event: string; failedEvent: string; run(deps: JobsDeps, config: EdgeConfig, env: Bindings): Promise<Record<string, number | string | null>> };
const CRON_TASKS: CronTask[] = [
  { event: "stalled_work_requeued", failedEvent: "stalled_work_check_failed", run: (deps) => requeueStalledWork(deps) },
  {
    event: "people_data_cron",
    failedEvent: "people_data_cron_failed",
    run: (deps, config) =>
      runPersonalDataCron(deps.db, deps.queue, {
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
  { event: "job_retention", failedEvent: "job_retention_failed", run: (deps, config) => applyJobRetention(deps.db, config.JOB_RETENTION_SECONDS) },
  { event: "lookup_jobs_cron", failedEvent: "lookup_jobs_cron_failed", run: (deps, config, env) => runLookupJobsCron(lookupJobsDeps(env, deps), config.JOB_RETENTION_SECONDS) },
  // After the personal-data part, whose answers may have made addresses undeliverable: their events go out in this run.
  { event: "people_events_cron", failedEvent: "people_events_cron_failed", run: (deps, config) => runPeopleEventsCron(peopleEventsDeps(deps), config.PEOPLE_EVENTS_WINDOW_SECONDS) },
];

function peopleEventsDeps(deps: JobsDeps): PeopleEventsDeps {
  return { db: deps.db, queue: deps.queue, dohUrl: deps.dohUrl, allowPrivateCallbacks: deps.allowPrivateCallbacks, webhookSecretKey: deps.webhookSecretKey };
}

function jobsDeps(env: Bindings): JobsDeps {
  const config = loadConfig(env);
  if (!env.JOBS_QUEUE) throw new Error("The JOBS_QUEUE binding is missing: declare the queue in wrangler.toml for this environment");
  return {
    db: openRequestDatabase(config.DATABASE_URL, config.DATABASE_AUTH_TOKEN, config.DATABASE_TIMEOUT_MS),
    queue: env.JOBS_QUEUE,
    dohUrl: config.DOH_URL,
    probeUrls: config.PROBE_URL,
    probeSecret: config.PROBE_SECRET,
    recheckDelaySeconds: config.JOB_RETRY_DELAY_SECONDS,
    receiverWaitMaxMs: config.JOB_RECEIVER_WAIT_MAX_SECONDS * 1000,
    stallMs: config.JOB_STALL_SECONDS * 1000,
    allowPrivateCallbacks: config.CALLBACK_ALLOW_PRIVATE_TARGETS,
    webhookSecretKey: config.WEBHOOK_SECRET_KEY,
  };
}

/** The lookup jobs' consumer and cron (edge/lookup-jobs/consumer.ts): their own queue, and the verification jobs' for verify_emails. */
function lookupJobsDeps(env: Bindings, jobs: JobsDeps): LookupJobsDeps {
  const config = loadConfig(env);
  if (!env.LOOKUP_JOBS_QUEUE) throw new Error("The LOOKUP_JOBS_QUEUE binding is missing: declare the queue in wrangler.toml for this environment");
  return {
    db: jobs.db,
    queue: env.LOOKUP_JOBS_QUEUE,
    jobsQueue: jobs.queue,
    dohUrl: config.DOH_URL,
    allowPrivateCallbacks: config.CALLBACK_ALLOW_PRIVATE_TARGETS,
    webhookSecretKey: config.WEBHOOK_SECRET_KEY,
    verifyMaxAgeMs: config.LOOKUP_VERIFY_MAX_AGE_SECONDS * 1000,
    verifyMaxAgeSeconds: config.LOOKUP_VERIFY_MAX_AGE_SECONDS,
    maxPauseMs: config.LOOKUP_JOB_MAX_PAUSE_SECONDS * 1000,
    stallMs: config.JOB_STALL_SECONDS * 1000,
    storedEmailRules: { maxAgeSeconds: config.EMAIL_MAX_AGE_SECONDS, recheckSeconds: config.EMAIL_RECHECK_SECONDS },
  };
}

export default {
  fetch: app.fetch,
  async queue(batch: MessageBatch<unknown>, env: Bindings): Promise<void> {
    const started = Date.now();
    if (isLookupJobsQueue(batch.queue)) await handleLookupJobMessages(batch.messages, lookupJobsDeps(env, jobsDeps(env)));
    else {
      const deps = jobsDeps(env);
      const isPeopleEvent = (m: { body: unknown }) => (m.body as { kind?: unknown } | null)?.kind === "people_event";
      await Promise.all([handleJobMessages(batch.messages.filter((m) => !isPeopleEvent(m)), deps), handlePeopleEventMessages(batch.messages.filter(isPeopleEvent), peopleEventsDeps(deps))]);
    }
    writeLog("info", { event: "queue_batch", queue: batch.queue, messages: batch.messages.length, duration_ms: Date.now() - started });
  },
  async scheduled(_controller: ScheduledController, env: Bindings): Promise<void> {
    const deps = jobsDeps(env);
    const config = loadConfig(env);
    // Each task on its own: one that fails (logged) does not keep the others from running.
    for (const task of CRON_TASKS) {
      try {
        const report = await task.run(deps, config, env);
        if (Object.values(report).some((v) => v !== 0 && v !== null)) writeLog("info", { event: task.event, ...report });
      } catch (error) {
        writeLog("error", { event: task.failedEvent, error: describeError(error) });
      }
    }
  },
} satisfies ExportedHandler<Bindings>;
