/**
 * A job's live summary and its filtered results inside workerd, with the real queue, the real probe
 * behind the test zone's mail servers and the real libSQL server: the summary's counts are the
 * results' counts at every moment looked at, and filters narrow JSON pages and CSV alike.
 */
import { afterEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { VERIFICATION_REASONS } from "../../shared/api.ts";
import { JobResultsPage, VerificationJob, type JobResult } from "../../shared/jobs.ts";
import { jobJson, type JobRow } from "../../edge/jobs/store/job-rows.ts";
import { call, cancelUnfinishedJobs, db, newAccount } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";

/** One line for each reason the test zone's servers can give, and a repeat. */
const MIXED = [
  "ana@ok.test", // deliverable
  "nobody@ok.test", // mailbox_not_found
  "someone@catchall.test", // catch_all
  "policy@ok.test", // policy_block
  "full@ok.test", // mailbox_full
  "x@nx.test", // no_mail_domain
  "not-an-address", // syntax
  "ana@ok.test", // a repeat: its own row, counted too
];

async function create(token: string, emails: string[]): Promise<VerificationJob> {
  const res = await call(PATH, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: emails }) });
  expect(res.status, await res.clone().text()).toBe(202);
  return VerificationJob.strict().parse(await res.json());
}

const getJob = async (token: string, id: string) => VerificationJob.strict().parse(await (await call(`${PATH}/${id}`, { token })).json());

