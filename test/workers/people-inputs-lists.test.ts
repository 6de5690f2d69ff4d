/**
 * The new lookup inputs (an email, a phone, a name at a company) on the list paths: POST /v1/people/bulk items and
 * lookup job lines (CSV columns guessed from a CRM's header, JSON Lines fields) answer each as GET /v1/people does,
 * with the same precedence, ambiguity and conflict rules, charge only people found, record what found them, and a
 * job with include=profile carries the name and employment in its lines and its CSV download. The Worker in workerd
 * against the real libSQL engine; people stored as the import stores them (test/workers/helpers.ts).
 */
import { createClient } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, inject, it } from "vitest";
import { PeopleBulkResponse } from "../../shared/bulk-lookups.ts";
import { LookupJob, LookupJobResultsPage, type LookupJobResult } from "../../shared/lookup-jobs.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
  await cancelUnfinishedJobs();
});

/** A world of four people at one fresh company: two share a name (Jo Kim), one has a phone, one a shared inbox. */
async function company() {
  const ids = [uniqueIds(), uniqueIds(), uniqueIds(), uniqueIds()] as const;
  const domain = `crm${ids[0].profnet_id}.example`;
  const employer = `Kim Brothers ${ids[0].profnet_id} Ltd`;
  const at = (local: string) => `${local}@${domain}`;
  const phone = `+1202558${String(ids[0].profnet_id % 10_000).padStart(4, "0")}`;
  const job = { employer, domains: [domain], title: "Engineer", current: true };
  const ada = await insertPerson({ ...ids[0], emails: [at("ada.lovelace")], names: [{ full: "Ada Lovelace" }], employment: [job] });
  const grace = await insertPerson({ ...ids[1], emails: [at("grace")], phones: [phone], names: [{ given: "Grace", family: "Hopper" }], employment: [{ ...job, title: "Rear Admiral" }] });
  const jo1 = await insertPerson({ ...ids[2], emails: [at("jo1"), at("team")], names: [{ full: "Jo Kim" }], employment: [job] });
  const jo2 = await insertPerson({ ...ids[3], emails: [at("jo2"), at("team")], names: [{ full: "Jo Kim" }], employment: [job] });
  return { ids, domain, employer, at, phone, personIds: { ada, grace, jo1, jo2 } };
}

describe("POST /v1/people/bulk with email, phone and name items", () => {
  it("answers each item as GET /v1/people does: found, not found, ambiguous, conflicting, malformed; charges only those found", async () => {
    const { token, accountId } = await newAccount(20);
    const w = await company();
    const items: Record<string, string>[] = [
      { email: w.at("ADA.LOVELACE") },
      { phone: w.phone },
      { full_name: "GRACE HOPPER", company_domain: `https://${w.domain}` },
      { first_name: "Ada", last_name: "Lovelace", company: w.employer.toLowerCase() },
      { email: w.at("nobody") },
      { full_name: "Jo Kim", company_domain: w.domain },
      { email: w.at("team") },
      { email: w.at("ada.lovelace"), phone: w.phone },
      { email: "not an address" },
      { full_name: "Ada Lovelace" },
    ];
    const res = await call("/v1/people/bulk", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ requests: items.map((params) => ({ params })) }) });
    expect(res.status).toBe(200);
    const { results } = PeopleBulkResponse.strict().parse(await res.json());
    const singles = [];
    for (const query of items) {
      const single = await call(`/v1/people?${new URLSearchParams(query)}`, { token });
      singles.push([single.status, ((await single.json()) as { error?: string }).error ?? null]);
    }
    // Each item as the single lookup answers it (the singles charged again; only the batch's count is asserted below).
    expect(results.map((r) => [r.status, r.error ?? null])).toEqual(singles);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 404, 404, 404, 409, 400, 400]);
    expect(results.map((r) => r.data?.profnet_id ?? null).slice(0, 4)).toEqual([w.ids[0].profnet_id, w.ids[1].profnet_id, w.ids[1].profnet_id, w.ids[0].profnet_id]);
    expect([results[5]!.reason, results[6]!.reason, results[7]!.reason]).toEqual(["ambiguous_match", "ambiguous_match", "conflicting_inputs"]);
    // One charge per person in a batch: Ada (items 1 and 4) and Grace (items 2 and 3), each once, each logged once with
    // the input that found them first.
    expect(res.headers.get("x-credits-charged")).toBe("2");
    const log = await db.all<{ person_id: number; matched_by: string }>(
      sql`select person_id, matched_by from person_access_log where account_id = ${accountId} order by id limit 2`,
    );
    expect(log.map((r) => [r.person_id, r.matched_by])).toEqual([[w.personIds.ada, "email"], [w.personIds.grace, "phone"]]);
  });
});

