/**
 * Longer than 400 lines on purpose: issue 43's findings on the job paths, each against the real database, the Worker's
 * own queue handlers and the real probe (docs/lookup-jobs.md "Verified addresses", docs/api.md "Keys and scopes"):
 * a customer cannot name, reach or collide with a lookup job's verify_emails phase, and only the addresses the lookup
 * job still has found are written back (1); the phase's addresses are read only with people:read (6); a job stops with
 * whoever made it (7); an erasure reaches the phase (8). Each test failed on the code before the fix, for that reason.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createClient } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, inject, it } from "vitest";
import type { JobMessage } from "../../shared/jobs.ts";
import { LookupJob } from "../../shared/lookup-jobs.ts";
import worker from "../../edge/index.ts";
import { openRequestDatabase } from "../../edge/db/client.ts";
import { stopJobsOfGoneMakersNow } from "../../edge/jobs/makers.ts";
import type { Bindings } from "../../edge/env.ts";
import { addCredits, createApiKey } from "../../scripts/admin/accounts.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { consoleCall, join } from "./console-session.ts";
import { call, callWith, cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";
import { deliverLookup, recordingLookupQueue } from "./lookup-job-turns.ts";
import { recordingQueue } from "./job-turns.ts";

const PATH = "/v1/lookup_jobs";

afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
  await cancelUnfinishedJobs();
});

const csv = (rows: (string | number)[][]) => rows.map((r) => r.join(",")).join("\r\n") + "\r\n";

/** Queues that record what the consumers send instead of delivering it: every turn is the test's to deliver. */
function heldQueues() {
  const lookups = recordingLookupQueue();
  const jobs = recordingQueue();
  return { lookups, jobs, bindings: { LOOKUP_JOBS_QUEUE: lookups.queue, JOBS_QUEUE: jobs.queue } satisfies Partial<Bindings> };
}

async function createJob(token: string, body: string, query: string, bindings: Partial<Bindings>) {
  const res = await callWith(bindings, `${PATH}${query}`, { method: "POST", token, headers: { "content-type": "text/csv" }, body });
  expect(res.status, await res.clone().text()).toBe(202);
  return LookupJob.strict().parse(await res.json());
}

async function getJob(token: string, id: string) {
  const res = await call(`${PATH}/${id}`, { token });
  expect(res.status).toBe(200);
  return LookupJob.strict().parse(await res.json());
}

/** One turn of the verification jobs' queue, handed to the Worker with the real probe. */
async function deliverJobTurn(job: string, bindings: Partial<Bindings>) {
  const batch = createMessageBatch<JobMessage>("verification-jobs-dev", [{ id: `t-${crypto.randomUUID()}`, timestamp: new Date(), attempts: 1, body: { kind: "verification", type: "turn", job } }]);
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, { ...env, ...bindings } as never);
  return getQueueResult(batch, ctx);
}

/** Runs the job's lookups (one turn at a time) until its verify_emails phase has started; returns the job then. */
async function toVerifyPhase(token: string, id: string, bindings: Partial<Bindings>) {
  await deliverLookup([{ kind: "lookup", type: "turn", job: id }], bindings);
  await deliverLookup([{ kind: "lookup", type: "phase", job: id }], bindings);
  const job = await getJob(token, id);
  expect(job.verification?.state).toBe("verifying");
  return job;
}

/** Turns of the phase's verification job until it ends, then the lookup job's look at it; returns the lookup job. */
async function finishVerifyPhase(token: string, lookupJob: string, child: string, bindings: Partial<Bindings>) {
  for (let i = 0; i < 20; i++) {
    const [row] = await db.all<{ status: string }>(sql`select status from verification_jobs where id = ${child}`);
    if (row!.status !== "queued" && row!.status !== "running") break;
    await deliverJobTurn(child, bindings);
    await new Promise((r) => setTimeout(r, 50));
  }
  await deliverLookup([{ kind: "lookup", type: "phase", job: lookupJob }], bindings);
  return getJob(token, lookupJob);
}

async function person(emails: string[]) {
  const ids = uniqueIds();
  await insertPerson({ ...ids, emails });
  return ids;
}

