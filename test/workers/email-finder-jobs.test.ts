/**
 * Lookup jobs with find_emails (docs/lookup-jobs.md "Found addresses"): the quote, the finder phase after the lines are
 * answered, driven message by message through the Worker's own queue handler (a recording queue: what it sends is
 * delivered by hand), against the real probe and the fixture mail servers of test/fixtures/test-mail.ts, whose RCPTs
 * are counted at the server (mailStatsUrl); the charges, the customer's columns kept, and the pause at zero credits.
 */
import { createClient } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { LOOKUP_JOB_MESSAGES, LookupJob, LookupJobQuote, LookupJobResultsPage, type LookupJobResult } from "../../shared/lookup-jobs.ts";
import { RESUME_CHECK_SECONDS } from "../../edge/jobs/lookup/turns.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { addCredits, call, callWith, cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";
import { deliverLookup, lookupMessage, recordingLookupQueue } from "./lookup-job-turns.ts";

const PATH = "/v1/lookup_jobs";
const FINDER_MX = "127.0.0.34";

afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
  await cancelUnfinishedJobs();
});

async function rcptsAt(host: string): Promise<string[]> {
  const res = await fetch(`${inject("mailStatsUrl")}/?host=${host}`);
  return ((await res.json()) as { rcptTo: string[] }).rcptTo;
}
const countOf = (rcpts: string[], address: string) => rcpts.filter((r) => r === address).length;

/** A person we hold at a domain: a name, the employer and a work address (email-finder.test.ts's seed). */
const seed = (full: string, email: string, employer = "Finder Corp", domain = email.split("@")[1]!) =>
  insertPerson({ ...uniqueIds(), emails: [email], names: [{ full }], employment: [{ employer, domains: [domain], current: true }] });

beforeAll(async () => {
  // Known pairs, all {first}.{last}: the domains' pattern. Kai is also a person a line finds by name.
  await seed("Kai Jobs", "kai.jobs@finder.test");
  await seed("Uma Pilot", "uma.pilot@finder.test");
  await seed("Eva Batch", "eva.batch@finder.test");
  await seed("Max Rand", "max.rand@catchall.test", "Catch Co");
  await seed("Eli Stone", "eli.stone@catchall.test", "Catch Co");
  // finder.test's catch-all answer known before the job's finds (as once any file's find there ran): their checks are
  // made without the catch-all test, and a later find taking them goes by the domain's answer.
  const { token } = await newAccount(1);
  expect((await call(`/v1/email_finder?${new URLSearchParams({ full_name: "Ugo Nil", domain: "finder.test" })}`, { token })).status).toBe(404);
});

const csv = (rows: string[][]) => rows.map((r) => r.join(",")).join("\r\n") + "\r\n";
const LIST = csv([
  ["first_name", "last_name", "company_domain", "crm_id"],
  ["Rosa", "Diaz", "finder.test", "A1"],
  ["Lia", "Sand", "catchall.test", "A2"],
  ["Zoe", "Nowhere", "finder.test", "A3"],
  ["Kai", "Jobs", "finder.test", "A4"],
]);

async function getJob(token: string, id: string) {
  const res = await call(`${PATH}/${id}`, { token });
  expect(res.status).toBe(200);
  return LookupJob.strict().parse(await res.json());
}

async function results(token: string, id: string): Promise<LookupJobResult[]> {
  const res = await call(`${PATH}/${id}/results?limit=1000`, { token });
  expect(res.status).toBe(200);
  return LookupJobResultsPage.strict().parse(await res.json()).results;
}

/** Delivers what the engine sent for the job, message by message, until nothing more is sent (or a resume check is). */
async function drive(sent: ReturnType<typeof recordingLookupQueue>["sent"], bindings: object, job: string) {
  for (let i = 0; i < 20; i++) {
    const next = sent.splice(0).filter((m) => m.body.kind === "lookup" && m.body.job === job && (m.body.type === "turn" || m.body.type === "phase"));
    if (next.length === 0) return;
    if (next.some((m) => (m.delaySeconds ?? 0) > 0)) await new Promise((r) => setTimeout(r, 1000));
    await deliverLookup([next[0]!.body], bindings);
  }
  throw new Error(`lookup job ${job} still sending messages`);
}

