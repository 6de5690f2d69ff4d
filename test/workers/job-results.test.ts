/**
 * Reading a job's results costs a bounded number of database round trips whatever the job's state
 * (docs/jobs.md "Bulk verification jobs"): a cancelled job whose answered lines are far apart is paged by
 * the done index, not by reading every unchecked line between them. Counted at the database.
 */
import { sql } from "drizzle-orm";
import { afterEach, inject } from "vitest";
import { describe, expect, it } from "vitest";
import { JobResultsPage } from "../../shared/jobs.ts";
import { cancelUnfinishedJobs, callWith, databaseRequestsServed, db, newAccount } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";
const counted = { DATABASE_URL: inject("countedDatabaseUrl") };
const requestsServed = () => databaseRequestsServed(counted.DATABASE_URL);

async function page(token: string, id: string, query: string) {
  const before = await requestsServed();
  const res = await callWith(counted, `${PATH}/${id}/results?${query}`, { token });
  expect(res.status).toBe(200);
  return { page: JobResultsPage.strict().parse(await res.json()), roundTrips: (await requestsServed()) - before };
}

/** A job of `lines` lines with only `done` answered, written straight to the database. */
async function jobWithAnswers(accountId: string, lines: number, done: number[], status: "running" | "cancelled") {
  const id = `job_test${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  await db.run(sql`insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash, created_at, updated_at)
    values (${id}, ${accountId}, ${status}, ${lines}, 5, 'test', ${Date.now()}, ${Date.now()})`);
  const answered = new Set(done);
  const rows = Array.from({ length: lines }, (_, p) => {
    const email = `u${p}@ok.test`;
    const result = { email, valid: true, classification: "valid", score: 95, score_details: {}, errors: [], warnings: [], checks: {} };
    return answered.has(p) ? [p, email, "done", "valid", JSON.stringify(result)] : [p, email, "pending", null, null];
  });
  for (let i = 0; i < rows.length; i += 5_000) {
    await db.run(sql`insert into verification_job_items (job_id, position, email, state, classification, result)
      select ${id}, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 from json_each(${JSON.stringify(rows.slice(i, i + 5_000))})`);
  }
  return id;
}

describe("results paging, counted at the database", () => {
  it("a cancelled 20,000-line job with answers far apart: each page is one read after the job's", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await jobWithAnswers(accountId, 20_000, [3, 10_000, 19_999], "cancelled");
    // Warm the key, so only the job and its page are counted.
    await callWith(counted, `${PATH}/${id}`, { token });

    const first = await page(token, id, "limit=1");
    expect(first.page.results.map((r) => r.email)).toEqual(["u3@ok.test"]);
    expect(first.roundTrips).toBeLessThanOrEqual(2);
    const second = await page(token, id, `limit=1&cursor=${first.page.next_cursor}`);
    expect(second.page.results.map((r) => r.email)).toEqual(["u10000@ok.test"]);
    expect(second.roundTrips).toBeLessThanOrEqual(2);
    const last = await page(token, id, `limit=5&cursor=${second.page.next_cursor}`);
    expect(last.page.results.map((r) => r.email)).toEqual(["u19999@ok.test"]);
    expect(last.page.next_cursor).toBeNull();
    expect(last.roundTrips).toBeLessThanOrEqual(2);
  });

  it("a running job's page stops at the first line not answered, in one read, and resumes there", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await jobWithAnswers(accountId, 50, [0, 1, 2, 4], "running");
    await callWith(counted, `${PATH}/${id}`, { token });
    const first = await page(token, id, "limit=10");
    expect(first.page.results.map((r) => r.email)).toEqual(["u0@ok.test", "u1@ok.test", "u2@ok.test"]);
    expect(first.roundTrips).toBeLessThanOrEqual(2);
    const again = await page(token, id, `limit=10&cursor=${first.page.next_cursor}`);
    expect(again.page.results).toEqual([]);
    expect(again.page.next_cursor).toBe(first.page.next_cursor);
  });
});