describe("the verify_emails phase is ours alone (finding 1)", () => {
  it("a customer's verification job with the Idempotency-Key lookup-job:<id> is its own: the phase makes its own job and rewrites nobody else's verdicts", async () => {
    // Another account's person, whose stored verdict our own check made an hour ago.
    const victim = await person([`victim-${crypto.randomUUID().slice(0, 8)}@ok.test`]);
    const victimEmail = (await db.all<{ email: string }>(sql`select email from person_emails where person_id = (select id from people where profnet_id = ${victim.profnet_id})`))[0]!.email;
    const checkedAt = Date.now() - 3_600_000;
    await db.run(sql`update person_emails set classification = 'valid', smtp_outcome = 'deliverable', reason = 'mailbox_exists', checked_at = ${checkedAt} where email = ${victimEmail}`);
    const other = await newAccount(10);
    const seenByOther = async () => {
      const res = await call(`/v1/people?profnet_id=${victim.profnet_id}&include=email_details`, { token: other.token });
      expect(res.status).toBe(200);
      const { email_details } = (await res.json()) as { email_details: { verification: unknown; confidence: unknown }[] };
      return email_details[0];
    };
    const before = await seenByOther();

    // The attacker's lookup job pauses (one credit, two people), so its id is known before the phase.
    const attacker = await newAccount(1);
    const mine = [await person(["ana@ok.test"]), await person(["info@ok.test"])];
    const held = heldQueues();
    const job = await createJob(attacker.token, csv([["profnet_id"], ...mine.map((p) => [p.profnet_id])]), "?verify_emails=true", held.bindings);
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], held.bindings);
    expect((await getJob(attacker.token, job.id)).status).toBe("paused");
    const own = await call("/v1/email_verification_jobs", {
      method: "POST",
      token: attacker.token,
      headers: { "content-type": "application/json", "idempotency-key": `lookup-job:${job.id}` },
      body: JSON.stringify({ email_addresses: [victimEmail], smtp_timeout: 1 }),
    });
    expect(own.status).toBe(202);
    const ownJob = ((await own.json()) as { id: string }).id;

    await addCredits(db, attacker.accountId, 1);
    await deliverLookup([{ kind: "lookup", type: "resume", job: job.id }], held.bindings);
    const verifying = await toVerifyPhase(attacker.token, job.id, held.bindings);
    const child = verifying.verification!.job_id!;
    expect(child).not.toBe(ownJob);
    // The phase's job holds the lookup job's own addresses, and is found by its lookup job, not by a key.
    const childRows = await db.all<{ parent_job_id: string; idempotency_key: string | null }>(sql`select parent_job_id, idempotency_key from verification_jobs where id = ${child}`);
    expect(childRows).toEqual([{ parent_job_id: job.id, idempotency_key: null }]);
    const childLines = await db.all<{ email: string }>(sql`select email from verification_job_items where job_id = ${child} order by email`);
    expect(childLines.map((l) => l.email)).toEqual(["ana@ok.test", "info@ok.test"]);

    // The attacker's own job runs to its end; then the phase: nothing of the attacker's job reaches the stored addresses.
    await deliverJobTurn(ownJob, held.bindings);
    const done = await finishVerifyPhase(attacker.token, job.id, child, held.bindings);
    expect([done.status, done.verification?.state]).toEqual(["completed", "done"]);
    const [stored] = await db.all<{ classification: string; checked_at: number }>(sql`select classification, checked_at from person_emails where email = ${victimEmail}`);
    expect([stored!.classification, Number(stored!.checked_at)]).toEqual(["valid", checkedAt]);
    expect(await seenByOther()).toEqual(before);
  }, 60_000);
});

describe("the phase's addresses are read only with people:read (finding 6)", () => {
  it("a jobs:read key and a viewer neither list nor read the phase's job; people:read reads it; cancelling it alone is refused", async () => {
    const { token, accountId } = await newAccount(10);
    const viewerKey = (await createApiKey(db, accountId, { name: "viewer", scopes: ["jobs:read", "jobs:write"] })).token;
    const viewer = await join(accountId, "viewer");
    const [ada] = [await person([`ada-${crypto.randomUUID().slice(0, 8)}@ok.test`])];
    const held = heldQueues();
    const job = await createJob(token, csv([["profnet_id"], [ada.profnet_id]]), "?verify_emails=true", held.bindings);
    const child = (await toVerifyPhase(token, job.id, held.bindings)).verification!.job_id!;

    for (const [who, init] of [
      ["the jobs:read key", { token: viewerKey }],
      ["the owner's key", { token }],
    ] as const) {
      const list = (await (await call("/v1/email_verification_jobs", init)).json()) as { jobs: { id: string }[] };
      expect(list.jobs.map((j) => j.id), who).not.toContain(child);
    }
    const viewerList = (await (await consoleCall("/v1/email_verification_jobs", { cookie: viewer.cookie })).json()) as { jobs: { id: string }[] };
    expect(viewerList.jobs.map((j) => j.id)).not.toContain(child);
    for (const path of [`/v1/email_verification_jobs/${child}`, `/v1/email_verification_jobs/${child}/results`, `/v1/email_verification_jobs/${child}/results?format=csv`]) {
      expect((await call(path, { token: viewerKey })).status, path).toBe(404);
      expect((await consoleCall(path, { cookie: viewer.cookie })).status, path).toBe(404);
    }
    expect((await call(`/v1/email_verification_jobs/${child}`, { method: "DELETE", token: viewerKey })).status).toBe(404);
    // With people:read (the owner's key holds every scope): readable by its id, and not to be cancelled alone.
    expect((await call(`/v1/email_verification_jobs/${child}`, { token })).status).toBe(200);
    const cancel = await call(`/v1/email_verification_jobs/${child}`, { method: "DELETE", token });
    expect([cancel.status, ((await cancel.json()) as { error: string }).error]).toEqual([409, expect.stringContaining(`cancel that job (DELETE /v1/lookup_jobs/${job.id})`)]);
    // Cancelling the lookup job cancels its phase.
    expect((await call(`${PATH}/${job.id}`, { method: "DELETE", token })).status).toBe(200);
    const [row] = await db.all<{ status: string; cancel_reason: string }>(sql`select status, cancel_reason from verification_jobs where id = ${child}`);
    expect(row).toEqual({ status: "cancelled", cancel_reason: "lookup_job_cancelled" });
  }, 60_000);
});

