/**
 * Longer than 400 lines on purpose: one resource's whole contract (create, read, results, cancel) against one database and queue; split by operation, each part would repeat the fixtures.
 * Bulk verification jobs inside workerd, end to end: the routes, the Worker's own queue consumer
 * (run by the local queue, or handed a batch directly to test redelivery), the cron, the real probe
 * behind the test zone's MX hosts, and a real HTTP server receiving the signed callbacks.
 */
import { createExecutionContext, createMessageBatch, createScheduledController, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, inject } from "vitest";
import { describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { EmailVerificationResult, ERROR_MESSAGES } from "../../shared/api.ts";
import { WARNINGS } from "../../shared/email/verdict.ts";
import { JOB_LIMITS, JOB_STATUSES, JobCreateQuery, JobCreateRequest, JobResultsPage, VerificationJob, type JobMessage } from "../../shared/jobs.ts";
import { SmtpOutcome } from "../../shared/smtp-outcome.ts";
import { webhookSecret } from "../../scripts/admin/accounts.ts";
import { RATE_LIMITS } from "../../edge/rate-limits.ts";
import worker from "../../edge/index.ts";
import { probeOrder } from "../../edge/verification/probe-ranking.ts";
import { claimTurn, newLease, renewClaims, writeAnswers } from "../../edge/jobs/store/lines.ts";
import { STALLED_JOBS_PER_RUN, stalledWork } from "../../edge/jobs/store/scheduling.ts";
import { dueCallbacks } from "../../edge/jobs/store/envelope.ts";
import { LINES_PER_TURN } from "../../edge/jobs/queue.ts";
import { JOB_MESSAGES } from "../../edge/routes/jobs.ts";
import type { Bindings, JobsQueue } from "../../edge/env.ts";
import { cancelUnfinishedJobs, call, callWith, db, newAccount, setAccountStatus } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";
const QUEUE = "verification-jobs-dev";

function postJson(token: string, body: unknown, headers: Record<string, string> = {}) {
  return call(PATH, { method: "POST", token, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

function postCsv(token: string, csv: string, query = "") {
  return call(`${PATH}${query}`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: csv });
}

async function created(res: Response) {
  expect(res.status, await res.clone().text()).toBe(202);
  const job = VerificationJob.strict().parse(await res.json());
  expect(res.headers.get("location")).toBe(`${PATH}/${job.id}`);
  return job;
}

async function getJob(token: string, id: string) {
  const res = await call(`${PATH}/${id}`, { token });
  expect(res.status).toBe(200);
  return VerificationJob.strict().parse(await res.json());
}

async function waitFor(token: string, id: string, done: (job: VerificationJob) => boolean = (j) => j.status === "completed", timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await getJob(token, id);
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status} (${job.processed}/${job.total})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function allResults(token: string, id: string, limit = 1000) {
  const out: EmailVerificationResult[] = [];
  let cursor = "";
  for (;;) {
    const res = await call(`${PATH}/${id}/results?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`, { token });
    expect(res.status).toBe(200);
    const page = JobResultsPage.strict().parse(await res.json());
    out.push(...page.results);
    if (page.next_cursor === null) return out;
    cursor = page.next_cursor;
  }
}

/** Hands messages to the Worker's queue handler directly, as a redelivery would; returns what it acked or retried. */
async function deliver(messages: JobMessage[], bindings: Partial<Bindings> = {}) {
  const batch = createMessageBatch<JobMessage>(
    QUEUE,
    messages.map((body, i) => ({ id: `test-${Date.now()}-${i}`, timestamp: new Date(), attempts: 2, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<unknown>, { ...env, ...bindings } as never);
  return getQueueResult(batch, ctx);
}

/** A job written straight into the database, queued with its lines pending and no message on the queue. */
async function queuedJob(accountId: string, emails: string[], updatedAt = Date.now()) {
  const id = `job_test${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  await db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash, created_at, updated_at)
    values (${id}, ${accountId}, 'queued', ${emails.length}, 5, 'test', ${updatedAt}, ${updatedAt})`);
  for (const [position, email] of emails.entries()) {
    await db.run(sql`insert into verification_job_items (job_id, position, seq, email, state) values (${id}, ${position}, ${position}, ${email}, 'pending')`);
  }
  return id;
}

describe("creating a job", () => {
  it("401 before anything else, on every job route", async () => {
    for (const [method, path] of [
      ["POST", PATH],
      ["GET", `${PATH}/job_x`],
      ["GET", `${PATH}/job_x/results`],
      ["DELETE", `${PATH}/job_x`],
    ] as const) {
      const res = await call(path, { method, headers: { "content-type": "application/json" }, body: method === "POST" ? "{" : undefined });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(await res.json()).toEqual({ error: "Unauthorized" });
    }
  });

  it("from JSON: 202 with the job and its Location, every line answered in input order, duplicates checked once", async () => {
    const { token } = await newAccount(0);
    const emails = ["ana@ok.test", "nobody@ok.test", "not an address", "  ana@ok.test ", "anyone@catchall.test", "ana@gone-mx.test"];
    const res = await postJson(token, { email_addresses: emails, smtp_timeout: 5 });
    expect(res.headers.get("ratelimit-policy")).toBe('"job_creation";q=60;w=60, "verification";q=100;w=10');
    const job = await created(res);
    expect(job).toMatchObject({ total: 6, smtp_timeout: 5, results_url: `${PATH}/${job.id}/results`, completed_at: null });
    expect(["queued", "running"]).toContain(job.status);
    const done = await waitFor(token, job.id);
    expect(done).toMatchObject({ status: "completed", processed: 6, counts: { valid: 2, risky: 1, invalid: 3 } });
    expect(Date.parse(done.completed_at!)).toBeGreaterThanOrEqual(Date.parse(done.created_at));

    const results = await allResults(token, job.id);
    expect(results.map((r) => [r.email, r.classification])).toEqual([
      ["ana@ok.test", "valid"],
      ["nobody@ok.test", "invalid"],
      ["not an address", "invalid"],
      ["ana@ok.test", "valid"],
      ["anyone@catchall.test", "risky"],
      ["ana@gone-mx.test", "invalid"],
    ]);
    // The same checks and verdicts as a single verification.
    const single = (await (await call(`/v1/email_verifications?email_address=ana@ok.test`, { token })).json()) as EmailVerificationResult;
    expect(results[0]).toMatchObject({ score: single.score, checks: single.checks, warnings: single.warnings });
    expect(results[4]!.warnings).toEqual([WARNINGS.catchAll]);
  });

  it("from CSV: the column named email or email_address (any case), a BOM, quoted fields, CRLF; options from the query", async () => {
    const { token } = await newAccount(0);
    const csv = '\uFEFFName,EMAIL_ADDRESS,Note\r\n"Lovelace, Ada",ana@ok.test,"said ""hi"""\r\nBob,nobody@ok.test,\r\n\r\nNo mail,,x\r\n';
    const job = await created(await postCsv(token, csv, "?smtp_timeout=7"));
    expect(job).toMatchObject({ total: 3, smtp_timeout: 7 });
    await waitFor(token, job.id);
    expect((await allResults(token, job.id)).map((r) => [r.email, r.classification, r.errors])).toEqual([
      ["ana@ok.test", "valid", []],
      ["nobody@ok.test", "invalid", ["The mail server rejected the mailbox as non-existent."]],
      ["", "invalid", ["The email address is empty."]],
    ]);
    // Every column of each line is kept, read back as the parser read it: the quotes undone, the blank line skipped.
    expect((await allResults(token, job.id)).map((r) => (r as { columns?: unknown }).columns)).toEqual([
      { Name: "Lovelace, Ada", EMAIL_ADDRESS: "ana@ok.test", Note: 'said "hi"' },
      { Name: "Bob", EMAIL_ADDRESS: "nobody@ok.test", Note: "" },
      { Name: "No mail", EMAIL_ADDRESS: "", Note: "x" },
    ]);
  });

  it.each([
    ["an Email column after others, LF line ends", "first,Email\nx,ana@ok.test\ny,nobody@ok.test\n", ["ana@ok.test", "nobody@ok.test"]],
    ["no column with that name: the column whose cells look like addresses", "name,address\nAna,ana@ok.test\n", ["ana@ok.test"]],
    ["no header at all: a plain list keeps its first line", "ana@ok.test\nnobody@ok.test", ["ana@ok.test", "nobody@ok.test"]],
    ["a quoted address with a comma in its local part", 'email\n"""a,b""@ok.test"\n', ['"a,b"@ok.test']],
  ])("CSV: %s", async (_name, csv, expected) => {
    const { token } = await newAccount(0);
    const job = await created(await postCsv(token, csv));
    expect(job.total).toBe(expected.length);
    await waitFor(token, job.id);
    expect((await allResults(token, job.id)).map((r) => r.email)).toEqual(expected);
  });

  it.each([
    ["malformed JSON", "application/json", "{", 400, ERROR_MESSAGES.malformedJson],
    ["a JSON array", "application/json", "[]", 400, "The JSON body must be an object"],
    ["no email_addresses", "application/json", "{}", 400, "The email_addresses parameter is required"],
    ["email_addresses not an array of strings", "application/json", '{"email_addresses":["a@b.co",1]}', 400, "email_addresses must be an array of strings"],
    ["an empty list", "application/json", '{"email_addresses":[]}', 400, "The job has no addresses"],
    ["a CSV with a header only", "text/csv", "email\n", 400, "The job has no addresses"],
    ["an unclosed quote", "text/csv", 'email\n"ana@ok.test\n', 400, "Malformed CSV at line 2: a quoted cell is never closed"],
    ["a bad smtp_timeout", "application/json", '{"email_addresses":["a@b.co"],"smtp_timeout":0}', 400, ERROR_MESSAGES.smtpTimeoutRange],
    ["a callback_url that is not a URL", "application/json", '{"email_addresses":["a@b.co"],"callback_url":"nope"}', 400, "callback_url must be a URL"],
    ["a callback_url that is not http(s)", "application/json", '{"email_addresses":["a@b.co"],"callback_url":"ftp://example.com/x"}', 400, "callback_url must be an https URL"],
    ["another content type", "application/xml", "<a/>", 415, "Unsupported content type: send application/json or text/csv"],
  ])("refuses %s", async (_name, type, body, status, error) => {
    const { token } = await newAccount(0);
    const res = await call(PATH, { method: "POST", token, headers: { "content-type": type }, body });
    expect(res.status).toBe(status);
    const json = (await res.json()) as { error: string };
    if (typeof error === "string") expect(json).toEqual({ error });
    else expect(json.error).toMatch(error);
  });

  it("413 past 100,000 addresses and past 10 MB (declared or chunked), saying which", async () => {
    const { token } = await newAccount(0);
    const many = await postJson(token, { email_addresses: Array.from({ length: 100_001 }, (_, i) => `a${i}@b.co`) });
    expect(many.status).toBe(413);
    expect(await many.json()).toEqual({ error: "Too many addresses: a job has at most 100,000" });
    const big = `email\n${"x".repeat(100)}@ok.test\n`.padEnd(10 * 1024 * 1024 + 10, "a");
    const declared = await postCsv(token, big);
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: "Request body too large: a job is at most 10 MB" });
    const chunks = new TextEncoder().encode(big);
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < chunks.length; i += 1 << 20) controller.enqueue(chunks.subarray(i, i + (1 << 20)));
        controller.close();
      },
    });
    const chunked = await call(PATH, { method: "POST", token, headers: { "content-type": "text/csv" }, body: stream, duplex: "half" } as RequestInit);
    expect(chunked.status).toBe(413);
  });

  it("Idempotency-Key: a retried create returns the first job; another body with the same key is 409; keys belong to an account", async () => {
    const { token } = await newAccount(0);
    const body = { email_addresses: ["ana@ok.test"] };
    const first = await created(await postJson(token, body, { "Idempotency-Key": "order-42" }));
    const again = await created(await postJson(token, body, { "Idempotency-Key": "order-42" }));
    expect(again.id).toBe(first.id);
    const other = await postJson(token, { email_addresses: ["ben@ok.test"] }, { "Idempotency-Key": "order-42" });
    expect(other.status).toBe(409);
    expect(await other.json()).toEqual({ error: JOB_MESSAGES.idempotencyConflict });
    const elsewhere = await created(await postJson((await newAccount(0)).token, body, { "Idempotency-Key": "order-42" }));
    expect(elsewhere.id).not.toBe(first.id);
    const bad = await postJson(token, body, { "Idempotency-Key": "x".repeat(256) });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: JOB_MESSAGES.badIdempotencyKey });
  });

  it("reading jobs has its own per-key limit (job_reads): polling a job does not spend the verification budget", async () => {
    const { token } = await newAccount(0);
    const { limit, periodSeconds } = RATE_LIMITS.job_reads;
    const policy = `"job_reads";q=${limit};w=${periodSeconds}`;
    let res: Response | undefined;
    let allowed = 0;
    for (let i = 0; i < limit * 3; i++) {
      res = await call(`${PATH}/job_unknown`, { token });
      if (res.status === 429) break;
      expect(res.status).toBe(404);
      expect(res.headers.get("ratelimit-policy")).toBe(policy);
      await res.body?.cancel();
      allowed++;
    }
    expect(allowed).toBeGreaterThanOrEqual(limit);
    expect(res!.status).toBe(429);
    expect(res!.headers.get("retry-after")).toBe(String(periodSeconds));
    expect(res!.headers.get("ratelimit-policy")).toBe(policy);
    const verification = await call(`/v1/email_verifications?email_address=ana@ok.test`, { token });
    expect(verification.status).toBe(200);
  });

  it("429 when the account already has JOB_MAX_RUNNING jobs queued or running", async () => {
    const { token, accountId } = await newAccount(0);
    await queuedJob(accountId, ["ana@ok.test"]);
    const res = await callWith({ JOB_MAX_RUNNING: "1" }, PATH, {
      method: "POST",
      token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_addresses: ["ana@ok.test"] }),
    });
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ error: JOB_MESSAGES.tooManyRunning(1) });
    expect(res.headers.get("retry-after")).toBe("60");
  });

  it("a list where every line fails the syntax check is completed at once", async () => {
    const { token } = await newAccount(0);
    const job = await created(await postJson(token, { email_addresses: ["a", "b@", "@c"] }));
    expect(job).toMatchObject({ status: "completed", processed: 3, counts: { invalid: 3, valid: 0, risky: 0 } });
  });
});

