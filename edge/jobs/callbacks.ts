/**
 * A job's callback, the same for every kind (docs/jobs.md "Callbacks"): when the job has ended, its record (as
 * `GET /v1/<kind's path>/{id}` answers it) is POSTed, signed with the account's secret, to the job's callback_url;
 * every attempt is recorded on the job (store/envelope.ts), and a failed one is tried again on the webhooks' schedule
 * (edge/webhooks/delivery.ts), each retry a message on the kind's queue. One place to change how callbacks behave.
 */
import type { JobKind } from "../../shared/jobs.ts";
import { callbackAccount } from "../webhooks/secret.ts";
import { sendWebhook, type WebhookKind } from "../webhooks/send.ts";
import type { EngineDeps } from "./deps.ts";
import { enqueueCallback } from "./queue.ts";
import { recordCallback } from "./store/envelope.ts";
import { jobById, jobJson } from "./store/job-rows.ts";
import { lookupJobById, lookupJobJson } from "./store/lookup-rows.ts";

/** What a callback needs of an ended job of a kind: its envelope, and the body its own GET answers with. */
type CallbackSubject = { account_id: string; status: string; callback_state: string; callback_url: string | null; body: () => unknown };

const SUBJECTS: Record<JobKind, { webhook: WebhookKind; read(deps: EngineDeps, id: string): Promise<CallbackSubject | null> }> = {
  verification: {
    webhook: "verification_job_callback",
    read: async (deps, id) => {
      const job = await jobById(deps.db, id);
      return job && { ...job, body: () => jobJson(job) };
    },
  },
  lookup: {
    webhook: "lookup_job_callback",
    read: async (deps, id) => {
      const job = await lookupJobById(deps.db, id);
      return job && { ...job, body: () => lookupJobJson(job, deps.verifyMaxAgeSeconds) };
    },
  },
};

/** One attempt of a job's callback (`attempt`: the attempts before this one); nothing when it was delivered or given up. */
export async function runCallback(deps: EngineDeps, kind: JobKind, jobId: string, attempt: number): Promise<void> {
  const subject = SUBJECTS[kind];
  const job = await subject.read(deps, jobId);
  if (!job || job.callback_state !== "pending" || !job.callback_url) return;
  const outgoing = {
    kind: subject.webhook,
    id: jobId,
    accountId: job.account_id,
    account: await callbackAccount(deps.db, job.account_id),
    url: job.callback_url,
    eventId: `evt_${jobId}_${job.status}`,
    body: JSON.stringify(job.body()),
  };
  await sendWebhook(deps, outgoing, attempt, {
    record: (outcome) => recordCallback(deps.db, kind, jobId, outcome),
    retry: (next, delay) => enqueueCallback(deps.queues, kind, jobId, next, delay),
  });
}