describe("an erasure reaches the phase (finding 8)", () => {
  it("the erased address leaves the phase's job at once and is not written back when the phase ends", async () => {
    const { token } = await newAccount(10);
    const erased = `erase-me-${crypto.randomUUID().slice(0, 8)}@ok.test`;
    const gone = await person([erased]);
    const kept = await person(["ana@ok.test"]);
    const held = heldQueues();
    const job = await createJob(token, csv([["profnet_id"], [gone.profnet_id], [kept.profnet_id]]), "?verify_emails=true", held.bindings);
    const child = (await toVerifyPhase(token, job.id, held.bindings)).verification!.job_id!;
    const client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
    try {
      expect(await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "profnet_id", value: gone.profnet_id }, "test", TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    } finally {
      client.close();
    }
    const download = await (await call(`/v1/email_verification_jobs/${child}/results?format=csv`, { token })).text();
    expect(download).not.toContain(erased);
    expect(download).toContain("ana@ok.test");
    const done = await finishVerifyPhase(token, job.id, child, held.bindings);
    expect(done.status).toBe("completed");
    expect(done.counts).toMatchObject({ found: 1, erased: 1 });
    const verdicts = await db.all<{ email: string }>(sql`select email from lookup_job_verdicts where job_id = ${job.id} order by email`);
    expect(verdicts.map((v) => v.email)).toEqual(["ana@ok.test"]);
    expect(await db.all(sql`select 1 from person_emails where lower(email) = ${erased}`)).toEqual([]);
  }, 60_000);
});