describe("reading and cancelling", () => {
  it("another account's job and an unknown id are the same 404", async () => {
    const owner = await newAccount(0);
    const job = await created(await postJson(owner.token, { email_addresses: ["a"] }));
    const { token } = await newAccount(0);
    for (const path of [`${PATH}/${job.id}`, `${PATH}/${job.id}/results`, `${PATH}/job_nope`, `${PATH}/job_nope/results`]) {
      const res = await call(path, { token });
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: JOB_MESSAGES.notFound });
    }
    const del = await call(`${PATH}/${job.id}`, { method: "DELETE", token });
    expect(del.status).toBe(404);
  });

  it("pages follow input order; while a job runs a page stops at the first line not answered, and the cursor resumes there", async () => {
    const { token, accountId } = await newAccount(0);
    const emails = Array.from({ length: 7 }, (_, i) => `user${i}@ok.test`);
    const id = await queuedJob(accountId, emails);
    // Lines 0-2 and 4 answered, line 3 still out: the job is running.
    const answered = (i: number) => JSON.stringify({ ...fakeResult(emails[i]!), score: i });
    for (const i of [0, 1, 2, 4]) {
      await db.run(sql`update verification_job_items set state = 'done', classification = 'valid', result = ${answered(i)} where job_id = ${id} and position = ${i}`);
    }
    await db.run(sql`update verification_jobs set status = 'running' where id = ${id}`);
    const first = JobResultsPage.strict().parse(await (await call(`${PATH}/${id}/results?limit=2`, { token })).json());
    expect(first).toMatchObject({ status: "running", processed: 4, total: 7 });
    expect(first.results.map((r) => r.score)).toEqual([0, 1]);
    const second = JobResultsPage.strict().parse(await (await call(`${PATH}/${id}/results?limit=10&cursor=${first.next_cursor}`, { token })).json());
    expect(second.results.map((r) => r.score)).toEqual([2]);
    expect(second.next_cursor).not.toBeNull();
    // Nothing new yet: the same cursor gives the same empty page, never skipping line 3.
    const waiting = JobResultsPage.strict().parse(await (await call(`${PATH}/${id}/results?cursor=${second.next_cursor}`, { token })).json());
    expect(waiting).toMatchObject({ results: [], next_cursor: second.next_cursor });
    for (const i of [3, 5, 6]) {
      await db.run(sql`update verification_job_items set state = 'done', classification = 'valid', result = ${answered(i)} where job_id = ${id} and position = ${i}`);
    }
    await db.run(sql`update verification_jobs set status = 'completed', completed_at = ${Date.now()} where id = ${id}`);
    const rest = JobResultsPage.strict().parse(await (await call(`${PATH}/${id}/results?cursor=${second.next_cursor}`, { token })).json());
    expect(rest.results.map((r) => r.score)).toEqual([3, 4, 5, 6]);
    expect(rest.next_cursor).toBeNull();
  });

  it("400 for a bad limit or cursor, before any database read", async () => {
    const { token } = await newAccount(0);
    for (const q of ["limit=0", "limit=1001", "limit=x"]) {
      const res = await call(`${PATH}/job_x/results?${q}`, { token });
      expect(res.status, q).toBe(400);
      expect(await res.json()).toEqual({ error: JOB_MESSAGES.badLimit });
    }
    for (const cursor of ["zz", btoa("p:-1"), btoa("q:1")]) {
      const res = await call(`${PATH}/job_x/results?cursor=${encodeURIComponent(cursor)}`, { token });
      expect(res.status, cursor).toBe(400);
      expect(await res.json()).toEqual({ error: JOB_MESSAGES.badCursor });
    }
  });

  it("the query is the route's schema (createRoute): a format other than json or csv, a repeated parameter and a purge other than true or false are 400s naming them", async () => {
    const { token } = await newAccount(0);
    const xml = await call(`${PATH}/job_x/results?format=xml`, { token });
    expect([xml.status, ((await xml.json()) as { error: string }).error]).toEqual([400, expect.stringMatching(/^Invalid parameter format: /)]);
    const twice = await call(`${PATH}?smtp_timeout=5&smtp_timeout=7`, { token, method: "POST", body: JSON.stringify({ email_addresses: ["ana@example.com"] }), headers: { "content-type": "application/json" } });
    expect([twice.status, ((await twice.json()) as { error: string }).error]).toEqual([400, expect.stringMatching(/^Invalid parameter smtp_timeout: /)]);
    const purge = await call(`${PATH}/job_x?purge=yes`, { token, method: "DELETE" });
    expect([purge.status, await purge.json()]).toEqual([400, { error: JOB_MESSAGES.badPurge }]);
  });

  it("CSV results: one row per input line, formulas escaped, by format=csv or Accept: text/csv", async () => {
    const { token } = await newAccount(0);
    const job = await created(await postJson(token, { email_addresses: ["=HYPERLINK(x)@ok.test", "+1@ok.test", "-x@ok.test", "@ok.test", "ana@ok.test"] }));
    await waitFor(token, job.id);
    const res = await call(`${PATH}/${job.id}/results?format=csv`, { token });
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const lines = (await res.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe("email,classification,valid,score,smtp_deliverable,accepts_any_email,disposable,typo_suggestion,mx_record,warnings,reason,checked_at,mx_provider");
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual(["'=HYPERLINK(x)@ok.test", "'+1@ok.test", "'-x@ok.test", "'@ok.test", "ana@ok.test"]);
    expect(lines[5]).toMatch(/^ana@ok\.test,valid,true,95,true,false,false,,true,,deliverable,\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z,$/);
    const byAccept = await call(`${PATH}/${job.id}/results`, { token, headers: { accept: "text/csv" } });
    expect(await byAccept.text()).toBe(lines.join("\r\n") + "\r\n");
  });

  it("DELETE cancels: no new checks start, answers already in stay readable; a finished job stays as it is", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["ana@ok.test", "ben@ok.test", "cy@ok.test"]);
    await db.run(sql`update verification_job_items set state = 'done', classification = 'valid', result = ${JSON.stringify(fakeResult("ana@ok.test"))} where job_id = ${id} and position = 0`);
    const res = await call(`${PATH}/${id}`, { method: "DELETE", token });
    expect(res.status).toBe(200);
    const cancelled = VerificationJob.strict().parse(await res.json());
    expect(cancelled).toMatchObject({ status: "cancelled", processed: 1 });
    expect(cancelled.completed_at).not.toBeNull();
    // A message for its lines arrives anyway: nothing is claimed, nothing checked.
    const result = await deliver([{ kind: "verification", type: "turn", job: id }]);
    expect(result.explicitAcks).toHaveLength(1);
    expect((await getJob(token, id)).processed).toBe(1);
    const results = JobResultsPage.strict().parse(await (await call(`${PATH}/${id}/results`, { token })).json());
    expect(results).toMatchObject({ status: "cancelled", next_cursor: null });
    expect(results.results.map((r) => r.email)).toEqual(["ana@ok.test"]);
    const csv = (await (await call(`${PATH}/${id}/results?format=csv`, { token })).text()).trimEnd().split("\r\n");
    expect(csv.slice(2).map((l) => l.split(",").slice(0, 2).join(","))).toEqual(["ben@ok.test,cancelled", "cy@ok.test,cancelled"]);

    const done = await created(await postJson(token, { email_addresses: ["x"] }));
    const again = VerificationJob.strict().parse(await (await call(`${PATH}/${done.id}`, { method: "DELETE", token })).json());
    expect(again.status).toBe("completed");
  });
});

