/**
 * What the engine needs to run jobs of every kind (edge/index.ts builds it from the bindings and the configuration,
 * docs/operations.md "Configuration"). A leaf.
 */
import type { Database } from "../db/client.ts";
import type { EdgeConfig } from "../env.ts";
import type { StoredEmailRules } from "../people/store.ts";
import type { JobQueues } from "./queue.ts";

export type EngineDeps = {
  db: Database;
  queues: JobQueues;
  dohUrl: string;
  probeUrls: string[];
  probeSecret: string | undefined;
  /** JOB_RETRY_DELAY_SECONDS: how long a temporary answer waits for its recheck. */
  recheckDelaySeconds: number;
  /** JOB_RECEIVER_WAIT_MAX_SECONDS, in ms: the longest a line waits on a receiver's budget before it is answered. */
  receiverWaitMaxMs: number;
  /** A job with no progress for this long is stalled (JOB_STALL_SECONDS). */
  stallMs: number;
  /** JOB_IDLE_CHECK_MS: how often a delivery checking lines looks for accounts nobody serves. */
  idleAccountCheckMs: number;
  allowPrivateCallbacks: boolean;
  /** WEBHOOK_SECRET_KEY: opens the accounts' sealed webhook secrets. */
  webhookSecretKey: string | undefined;
  /** LOOKUP_VERIFY_MAX_AGE_SECONDS: a stored verification at most this old is taken as it is by verify_emails. */
  verifyMaxAgeSeconds: number;
  /** LOOKUP_JOB_MAX_PAUSE_SECONDS in ms: a lookup job paused this long is cancelled. */
  maxPauseMs: number;
  /** How verdicts are written back to stored addresses (EMAIL_MAX_AGE_SECONDS, EMAIL_RECHECK_SECONDS). */
  storedEmailRules: StoredEmailRules;
  /** What a lookup job's find_emails phase gives the email finder (FEEDBACK_HASH_KEY, DOH_URL, PROBE_URL, PROBE_SECRET). */
  finderConfig: EdgeConfig;
};