describe("a job stops with whoever made it (finding 7)", () => {
  /** A paused lookup job of `maker`'s (one credit, three people) and a queued verification job of theirs. */
  async function pausedJobs(makerToken: string, bindings: Partial<Bindings>) {
    const found = [await person([]), await person([]), await person([])];
    const job = await createJob(makerToken, csv([["profnet_id"], ...found.map((p) => [p.profnet_id])]), "", bindings);
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], bindings);
    expect((await getJob(makerToken, job.id)).status).toBe("paused");
    const res = await callWith(bindings, "/v1/email_verification_jobs", {
      method: "POST",
      token: makerToken,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_addresses: ["ana@ok.test", "info@ok.test"] }),
    });
    expect(res.status).toBe(202);
    return { lookupJob: job.id, verificationJob: ((await res.json()) as { id: string }).id };
  }

  const state = async (lookupJob: string, verificationJob: string) => {
    const [l] = await db.all<{ status: string; cancel_reason: string | null; credits_charged: number }>(sql`select status, cancel_reason, credits_charged from lookup_jobs where id = ${lookupJob}`);
    const [v] = await db.all<{ status: string; cancel_reason: string | null }>(sql`select status, cancel_reason from verification_jobs where id = ${verificationJob}`);
    return { lookup: { ...l, credits_charged: Number(l!.credits_charged) }, verification: v };
  };

  it("a revoked key's jobs are cancelled in the revocation's transaction, say why, and charge nothing more when credits come", async () => {
    const { token: owner, accountId } = await newAccount(1);
    const maker = await createApiKey(db, accountId, { name: "integration", scopes: ["people:read", "jobs:write", "jobs:read"] });
    const held = heldQueues();
    const { lookupJob, verificationJob } = await pausedJobs(maker.token, held.bindings);
    expect((await call(`/v1/keys/${maker.id}`, { method: "DELETE", token: owner })).status).toBe(200);
    expect(await state(lookupJob, verificationJob)).toEqual({
      lookup: { status: "cancelled", cancel_reason: "key_revoked", credits_charged: 1 },
      verification: { status: "cancelled", cancel_reason: "key_revoked" },
    });
    const seen = LookupJob.strict().parse(await (await call(`${PATH}/${lookupJob}`, { token: owner })).json());
    expect([seen.status, seen.cancel_reason]).toEqual(["cancelled", "key_revoked"]);
    await addCredits(db, accountId, 50);
    await deliverLookup([{ kind: "lookup", type: "resume", job: lookupJob }, { kind: "lookup", type: "turn", job: lookupJob }], held.bindings);
    expect((await state(lookupJob, verificationJob)).lookup).toEqual({ status: "cancelled", cancel_reason: "key_revoked", credits_charged: 1 });
    const ledger = await db.all(sql`select 1 from credit_ledger where key_id = ${maker.id} and reason = 'lookup'`);
    expect(ledger).toHaveLength(1);
  });

  it("an expired key's lookup job is cancelled by its next turn or resume, charging nothing; the cron cancels the rest", async () => {
    const { accountId } = await newAccount(1);
    const maker = await createApiKey(db, accountId, { name: "short-lived", scopes: ["people:read", "jobs:write", "jobs:read"], expiresAt: Date.now() + 3_600_000 });
    const held = heldQueues();
    const { lookupJob, verificationJob } = await pausedJobs(maker.token, held.bindings);
    await db.run(sql`update api_keys set expires_at = ${Date.now() - 1_000} where id = ${maker.id}`);
    await addCredits(db, accountId, 50);
    await deliverLookup([{ kind: "lookup", type: "resume", job: lookupJob }], held.bindings);
    expect((await state(lookupJob, verificationJob)).lookup).toEqual({ status: "cancelled", cancel_reason: "key_expired", credits_charged: 1 });
    // The verification job waits for the cron's next run (it spends no credits).
    const bindings = env as unknown as { DATABASE_URL: string; DATABASE_AUTH_TOKEN: string };
    expect(await stopJobsOfGoneMakersNow(openRequestDatabase(bindings.DATABASE_URL, bindings.DATABASE_AUTH_TOKEN, 5_000), Date.now())).toBeGreaterThanOrEqual(1);
    expect((await state(lookupJob, verificationJob)).verification).toEqual({ status: "cancelled", cancel_reason: "key_expired" });
  });

  it("a rolled key's jobs carry on under the key that replaced it, and stop when that one is revoked", async () => {
    const { token: owner, accountId } = await newAccount(1);
    const maker = await createApiKey(db, accountId, { name: "rolled", scopes: ["people:read", "jobs:write", "jobs:read"] });
    const held = heldQueues();
    const { lookupJob, verificationJob } = await pausedJobs(maker.token, held.bindings);
    const rolled = await call(`/v1/keys/${maker.id}/roll`, { method: "POST", token: owner, headers: { "content-type": "application/json" }, body: JSON.stringify({ overlap_seconds: 0 }) });
    expect(rolled.status, await rolled.clone().text()).toBe(201);
    const replacement = ((await rolled.json()) as { id: string }).id;
    await addCredits(db, accountId, 1);
    await deliverLookup([{ kind: "lookup", type: "resume", job: lookupJob }, { kind: "lookup", type: "turn", job: lookupJob }], held.bindings);
    expect((await state(lookupJob, verificationJob)).lookup).toEqual({ status: "paused", cancel_reason: null, credits_charged: 2 });
    expect((await call(`/v1/keys/${replacement}`, { method: "DELETE", token: owner })).status).toBe(200);
    expect(await state(lookupJob, verificationJob)).toEqual({
      lookup: { status: "cancelled", cancel_reason: "key_revoked", credits_charged: 2 },
      verification: { status: "cancelled", cancel_reason: "key_revoked" },
    });
  });

  it("a removed member's jobs are cancelled in the removal's transaction", async () => {
    const { token: owner, accountId } = await newAccount(1);
    const dev = await join(accountId, "developer", "Dev");
    const found = [await person([]), await person([])];
    const held = heldQueues();
    const create = await consoleCall(PATH, { method: "POST", cookie: dev.cookie, headers: { "content-type": "text/csv" }, body: csv([["profnet_id"], ...found.map((p) => [p.profnet_id])]) });
    expect(create.status, await create.clone().text()).toBe(202);
    const job = ((await create.json()) as { id: string }).id;
    await deliverLookup([{ kind: "lookup", type: "turn", job }], held.bindings);
    expect((await call(`/v1/members/${dev.memberId}`, { method: "DELETE", token: owner })).status).toBe(200);
    const [row] = await db.all<{ status: string; cancel_reason: string }>(sql`select status, cancel_reason from lookup_jobs where id = ${job}`);
    expect(row).toEqual({ status: "cancelled", cancel_reason: "member_removed" });
  });
});
