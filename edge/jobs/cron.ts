/**
 * The engine's part of the cron, for every kind (docs/jobs.md "Retention", "How a job runs"; docs/lookup-jobs.md): stalled
 * work back on its queue (a kind's own idea of what is stalled: turns, a lookup job's resume check or a phase whose
 * child ended), callbacks whose time has come, and the envelope's retention (expired results, creates that died half
 * way, forgotten Idempotency-Keys), a bounded slice of each per run and kind.
 */
import { JOB_KINDS } from "../../shared/jobs.ts";
import type { EngineDeps } from "./deps.ts";
import { enqueueCallback, enqueueJobMessage, enqueueTurns, LINES_PER_TURN } from "./queue.ts";
import { applyRetention, dueCallbacks } from "./store/envelope.ts";
import { stalledLookupWork } from "./store/lookup-scheduling.ts";
import { stalledWork } from "./store/scheduling.ts";

/** Stalled work requeued, by kind; what was requeued is counted in turns and messages. */
async function requeueStalled(deps: Pick<EngineDeps, "db" | "queues" | "stallMs">, now: number): Promise<Record<string, number>> {
  const before = now - deps.stallMs;
  const verification = await stalledWork(deps.db, before);
  for (const t of verification) await enqueueTurns(deps.queues, "verification", t.job, t.turns * LINES_PER_TURN.verification);
  const lookup = await stalledLookupWork(deps.db, before, now);
  for (const t of lookup.turns) await enqueueTurns(deps.queues, "lookup", t.job, t.turns * LINES_PER_TURN.lookup);
  for (const job of lookup.resumes) await enqueueJobMessage(deps.queues, { kind: "lookup", type: "resume", job });
  for (const job of lookup.verifications) await enqueueJobMessage(deps.queues, { kind: "lookup", type: "phase", job });
  return {
    verification_turns_requeued: verification.reduce((n, t) => n + t.turns, 0),
    lookup_turns_requeued: lookup.turns.reduce((n, t) => n + t.turns, 0),
    lookup_resumes_requeued: lookup.resumes.length,
    lookup_phases_requeued: lookup.verifications.length,
  };
}

/** The cron's part for jobs: each kind's stalled work, due callbacks and retention; a report keyed `<kind>_<what>`. */
export async function runJobsCron(deps: Pick<EngineDeps, "db" | "queues" | "stallMs">, defaultRetentionSeconds: number, now = Date.now()): Promise<Record<string, number>> {
  const report = await requeueStalled(deps, now);
  for (const kind of JOB_KINDS) {
    const callbacks = await dueCallbacks(deps.db, kind, now - deps.stallMs, now);
    for (const c of callbacks) await enqueueCallback(deps.queues, kind, c.job, c.attempt);
    report[`${kind}_callbacks_requeued`] = callbacks.length;
    for (const [what, n] of Object.entries(await applyRetention(deps.db, kind, defaultRetentionSeconds, now))) report[`${kind}_${what}`] = n;
  }
  return report;
}