const PATH = "/v1/lookup_jobs";
const quote = (cell: string) => (/[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell);
const csv = (rows: string[][]) => rows.map((r) => r.map(quote).join(",")).join("\r\n") + "\r\n";

async function runJob(token: string, body: string, query = "", type = "text/csv") {
  const res = await call(`${PATH}${query}`, { method: "POST", token, headers: { "content-type": type }, body });
  expect(res.status, await res.clone().text()).toBe(202);
  const job = LookupJob.strict().parse(await res.json());
  const deadline = Date.now() + 15_000;
  for (;;) {
    const now = LookupJob.strict().parse(await (await call(`${PATH}/${job.id}`, { token })).json());
    if (now.status === "completed") break;
    if (Date.now() > deadline) throw new Error(`lookup job ${job.id} still ${now.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const page = LookupJobResultsPage.strict().parse(await (await call(`${PATH}/${job.id}/results?limit=1000`, { token })).json());
  return { job, results: page.results };
}

describe("lookup jobs with a CRM's columns", () => {
  it("guesses Email, Phone, First Name, Last Name and Company from the header; answers each line as the single lookup; keeps the customer's columns", async () => {
    const { token, accountId } = await newAccount(20);
    const w = await company();
    const list = csv([
      ["Record ID", "First Name", "Last Name", "Company Name", "Email Address", "Mobile", "Owner"],
      ["1", "Ada", "Lovelace", w.employer, "", "", "me"],
      ["2", "", "", "", "", w.phone, "me"],
      ["3", "", "", "", w.at("Ada.Lovelace"), "", "me"],
      ["4", "Jo", "Kim", w.employer, "", "", "me"],
      ["5", "Jo", "Kim", w.employer, w.at("jo2"), "", "me"],
      ["6", "Ada", "Lovelace", w.employer, w.at("grace"), "", "me"],
      ["7", "Ada", "", w.employer, "", "", "me"],
      ["8", "Nobody", "Here", w.employer, "", "", "me"],
    ]);
    const { job, results } = await runJob(token, list, "?include=profile");
    expect(job.input.columns).toEqual({ email: "Email Address", phone: "Mobile", first_name: "First Name", last_name: "Last Name", company: "Company Name" });
    expect(job.include).toEqual(["profile"]);
    expect(results.map((r) => [r.line, r.status, r.data?.profnet_id ?? null])).toEqual([
      [1, "found", w.ids[0].profnet_id],
      [2, "found", w.ids[1].profnet_id],
      [3, "found", w.ids[0].profnet_id],
      [4, "not_found", null],
      [5, "found", w.ids[3].profnet_id],
      [6, "not_found", null],
      [7, "invalid", null],
      [8, "not_found", null],
    ]);
    // Ambiguous and conflicting lines say so; charged nothing.
    expect(results[3]!.error).toMatch(/ambiguous|more than one/i);
    expect(results[5]!.error).toMatch(/different people|conflict/i);
    expect(results[0]!.input).toEqual({ "Record ID": "1", "First Name": "Ada", "Last Name": "Lovelace", "Company Name": w.employer, "Email Address": "", Mobile: "", Owner: "me" });
    expect(results[0]!.data?.name).toEqual({ full: "Ada Lovelace", given: "Ada", family: "Lovelace", middle: null });
    expect(results[0]!.data?.employment).toEqual([{ employer: w.employer, domains: [w.domain], title: "Engineer", start: null, end: null, current: true }]);
    const charged = await db.all<{ n: number }>(sql`select count(*) as n from credit_ledger where account_id = ${accountId} and reason = 'lookup'`);
    expect(Number(charged[0]!.n)).toBe(3); // ada (lines 1 and 3: one person, charged once), grace, jo2
    const matched = await db.all<{ matched_by: string }>(sql`select matched_by from person_access_log where account_id = ${accountId} order by id`);
    expect(matched.map((r) => r.matched_by)).toEqual(["name", "phone", "email"]);
    const download = (await (await call(`${PATH}/${job.id}/results?format=csv`, { token })).text()).split("\r\n");
    expect(download[0]).toMatch(/,lookup_microblog_username,lookup_full_name,lookup_employer,lookup_title,lookup_employer_domains$/);
    expect(download[1]).toMatch(new RegExp(`,Ada Lovelace,${w.employer},Engineer,${w.domain.replace(/\./g, "\\.")}$`));
  });

  it("takes JSON Lines with the inputs' own field names; an erased person's lines are blanked and nobody finds them again", async () => {
    const { token } = await newAccount(20);
    const w = await company();
    const lines = [
      { email: w.at("grace") },
      { full_name: "Grace Hopper", company_domain: w.domain },
      { phone: w.phone, country: "US" },
    ].map((l) => JSON.stringify(l));
    const { job, results } = await runJob(token, lines.join("\n"), "", "application/jsonl");
    expect(results.map((r) => [r.status, r.data?.profnet_id ?? null])).toEqual([
      ["found", w.ids[1].profnet_id],
      ["found", w.ids[1].profnet_id],
      ["found", w.ids[1].profnet_id],
    ]);
    const client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
    try {
      await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "profnet_id", value: w.ids[1].profnet_id }, "test", TEST_FEEDBACK_HASH_KEY);
    } finally {
      client.close();
    }
    const after = LookupJobResultsPage.strict().parse(await (await call(`${PATH}/${job.id}/results`, { token })).json());
    expect(after.results.map((r: LookupJobResult) => r.status)).toEqual(["erased", "erased", "erased"]);
    const again = await runJob(token, lines.join("\n"), "", "application/jsonl");
    expect(again.results.map((r) => r.status)).toEqual(["not_found", "not_found", "not_found"]);
  });
});
