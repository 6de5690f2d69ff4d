/**
 * The confidence per address in the bulk lookups (docs/api.md "Confidence", "POST /v1/people/bulk", docs/lookup-jobs.md),
 * inside workerd against the real database: a batch item and a job line carry the same email_details (sources,
 * confidence, label) as GET /v1/people, and min_confidence works there as it does on the single call: addresses
 * below it are left out, and a person left with none matches nobody (404 or not_found) and costs nothing.
 */
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { PeopleBulkResponse } from "../../shared/bulk-lookups.ts";
import { LookupJob, LookupJobResultsPage } from "../../shared/lookup-jobs.ts";
import { writeStoredEmailAnswers } from "../../edge/people/store.ts";
import { call, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

const RULES = { maxAgeSeconds: 2_592_000, recheckSeconds: 86_400 };
const deliverable = (email: string) => ({ email, classification: "valid", smtp_outcome: "accepted", reason: "deliverable", checked_at: Date.now() });

afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
});

/** Two people: `strong` with one address our check confirmed (97) and one never checked (75); `weak` with only a never-checked one. */
async function world(tag: string) {
  const strong = uniqueIds();
  const weak = uniqueIds();
  await insertPerson({ ...strong, emails: [`ok@${tag}.example`, `maybe@${tag}.example`], phones: ["+14155550123"] });
  await insertPerson({ ...weak, emails: [`weak@${tag}.example`] });
  await writeStoredEmailAnswers(db, [deliverable(`ok@${tag}.example`)], RULES);
  return { strong, weak };
}

async function bulk(token: string, body: unknown) {
  const res = await call("/v1/people/bulk", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const json = (await res.json()) as unknown;
  return { res, json };
}

describe("POST /v1/people/bulk with confidence", () => {
  it("gives each item the email_details a single lookup gives, confidence and sources included", async () => {
    const { token } = await newAccount(10);
    const { strong } = await world("bc-a");
    const { res, json } = await bulk(token, { requests: [{ params: { profnet_id: strong.profnet_id } }], include: ["email_details"] });
    expect(res.status).toBe(200);
    const item = PeopleBulkResponse.parse(json).results[0]!;
    const single = await call(`/v1/people?profnet_id=${strong.profnet_id}&include=email_details`, { token });
    expect(item.data).toEqual(await single.json());
    expect(item.data!.email_details!.map((d) => [d.email, d.sources, d.confidence, d.confidence_label])).toEqual([
      ["ok@bc-a.example", 1, 97, "high"],
      ["maybe@bc-a.example", 1, 40, "low"],
    ]);
  });

  it("min_confidence leaves out addresses below it, and a person left with none is a 404 that costs nothing", async () => {
    const { token, accountId } = await newAccount(10);
    const { strong, weak } = await world("bc-b");
    const { res, json } = await bulk(token, {
      requests: [{ params: { profnet_id: strong.profnet_id }, reference: "s" }, { params: { codehost_login: weak.codehost_login }, reference: "w" }],
      include: ["email_details"],
      min_confidence: 90,
    });
    expect([res.status, res.headers.get("x-credits-charged"), res.headers.get("x-credits-remaining")]).toEqual([200, "1", "9"]);
    const [s, w] = PeopleBulkResponse.parse(json).results;
    expect(s).toMatchObject({ status: 200, reference: "s", data: { email_addresses: ["ok@bc-b.example"], phone_numbers: ["+14155550123"] } });
    expect(s!.data!.email_details!.map((d) => d.email)).toEqual(["ok@bc-b.example"]);
    expect(w).toEqual({ status: 404, reference: "w", error: "No profile found for the given parameters" });
    // The weak person was not disclosed.
    const logged = await db.all<{ n: number }>(sql`select count(*) as n from person_access_log where account_id = ${accountId}`);
    expect(Number(logged[0]!.n)).toBe(1);
    // A decimal string is taken as the query's; the floor is inclusive.
    const atFloor = await bulk(token, { requests: [{ params: { codehost_login: weak.codehost_login } }], min_confidence: "40" });
    expect(PeopleBulkResponse.parse(atFloor.json).results[0]!.status).toBe(200);
  });

  it.each([101, -1, 1.5, "high", "1e2", true, [50]])("min_confidence %j is a 400 for the whole call naming it, and charges nothing", async (value) => {
    const { token } = await newAccount(3);
    const { strong } = await world(`bc-c${String(value).length}`);
    const { res, json } = await bulk(token, { requests: [{ params: { profnet_id: strong.profnet_id } }], min_confidence: value });
    expect([res.status, res.headers.get("x-credits-charged")]).toEqual([400, "0"]);
    expect(json).toEqual({ error: "min_confidence must be an integer between 0 and 100" });
  });
});

describe("lookup jobs with min_confidence", () => {
  async function waitFor(token: string, id: string) {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await call(`/v1/lookup_jobs/${id}`, { token });
      const job = LookupJob.strict().parse(await res.json());
      if (job.status === "completed") return job;
      if (Date.now() > deadline) throw new Error(`lookup job ${id} still ${job.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it("leaves out addresses below it in each line, and a line whose person is left with none is not_found and not charged", async () => {
    const { token } = await newAccount(10);
    const { strong, weak } = await world("bc-d");
    const list = `Name,profnet_id\r\nStrong,${strong.profnet_id}\r\nWeak,${weak.profnet_id}\r\n`;
    const res = await call("/v1/lookup_jobs?include=email_details&min_confidence=90", { method: "POST", token, headers: { "content-type": "text/csv" }, body: list });
    expect(res.status, await res.clone().text()).toBe(202);
    const job = LookupJob.strict().parse(await res.json());
    expect(job.min_confidence).toBe(90);
    const done = await waitFor(token, job.id);
    expect(done.counts).toMatchObject({ found: 1, not_found: 1 });
    expect(done.credits.charged).toBe(1);
    const page = LookupJobResultsPage.strict().parse(await (await call(`/v1/lookup_jobs/${job.id}/results`, { token })).json());
    expect(page.results.map((r) => [r.line, r.status])).toEqual([
      [1, "found"],
      [2, "not_found"],
    ]);
    expect(page.results[0]!.data!.email_details!.map((d) => [d.email, d.confidence])).toEqual([["ok@bc-d.example", 97]]);
  });

  it("refuses a bad min_confidence with 400 naming it, and creates nothing", async () => {
    const { token, accountId } = await newAccount(10);
    const res = await call("/v1/lookup_jobs?min_confidence=200", { method: "POST", token, headers: { "content-type": "text/csv" }, body: "profnet_id\r\n1\r\n" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "min_confidence must be an integer between 0 and 100" });
    const [row] = await db.all<{ n: number }>(sql`select count(*) as n from lookup_jobs where account_id = ${accountId}`);
    expect(Number(row!.n)).toBe(0);
  });
});
