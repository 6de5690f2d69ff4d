/**
 * The engine's queue consumer (docs/jobs.md "How a job runs"): one for both queues and every kind. A message names a
 * kind, a job and what to do (shared/jobs.ts JobMessage; an earlier form is read as what it meant); the database says
 * what is left. Turns go to their kind (verification/turns.ts, lookup/turns.ts), a lookup job's resume check and
 * verify_emails phase to the lookup kind, callbacks of either kind to the one callback path (callbacks.ts), and people
 * events' deliveries to edge/people-events.ts. A message is acknowledged when its work is written, retried later when it
 * failed (messages.ts).
 */
import { readJobMessage, type JobMessage } from "../../shared/jobs.ts";
import { handlePeopleEventMessages } from "../people-events.ts";
import { runCallback } from "./callbacks.ts";
import type { EngineDeps } from "./deps.ts";
import { lookupJobPhase, resumeLookupJob, runLookupTurns } from "./lookup/turns.ts";
import { settle, type DeliveredMessage } from "./messages.ts";
import { runVerificationTurns } from "./verification/turns.ts";

export type { DeliveredMessage } from "./messages.ts";

/** One delivery, from either queue: each message to its kind's handler, the kinds' turns side by side. */
export async function handleJobMessages(messages: readonly DeliveredMessage[], deps: EngineDeps): Promise<void> {
  const turns = { verification: [] as DeliveredMessage[], lookup: [] as DeliveredMessage[] };
  const events: { message: DeliveredMessage; body: Extract<JobMessage, { kind: "people_event" }> }[] = [];
  const work: Promise<void>[] = [];
  const lookupSingles: (() => Promise<void>)[] = [];
  for (const message of messages) {
    const body = readJobMessage(message.body);
    if (!body) {
      message.ack(); // not ours to understand; retrying it would not help
      continue;
    }
    if (body.kind === "people_event") events.push({ message, body });
    else if (body.type === "turn") turns[body.kind].push(message);
    else if (body.type === "callback") work.push(settle([message], body.job, () => runCallback(deps, body.kind, body.job, body.attempt ?? 0)));
    else if (body.kind === "lookup") {
      // A lookup job's resume checks and phases, one after the other (each a few statements).
      const run = body.type === "resume" ? () => resumeLookupJob(deps, body.job) : () => lookupJobPhase(deps, body.job);
      lookupSingles.push(() => settle([message], body.job, run, "lookup_job_message_failed"));
    } else message.ack(); // a verification job has no resume or phase message
  }
  if (events.length > 0) {
    work.push(
      handlePeopleEventMessages(
        events.map(({ message, body }) => ({ body, ack: () => message.ack(), retry: (o) => message.retry(o) })),
        { db: deps.db, queue: deps.queues.verification, dohUrl: deps.dohUrl, allowPrivateCallbacks: deps.allowPrivateCallbacks, webhookSecretKey: deps.webhookSecretKey },
      ),
    );
  }
  if (turns.verification.length > 0) work.push(runVerificationTurns(deps, turns.verification));
  work.push(
    (async () => {
      for (const run of lookupSingles) await run();
      if (turns.lookup.length > 0) await runLookupTurns(deps, turns.lookup);
    })(),
  );
  await Promise.all(work);
}
