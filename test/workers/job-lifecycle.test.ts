/**
 * The one job engine's lifecycle, for every kind it runs (edge/jobs/kinds.ts JOB_KINDS; docs/jobs.md, docs/lookup-jobs.md):
 * created on its own queue in the one message shape, turned, ended, its callback sent by the one callback path; the
 * cron's part (stalled turns, due callbacks, retention, creates that died half way, Idempotency-Keys forgotten); a
 * lookup job's pause that lasts too long, and its verify_emails phase woken by its child's end rather than polled.
 * Against the real database, the Worker's own queue handler, the stand-in probe and the loopback webhook receiver. A
 * kind added to JOB_KINDS without a maker here fails.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, inject, it } from "vitest";
import { JOB_KINDS, type JobKind, type JobMessage } from "../../shared/jobs.ts";
import worker from "../../edge/index.ts";
import type { Bindings, JobsQueue } from "../../edge/env.ts";
import { runJobsCron } from "../../edge/jobs/cron.ts";
import { ABANDONED_CREATE_MS, IDEMPOTENCY_KEY_TTL_MS, KIND_TABLES } from "../../edge/jobs/store/envelope.ts";
import { CALLBACK_RETRY_DELAYS_SECONDS } from "../../edge/webhooks/delivery.ts";
import { call, callWith, cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
  await cancelUnfinishedJobs();
});

type Sent = { body: JobMessage; delaySeconds?: number };

/** Both kinds' queues, recording what is sent instead of delivering it: the test delivers each message itself. */
function recordingQueues() {
  const sent: Record<JobKind, Sent[]> = { verification: [], lookup: [] };
  const queue = (kind: JobKind): JobsQueue => ({
    send: async (body, options) => void sent[kind].push({ body, ...options }),
    sendBatch: async (messages) => void sent[kind].push(...messages),
  });
  const queues = { verification: queue("verification"), lookup: queue("lookup") };
  return { sent, queues, bindings: { JOBS_QUEUE: queues.verification, LOOKUP_JOBS_QUEUE: queues.lookup, PROBE_URL: inject("probeFixtureUrl") } satisfies Partial<Bindings> };
}

/** Hands messages to the Worker's queue handler as one delivery (the queue's name does not matter: a message says its kind). */
async function deliver(messages: JobMessage[], bindings: Partial<Bindings>) {
  const batch = createMessageBatch<JobMessage>("any-queue", messages.map((body, i) => ({ id: `m-${crypto.randomUUID()}-${i}`, timestamp: new Date(), attempts: 1, body })));
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, { ...env, ...bindings } as never);
  return getQueueResult(batch, ctx);
}

/** Each kind's way in: the route that makes a job, its path, and a list of two lines that finish in one turn. */
const MAKERS: Record<JobKind, { path: string; make(token: string, query: string, bindings: Partial<Bindings>, headers?: Record<string, string>): Promise<{ id: string }> }> = {
  verification: {
    path: "/v1/email_verification_jobs",
    async make(token, query, bindings, headers = {}) {
      const res = await callWith(bindings, `/v1/email_verification_jobs${query}`, {
        method: "POST",
        token,
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ email_addresses: ["ana@ok.test", "nobody@ok.test"] }),
      });
      expect(res.status, await res.clone().text()).toBe(202);
      return (await res.json()) as { id: string };
    },
  },
  lookup: {
    path: "/v1/lookup_jobs",
    async make(token, query, bindings, headers = {}) {
      const found = uniqueIds();
      await insertPerson({ ...found, emails: [`life-${found.profnet_id}@example.org`] });
      const res = await callWith(bindings, `/v1/lookup_jobs${query}`, {
        method: "POST",
        token,
        headers: { "content-type": "text/csv", ...headers },
        body: `profnet_id\r\n${found.profnet_id}\r\n${uniqueIds().profnet_id}\r\n`,
      });
      expect(res.status, await res.clone().text()).toBe(202);
      return (await res.json()) as { id: string };
    },
  },
};

const jobRow = async (kind: JobKind, id: string) =>
  (await db.all<{ status: string; callback_state: string; callback_attempts: number; results_state: number; idempotency_key: string | null }>(
    sql`select status, callback_state, callback_attempts, results_state, idempotency_key from ${sql.identifier(KIND_TABLES[kind].jobs)} where id = ${id}`,
  ))[0];
