/**
 * Issue 43's findings on what the list paths disclose, against the real database and the Worker's own queue handler
 * (docs/api.md "POST /v1/people/bulk", docs/lookup-jobs.md "Credits running out", "Results"): a call or turn that
 * cannot pay tells nothing of who is held (2); a lookup job's columns and pages are bounded (3); an erasure after a
 * merge reaches what the bulk lookups kept of the merged person (4); where people events go is decided only by a
 * caller who may read them, and audited (5); a batch answer is replayed only to whoever made the call. Each test failed
 * on the code before the fix, for that reason.
 */
import { createClient, type Client } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { LookupJob, LookupJobResultsPage } from "../../shared/lookup-jobs.ts";
import { addCredits, createApiKey } from "../../scripts/admin/accounts.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { applyMergeCandidate, listMergeCandidates, undoMergeCandidate } from "../../scripts/admin/people-merge.ts";
import { parsePersonRecord } from "../../scripts/admin/people-record.ts";
import { upsertPeopleBatch } from "../../scripts/admin/people-upsert.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, callWith, cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";
import { deliverLookup, recordingLookupQueue } from "./lookup-job-turns.ts";

let client: Client;
beforeAll(() => {
  client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
});
afterAll(() => client.close());
afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
  await cancelUnfinishedJobs();
});

const PATH = "/v1/lookup_jobs";
const csv = (rows: (string | number)[][]) => rows.map((r) => r.join(",")).join("\r\n") + "\r\n";

async function bulk(token: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await call("/v1/people/bulk", { method: "POST", token, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const json = (await res.json()) as { results?: { status: number; reason?: string }[]; error?: string };
  return { status: res.status, statuses: json.results?.map((r) => r.status), reasons: json.results?.map((r) => r.reason ?? null), charged: res.headers.get("x-credits-charged"), json };
}
const items = (...people: { profnet_id: number }[]) => people.map((p) => ({ params: { profnet_id: String(p.profnet_id) } }));

/** P has an address, Q none, R is held by nobody. */
async function threePeople() {
  const p = uniqueIds();
  await insertPerson({ ...p, emails: [`p-${p.profnet_id}@example.org`] });
  const q = uniqueIds();
  await insertPerson(q);
  return { p, q, r: uniqueIds() };
}

async function eraseProfnet(profnetId: number) {
  return erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "profnet_id", value: profnetId }, "test", TEST_FEEDBACK_HASH_KEY);
}

describe("nothing is told free of who is held (finding 2)", () => {
  it("with no credits, every item of a batch answers 402, held or not, whatever min_confidence", async () => {
    const { token } = await newAccount(0);
    const { p, q, r } = await threePeople();
    const none = await bulk(token, { requests: items(p, q, r) });
    expect([none.statuses, none.charged]).toEqual([[402, 402, 402], "0"]);
    for (const floor of [0, 40, 100]) expect((await bulk(token, { requests: items(p, q, r), min_confidence: floor })).statuses, `min_confidence ${floor}`).toEqual([402, 402, 402]);
    // A 400 is still the item's own problem.
    expect((await bulk(token, { requests: [...items(p), { params: { profnet_id: "12abc" } }] })).statuses).toEqual([402, 400]);
  });

  it("a key whose daily cap is spent: every item 402 daily_credit_cap, held or not", async () => {
    const { accountId } = await newAccount(100);
    const capped = await createApiKey(db, accountId, { name: "capped", dailyCreditCap: 1 });
    const { p, q, r } = await threePeople();
    expect((await bulk(capped.token, { requests: items(p) })).statuses).toEqual([200]);
    const after = await bulk(capped.token, { requests: items(q, r, p) });
    expect([after.statuses, after.reasons]).toEqual([
      [402, 402, 402],
      ["daily_credit_cap", "daily_credit_cap", "daily_credit_cap"],
    ]);
  });

  it("once the call cannot pay, every later item is 402: the first items are answered as they are, a person already paid for is served again", async () => {
    const { p, q, r } = await threePeople();
    const one = await newAccount(1);
    const cut = await bulk(one.token, { requests: items(r, p, r, q, p) }, { "idempotency-key": crypto.randomUUID() });
    expect([cut.statuses, cut.charged]).toEqual([[404, 200, 402, 402, 200], "1"]);
    const enough = await newAccount(5);
    expect((await bulk(enough.token, { requests: items(r, p, r, q, p) })).statuses).toEqual([404, 200, 404, 200, 200]);
  });

  it("a lookup job that cannot pay refuses every line after the last one charged, held or not, and matches them again when it resumes", async () => {
    const { token, accountId } = await newAccount(0);
    const { p, q, r } = await threePeople();
    const recording = recordingLookupQueue();
    const bindings = { LOOKUP_JOBS_QUEUE: recording.queue };
    const res = await callWith(bindings, PATH, { method: "POST", token, headers: { "content-type": "text/csv" }, body: csv([["profnet_id"], [p.profnet_id], [q.profnet_id], [r.profnet_id]]) });
    const job = LookupJob.strict().parse(await res.json());
    await deliverLookup([{ kind: "lookup", type: "turn", job: job.id }], bindings);
    const paused = LookupJob.strict().parse(await (await call(`${PATH}/${job.id}`, { token })).json());
    expect([paused.status, paused.counts]).toEqual(["paused", { found: 0, not_found: 0, invalid: 0, refused: 3, erased: 0 }]);
    await addCredits(db, accountId, 5);
    await deliverLookup([{ kind: "lookup", type: "resume", job: job.id }, { kind: "lookup", type: "turn", job: job.id }], bindings);
    const done = LookupJob.strict().parse(await (await call(`${PATH}/${job.id}`, { token })).json());
    expect([done.status, done.counts, done.credits.charged]).toEqual(["completed", { found: 2, not_found: 1, invalid: 0, refused: 0, erased: 0 }, 2]);
  });
});

