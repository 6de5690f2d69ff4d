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
import { RESUME_CHECK_SECONDS } from "../../edge/lookup-jobs/queue.ts";
import type { Bindings } from "../../edge/env.ts";
import { TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
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
      ["no identifier column", csv([["name", "email"], ["Ada", "ada@example.org"]]), "", 400, LOOKUP_JOB_MESSAGES.noIdentifierColumn],
      ["a named column not in the header", csv([["name", "li"], ["Ada", "ada"]]), "?profnet_public_identifier_column=linkedin", 400, LOOKUP_JOB_MESSAGES.noSuchColumn("profnet_public_identifier_column", "linkedin", ["name", "li"])],
      ["a header only", "profnet_id\r\n", "", 400, LOOKUP_JOB_MESSAGES.empty],
      ["malformed CSV", 'profnet_id\n"1\n', "", 400, "Malformed CSV"],
      ["a line over 64 KiB", `profnet_id,notes\n1,${"x".repeat(70_000)}\n`, "", 400, "Line 2: a line is at most 64 KiB"],
      ["100,001 lines", `codehost_id\n${"1\n".repeat(100_001)}`, "", 413, LOOKUP_JOB_MESSAGES.tooManyLines],
      ["a bad include", csv([["profnet_id"], [1]]), "?include=emails", 400, 'Unknown include "emails": expected email_details'],
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