const lineCount = async (kind: JobKind, id: string) =>
  Number((await db.all<{ n: number }>(sql`select count(*) as n from ${sql.identifier(KIND_TABLES[kind].lines)} where job_id = ${id}`))[0]!.n);

async function deliveries(url: string, count: number) {
  let received: { headers: Record<string, string>; body: string; answered: number }[] = [];
  for (let i = 0; i < 50 && received.length < count; i++) {
    received = (await (await fetch(url.replace("/hooks/", "/__deliveries/"))).json()) as typeof received;
    if (received.length < count) await new Promise((r) => setTimeout(r, 100));
  }
  return received;
}

describe.each(JOB_KINDS)("a %s job, run by the one engine", (kind) => {
  const maker = MAKERS[kind];
  const other: JobKind = kind === "verification" ? "lookup" : "verification";

  it("is created with turns on its own queue in the one message shape, ends, and sends its callback once by the one path", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const url = `${inject("webhookUrl")}/hooks/${crypto.randomUUID()}`;
    const job = await maker.make(token, `?callback_url=${encodeURIComponent(url)}`, rec.bindings);
    const turn: JobMessage = { kind, type: "turn", job: job.id };
    expect(rec.sent[kind]).toEqual([{ body: turn, delaySeconds: 0 }]);
    expect(rec.sent[other]).toEqual([]);
    rec.sent[kind].length = 0;
    expect((await deliver([turn], rec.bindings)).explicitAcks).toHaveLength(1);
    expect((await jobRow(kind, job.id))!.status).toBe("completed");
    const callback: JobMessage = { kind, type: "callback", job: job.id, attempt: 0 };
    expect(rec.sent[kind].map((s) => s.body)).toEqual([callback]);
    await deliver([callback], rec.bindings);
    const received = await deliveries(url, 1);
    expect(received).toHaveLength(1);
    expect(received[0]!.headers["webhook-id"]).toBe(`evt_${job.id}_completed`);
    expect(JSON.parse(received[0]!.body)).toMatchObject({ id: job.id, status: "completed" });
    expect(await jobRow(kind, job.id)).toMatchObject({ callback_state: "delivered", callback_attempts: 1 });
    // Delivered: the same message again sends nothing.
    await deliver([callback], rec.bindings);
    expect(await deliveries(url, 2)).toHaveLength(1);
  });

  it("a retried create (same Idempotency-Key, same list) returns the first job; another list under that key is 409", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const key = `idem-${crypto.randomUUID()}`;
    const first = await maker.make(token, "", rec.bindings, { "idempotency-key": key });
    rec.sent[kind].length = 0;
    // maker.make for a lookup job makes a new person, so its second list differs: a verification job's is the same.
    if (kind === "verification") {
      const again = await maker.make(token, "", rec.bindings, { "idempotency-key": key });
      expect(again.id).toBe(first.id);
      expect(rec.sent[kind]).toEqual([]);
    }
    const other = await callWith(rec.bindings, `${maker.path}?name=other`, {
      method: "POST",
      token,
      headers: { "content-type": kind === "verification" ? "application/json" : "text/csv", "idempotency-key": key },
      body: kind === "verification" ? JSON.stringify({ email_addresses: ["other@ok.test"] }) : "profnet_id\r\n1\r\n",
    });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { error: string }).error).toMatch(/Idempotency-Key/);
  });

  it("cancel ends it (its callback goes), further turns do nothing; purge expires its results now (410)", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const url = `${inject("webhookUrl")}/hooks/${crypto.randomUUID()}`;
    const job = await maker.make(token, `?callback_url=${encodeURIComponent(url)}`, rec.bindings);
    rec.sent[kind].length = 0;
    const cancelled = await callWith(rec.bindings, `${maker.path}/${job.id}`, { method: "DELETE", token });
    expect(await cancelled.json()).toMatchObject({ status: "cancelled", cancel_reason: "requested" });
    expect(rec.sent[kind].map((s) => s.body)).toEqual([{ kind, type: "callback", job: job.id, attempt: 0 }]);
    await deliver([{ kind, type: "turn", job: job.id }], rec.bindings);
    expect((await jobRow(kind, job.id))!.status).toBe("cancelled");
    expect((await call(`${maker.path}/${job.id}/results`, { token })).status).toBe(200);
    const purged = await callWith(rec.bindings, `${maker.path}/${job.id}?purge=true`, { method: "DELETE", token });
    expect(await purged.json()).toMatchObject({ status: "cancelled", results_expired: true });
    expect((await call(`${maker.path}/${job.id}/results`, { token })).status).toBe(410);
    expect(await lineCount(kind, job.id)).toBe(0);
  });

  it("a callback that fails is recorded and retried on the webhooks' schedule, then delivered with the same webhook-id", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const name = crypto.randomUUID();
    const url = `${inject("webhookUrl")}/hooks/${name}`;
    await fetch(`${inject("webhookUrl")}/__script/${name}`, { method: "POST", body: JSON.stringify({ fail: 1, status: 503 }) });
    const job = await maker.make(token, `?callback_url=${encodeURIComponent(url)}`, rec.bindings);
    await deliver([{ kind, type: "turn", job: job.id }], rec.bindings);
    rec.sent[kind].length = 0;
    await deliver([{ kind, type: "callback", job: job.id, attempt: 0 }], rec.bindings);
    expect(await jobRow(kind, job.id)).toMatchObject({ callback_state: "pending", callback_attempts: 1 });
    expect(rec.sent[kind]).toEqual([{ body: { kind, type: "callback", job: job.id, attempt: 1 }, delaySeconds: CALLBACK_RETRY_DELAYS_SECONDS[0] }]);
    await deliver([rec.sent[kind][0]!.body], rec.bindings);
    const received = await deliveries(url, 2);
    expect(received.map((d) => d.answered)).toEqual([503, 204]);
    expect(new Set(received.map((d) => d.headers["webhook-id"]))).toEqual(new Set([`evt_${job.id}_completed`]));
    expect(await jobRow(kind, job.id)).toMatchObject({ callback_state: "delivered", callback_attempts: 2 });
  });

  it("the cron: a stalled job's turns go back on its queue, and a callback whose message was lost is sent again", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const url = `${inject("webhookUrl")}/hooks/${crypto.randomUUID()}`;
    const job = await maker.make(token, `?callback_url=${encodeURIComponent(url)}`, rec.bindings);
    // Its turn message is lost: nothing moves until the job has been still for the stall period.
    const deps = { db, queues: rec.queues, stallMs: 60_000 };
    rec.sent[kind].length = 0;
    await runJobsCron(deps, 2_592_000);
    expect(rec.sent[kind].filter((s) => s.body.kind === kind && "job" in s.body && s.body.job === job.id)).toEqual([]);
    await db.run(sql`update ${sql.identifier(KIND_TABLES[kind].jobs)} set updated_at = ${Date.now() - 120_000} where id = ${job.id}`);
    const report = await runJobsCron(deps, 2_592_000);
    expect(rec.sent[kind].map((s) => s.body)).toContainEqual({ kind, type: "turn", job: job.id });
    expect(report[`${kind}_turns_requeued`]).toBeGreaterThanOrEqual(1);
    await deliver([{ kind, type: "turn", job: job.id }], rec.bindings);
    expect((await jobRow(kind, job.id))!.status).toBe("completed");
    // Its callback message is lost too: once due, the cron sends it again, once.
    await db.run(sql`update ${sql.identifier(KIND_TABLES[kind].jobs)} set callback_next_at = ${Date.now() - 120_000} where id = ${job.id}`);
    rec.sent[kind].length = 0;
    await runJobsCron(deps, 2_592_000);
    const requeued = rec.sent[kind].map((s) => s.body).filter((b) => "job" in b && b.job === job.id);
    expect(requeued).toEqual([{ kind, type: "callback", job: job.id, attempt: 0 }]);
    rec.sent[kind].length = 0;
    await runJobsCron(deps, 2_592_000);
    expect(rec.sent[kind].map((s) => s.body).filter((b) => "job" in b && b.job === job.id)).toEqual([]);
    await deliver(requeued, rec.bindings);
    expect(await deliveries(url, 1)).toHaveLength(1);
  });

  it("the cron: results expire after retention_seconds (410), the job's record stays, and its Idempotency-Key is forgotten after 24 hours", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const key = `life-${crypto.randomUUID()}`;
    const job = await maker.make(token, "?retention_seconds=60", rec.bindings, { "idempotency-key": key });
    await deliver([{ kind, type: "turn", job: job.id }], rec.bindings);
    expect((await jobRow(kind, job.id))!.status).toBe("completed");
    expect(await lineCount(kind, job.id)).toBe(2);
    const deps = { db, queues: rec.queues, stallMs: 60_000 };
    await runJobsCron(deps, 2_592_000, Date.now() + 30_000);
    expect((await call(`${maker.path}/${job.id}/results`, { token })).status).toBe(200);
    const report = await runJobsCron(deps, 2_592_000, Date.now() + 61_000);
    expect(report[`${kind}_jobs_expired`]).toBeGreaterThanOrEqual(1);
    expect((await call(`${maker.path}/${job.id}/results`, { token })).status).toBe(410);
    expect(await lineCount(kind, job.id)).toBe(0);
    expect((await call(`${maker.path}/${job.id}`, { token })).status).toBe(200);
    expect((await jobRow(kind, job.id))!.idempotency_key).toBe(key);
    await runJobsCron(deps, 2_592_000, Date.now() + IDEMPOTENCY_KEY_TTL_MS + 1_000);
    expect((await jobRow(kind, job.id))!.idempotency_key).toBeNull();
  });

  it("the cron: a create that died half way is deleted, lines first, once older than ABANDONED_CREATE_MS", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const young = await maker.make(token, "", rec.bindings);
    const dead = await maker.make(token, "", rec.bindings);
    const table = sql.identifier(KIND_TABLES[kind].jobs);
    await db.run(sql`update ${table} set creating = 1, created_at = ${Date.now() - ABANDONED_CREATE_MS - 60_000} where id = ${dead.id}`);
    await db.run(sql`update ${table} set creating = 1 where id = ${young.id}`);
    const deps = { db, queues: rec.queues, stallMs: 60_000 };
    await runJobsCron(deps, 2_592_000);
    await runJobsCron(deps, 2_592_000);
    expect(await jobRow(kind, dead.id)).toBeUndefined();
    expect(await lineCount(kind, dead.id)).toBe(0);
    expect(await jobRow(kind, young.id)).toBeDefined();
    expect(await lineCount(kind, young.id)).toBe(2);
  });
});

