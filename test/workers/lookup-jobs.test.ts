/**
 * Longer than 400 lines on purpose: lookup jobs' whole contract (create, quote, read, results and downloads, cancel,
 * credits, redelivery, pause and resume, erasure, verify_emails, callbacks) against one database and queue.
 * Lookup jobs inside workerd against the real database (docs/lookup-jobs.md): the routes, the Worker's own lookup-jobs
 * consumer (run by the local queue, or handed messages directly to test redelivery, a consumer killed after its
 * write, and pauses), the real probe for verify_emails, and a real HTTP server receiving the signed callback.
 */
import { createClient } from "@libsql/client/web";
import { afterEach, describe, expect, inject, it } from "vitest";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { LOOKUP_JOB_MESSAGES, LookupJob, LookupJobQuote, LookupJobResultsPage, type LookupJobResult } from "../../shared/lookup-jobs.ts";
import { addCredits, createApiKey, webhookSecret } from "../../scripts/admin/accounts.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { RESUME_CHECK_SECONDS } from "../../edge/jobs/lookup/turns.ts";
import { LINES_PER_TURN } from "../../edge/jobs/queue.ts";
import type { Bindings } from "../../edge/env.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, callWith, cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";
import { deliverLookup, recordingLookupQueue } from "./lookup-job-turns.ts";

const PATH = "/v1/lookup_jobs";

/** Ends every unfinished lookup job: turns are shared by every account with lines waiting. */
async function cancelUnfinishedLookupJobs() {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
  await cancelUnfinishedJobs();
}
afterEach(cancelUnfinishedLookupJobs);

type Person = ReturnType<typeof uniqueIds>;

async function people(n: number, emails: (i: number) => string[] = () => []): Promise<Person[]> {
  const out: Person[] = [];
  for (let i = 0; i < n; i++) {
    const ids = uniqueIds();
    await insertPerson({ ...ids, emails: emails(i), phones: emails(i).length ? ["+14155550123"] : [] });
    out.push(ids);
  }
  return out;
}