describe("find_emails", () => {
  it("400 for a bad find_emails, before the list is read", async () => {
    const { token } = await newAccount(5);
    const res = await call(`${PATH}?find_emails=yes`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: LIST });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("find_emails must be true or false");
  });

  it("quotes the finds the finder may charge as an upper bound", async () => {
    const { token } = await newAccount(7);
    const without = LookupJobQuote.strict().parse(await (await call(`${PATH}?dry_run=true`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: LIST })).json());
    expect(without.find_lines).toBeUndefined();
    expect(without.max_credits).toBe(4);
    const res = await call(`${PATH}?dry_run=true&find_emails=true`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: LIST });
    expect(res.status).toBe(200);
    expect(LookupJobQuote.strict().parse(await res.json())).toMatchObject({ lines: 4, well_formed: 4, repeated: 0, find_lines: 4, max_credits: 8, credit_balance: 7 });
  });

  it("finds addresses for the lines the lookup gave none at the domain, after the lines are answered: one RCPT each, 1 credit only when confirmed, the customer's columns kept", async () => {
    const { token, accountId } = await newAccount(10);
    const recording = recordingLookupQueue();
    const bindings = { LOOKUP_JOBS_QUEUE: recording.queue };
    const res = await callWith(bindings, `${PATH}?find_emails=true`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: LIST });
    expect(res.status, await res.clone().text()).toBe(202);
    const job = LookupJob.strict().parse(await res.json());
    expect(job).toMatchObject({ find_emails: true, finder: { state: "pending" }, credits: { max: 8 } });
    const before = await rcptsAt(FINDER_MX);
    recording.sent.length = 0;

    // The lookups first: Kai is held (found, charged); the others are not.
    await deliverLookup([lookupMessage("turn", job.id)], bindings);
    const answered = await getJob(token, job.id);
    expect([answered.status, answered.counts.found, answered.counts.not_found, answered.credits.charged]).toEqual(["running", 1, 3, 1]);
    expect(recording.sent.map((m) => m.body)).toEqual([lookupMessage("phase", job.id)]);

    await drive(recording.sent, bindings, job.id);
    const done = await getJob(token, job.id);
    expect([done.status, done.finder, done.credits.charged]).toEqual(["completed", { state: "done" }, 2]);

    const lines = await results(token, job.id);
    expect(lines.map((l) => [l.status, l.input.crm_id, l.find?.status, l.find?.email ?? null, l.find?.method ?? null, l.find?.confirmed ?? null, l.find?.credits_charged ?? null])).toEqual([
      ["not_found", "A1", "found", "rosa.diaz@finder.test", "receiver_accepted", true, 1],
      ["not_found", "A2", "found", "lia.sand@catchall.test", "pattern", false, 0],
      ["not_found", "A3", "not_found", null, null, null, null],
      ["found", "A4", "not_needed", null, null, null, null],
    ]);
    expect(lines[1]!.find?.accept_all).toBe(true);
    expect(lines[0]!.input).toEqual({ first_name: "Rosa", last_name: "Diaz", company_domain: "finder.test", crm_id: "A1" });
    // One RCPT for Rosa, one for Zoe (refused): never a permutation; none for Kai, whose address the lookup gave.
    const after = await rcptsAt(FINDER_MX);
    expect(countOf(after, "rosa.diaz@finder.test") - countOf(before, "rosa.diaz@finder.test")).toBe(1);
    expect(countOf(after, "zoe.nowhere@finder.test") - countOf(before, "zoe.nowhere@finder.test")).toBe(1);
    expect(countOf(after, "kai.jobs@finder.test")).toBe(countOf(before, "kai.jobs@finder.test"));
    // The ledger: Kai's lookup and Rosa's find, each naming the job and the line.
    const ledger = await db.all<{ request_id: string }>(sql`select request_id from credit_ledger where account_id = ${accountId} and reason = 'lookup' order by id`);
    expect(ledger.map((r) => r.request_id)).toEqual([`${job.id}:4`, `${job.id}:find:1`]);

    const download = await call(`${PATH}/${job.id}/results?format=csv`, { token });
    const rows = (await download.text()).split("\r\n");
    expect(rows[0]).toMatch(/^first_name,last_name,company_domain,crm_id,lookup_status,.*,found_email,found_confidence,found_method,found_confirmed$/);
    expect(rows[1]).toMatch(/^Rosa,Diaz,finder\.test,A1,not_found,.*,rosa\.diaz@finder\.test,\d+,receiver_accepted,true$/);
    expect(rows[2]).toMatch(/,lia\.sand@catchall\.test,\d+,pattern,false$/);
    expect(rows[3]).toMatch(/^Zoe,Nowhere,finder\.test,A3,not_found,.*,,,,$/);

    // The same job again within 30 days: Rosa's find is a repeat, free; and it asks her receiver nothing again.
    const again = await callWith(bindings, `${PATH}?find_emails=true`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: csv([["full_name", "company_domain"], ["Rosa Diaz", "finder.test"]]) });
    const second = LookupJob.strict().parse(await again.json());
    recording.sent.length = 0;
    await deliverLookup([lookupMessage("turn", second.id)], bindings);
    await drive(recording.sent, bindings, second.id);
    const repeated = await getJob(token, second.id);
    expect([repeated.status, repeated.credits.charged]).toEqual(["completed", 0]);
    expect((await results(token, second.id))[0]!.find).toMatchObject({ status: "found", email: "rosa.diaz@finder.test", confirmed: true, credits_charged: 0 });
    expect(countOf(await rcptsAt(FINDER_MX), "rosa.diaz@finder.test")).toBe(countOf(after, "rosa.diaz@finder.test"));

    // Erased later (held meanwhile, then erased): the address the finder gave the lines is no longer shown.
    await seed("Rosa Diaz", "rosa.diaz@finder.test");
    const client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
    expect(await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "email", value: "rosa.diaz@finder.test" }, "test", TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    expect((await results(token, job.id))[0]!.find).toEqual({ status: "erased", error: LOOKUP_JOB_MESSAGES.erased });
    const erasedCsv = (await (await call(`${PATH}/${job.id}/results?format=csv`, { token })).text()).split("\r\n");
    expect(erasedCsv[1]).not.toContain("rosa.diaz@finder.test");
  }, 60_000);

  it("pauses when the credits run out before a find that could be charged, and finds once credits are added", async () => {
    const { token, accountId } = await newAccount(1);
    const recording = recordingLookupQueue();
    const bindings = { LOOKUP_JOBS_QUEUE: recording.queue };
    const list = csv([["first_name", "last_name", "company_domain"], ["Hugo", "Lind", "finder.test"], ["Kai", "Jobs", "finder.test"]]);
    const job = LookupJob.strict().parse(await (await callWith(bindings, `${PATH}?find_emails=true`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: list })).json());
    recording.sent.length = 0;
    // Kai's lookup takes the one credit; Hugo's line matches nobody.
    await deliverLookup([lookupMessage("turn", job.id)], bindings);
    expect(recording.sent.map((m) => m.body)).toEqual([lookupMessage("phase", job.id)]);
    const before = await rcptsAt(FINDER_MX);
    recording.sent.length = 0;
    await deliverLookup([lookupMessage("phase", job.id)], bindings);
    const paused = await getJob(token, job.id);
    expect([paused.status, paused.pause?.reason, paused.credits.charged, paused.finder]).toEqual(["paused", "insufficient_credits", 1, { state: "finding" }]);
    expect(recording.sent).toEqual([{ body: lookupMessage("resume", job.id), delaySeconds: RESUME_CHECK_SECONDS }]);
    // Nothing asked of a receiver for a find that could not be paid for.
    expect(countOf(await rcptsAt(FINDER_MX), "hugo.lind@finder.test")).toBe(countOf(before, "hugo.lind@finder.test"));

    await addCredits(db, accountId, 5);
    recording.sent.length = 0;
    await deliverLookup([lookupMessage("resume", job.id)], bindings);
    expect((await getJob(token, job.id)).status).toBe("running");
    expect(recording.sent.map((m) => m.body)).toEqual([lookupMessage("phase", job.id)]);
    await drive(recording.sent, bindings, job.id);
    const done = await getJob(token, job.id);
    expect([done.status, done.credits.charged]).toEqual(["completed", 2]);
    expect((await results(token, job.id)).map((l) => l.find?.email ?? l.find?.status)).toEqual(["hugo.lind@finder.test", "not_needed"]);
    expect(countOf(await rcptsAt(FINDER_MX), "hugo.lind@finder.test") - countOf(before, "hugo.lind@finder.test")).toBe(1);
  }, 60_000);
});