describe("a lookup job's own phases", () => {
  it("paused longer than LOOKUP_JOB_MAX_PAUSE_SECONDS: the cron's resume check cancels it (paused_too_long) and its callback goes", async () => {
    const { token } = await newAccount(0);
    const rec = recordingQueues();
    const url = `${inject("webhookUrl")}/hooks/${crypto.randomUUID()}`;
    const job = await MAKERS.lookup.make(token, `?callback_url=${encodeURIComponent(url)}`, rec.bindings);
    await deliver([{ kind: "lookup", type: "turn", job: job.id }], rec.bindings);
    expect((await jobRow("lookup", job.id))!.status).toBe("paused");
    // Its resume messages are lost, and it has been paused for longer than the limit (7 days by default).
    await db.run(sql`update lookup_jobs set paused_at = ${Date.now() - 8 * 86_400_000}, updated_at = ${Date.now() - 120_000} where id = ${job.id}`);
    rec.sent.lookup.length = 0;
    await runJobsCron({ db, queues: rec.queues, stallMs: 60_000 }, 2_592_000);
    const resume: JobMessage = { kind: "lookup", type: "resume", job: job.id };
    expect(rec.sent.lookup.map((s) => s.body)).toContainEqual(resume);
    rec.sent.lookup.length = 0;
    await deliver([resume], rec.bindings);
    const res = await call(`/v1/lookup_jobs/${job.id}`, { token });
    expect(await res.json()).toMatchObject({ status: "cancelled", cancel_reason: "paused_too_long" });
    expect(rec.sent.lookup.map((s) => s.body)).toEqual([{ kind: "lookup", type: "callback", job: job.id, attempt: 0 }]);
  });

  it("verify_emails: its child verification job's end wakes the phase, which nothing polls meanwhile", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const found = uniqueIds();
    await insertPerson({ ...found, emails: ["ana@ok.test", "nobody@ok.test"] });
    const res = await callWith(rec.bindings, "/v1/lookup_jobs?verify_emails=true", { method: "POST", token, headers: { "content-type": "text/csv" }, body: `profnet_id\r\n${found.profnet_id}\r\n` });
    const job = (await res.json()) as { id: string };
    await deliver([{ kind: "lookup", type: "turn", job: job.id }], rec.bindings);
    const phase: JobMessage = { kind: "lookup", type: "phase", job: job.id };
    expect(rec.sent.lookup.map((s) => s.body)).toContainEqual(phase);
    rec.sent.lookup.length = 0;
    await deliver([phase], rec.bindings);
    const [parent] = await db.all<{ verification_job_id: string; verify_state: string }>(sql`select verification_job_id, verify_state from lookup_jobs where id = ${job.id}`);
    expect(parent!.verify_state).toBe("verifying");
    const child = parent!.verification_job_id;
    // The child's turns are on the verification queue; nothing is put on the lookup queue to look again later.
    expect(rec.sent.verification.map((s) => s.body)).toEqual([{ kind: "verification", type: "turn", job: child }]);
    expect(rec.sent.lookup).toEqual([]);
    // A look meanwhile (a redelivery) changes nothing and sends nothing.
    await deliver([phase], rec.bindings);
    expect(rec.sent.lookup).toEqual([]);
    // The cron leaves a phase whose child runs alone, however long it has been still.
    await db.run(sql`update lookup_jobs set updated_at = ${Date.now() - 3_600_000} where id = ${job.id}`);
    await runJobsCron({ db, queues: rec.queues, stallMs: 60_000 }, 2_592_000);
    expect(rec.sent.lookup.filter((s) => "job" in s.body && s.body.job === job.id)).toEqual([]);
    await deliver([{ kind: "verification", type: "turn", job: child }], rec.bindings);
    expect(rec.sent.lookup.map((s) => s.body)).toEqual([phase]);
    await deliver([phase], rec.bindings);
    const done = (await (await call(`/v1/lookup_jobs/${job.id}`, { token })).json()) as { status: string; verification: { state: string } };
    expect([done.status, done.verification.state]).toEqual(["completed", "done"]);
  });

  it("an address SQLite folds only in part (JÖRG@MÜNCHEN.DE) shows the verdict stored for it", async () => {
    const { token } = await newAccount(10);
    const rec = recordingQueues();
    const found = uniqueIds();
    const email = `JÖRG.${found.profnet_id}@MÜNCHEN.DE`;
    await insertPerson({ ...found, emails: [email] });
    // Checked by our engine an hour ago: verify_emails takes it as it is.
    await db.run(sql`update person_emails set classification = 'valid', smtp_outcome = 'accepted', reason = 'deliverable', checked_at = ${Date.now() - 3_600_000} where email = ${email}`);
    const res = await callWith(rec.bindings, "/v1/lookup_jobs?verify_emails=true", { method: "POST", token, headers: { "content-type": "text/csv" }, body: `profnet_id\r\n${found.profnet_id}\r\n` });
    const job = (await res.json()) as { id: string };
    await deliver([{ kind: "lookup", type: "turn", job: job.id }], rec.bindings);
    await deliver([{ kind: "lookup", type: "phase", job: job.id }], rec.bindings);
    const done = (await (await call(`/v1/lookup_jobs/${job.id}`, { token })).json()) as { status: string; verification: { stored_verdicts_used: number } };
    expect([done.status, done.verification.stored_verdicts_used]).toEqual(["completed", 1]);
    const page = (await (await call(`/v1/lookup_jobs/${job.id}/results`, { token })).json()) as { results: { data: { email_details: { email: string; verification: { classification: string } | null }[] } }[] };
    expect(page.results[0]!.data.email_details.map((d) => [d.email, d.verification?.classification ?? null])).toEqual([[email, "valid"]]);
  });
});