const quote = (cell: string) => (/[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell);
const csv = (rows: (string | number)[][]) => rows.map((r) => r.map((c) => quote(String(c))).join(",")).join("\r\n") + "\r\n";

function post(token: string, body: string, query = "", headers: Record<string, string> = {}, bindings?: Partial<Bindings>) {
  const init = { method: "POST", token, headers: { "content-type": "text/csv", ...headers }, body };
  return bindings ? callWith(bindings, `${PATH}${query}`, init) : call(`${PATH}${query}`, init);
}

async function created(res: Response) {
  expect(res.status, await res.clone().text()).toBe(202);
  const job = LookupJob.strict().parse(await res.json());
  expect(res.headers.get("location")).toBe(`${PATH}/${job.id}`);
  return job;
}

async function getJob(token: string, id: string) {
  const res = await call(`${PATH}/${id}`, { token });
  expect(res.status).toBe(200);
  return LookupJob.strict().parse(await res.json());
}

async function waitFor(token: string, id: string, done: (job: LookupJob) => boolean = (j) => j.status === "completed", timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await getJob(token, id);
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`lookup job ${id} still ${job.status} (${job.processed}/${job.total})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function allResults(token: string, id: string, query = "", limit = 1000) {
  const out: LookupJobResult[] = [];
  let cursor = "";
  for (;;) {
    const res = await call(`${PATH}/${id}/results?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`, { token });
    expect(res.status, await res.clone().text()).toBe(200);
    const page = LookupJobResultsPage.strict().parse(await res.json());
    out.push(...page.results);
    if (page.next_cursor === null) return out;
    cursor = page.next_cursor;
  }
}

async function ledger(accountId: string) {
  return db.all<{ request_id: string; balance_after: number }>(sql`select request_id, balance_after from credit_ledger where account_id = ${accountId} and reason = 'lookup' order by id`);
}

describe("a lookup job end to end", () => {
  it("guesses the identifier columns, keeps the customer's columns, charges each person found once, and answers every line", async () => {
    const { token, accountId } = await newAccount(100);
    const [ada, bob] = await people(2, (i) => (i === 0 ? ["ada@gmail.com", "ada@engines.example"] : []));
    const missing = uniqueIds();
    const list = csv([
      ["Name", "Profnet ID", "codehost_login", "Notes, free text"],
      ["Ada", ada!.profnet_id, "", "=HYPERLINK(1)"],
      ["Bob", "", bob!.codehost_login.toUpperCase(), "b"],
      ["Nobody", missing.profnet_id, "", "c"],
      ["Broken", "12abc", "", "d"],
      ["Ada again", "", ada!.codehost_login, "e"],
      ["Empty", "", "", "f"],
    ]);
    const job = await created(await post(token, list, "?include=email_details"));
    expect(job).toMatchObject({ status: "queued", total: 6, input: { format: "csv", columns: { profnet_id: "Profnet ID", codehost_login: "codehost_login" } }, include: ["email_details"], verify_emails: false });
    expect(job.credits).toEqual({ cost_per_line: 1, max: 4, charged: 0 });
    const done = await waitFor(token, job.id);
    expect(done.counts).toEqual({ found: 3, not_found: 1, invalid: 2, refused: 0, erased: 0 });
    expect([done.processed, done.credits.charged, done.pause]).toEqual([6, 2, null]);
    const results = await allResults(token, job.id);
    expect(results.map((r) => [r.line, r.status, r.error ?? null])).toEqual([
      [1, "found", null],
      [2, "found", null],
      [3, "not_found", "No profile found for the given parameters"],
      [4, "invalid", "profnet_id must be a positive integer"],
      [5, "found", null],
      [6, "invalid", "One of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required"],
    ]);
    expect(results[0]!.input).toEqual({ Name: "Ada", "Profnet ID": String(ada!.profnet_id), codehost_login: "", "Notes, free text": "=HYPERLINK(1)" });
    // One ledger row per person charged, naming the job and the line; each disclosure in the access log, as a single lookup's.
    expect((await ledger(accountId)).map((r) => r.request_id)).toEqual([`${job.id}:1`, `${job.id}:2`]);
    const logged = await db.all<{ n: number }>(sql`select count(*) as n from person_access_log where account_id = ${accountId}`);
    expect(Number(logged[0]!.n)).toBe(2);
    // The same ContactInfo a single lookup gives.
    const single = await call(`/v1/people?profnet_id=${ada!.profnet_id}&include=email_details`, { token });
    expect(results[0]!.data).toEqual(await single.json());

    const download = await call(`${PATH}/${job.id}/results?format=csv`, { token });
    expect(download.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const lines = (await download.text()).split("\r\n");
    expect(lines[0]).toBe(
      'Name,Profnet ID,codehost_login,"Notes, free text",lookup_status,lookup_error,lookup_personal_emails,lookup_work_emails,lookup_phones,lookup_profnet_id,lookup_profnet_public_identifier,lookup_codehost_id,lookup_codehost_login,lookup_codehost_username,lookup_socialnet_username,lookup_microblog_username',
    );
    expect(lines[1]).toBe(`Ada,${ada!.profnet_id},,'=HYPERLINK(1),found,,ada@gmail.com,ada@engines.example,'+14155550123,${ada!.profnet_id},${ada!.profnet_public_identifier},${ada!.codehost_id},${ada!.codehost_login},,,`);
    expect(lines[4]).toBe("Broken,12abc,,d,invalid,profnet_id must be a positive integer,,,,,,,,,,");
    const found = await call(`${PATH}/${job.id}/results?format=jsonl&status=found`, { token });
    expect(found.headers.get("content-type")).toBe("application/jsonl; charset=utf-8");
    expect((await found.text()).trim().split("\n").map((l) => (JSON.parse(l) as LookupJobResult).line)).toEqual([1, 2, 5]);
    expect((await allResults(token, job.id, "&status=not_found,invalid")).map((r) => r.line)).toEqual([3, 4, 6]);
    const list2 = (await (await call(PATH, { token })).json()) as { jobs: LookupJob[] };
    expect(list2.jobs.map((j) => j.id)).toContain(job.id);
  });

  it("takes JSON Lines, and fields named by a parameter", async () => {
    const { token } = await newAccount(10);
    const [ada] = await people(1, () => ["ada@example.org"]);
    const body = [JSON.stringify({ crm: 1, li: ada!.profnet_public_identifier }), "", JSON.stringify({ crm: 2, li: "nobody-" + ada!.profnet_id })].join("\n");
    const job = await created(await post(token, body, "?profnet_public_identifier_column=li", { "content-type": "application/jsonl" }));
    expect(job.input).toEqual({ format: "jsonl", columns: { profnet_public_identifier: "li" } });
    await waitFor(token, job.id);
    const results = await allResults(token, job.id);
    expect(results.map((r) => [r.status, r.input])).toEqual([
      ["found", { crm: 1, li: ada!.profnet_public_identifier }],
      ["not_found", { crm: 2, li: "nobody-" + ada!.profnet_id }],
    ]);
  });
});

describe("the quote (dry_run)", () => {
  it("says the most a list can cost, and creates and charges nothing", async () => {
    const { token, accountId } = await newAccount(7);
    const list = csv([["codehost_id", "name"], [1, "a"], [2, "b"], [1, "a again"], ["x", "bad"], ["", "empty"], [3, "c"]]);
    const res = await post(token, list, "?dry_run=true");
    expect(res.status).toBe(200);
    expect(LookupJobQuote.strict().parse(await res.json())).toEqual({
      format: "csv",
      columns: { codehost_id: "codehost_id" },
      lines: 6,
      well_formed: 4,
      invalid: 2,
      repeated: 1,
      cost_per_line: 1,
      max_credits: 3,
      credit_balance: 7,
    });
    expect(await db.all(sql`select 1 from lookup_jobs where account_id = ${accountId}`)).toEqual([]);
    expect(await ledger(accountId)).toEqual([]);
  });
});

describe("bad input", () => {
  it("is a clear 4xx naming the problem; nothing is created or charged", async () => {
    const { token, accountId } = await newAccount(5);
    const cases: [string, string, string, number, string][] = [
      ["no identifier column", csv([["name", "notes"], ["Ada", "ada@example.org"]]), "", 400, LOOKUP_JOB_MESSAGES.noIdentifierColumn],
      ["a named column not in the header", csv([["name", "li"], ["Ada", "ada"]]), "?profnet_public_identifier_column=linkedin", 400, LOOKUP_JOB_MESSAGES.noSuchColumn("profnet_public_identifier_column", "linkedin", ["name", "li"])],
      ["a header only", "profnet_id\r\n", "", 400, LOOKUP_JOB_MESSAGES.empty],
      // The one intake's words (edge/jobs/intake.ts), as for verification jobs: never a byte of the file.
      ["malformed CSV", 'profnet_id\n"1\n', "", 400, "Malformed CSV at line 2: a quoted cell is never closed"],
      ["a quote in a cell", 'profnet_id,notes\n1,ab"cd"\n', "", 400, "Malformed CSV at line 2: a quote in the middle of a cell (quote the whole cell, and double a quote inside it)"],
      ["a spreadsheet", "PK\u0003\u0004xl/workbook.xml", "", 400, "The file is not a CSV file: it looks like an Excel workbook (.xlsx) or another ZIP archive. Save the list as CSV (comma-separated values) and send that"],
      ["a line over 65,536 characters", `profnet_id,notes\n1,${"x".repeat(70_000)}\n`, "", 400, "Line 2: a line is at most 65,536 characters, all its columns together"],
      ["100,001 lines", `codehost_id\n${"1\n".repeat(100_001)}`, "", 413, LOOKUP_JOB_MESSAGES.tooManyLines],
      ["a bad include", csv([["profnet_id"], [1]]), "?include=emails", 400, 'Unknown include "emails": expected email_details, profile'],
      ["a bad verify_emails", csv([["profnet_id"], [1]]), "?verify_emails=yes", 400, "verify_emails must be true or false"],
    ];
    for (const [what, body, query, status, error] of cases) {
      const res = await post(token, body, query);
      const answer = (await res.json()) as { error: string };
      expect([res.status, answer.error.startsWith(error) ? error : answer.error], what).toEqual([status, error]);
    }
    const jsonl = await post(token, '{"profnet_id": 1}\n[1]\n', "", { "content-type": "application/jsonl" });
    expect([jsonl.status, await jsonl.json()]).toEqual([400, { error: "Line 2: each line of JSON Lines must be a JSON object" }]);
    const noField = await post(token, '{"name": "Ada"}\n', "", { "content-type": "application/x-ndjson" });
    expect([noField.status, await noField.json()]).toEqual([400, { error: LOOKUP_JOB_MESSAGES.noIdentifierField }]);
    const type = await post(token, "profnet_id\n1\n", "", { "content-type": "application/json" });
    expect([type.status, await type.json()]).toEqual([415, { error: LOOKUP_JOB_MESSAGES.unsupported }]);
    // A 200 MiB upload: refused by its declared size, unread.
    const big = await call(PATH, { method: "POST", token, headers: { "content-type": "text/csv", "content-length": String(200 * 1024 * 1024) }, body: "profnet_id\n1\n" });
    expect([big.status, await big.json()]).toEqual([413, { error: LOOKUP_JOB_MESSAGES.bodyTooLarge }]);
    expect(await db.all(sql`select 1 from lookup_jobs where account_id = ${accountId}`)).toEqual([]);
    expect(await ledger(accountId)).toEqual([]);
  });
});

describe("Idempotency-Key", () => {
  it("a retried create returns the first job; another list with the same key is 409; 20 at once make one job", async () => {
    const { token, accountId } = await newAccount(10);
    const [ada] = await people(1);
    const list = csv([["profnet_id"], [ada!.profnet_id]]);
    const key = { "idempotency-key": crypto.randomUUID() };
    const first = await created(await post(token, list, "", key));
    const again = await created(await post(token, list, "", key));
    expect(again.id).toBe(first.id);
    const other = await post(token, csv([["profnet_id"], [ada!.profnet_id], [1]]), "", key);
    expect([other.status, await other.json()]).toEqual([409, { error: LOOKUP_JOB_MESSAGES.idempotencyConflict }]);
    await waitFor(token, first.id);

    const together = { "idempotency-key": crypto.randomUUID() };
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(token, list, "", together)));
    const ids = new Set<string>();
    for (const res of answers) {
      if (res.status === 202) ids.add(((await res.json()) as LookupJob).id);
      else expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([409, LOOKUP_JOB_MESSAGES.stillCreating]);
    }
    expect(ids.size).toBe(1);
    const [rows] = await db.all<{ n: number }>(sql`select count(*) as n from lookup_jobs where account_id = ${accountId} and creating = 0`);
    expect(Number(rows!.n)).toBe(2);
  });
});

describe("charged line by line, exactly once", () => {
  it("a consumer killed after its write, messages delivered twice and at once: each person found is charged once", async () => {
    const { token, accountId } = await newAccount(10_000);
    const found = await people(700);
    // 4,900 lines (three turns of LINES_PER_TURN.lookup): every person six times, some not found, in a shuffled order.
    const rows: (string | number)[][] = [["codehost_id", "ref"]];
    for (let i = 0; i < found.length; i++) rows.push([found[i]!.codehost_id, `a${i}`], [uniqueIds().codehost_id, `n${i}`]);
    for (let rep = 0; rep < 5; rep++) for (let i = found.length - 1; i >= 0; i--) rows.push([found[(i * 7 + rep) % found.length]!.codehost_id, `r${rep}-${i}`]);
    const recording = recordingLookupQueue();
    const bindings = { LOOKUP_JOBS_QUEUE: recording.queue };
    const job = await created(await post(token, csv(rows), "", {}, bindings));
    const turn = { kind: "lookup" as const, type: "turn" as const, job: job.id };
    expect(Math.ceil(4_900 / LINES_PER_TURN.lookup)).toBe(3);
    expect(recording.sent.map((m) => m.body)).toEqual([turn, turn, turn]);
    expect((await deliverLookup([turn], bindings)).explicitAcks).toHaveLength(1);
    // The database does the second turn's work and the consumer never hears of it: its message is retried.
    const proxy = inject("faultyDatabaseUrl");
    await fetch(`${proxy}/__proxy`, { method: "PUT", body: JSON.stringify({ mode: "drop" }) });
    try {
      const killed = await deliverLookup([turn], { ...bindings, DATABASE_URL: proxy });
      expect(killed.retryMessages).toHaveLength(1);
    } finally {
      await fetch(`${proxy}/__proxy`, { method: "PUT", body: JSON.stringify({ mode: "pass" }) });
    }
    // The retry, the rest, and every message again, twice at once.
    await deliverLookup([turn, turn], bindings);
    await Promise.all([deliverLookup([turn, turn, turn, turn], bindings), deliverLookup([turn, turn, turn, turn], bindings)]);
    const done = await getJob(token, job.id);
    expect(done.status).toBe("completed");
    expect(done.counts).toEqual({ found: 4200, not_found: 700, invalid: 0, refused: 0, erased: 0 });
    const charges = await ledger(accountId);
    expect(charges).toHaveLength(700);
    expect(new Set(charges.map((c) => c.request_id)).size).toBe(700);
    expect(done.credits.charged).toBe(700);
    const [balance] = await db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
    expect(Number(balance!.credit_balance)).toBe(10_000 - 700);
    const [lines] = await db.all<{ charged: number; found: number }>(sql`select sum(charged) as charged, sum(outcome = 'found') as found from lookup_job_lines where job_id = ${job.id}`);
    expect([Number(lines!.charged), Number(lines!.found)]).toEqual([700, 4200]);
  }, 60_000);
});

describe("credits running out", () => {
  it("pauses at zero credits, says why, looks again every 30 s, and resumes once credits are added", async () => {
    const { token, accountId } = await newAccount(3);
    const found = await people(6);
    const missing = uniqueIds();
    const rows: (string | number)[][] = [["profnet_id"], ...found.slice(0, 4).map((p) => [p.profnet_id]), [missing.profnet_id], ...found.slice(4).map((p) => [p.profnet_id])];
    const recording = recordingLookupQueue();
    const bindings = { LOOKUP_JOBS_QUEUE: recording.queue };
    const job = await created(await post(token, csv(rows), "", {}, bindings));
    recording.sent.length = 0;
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], bindings);
    const paused = await getJob(token, job.id);
    expect(paused.status).toBe("paused");
    expect(paused.pause).toEqual({ reason: "insufficient_credits", message: LOOKUP_JOB_MESSAGES.pausedForCredits, since: expect.any(String) });
    // Every line after the third charged is refused, the one that matches nobody too: a job that cannot pay tells nothing of who is held.
    expect(paused.counts).toEqual({ found: 3, not_found: 0, invalid: 0, refused: 4, erased: 0 });
    expect(paused.credits.charged).toBe(3);
    // Resumed within a minute of credits: the next look at the balance is RESUME_CHECK_SECONDS away.
    expect(RESUME_CHECK_SECONDS).toBeLessThanOrEqual(60);
    expect(recording.sent).toEqual([{ body: { kind: "lookup", type: "resume", job: job.id }, delaySeconds: RESUME_CHECK_SECONDS }]);
    // Results stop before the first line that waits for credits, and go on from there.
    const page = LookupJobResultsPage.strict().parse(await (await call(`${PATH}/${job.id}/results`, { token })).json());
    expect([page.results.map((r) => r.status), page.next_cursor === null]).toEqual([["found", "found", "found"], false]);
    // No credits yet: still paused, looked at again later.
    recording.sent.length = 0;
    await deliverLookup([{ kind: "lookup", type: "resume", job: job.id }], bindings);
    expect((await getJob(token, job.id)).status).toBe("paused");
    expect(recording.sent).toEqual([{ body: { kind: "lookup", type: "resume", job: job.id }, delaySeconds: RESUME_CHECK_SECONDS }]);
    await addCredits(db, accountId, 10);
    recording.sent.length = 0;
    await deliverLookup([{ kind: "lookup", type: "resume", job: job.id }], bindings);
    const resumed = await getJob(token, job.id);
    expect([resumed.status, resumed.pause, resumed.counts.refused]).toEqual(["running", null, 0]);
    expect(recording.sent).toEqual([{ body: { kind: "lookup", type: "turn", job: job.id }, delaySeconds: 0 }]);
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], bindings);
    const done = await getJob(token, job.id);
    expect([done.status, done.counts.found, done.credits.charged]).toEqual(["completed", 6, 6]);
    expect((await allResults(token, job.id)).map((r) => r.status)).toEqual(["found", "found", "found", "found", "not_found", "found", "found"]);
    expect(await ledger(accountId)).toHaveLength(6);
  });

  it("pauses for the key's daily cap with its own reason, and a cancelled job keeps its refused lines refused", async () => {
    const { accountId } = await newAccount(100);
    const capped = await createApiKey(db, accountId, { name: "capped", dailyCreditCap: 2 });
    const found = await people(4);
    const recording = recordingLookupQueue();
    const bindings = { LOOKUP_JOBS_QUEUE: recording.queue };
    const job = await created(await post(capped.token, csv([["codehost_login"], ...found.map((p) => [p.codehost_login])]), "", {}, bindings));
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], bindings);
    const paused = await getJob(capped.token, job.id);
    expect([paused.status, paused.pause?.reason, paused.counts.refused]).toEqual(["paused", "daily_credit_cap", 2]);
    const cancelled = (await (await call(`${PATH}/${job.id}`, { method: "DELETE", token: capped.token })).json()) as LookupJob;
    expect(cancelled.status).toBe("cancelled");
    const results = await allResults(capped.token, job.id);
    expect(results.map((r) => [r.status, r.error ?? null, r.reason ?? null])).toEqual([
      ["found", null, null],
      ["found", null, null],
      ["refused", "Daily credit cap reached for this key", "daily_credit_cap"],
      ["refused", "Daily credit cap reached for this key", "daily_credit_cap"],
    ]);
    // Cancelled: a resume check does nothing.
    await addCredits(db, accountId, 10);
    await deliverLookup([{ kind: "lookup", type: "resume", job: job.id }], bindings);
    expect((await getJob(capped.token, job.id)).status).toBe("cancelled");
  });
});

describe("erasure", () => {
  it("blanks the erased person's lines in stored results: the line says erased, the counts say how many, the account is in the feed", async () => {
    const { token } = await newAccount(10);
    const [ada, bob] = await people(2, (i) => [i === 0 ? "ada@example.org" : "bob@example.org"]);
    const job = await created(await post(token, csv([["name", "profnet_id"], ["Ada", ada!.profnet_id], ["Bob", bob!.profnet_id], ["Ada", ada!.profnet_id]])));
    await waitFor(token, job.id);
    const client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
    try {
      expect(await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "profnet_id", value: ada!.profnet_id }, "test", TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    } finally {
      client.close();
    }
    const after = await getJob(token, job.id);
    expect(after.counts).toEqual({ found: 1, not_found: 0, invalid: 0, refused: 0, erased: 2 });
    expect(after.processed).toBe(3);
    const results = await allResults(token, job.id);
    expect(results.map((r) => [r.status, r.input.name, r.error ?? null])).toEqual([
      ["erased", "Ada", LOOKUP_JOB_MESSAGES.erased],
      ["found", "Bob", null],
      ["erased", "Ada", LOOKUP_JOB_MESSAGES.erased],
    ]);
    const download = await (await call(`${PATH}/${job.id}/results?format=csv`, { token })).text();
    expect(download).not.toContain("ada@example.org");
    expect(download).toContain("bob@example.org");
    expect(await db.all(sql`select 1 from lookup_job_lines where job_id = ${job.id} and person like '%ada@example.org%'`)).toEqual([]);
    const feed = (await (await call("/v1/people/erasures", { token })).json()) as { erasures: { profnet_id: number }[] };
    expect(feed.erasures.map((e) => e.profnet_id)).toContain(ada!.profnet_id);
  });
});

describe("cancel, purge and results while it runs", () => {
  it("pages stop before the first line not answered; cancel stops the job; purge deletes its results (410)", async () => {
    const { token } = await newAccount(1_000);
    const found = await people(3);
    const rows: (string | number)[][] = [["codehost_id"]];
    for (let i = 0; i < 2_400; i++) rows.push([i % 200 === 0 ? found[(i / 200) % 3]!.codehost_id : uniqueIds().codehost_id]);
    const recording = recordingLookupQueue();
    const bindings = { LOOKUP_JOBS_QUEUE: recording.queue };
    const job = await created(await post(token, csv(rows), "", {}, bindings));
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], bindings);
    const running = await getJob(token, job.id);
    expect([running.status, running.processed]).toEqual(["running", LINES_PER_TURN.lookup]);
    // Pages of 600 over 2,000 answered lines of 2,400: 600, 600, 600, then 200 (the page stops before line 2,001) and a cursor.
    const sizes: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 4; i++) {
      const page = LookupJobResultsPage.strict().parse(await (await call(`${PATH}/${job.id}/results?limit=600${cursor ? `&cursor=${cursor}` : ""}`, { token })).json());
      sizes.push(page.results.length);
      cursor = page.next_cursor;
      expect(cursor).not.toBeNull();
    }
    expect(sizes).toEqual([600, 600, 600, 200]);
    const cancelled = LookupJob.strict().parse(await (await call(`${PATH}/${job.id}`, { method: "DELETE", token })).json());
    expect([cancelled.status, cancelled.processed]).toEqual(["cancelled", LINES_PER_TURN.lookup]);
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], bindings);
    expect((await getJob(token, job.id)).processed).toBe(LINES_PER_TURN.lookup);
    const csvLines = (await (await call(`${PATH}/${job.id}/results?format=csv`, { token })).text()).trim().split("\r\n");
    expect(csvLines).toHaveLength(2_401);
    expect(csvLines.at(-1)).toMatch(/,cancelled,/);
    const purged = LookupJob.strict().parse(await (await call(`${PATH}/${job.id}?purge=true`, { method: "DELETE", token })).json());
    expect(purged.results_expired).toBe(true);
    const gone = await call(`${PATH}/${job.id}/results`, { token });
    expect([gone.status, await gone.json()]).toEqual([410, { error: "Lookup job results have expired" }]);
    expect((await call(`${PATH}/lkj_none`, { token })).status).toBe(404);
  });
});

describe("callbacks", () => {
  it("POSTs the finished job to callback_url, signed with the account's secret", async () => {
    const { token, accountId } = await newAccount(5);
    const [ada] = await people(1);
    const url = `${inject("webhookUrl")}/hooks/${crypto.randomUUID()}`;
    const job = await created(await post(token, csv([["profnet_id"], [ada!.profnet_id]]), `?callback_url=${encodeURIComponent(url)}`));
    const done = await waitFor(token, job.id);
    let received: { headers: Record<string, string>; body: string }[] = [];
    for (let i = 0; i < 50 && received.length === 0; i++) {
      received = (await (await fetch(url.replace("/hooks/", "/__deliveries/"))).json()) as typeof received;
      if (received.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!.body)).toEqual({ ...done, callback: undefined });
    expect(received[0]!.headers["webhook-id"]).toBe(`evt_${job.id}_completed`);
    const { secret } = await webhookSecret(db, accountId, (env as unknown as Bindings).WEBHOOK_SECRET_KEY);
    const key = await crypto.subtle.importKey("raw", Uint8Array.from(atob(secret.slice(6)), (ch) => ch.charCodeAt(0)), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    const [, mac] = received[0]!.headers["webhook-signature"]!.split(",");
    const signed = `${received[0]!.headers["webhook-id"]}.${received[0]!.headers["webhook-timestamp"]}.${received[0]!.body}`;
    expect(await crypto.subtle.verify("HMAC", key, Uint8Array.from(atob(mac!), (ch) => ch.charCodeAt(0)), new TextEncoder().encode(signed))).toBe(true);
  });
});

describe("verify_emails", () => {
  it("verifies the returned addresses, using a stored verification newer than the documented age instead of probing again", async () => {
    const { token, accountId } = await newAccount(10);
    const [ada, bob] = await people(2, (i) => (i === 0 ? ["ana@ok.test", "nobody@ok.test"] : ["info@ok.test"]));
    // Bob's address was checked by us an hour ago: taken as it is.
    await db.run(sql`update person_emails set classification = 'risky', smtp_outcome = 'accepted', reason = 'catch_all', checked_at = ${Date.now() - 3_600_000} where email = 'info@ok.test'`);
    const job = await created(await post(token, csv([["profnet_id"], [ada!.profnet_id], [bob!.profnet_id]]), "?verify_emails=true"));
    expect(job.include).toEqual(["email_details"]);
    expect(job.verification).toEqual({ state: "pending", job_id: null, stored_verdicts_used: 0, max_age_seconds: 604_800 });
    const done = await waitFor(token, job.id, (j) => j.status === "completed", 30_000);
    expect(done.verification).toMatchObject({ state: "done", stored_verdicts_used: 1 });
    const verificationJob = done.verification!.job_id!;
    expect(verificationJob).toMatch(/^job_/);
    // The account's own verification job checked the two addresses no stored verdict covered.
    const verifying = (await (await call(`/v1/email_verification_jobs/${verificationJob}`, { token })).json()) as { total: number; status: string };
    expect([verifying.total, verifying.status]).toEqual([2, "completed"]);
    const results = await allResults(token, job.id);
    const byEmail = (r: LookupJobResult) => Object.fromEntries((r.data?.email_details ?? []).map((d) => [d.email, d.verification?.classification ?? null]));
    expect(byEmail(results[0]!)).toEqual({ "ana@ok.test": "valid", "nobody@ok.test": "invalid" });
    expect(byEmail(results[1]!)).toEqual({ "info@ok.test": "risky" });
    const download = (await (await call(`${PATH}/${job.id}/results?format=csv`, { token })).text()).split("\r\n");
    expect(download[0]!.endsWith(",lookup_email_verdicts")).toBe(true);
    expect(download[1]!.endsWith(",ana@ok.test valid; nobody@ok.test invalid")).toBe(true);
    // The fresh verdicts are written back to the stored addresses: the next job finds them fresh.
    const [stored] = await db.all<{ classification: string }>(sql`select classification from person_emails where email = 'nobody@ok.test'`);
    expect(stored!.classification).toBe("invalid");
    expect(accountId).toMatch(/^acc_/);
  }, 40_000);
});