describe("how a job runs", () => {
  it("a temporary answer (greylisting) is rechecked once, after the recheck delay, before it is reported risky", async () => {
    const { token } = await newAccount(0);
    const job = await created(await postJson(token, { email_addresses: ["grey@ok.test", "ana@ok.test"] }));
    await waitFor(token, job.id);
    // The greylisted line was claimed twice, the second time as its recheck (JOB_RETRY_DELAY_SECONDS
    // is 1 here); the accepted one once.
    const lines = await db.all<{ email: string; claims: number; rechecked: number; probe_failures: number }>(sql`
      select email, claims, recheck_at is not null as rechecked, probe_failures from verification_job_items where job_id = ${job.id} order by position`);
    expect(lines.map((l) => [l.email, Number(l.claims), Number(l.rechecked), Number(l.probe_failures)])).toEqual([
      ["grey@ok.test", 2, 1, 0],
      ["ana@ok.test", 1, 0, 0],
    ]);
    const [grey] = await allResults(token, job.id);
    expect(grey).toMatchObject({ classification: "risky", warnings: [WARNINGS.smtpAssumed] });
    expect(grey!.details!.smtp_outcome).toBe("temporary_failure");
  });

  it("a message delivered again after its lines are done writes nothing twice", async () => {
    const { token } = await newAccount(0);
    const job = await created(await postJson(token, { email_addresses: ["ana@ok.test", "nobody@ok.test", "ana@ok.test"] }));
    const done = await waitFor(token, job.id);
    const before = await allResults(token, job.id);
    const result = await deliver([
      { kind: "verification", type: "turn", job: job.id },
      { kind: "verification", type: "turn", job: job.id },
    ]);
    expect(result.explicitAcks).toHaveLength(2);
    expect(await getJob(token, job.id)).toEqual(done);
    expect(await allResults(token, job.id)).toEqual(before);
  });

  it("a line claimed by a consumer that is still working is not claimed again; once its lease ran out, it is", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["ana@ok.test"]);
    await db.run(sql`update verification_jobs set status = 'running' where id = ${id}`);
    await db.run(sql`update verification_job_items set state = 'claimed', lease_token = 'other-consumer', lease_until = ${Date.now() + 60_000}, claims = 1 where job_id = ${id}`);
    await deliver([{ kind: "verification", type: "turn", job: id }]);
    expect((await getJob(token, id)).processed).toBe(0);
    await db.run(sql`update verification_job_items set lease_until = ${Date.now() - 1} where job_id = ${id}`);
    await deliver([{ kind: "verification", type: "turn", job: id }]);
    expect(await getJob(token, id)).toMatchObject({ status: "completed", processed: 1, counts: { valid: 1 } });
  });

  it("a line handed back unasked (its server was busy) is pending again, that claim not counted; a release counts a probe failure", async () => {
    const { accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["ana@ok.test", "ben@ok.test"]);
    const lease = newLease(30_000);
    const first = await claimTurn(db, id, lease, 2);
    expect(first.lines.map((l) => [l.claims, l.probeFailures])).toEqual([
      [1, 0],
      [1, 0],
    ]);
    await writeAnswers(db, id, lease, [
      { position: 0, kind: "defer" },
      { position: 1, kind: "release" },
    ]);
    const rows = await db.all<{ state: string; claims: number; probe_failures: number; lease_until: number | null; lease_token: string | null }>(sql`
      select state, claims, probe_failures, lease_until, lease_token from verification_job_items where job_id = ${id} order by position`);
    expect(rows.map((r) => [r.state, Number(r.claims), Number(r.probe_failures), r.lease_until, r.lease_token])).toEqual([
      ["pending", 0, 0, null, null],
      ["pending", 1, 1, null, null],
    ]);
    expect((await claimTurn(db, id, newLease(30_000), 2)).lines.map((l) => [l.claims, l.probeFailures])).toEqual([
      [1, 0],
      [2, 1],
    ]);
  });

  it("a consumer whose lease ran out and was taken over writes nothing over the new holder's claim, and cannot renew it", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["ana@ok.test", "ben@ok.test", "cy@ok.test", "dan@ok.test", "ana@ok.test"]);
    await db.run(sql`update verification_job_items set duplicate_of = 0 where job_id = ${id} and position = 4`);
    // The stale consumer's lease ran out at once; another consumer claims the lines after it.
    const stale = newLease(-1);
    expect((await claimTurn(db, id, stale, 5)).lines).toHaveLength(4);
    const holder = newLease(30_000);
    expect((await claimTurn(db, id, holder, 5)).lines).toHaveLength(4);
    const held = () =>
      db.all<{ state: string; lease_token: string | null; claims: number; probe_failures: number }>(sql`
        select state, lease_token, claims, probe_failures from verification_job_items where job_id = ${id} and duplicate_of is null order by position`);
    const before = await held();

    expect(await renewClaims(db, id, [0, 1, 2, 3], stale)).toBe(0);
    await writeAnswers(db, id, stale, [
      { position: 0, kind: "done", result: fakeResult("ana@ok.test") },
      { position: 1, kind: "release" },
      { position: 2, kind: "defer" },
      { position: 3, kind: "recheck", result: fakeResult("dan@ok.test"), recheckAt: Date.now() },
    ]);
    expect(await held()).toEqual(before);
    expect(before.every((l) => l.state === "claimed" && l.lease_token === holder.token)).toBe(true);
    expect((await getJob(token, id)).processed).toBe(0);

    // The holder's own answers are written, its duplicate's copy with them.
    expect(await renewClaims(db, id, [0, 1, 2, 3], holder)).toBe(4);
    await writeAnswers(db, id, holder, [{ position: 0, kind: "done", result: fakeResult("ana@ok.test") }]);
    expect(await getJob(token, id)).toMatchObject({ processed: 2 });
  });

  it("lines a probe could not be asked about (nothing listens) go back on the queue after a pause, and then to the next probe", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["ana@ok.test", "nobody@ok.test"]);
    // A dead probe that the rendezvous ranking puts first for ok.test, the live one second.
    const live = inject("probeUrl");
    // (The live probe's port changes from run to run, and with it the ranking: one of 254 candidates comes first but for a 2^-254 chance.)
    const candidates = Array.from({ length: 254 }, (_, i) => `http://127.0.0.${i + 1}:9`);
    const dead = candidates.find((url) => probeOrder([url, live], "ok.test")[0] === url);
    expect(dead).toBeDefined();
    const probes = { PROBE_URL: `${dead!},${live}` };
    // The real queue, watched: what the consumer sends is recorded, then sent on as usual.
    const sent: { body: JobMessage; delaySeconds?: number }[] = [];
    const queue = (env as unknown as Bindings).JOBS_QUEUE!;
    const watched: JobsQueue = {
      send: (body, options) => (sent.push({ body, ...options }), queue.send(body, options)),
      sendBatch: (messages) => (sent.push(...messages), queue.sendBatch(messages)),
    };
    const first = await deliver([{ kind: "verification", type: "turn", job: id }], { ...probes, JOBS_QUEUE: watched });
    expect(first.explicitAcks).toHaveLength(1);
    const rows = await db.all<{ state: string; claims: number; probe_failures: number }>(sql`
      select state, claims, probe_failures from verification_job_items where job_id = ${id} order by position`);
    expect(rows.map((r) => [r.state, Number(r.claims), Number(r.probe_failures)])).toEqual([
      ["pending", 1, 1],
      ["pending", 1, 1],
    ]);
    expect(sent).toEqual([{ body: { kind: "verification", type: "turn", job: id }, delaySeconds: 30 }]);
    // That message, delivered: the lines' second claim goes to the next probe, which answers.
    await deliver([{ kind: "verification", type: "turn", job: id }], probes);
    expect(await getJob(token, id)).toMatchObject({ status: "completed", counts: { valid: 1, invalid: 1 } });
  });

  it("the cron requeues a stalled job by turns: one message per LINES_PER_TURN lines due, none for lines done", async () => {
    const { accountId } = await newAccount(0);
    const id = await queuedJob(accountId, [], Date.now() - 20 * 60_000);
    const rows = Array.from({ length: 450 }, (_, i) => [i, `user${i}@ok.test`, ...(i >= 200 && i < 400 ? ["done", "valid"] : ["pending", null])]);
    await db.run(sql`insert into verification_job_items (job_id, position, seq, email, state, classification)
      select ${id}, value ->> 0, value ->> 0, value ->> 1, value ->> 2, value ->> 3 from json_each(${JSON.stringify(rows)})`);
    await db.run(sql`update verification_jobs set total = 450, status = 'running' where id = ${id}`);
    const work = await stalledWork(db, Date.now() - 60_000);
    // 250 lines due: two turns.
    expect(work.filter((t) => t.job === id)).toEqual([{ job: id, turns: 2 }]);
    // Requeued now: not again before another stall period has passed.
    expect((await stalledWork(db, Date.now() - 60_000)).filter((t) => t.job === id)).toEqual([]);
  });

  it("the cron marks as requeued exactly the stalled jobs whose turns it sends, and the rest come next run", async () => {
    const { accountId } = await newAccount(0);
    // More stalled jobs than one run takes, each with lines due, stalled longer than anything else.
    const jobs: string[] = [];
    for (let j = 0; j < STALLED_JOBS_PER_RUN + 2; j++) {
      const id = await queuedJob(accountId, [], Date.UTC(2001, 0, 1) + j);
      await db.run(sql`insert into verification_job_items (job_id, position, seq, email, state)
        with recursive line(n) as (select 0 union all select n + 1 from line where n < 299)
        select ${id}, n, n, 'user' || n || '@ok.test', 'pending' from line`);
      await db.run(sql`update verification_jobs set total = 300, status = 'running' where id = ${id}`);
      jobs.push(id);
    }
    const updatedAt = async () =>
      new Map((await db.all<{ id: string; updated_at: number }>(sql`select id, updated_at from verification_jobs where account_id = ${accountId}`)).map((r) => [r.id, Number(r.updated_at)]));
    try {
      const runStarted = Date.now();
      const first = await stalledWork(db, Date.now() - 60_000);
      const marked = [...(await updatedAt())].filter(([, at]) => at >= runStarted).map(([id]) => id);
      // The longest stalled first, and every job marked had turns for all 300 of its lines sent.
      expect(marked.sort()).toEqual(jobs.slice(0, STALLED_JOBS_PER_RUN).sort());
      for (const id of marked) expect(first.filter((t) => t.job === id)).toEqual([{ job: id, turns: Math.ceil(300 / LINES_PER_TURN.verification) }]);
      expect(first.filter((t) => jobs.includes(t.job) && !marked.includes(t.job))).toEqual([]);
      // The two left over were not marked: the next run sends them.
      const second = await stalledWork(db, Date.now() - 60_000);
      expect(new Set(second.filter((t) => jobs.includes(t.job)).map((t) => t.job))).toEqual(new Set(jobs.slice(STALLED_JOBS_PER_RUN)));
    } finally {
      await db.run(sql`update verification_jobs set status = 'cancelled' where account_id = ${accountId}`);
    }
  });

  it("the cron puts a stalled job's work back on the queue, and the job completes", async () => {
    const { token, accountId } = await newAccount(0);
    // Created twenty minutes ago, its messages lost: nothing is on the queue for it.
    const id = await queuedJob(accountId, ["ana@ok.test", "nobody@ok.test"], Date.now() - 20 * 60_000);
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController(), env as never);
    await waitOnExecutionContext(ctx);
    expect(await waitFor(token, id)).toMatchObject({ status: "completed", counts: { valid: 1, invalid: 1 } });
  });
});