async function waitFor(token: string, id: string): Promise<VerificationJob> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const job = await getJob(token, id);
    if (job.status === "completed") return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status} (${job.processed}/${job.total})`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** Every page of results with `query`, following next_cursor; the cursors seen on the way. */
async function allPages(token: string, id: string, query: string, limit = 3): Promise<JobResult[]> {
  const out: JobResult[] = [];
  let cursor = "";
  for (let pages = 0; pages < 1_000; pages++) {
    const res = await call(`${PATH}/${id}/results?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`, { token });
    expect(res.status, await res.clone().text()).toBe(200);
    const page = JobResultsPage.strict().parse(await res.json());
    out.push(...page.results);
    if (page.next_cursor === null) return out;
    cursor = page.next_cursor;
  }
  throw new Error("no end of pages");
}

const countBy = (rows: JobResult[], key: "classification" | "reason") => {
  const out: Record<string, number> = {};
  for (const r of rows) out[r[key]!] = (out[r[key]!] ?? 0) + 1;
  return out;
};
const nonZero = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));

describe("the job's summary", () => {
  it("counts answered lines by classification and by reason, equal to the results' counts, with every reason listed", async () => {
    const { token } = await newAccount(0);
    const job = await create(token, MIXED);
    expect(job.summary.reason).toEqual(Object.fromEntries(VERIFICATION_REASONS.map((r) => [r, r === "syntax" ? 1 : 0])));
    // The 202 says where the new job stands: every line but the syntax failure waiting, its account sharing the turns.
    // Nothing answered by a probe yet, so no estimate; nothing parked on a receiver.
    expect(job.queue).toEqual({ lines_waiting: MIXED.length - 1, lines_in_progress: 0, accounts_sharing: 1, waiting_on: {}, estimated_completion_at: null });
    const done = await waitFor(token, job.id);
    const results = await allPages(token, job.id, "");
    expect(results).toHaveLength(MIXED.length);
    expect(results.map((r) => r.reason)).toEqual([
      "deliverable",
      "mailbox_not_found",
      "catch_all",
      "policy_block",
      "mailbox_full",
      "no_mail_domain",
      "syntax",
      "deliverable",
    ]);
    expect(nonZero(done.summary.reason)).toEqual(countBy(results, "reason"));
    expect(nonZero(done.summary.classification)).toEqual(countBy(results, "classification"));
    expect(done.summary.classification).toEqual(done.counts);
    for (const r of results) expect(new Date(r.checked_at).toISOString()).toBe(r.checked_at);
  });

  it("equals the lines' own counts at every moment of a running job (read in one transaction)", { timeout: 60_000 }, async () => {
    const { token } = await newAccount(0);
    const emails = Array.from({ length: 600 }, (_, i) => (i % 3 === 0 ? `nobody${i}@ok.test` : i % 3 === 1 ? `ana@ok.test` : `x${i}@catchall.test`));
    const job = await create(token, emails);
    let moments = 0;
    let running = 0;
    for (;;) {
      const [rows, lines] = await db.batch([
        db.all<JobRow>(sql`select id, account_id, status, total, processed, valid_count, risky_count, invalid_count, reason_counts, smtp_timeout,
          callback_url, callback_state, callback_attempts, request_hash, created_at, completed_at, updated_at from verification_jobs where id = ${job.id}`),
        db.all<{ classification: string; reason: string; lines: number }>(sql`
          select classification, reason, count(*) as lines from verification_job_items where job_id = ${job.id} and state = 'done' group by classification, reason`),
      ]);
      const summary = jobJson(rows[0]!).summary;
      const byReason: Record<string, number> = {};
      const byClass: Record<string, number> = {};
      for (const l of lines) {
        byReason[l.reason] = (byReason[l.reason] ?? 0) + Number(l.lines);
        byClass[l.classification] = (byClass[l.classification] ?? 0) + Number(l.lines);
      }
      expect(nonZero(summary.reason)).toEqual(byReason);
      expect(nonZero(summary.classification)).toEqual(byClass);
      moments++;
      if (rows[0]!.status === "running" && Number(rows[0]!.processed) > 0) running++;
      if (rows[0]!.status === "completed") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Some of those moments were mid-run, with part of the job answered.
    expect(running).toBeGreaterThan(0);
    expect(moments).toBeGreaterThan(running);
    const done = await getJob(token, job.id);
    expect(nonZero(done.summary.reason)).toEqual(countBy(await allPages(token, job.id, "", 500), "reason"));
  });
});

describe("filtered results", () => {
  it("narrow JSON pages by classification and by reason, in input order, page after page", async () => {
    const { token } = await newAccount(0);
    const job = await create(token, MIXED);
    await waitFor(token, job.id);
    const all = await allPages(token, job.id, "", 100);
    const invalid = await allPages(token, job.id, "&classification=invalid", 1);
    expect(invalid.map((r) => r.email)).toEqual(all.filter((r) => r.classification === "invalid").map((r) => r.email));
    expect(invalid.map((r) => r.email)).toEqual(["nobody@ok.test", "x@nx.test", "not-an-address"]);
    const validOrRisky = await allPages(token, job.id, "&classification=valid,risky", 2);
    expect(validOrRisky.map((r) => r.email)).toEqual(all.filter((r) => r.classification !== "invalid").map((r) => r.email));
    const byReason = await allPages(token, job.id, "&reason=deliverable,catch_all", 1);
    expect(byReason.map((r) => r.email)).toEqual(["ana@ok.test", "someone@catchall.test", "ana@ok.test"]);
    // Both: each must match.
    expect((await allPages(token, job.id, "&classification=risky&reason=deliverable,catch_all")).map((r) => r.email)).toEqual(["someone@catchall.test"]);
    expect(await allPages(token, job.id, "&classification=valid&reason=syntax")).toEqual([]);
  });

  it("narrow the CSV the same way, with reason and checked_at columns", async () => {
    const { token } = await newAccount(0);
    const job = await create(token, MIXED);
    await waitFor(token, job.id);
    const lines = (await (await call(`${PATH}/${job.id}/results?format=csv&reason=mailbox_not_found,syntax`, { token })).text()).trimEnd().split("\r\n");
    expect(lines[0]!.split(",").slice(-3)).toEqual(["reason", "checked_at", "mx_provider"]);
    expect(lines.slice(1).map((l) => [l.split(",")[0], l.split(",").at(-3)])).toEqual([
      ["nobody@ok.test", "mailbox_not_found"],
      ["not-an-address", "syntax"],
    ]);
  });

  it("while the job runs, stop before the first line not answered yet, so following next_cursor sees every match once", { timeout: 30_000 }, async () => {
    const { token } = await newAccount(0);
    // The first line's domain is checked first (the work order groups domains by first appearance).
    const emails = Array.from({ length: 400 }, (_, i) => (i % 2 === 0 ? `nobody${i}@ok.test` : `ana${i}@catchall.test`));
    const job = await create(token, emails);
    const seen: JobResult[] = [];
    let cursor = "";
    for (;;) {
      const res = await call(`${PATH}/${job.id}/results?limit=50&classification=invalid${cursor ? `&cursor=${cursor}` : ""}`, { token });
      const page = JobResultsPage.strict().parse(await res.json());
      seen.push(...page.results);
      if (page.next_cursor === null) break;
      if (page.results.length === 0) await new Promise((r) => setTimeout(r, 100));
      cursor = page.next_cursor;
    }
    expect(seen.map((r) => r.email)).toEqual(emails.filter((e) => e.startsWith("nobody")));
  });

  it("a value outside the vocabulary is 400 naming it, before any database read", async () => {
    const { token } = await newAccount(0);
    for (const [query, named] of [
      ["classification=great", '"great"'],
      ["classification=valid,", '""'],
      ["reason=deliverable,bounced", '"bounced"'],
      ["reason=", '""'],
    ] as const) {
      for (const format of ["", "&format=csv"]) {
        const res = await call(`${PATH}/job_nosuchjob/results?${query}${format}`, { token });
        expect(res.status, query).toBe(400);
        const { error } = (await res.json()) as { error: string };
        expect(error).toContain(named);
        expect(error).toContain(query.startsWith("reason") ? "mailbox_not_found" : "valid, risky, invalid");
      }
    }
  });
});