describe("a lookup job's results are bounded (finding 3)", () => {
  it("a line of more than 1,000 columns is refused at creation, naming it, as for verification jobs", async () => {
    const { token, accountId } = await newAccount(0);
    const header = ["profnet_id", ...Array.from({ length: 1_000 }, (_, i) => `c${i}`)];
    const res = await call(PATH, { method: "POST", token, headers: { "content-type": "text/csv" }, body: csv([header, ["1"]]) });
    expect([res.status, await res.json()]).toEqual([400, { error: "Line 1: a line has at most 1,000 columns" }]);
    const wide = csv([["profnet_id", "b"], ["1", ...Array.from({ length: 1_000 }, () => "x")]]);
    expect((await call(PATH, { method: "POST", token, headers: { "content-type": "text/csv" }, body: wide })).status).toBe(400);
    expect(await db.all(sql`select 1 from lookup_jobs where account_id = ${accountId}`)).toEqual([]);
  });

  it("a JSON page ends at about 1 MiB of the customer's data; the cursor goes on from there and every line comes once", async () => {
    const { token } = await newAccount(0);
    const cell = "x".repeat(60_000);
    const rows: (string | number)[][] = [["profnet_id", "notes"], ...Array.from({ length: 40 }, () => ["", cell])];
    const res = await call(PATH, { method: "POST", token, headers: { "content-type": "text/csv" }, body: csv(rows) });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { id: string }).id;
    const lines: number[] = [];
    let cursor = "";
    let pages = 0;
    for (;;) {
      const page = LookupJobResultsPage.strict().parse(await (await call(`${PATH}/${id}/results?limit=1000${cursor ? `&cursor=${cursor}` : ""}`, { token })).json());
      pages++;
      expect(page.results.length).toBeLessThanOrEqual(Math.ceil((1024 * 1024) / 60_000));
      lines.push(...page.results.map((r) => r.line));
      if (page.next_cursor === null) break;
      cursor = page.next_cursor;
    }
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(lines).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });
});

describe("an erasure after a merge reaches every copy (finding 4)", () => {
  const record = (value: Record<string, unknown>) => {
    const parsed = parsePersonRecord(value);
    if (!parsed.ok) throw new Error(parsed.reason);
    return parsed.record;
  };
  const importLines = (lines: Record<string, unknown>[], source: string) => upsertPeopleBatch(client, lines.map((value, i) => ({ line: i + 1, record: record(value) })), source);

  /** K (older) and M, an account's lookup job and Idempotency-Key batch that received M, and the candidate that says they are one. */
  async function mergedAway() {
    const k = uniqueIds();
    const m = uniqueIds();
    const address = `merged-${m.profnet_id}@merge.example`;
    await importLines([{ codehost_login: k.codehost_login, email_addresses: [`k-${k.profnet_id}@merge.example`] }, { profnet_id: m.profnet_id, email_addresses: [address] }], "acme");
    await importLines([{ profnet_id: m.profnet_id, codehost_login: k.codehost_login }], "globex");
    const [ids] = await db.all<{ k: number; m: number }>(sql`select (select id from people where lower(codehost_login) = lower(${k.codehost_login})) as k, (select id from people where profnet_id = ${m.profnet_id}) as m`);
    const candidate = (await listMergeCandidates(client, "open")).find((c) => c.people.join() === [ids!.k, ids!.m].join())!;
    const { token } = await newAccount(10);
    const res = await call(PATH, { method: "POST", token, headers: { "content-type": "text/csv" }, body: csv([["profnet_id"], [m.profnet_id]]) });
    const job = ((await res.json()) as { id: string }).id;
    for (let i = 0; i < 100 && LookupJob.parse(await (await call(`${PATH}/${job}`, { token })).json()).status !== "completed"; i++) await new Promise((r) => setTimeout(r, 100));
    const key = { "idempotency-key": crypto.randomUUID() };
    expect((await bulk(token, { requests: items(m) }, key)).statuses).toEqual([200]);
    return { k, m, address, candidate: candidate.id, token, job, key };
  }

  it("erasing the person a merge kept blanks the merged-away person's lookup job lines and batch replays", async () => {
    const { m, address, candidate, token, job, key } = await mergedAway();
    expect(await applyMergeCandidate(client, candidate)).toMatchObject({ merged: expect.any(Number) });
    expect(await eraseProfnet(m.profnet_id)).toMatchObject({ erased: 1 });
    const after = LookupJob.parse(await (await call(`${PATH}/${job}`, { token })).json());
    expect(after.counts).toMatchObject({ found: 0, erased: 1 });
    expect(await (await call(`${PATH}/${job}/results?format=csv`, { token })).text()).not.toContain(address);
    const replay = await bulk(token, { requests: items(m) }, key);
    expect(replay.statuses).toEqual([410]);
    expect(JSON.stringify(replay.json)).not.toContain(address);
  }, 30_000);

  it("after an undone merge, the rows are the merged-away person's again: erasing the kept one leaves them, erasing the other blanks them", async () => {
    const { k, m, address, candidate, token, job, key } = await mergedAway();
    await applyMergeCandidate(client, candidate);
    await undoMergeCandidate(client, candidate);
    await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "codehost_login", value: k.codehost_login }, "test", TEST_FEEDBACK_HASH_KEY);
    expect(LookupJob.parse(await (await call(`${PATH}/${job}`, { token })).json()).counts).toMatchObject({ found: 1, erased: 0 });
    expect((await bulk(token, { requests: items(m) }, key)).statuses).toEqual([200]);
    await eraseProfnet(m.profnet_id);
    expect(LookupJob.parse(await (await call(`${PATH}/${job}`, { token })).json()).counts).toMatchObject({ found: 0, erased: 1 });
    expect(await (await call(`${PATH}/${job}/results?format=csv`, { token })).text()).not.toContain(address);
    expect((await bulk(token, { requests: items(m) }, key)).statuses).toEqual([410]);
  }, 30_000);
});