describe("callbacks", () => {
  const hook = () => `${inject("webhookUrl")}/hooks/${crypto.randomUUID()}`;
  const deliveries = async (url: string) =>
    (await (await fetch(url.replace("/hooks/", "/__deliveries/"))).json()) as { headers: Record<string, string>; body: string; answered: number }[];

  async function verifySignature(secret: string, d: { headers: Record<string, string>; body: string }) {
    const key = await crypto.subtle.importKey("raw", Uint8Array.from(atob(secret.slice(6)), (ch) => ch.charCodeAt(0)), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    const [version, mac] = d.headers["webhook-signature"]!.split(",");
    expect(version).toBe("v1");
    const signed = `${d.headers["webhook-id"]}.${d.headers["webhook-timestamp"]}.${d.body}`;
    return crypto.subtle.verify("HMAC", key, Uint8Array.from(atob(mac!), (ch) => ch.charCodeAt(0)), new TextEncoder().encode(signed));
  }

  it("POSTs the finished job to callback_url, signed the Standard Webhooks way with the account's secret", async () => {
    const { token, accountId } = await newAccount(0);
    const url = hook();
    const job = await created(await postJson(token, { email_addresses: ["ana@ok.test"], callback_url: url }));
    const done = await waitFor(token, job.id);
    let received: Awaited<ReturnType<typeof deliveries>> = [];
    for (let i = 0; i < 50 && received.length === 0; i++) {
      received = await deliveries(url);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(received).toHaveLength(1);
    const [d] = received;
    expect(JSON.parse(d!.body)).toEqual(done);
    expect(d!.headers["content-type"]).toBe("application/json");
    expect(d!.headers["webhook-id"]).toBe(`evt_${job.id}_completed`);
    expect(Math.abs(Number(d!.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(60);
    const { secret } = await webhookSecret(db, accountId, (env as unknown as Bindings).WEBHOOK_SECRET_KEY);
    // The database holds it sealed, never in the clear.
    const [stored] = await db.all<{ webhook_secret: string }>(sql`select webhook_secret from accounts where id = ${accountId}`);
    expect(stored!.webhook_secret).toMatch(/^v1\./);
    expect(await verifySignature(secret, d!)).toBe(true);
    expect(await verifySignature("whsec_" + btoa("another secret, 32 bytes long!!!"), d!)).toBe(false);
  });

  async function received(url: string, count = 1) {
    let got: Awaited<ReturnType<typeof deliveries>> = [];
    for (let i = 0; i < 50 && got.length < count; i++) {
      got = await deliveries(url);
      if (got.length < count) await new Promise((r) => setTimeout(r, 100));
    }
    return got;
  }

  it("a job complete at creation (every line fails the syntax check) sends its callback at once, not a cron period later", async () => {
    const { token } = await newAccount(0);
    const url = hook();
    const job = await created(await postJson(token, { email_addresses: ["not an address", "@"], callback_url: url }));
    expect(job).toMatchObject({ status: "completed", processed: 2, counts: { invalid: 2 } });
    const [d] = await received(url);
    expect(d?.headers["webhook-id"]).toBe(`evt_${job.id}_completed`);
    expect(JSON.parse(d!.body)).toEqual(job);
  });

  it("cancelling a job ends it too: its callback carries the cancelled job, once", async () => {
    const { token, accountId } = await newAccount(0);
    const url = hook();
    const id = await queuedJob(accountId, ["ana@ok.test", "ben@ok.test"]);
    await db.run(sql`update verification_jobs set callback_url = ${url} where id = ${id}`);
    const cancelled = VerificationJob.strict().parse(await (await call(`${PATH}/${id}`, { method: "DELETE", token })).json());
    expect(cancelled.status).toBe("cancelled");
    await call(`${PATH}/${id}`, { method: "DELETE", token }); // again: already cancelled, nothing more to send
    const got = await received(url);
    expect(got.map((d) => d.headers["webhook-id"])).toEqual([`evt_${id}_cancelled`]);
    expect(JSON.parse(got[0]!.body)).toEqual(cancelled);
    await new Promise((r) => setTimeout(r, 300));
    expect(await deliveries(url)).toHaveLength(1);
  });

  it("a failed delivery is retried with back-off, with the same webhook-id, until it is taken; then no more", async () => {
    const { token, accountId } = await newAccount(0);
    const url = hook();
    await fetch(url.replace("/hooks/", "/__script/"), { method: "POST", body: JSON.stringify({ fail: 2, status: 500 }) });
    // The callback is set on a finished job by hand, so that each attempt is delivered here, in order.
    const id = await queuedJob(accountId, []);
    await db.run(sql`update verification_jobs set status = 'completed', completed_at = ${Date.now()}, callback_url = ${url}, callback_state = 'pending' where id = ${id}`);
    const state = async () =>
      (await db.all<{ callback_state: string; callback_attempts: number; callback_next_at: number | null; callback_last_error: string | null }>(sql`
        select callback_state, callback_attempts, callback_next_at, callback_last_error from verification_jobs where id = ${id}`))[0]!;

    await deliver([{ kind: "verification", type: "callback", job: id, attempt: 0 }]);
    expect(await state()).toMatchObject({ callback_state: "pending", callback_attempts: 1, callback_last_error: "HTTP 500" });
    expect((await state()).callback_next_at! - Date.now()).toBeGreaterThan(3_000); // the first retry comes 5 s later
    await deliver([{ kind: "verification", type: "callback", job: id, attempt: 1 }]);
    expect((await state()).callback_next_at! - Date.now()).toBeGreaterThan(250_000); // then 5 minutes
    await deliver([{ kind: "verification", type: "callback", job: id, attempt: 2 }]);
    expect(await state()).toMatchObject({ callback_state: "delivered", callback_attempts: 3, callback_next_at: null });
    // A late duplicate of an attempt finds it delivered and sends nothing.
    await deliver([{ kind: "verification", type: "callback", job: id, attempt: 1 }]);
    const received = await deliveries(url);
    expect(received.map((d) => d.answered)).toEqual([500, 500, 204]);
    expect(new Set(received.map((d) => d.headers["webhook-id"])).size).toBe(1);
    void token;
  });

  it("redirects are not followed, and after the last retry the callback is given up", async () => {
    const { accountId } = await newAccount(0);
    const url = hook();
    await fetch(url.replace("/hooks/", "/__script/"), { method: "POST", body: JSON.stringify({ redirect: `${inject("webhookUrl")}/hooks/elsewhere` }) });
    const id = await queuedJob(accountId, []);
    await db.run(sql`update verification_jobs set status = 'completed', completed_at = ${Date.now()}, callback_url = ${url}, callback_state = 'pending', callback_attempts = 7 where id = ${id}`);
    await deliver([{ kind: "verification", type: "callback", job: id, attempt: 7 }]);
    const [row] = await db.all<{ callback_state: string; callback_last_error: string }>(sql`select callback_state, callback_last_error from verification_jobs where id = ${id}`);
    expect(row).toEqual({ callback_state: "failed", callback_last_error: "redirects are not followed" });
    expect((await deliveries(url)).map((d) => d.answered)).toEqual([307]);
  });

  it("a disabled account's job claims nothing, its callback waits, the cron leaves both alone; enabled again, both go on", async () => {
    const { accountId } = await newAccount(0);
    const url = hook();
    const id = await queuedJob(accountId, ["ana@ok.test", "nobody@ok.test"], Date.now() - 20 * 60_000);
    await db.run(sql`update verification_jobs set callback_url = ${url} where id = ${id}`);
    await setAccountStatus(db, accountId, "disabled");
    const jobRow = async () =>
      (await db.all<{ status: string; processed: number; callback_state: string; callback_attempts: number }>(
        sql`select status, processed, callback_state, callback_attempts from verification_jobs where id = ${id}`,
      ))[0]!;

    await deliver([{ kind: "verification", type: "turn", job: id }]);
    expect(await jobRow()).toMatchObject({ status: "queued", processed: 0 });
    expect((await stalledWork(db, Date.now() - 60_000)).filter((t) => t.job === id)).toEqual([]);

    // Its callback, once the job has ended: not delivered, not counted, not requeued.
    await db.run(sql`update verification_jobs set status = 'cancelled', completed_at = ${Date.now()}, callback_state = 'pending', callback_next_at = ${Date.now() - 20 * 60_000} where id = ${id}`);
    await deliver([{ kind: "verification", type: "callback", job: id, attempt: 0 }]);
    expect(await jobRow()).toMatchObject({ callback_state: "pending", callback_attempts: 0 });
    expect(await deliveries(url)).toEqual([]);
    expect((await dueCallbacks(db, "verification", Date.now() - 60_000)).filter((c) => c.job === id)).toEqual([]);

    await setAccountStatus(db, accountId, "active");
    expect((await dueCallbacks(db, "verification", Date.now() - 60_000)).filter((c) => c.job === id)).toEqual([{ job: id, attempt: 0 }]);
    await deliver([{ kind: "verification", type: "callback", job: id, attempt: 0 }]);
    expect(await received(url)).toHaveLength(1);
    expect(await jobRow()).toMatchObject({ callback_state: "delivered", callback_attempts: 1 });
  });

  it("enabled again, a disabled account's job is requeued by the cron and completes", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["ana@ok.test"], Date.now() - 20 * 60_000);
    await setAccountStatus(db, accountId, "disabled");
    expect((await stalledWork(db, Date.now() - 60_000)).filter((t) => t.job === id)).toEqual([]);
    await setAccountStatus(db, accountId, "active");
    const work = await stalledWork(db, Date.now() - 60_000);
    expect(work.filter((t) => t.job === id)).toEqual([{ job: id, turns: 1 }]);
    await deliver([{ kind: "verification", type: "turn", job: id }]);
    expect(await waitFor(token, id)).toMatchObject({ status: "completed", counts: { valid: 1 } });
  });
});

describe("the OpenAPI document", () => {
  type Schema = { type?: string; properties?: Record<string, Schema>; required?: string[]; enum?: string[]; maxItems?: number; minItems?: number; $ref?: string; items?: Schema; anyOf?: Schema[] };
  type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, Schema> } };
  const doc = async () => (await (await call("/v1/openapi.json")).json()) as Doc;

  it("describes the job routes, each with its answers", async () => {
    const { paths } = await doc();
    expect(Object.keys(paths[PATH]!).sort()).toEqual(["get", "post"]);
    expect(Object.keys(paths[`${PATH}/{id}`]!).sort()).toEqual(["delete", "get"]);
    expect(Object.keys(paths[`${PATH}/{id}/results`]!)).toEqual(["get"]);
    expect(Object.keys(paths[PATH]!.post.responses).sort()).toEqual(["202", "400", "401", "403", "409", "413", "415", "429", "503"]);
    expect(paths[PATH]!.post.responses["202"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/VerificationJob" });
    expect(paths[`${PATH}/{id}/results`]!.get.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/JobResultsPage" });
  });

  it("publishes the shared schemas as they parse: the create body with its limits, the job, a results page, the outcome enum", async () => {
    const { paths, components } = await doc();
    const body = paths[PATH]!.post.requestBody.content;
    expect(body["application/json"].schema).toEqual({ $ref: "#/components/schemas/JobCreateRequest" });
    expect(Object.keys(body).sort()).toEqual(["application/json", "text/csv"]);
    const create = components.schemas.JobCreateRequest!;
    expect(Object.keys(create.properties!).sort()).toEqual(Object.keys(JobCreateRequest.shape).sort());
    expect(create.required).toEqual(["email_addresses"]);
    expect(create.properties!.email_addresses).toMatchObject({ type: "array", maxItems: JOB_LIMITS.maxAddresses, items: { type: "string" } });
    expect(paths[PATH]!.post.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual([
      "header:idempotency-key",
      ...Object.keys(JobCreateQuery.shape).map((k) => `query:${k}`),
    ].sort());
    // Every field a response carries is in the document, and the document promises none it lacks.
    for (const [name, schema] of [["VerificationJob", VerificationJob], ["JobResultsPage", JobResultsPage], ["EmailVerificationResult", EmailVerificationResult]] as const) {
      expect(Object.keys(components.schemas[name]!.properties!).sort(), name).toEqual(Object.keys(schema.shape).sort());
      expect(components.schemas[name]!.required!.sort(), name).toEqual(Object.entries(schema.shape).filter(([, s]) => !s.isOptional()).map(([k]) => k).sort());
    }
    expect(components.schemas.VerificationJob!.properties!.status!.enum).toEqual([...JOB_STATUSES]);
    // Nullable: the enum, and null.
    expect(components.schemas.VerificationDetails!.properties!.smtp_outcome!.enum).toEqual([...SmtpOutcome.options, null]);
  });
});

/** A stored answer for lines the tests mark done by hand. */
function fakeResult(email: string): EmailVerificationResult {
  return {
    email,
    valid: true,
    classification: "valid",
    score: 95,
    score_details: {},
    errors: [],
    warnings: [],
    checks: {},
    reason: "deliverable",
  };
}