describe("where people events go is decided by a caller who may read them (finding 5)", () => {
  it("events:write alone sets nothing; with people:read it does, and each change is an audit event naming the host", async () => {
    const { token: owner, accountId } = await newAccount(0);
    const eventsOnly = await createApiKey(db, accountId, { name: "events", scopes: ["events:write"] });
    const both = await createApiKey(db, accountId, { name: "events and people", scopes: ["events:write", "people:read"] });
    const put = (token: string) => call("/v1/people/events/subscription", { method: "PUT", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ url: "https://hooks.example.com/p/s3cret-path" }) });
    const refused = await put(eventsOnly.token);
    expect([refused.status, await refused.json()]).toEqual([403, { error: "This API key lacks the scope people:read", reason: "missing_scope", scope: "people:read" }]);
    expect((await call("/v1/people/events/subscription", { method: "DELETE", token: eventsOnly.token })).status).toBe(403);
    expect((await put(both.token)).status).toBe(200);
    expect((await put(both.token)).status).toBe(200);
    expect((await call("/v1/people/events/subscription", { method: "DELETE", token: both.token })).status).toBe(200);
    const trail = (await (await call("/v1/audit-events", { token: owner })).json()) as { events: { action: string; actor: string; details: Record<string, unknown> }[] };
    const changes = trail.events.filter((e) => e.action.startsWith("account.people_events"));
    // Newest first; setting the same URL again changed nothing and wrote nothing.
    expect(changes).toEqual([
      expect.objectContaining({ action: "account.people_events_url_removed", actor: both.id, details: {} }),
      expect.objectContaining({ action: "account.people_events_url_set", actor: both.id, details: { host: "hooks.example.com" } }),
    ]);
    expect(JSON.stringify(trail)).not.toContain("s3cret-path");
  });

  it("a key without people:read cannot make a key with events:write", async () => {
    const { accountId } = await newAccount(0);
    const maker = await createApiKey(db, accountId, { name: "maker", scopes: ["keys:write", "events:write"] });
    const res = await call("/v1/keys", { method: "POST", token: maker.token, headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "child", scopes: ["events:write"] }) });
    expect([res.status, ((await res.json()) as { scope?: string }).scope]).toEqual([403, "people:read"]);
  });
});

describe("a batch answer is replayed only to whoever made the call", () => {
  it("another key of the account with the same Idempotency-Key and body gets 409, not the people", async () => {
    const { token, accountId } = await newAccount(5);
    const { p } = await threePeople();
    const key = { "idempotency-key": crypto.randomUUID() };
    expect((await bulk(token, { requests: items(p) }, key)).statuses).toEqual([200]);
    const other = await createApiKey(db, accountId, { name: "other", dailyCreditCap: 1 });
    const replay = await bulk(other.token, { requests: items(p) }, key);
    expect([replay.status, replay.json.error]).toEqual([409, "This Idempotency-Key was used by another key or member of this account: its answer is replayed only to whoever made that call"]);
    expect((await bulk(token, { requests: items(p) }, key)).statuses).toEqual([200]);
  });
});
