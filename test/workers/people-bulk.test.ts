/**
 * POST /v1/people/bulk inside workerd against the real database (docs/api.md "POST /v1/people/bulk"): items answered
 * as GET /v1/people answers them, the partial-credit rule, one charge per person, the cap per item, the rate limit per
 * call (not per item), two round trips, Idempotency-Key replays (one after another, and 10 at once, charged once), and an erasure that
 * reaches a kept answer.
 */
import { createClient } from "@libsql/client/web";
import { describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { ContactInfo } from "../../shared/api.ts";
import { BULK_LOOKUP_MESSAGES, PeopleBulkResponse } from "../../shared/bulk-lookups.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { addCredits, createApiKey } from "../../scripts/admin/accounts.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, callWith, databaseRequestsServed, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

type Params = Record<string, unknown>;

async function bulk(token: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await call("/v1/people/bulk", { method: "POST", token, headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  return { res, body: json, results: res.status === 200 ? PeopleBulkResponse.strict().parse(json).results : [] };
}

const requests = (...params: Params[]) => ({ requests: params.map((p, i) => ({ params: p, reference: `ref-${i}` })) });

async function ledger(accountId: string) {
  return db.all<{ delta: number; balance_after: number; request_id: string }>(sql`select delta, balance_after, request_id from credit_ledger where account_id = ${accountId} and reason = 'lookup' order by id`);
}

async function balance(accountId: string) {
  const [row] = await db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
  return Number(row!.credit_balance);
}

async function person(emails: string[] = []) {
  const ids = uniqueIds();
  await insertPerson({ ...ids, emails, phones: emails.length ? ["+14155550123"] : [] });
  return ids;
}

describe("POST /v1/people/bulk: items", () => {
  it("answers each item in request order as GET /v1/people would, echoing references, and charges the found ones", async () => {
    const { token, accountId } = await newAccount(10);
    const ada = await person(["ada@gmail.com", "ada@engines.example"]);
    const bob = await person();
    const { res, results } = await bulk(token, {
      requests: [
        { params: { profnet_id: String(ada.profnet_id) }, reference: "crm-1" },
        { params: { codehost_login: "nobody-" + uniqueIds().codehost_login } },
        { params: { codehost_id: bob.codehost_id }, reference: "crm-3" },
        { params: {}, reference: "crm-4" },
      ],
      include: ["email_details"],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-charged")).toBe("2");
    expect(res.headers.get("x-credits-remaining")).toBe("8");
    expect(results.map((r) => [r.status, r.reference])).toEqual([
      [200, "crm-1"],
      [404, null],
      [200, "crm-3"],
      [400, "crm-4"],
    ]);
    const single = await call(`/v1/people?profnet_id=${ada.profnet_id}&include=email_details`, { token });
    expect(ContactInfo.strict().parse(results[0]!.data)).toEqual(await single.json());
    expect(results[1]!.error).toBe("No profile found for the given parameters");
    expect(results[3]!.error).toBe("One of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required");
    expect((await ledger(accountId)).map((r) => r.delta)).toEqual([-1, -1, -1]);
    // Each disclosure is recorded as a single lookup records it.
    const logged = await db.all<{ person_id: number }>(sql`select person_id from person_access_log where account_id = ${accountId}`);
    expect(logged).toHaveLength(3);
  });

  it("validates each item exactly as GET /v1/people validates its query: the same status and message, item by item", async () => {
    const { token } = await newAccount(0);
    const queries: Params[] = [
      {},
      { profnet_public_identifier: "   " },
      { codehost_login: "" },
      { other: "x" },
      ...["0", "-1", "1.5", "1e3", "9007199254740992", "+5", "0x10", "abc", "12abc", "1 2", "99999999999999999999"].flatMap((v) => [{ profnet_id: v }, { codehost_id: v }]),
      { codehost_login: "x".repeat(300) },
      { profnet_public_identifier: "y".repeat(257) },
      { profnet_id: "abc", codehost_login: "x".repeat(300) },
    ];
    const { results } = await bulk(token, requests(...queries));
    expect(results).toHaveLength(queries.length);
    for (const [i, query] of queries.entries()) {
      const single = await call(`/v1/people?${new URLSearchParams(query as Record<string, string>)}`, { token });
      const body = (await single.json()) as { error: string };
      expect([results[i]!.status, results[i]!.error], JSON.stringify(query)).toEqual([single.status, body.error]);
    }
  });

  it("answers the kinds of bad item only a JSON body can have, each alone: not an object, params not an object, a bad reference, a value of the wrong type", async () => {
    const { token } = await newAccount(5);
    const found = await person();
    const { res, results } = await bulk(token, {
      requests: [
        "profnet_id=1",
        { params: "profnet_id=1" },
        { params: { profnet_id: String(found.profnet_id) }, reference: 42 },
        { params: { profnet_id: true } },
        { params: { codehost_login: ["a"] } },
        { params: { profnet_id: found.profnet_id } },
        null,
        { params: { codehost_id: 1.5 } },
      ],
    });
    expect(res.status).toBe(200);
    expect(results.map((r) => [r.status, r.error ?? null])).toEqual([
      [400, BULK_LOOKUP_MESSAGES.itemNotAnObject],
      [400, BULK_LOOKUP_MESSAGES.paramsNotAnObject],
      [400, BULK_LOOKUP_MESSAGES.badReference],
      [400, "profnet_id must be a positive integer"],
      [400, "codehost_login must be a string"],
      [200, null],
      [400, BULK_LOOKUP_MESSAGES.itemNotAnObject],
      [400, "codehost_id must be a positive integer"],
    ]);
    expect(res.headers.get("x-credits-charged")).toBe("1");
  });
});

describe("POST /v1/people/bulk: the envelope", () => {
  it("is a 4xx for the whole call naming what is wrong, charges nothing and writes nothing", async () => {
    const { token, accountId } = await newAccount(5);
    const found = await person();
    const item = { params: { profnet_id: String(found.profnet_id) } };
    const cases: [unknown, number, string][] = [
      ["{", 400, "Malformed JSON body"],
      [[item], 400, BULK_LOOKUP_MESSAGES.notAnObject],
      [{ requests: item }, 400, BULK_LOOKUP_MESSAGES.requestsRequired],
      [{ requests: [] }, 400, BULK_LOOKUP_MESSAGES.requestsRequired],
      [{}, 400, BULK_LOOKUP_MESSAGES.requestsRequired],
      [{ requests: Array.from({ length: 101 }, () => item) }, 400, "Too many requests: a batch holds at most 100 (101 given)"],
      [{ requests: [item], include: ["emails"] }, 400, 'Unknown include "emails": expected email_details, profile'],
      [{ requests: [item], include: "email_details" }, 400, BULK_LOOKUP_MESSAGES.includeNotAList],
    ];
    for (const [body, status, error] of cases) {
      const { res, body: answer } = await bulk(token, body);
      expect([res.status, answer.error], JSON.stringify(body).slice(0, 60)).toEqual([status, error]);
      expect(res.headers.get("x-credits-charged")).toBe("0");
      expect(res.headers.get("x-credits-remaining")).toBe("5");
    }
    const badKey = await bulk(token, { requests: [item] }, { "idempotency-key": "x".repeat(256) });
    expect([badKey.res.status, badKey.body.error]).toEqual([400, "Idempotency-Key must be 1 to 255 printable ASCII characters"]);
    // A 20 MiB body: refused by its declared size, unread.
    const big = await call("/v1/people/bulk", { method: "POST", token, headers: { "content-type": "application/json" }, body: `{"requests":[${" ".repeat(20 * 1024 * 1024)}]}` });
    expect([big.status, await big.json()]).toEqual([413, { error: "Request body too large: a batch is at most 1 MiB" }]);
    expect(await ledger(accountId)).toEqual([]);
    expect(await balance(accountId)).toBe(5);
    expect(await db.all(sql`select 1 from lookup_batches where account_id = ${accountId}`)).toEqual([]);
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${accountId}`)).toEqual([]);
  });
});

describe("POST /v1/people/bulk: credits", () => {
  it("serves the first k found in request order when the balance covers k, and refuses the rest 402 uncharged", async () => {
    const { token, accountId } = await newAccount(3);
    const people = [await person(), await person(), await person(), await person(), await person()];
    const missing = uniqueIds();
    const params = [
      { profnet_id: String(missing.profnet_id) },
      ...people.map((p) => ({ codehost_login: p.codehost_login })),
    ];
    const { res, results } = await bulk(token, requests(...params));
    expect(results.map((r) => r.status)).toEqual([404, 200, 200, 200, 402, 402]);
    expect(results.slice(1, 4).map((r) => r.data?.codehost_login)).toEqual(people.slice(0, 3).map((p) => p.codehost_login));
    expect(results[4]).toEqual({ status: 402, reference: "ref-4", error: "Insufficient credits" });
    expect([res.headers.get("x-credits-charged"), res.headers.get("x-credits-remaining")]).toEqual(["3", "0"]);
    const rows = await ledger(accountId);
    expect(rows.map((r) => [r.delta, r.balance_after])).toEqual([
      [-1, 2],
      [-1, 1],
      [-1, 0],
    ]);
    expect(new Set(rows.map((r) => r.request_id))).toEqual(new Set([res.headers.get("x-request-id")]));
    const [usage] = await db.all<{ charged: number; not_found: number; refused: number }>(sql`
      select sum(lookups_charged) as charged, sum(lookups_not_found) as not_found, sum(lookups_refused_credits) as refused from usage_daily where account_id = ${accountId}`);
    expect(usage).toEqual({ charged: 3, not_found: 1, refused: 2 });
    // Only the served people are recorded as disclosed.
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${accountId}`)).toHaveLength(3);
  });

  it("charges the same person asked twice in one batch once, by any identifiers, and serves every item that asked for them", async () => {
    const { token, accountId } = await newAccount(1);
    const ada = await person(["ada@example.org"]);
    const bob = await person();
    const { res, results } = await bulk(
      token,
      requests({ profnet_id: String(ada.profnet_id) }, { codehost_id: bob.codehost_id }, { codehost_login: ada.codehost_login.toUpperCase() }, { profnet_public_identifier: ada.profnet_public_identifier }),
    );
    // One credit: Ada, the first found; Bob is past it; Ada's other items cost nothing more.
    expect(results.map((r) => r.status)).toEqual([200, 402, 200, 200]);
    expect(results.filter((r) => r.status === 200).every((r) => r.data?.email_addresses?.[0] === "ada@example.org")).toBe(true);
    expect(res.headers.get("x-credits-charged")).toBe("1");
    expect(await ledger(accountId)).toHaveLength(1);
  });

  it("applies the key's daily credit cap per item: the items past it are 402 daily_credit_cap, and the cap holds", async () => {
    const { accountId } = await newAccount(100);
    const capped = await createApiKey(db, accountId, { name: "capped", dailyCreditCap: 2 });
    const people = [await person(), await person(), await person(), await person()];
    const first = await bulk(capped.token, requests({ profnet_id: String(people[0]!.profnet_id) }));
    expect(first.results[0]!.status).toBe(200);
    const { res, results } = await bulk(capped.token, requests(...people.slice(1).map((p) => ({ profnet_id: String(p.profnet_id) }))));
    expect(results.map((r) => r.status)).toEqual([200, 402, 402]);
    expect(results[1]).toEqual({ status: 402, reference: "ref-1", error: "Daily credit cap reached for this key", reason: "daily_credit_cap" });
    expect(res.headers.get("x-credits-charged")).toBe("1");
    expect(await balance(accountId)).toBe(98);
    // The cap holds across calls, as for single lookups.
    const single = await call(`/v1/people?profnet_id=${people[3]!.profnet_id}`, { token: capped.token });
    expect(single.status).toBe(402);
  });

  it("N concurrent batches with M < N credits serve exactly M people, one ledger row each, and never overdraw", async () => {
    const { token, accountId } = await newAccount(7);
    const people: ReturnType<typeof uniqueIds>[] = [];
    // As many batches at once as the key's bulk_lookup limit lets through in a window (10).
    for (let i = 0; i < 10; i++) people.push(await person());
    const answers = await Promise.all(people.map((p, i) => bulk(token, requests({ profnet_id: String(p.profnet_id) }, { codehost_id: people[(i + 1) % people.length]!.codehost_id }))));
    expect(answers.map((a) => a.res.status)).toEqual(Array(10).fill(200));
    expect(answers.flatMap((a) => a.results).filter((r) => r.status === 200)).toHaveLength(7);
    expect(await ledger(accountId)).toHaveLength(7);
    expect(await balance(accountId)).toBe(0);
  });
});

describe("POST /v1/people/bulk: the rate limit counts calls", () => {
  it("a batch of 100 counts once against bulk_lookup, not against the single lookups' family", async () => {
    const { token } = await newAccount(0);
    const item = { params: {} };
    const hundred = await bulk(token, { requests: Array.from({ length: 100 }, () => item) });
    expect(hundred.res.status).toBe(200);
    expect(hundred.res.headers.get("ratelimit-policy")).toBe('"bulk_lookup";q=10;w=10');
    // Before issue 48 the batch had spent the whole lookup window: this single lookup was a 429.
    expect((await call("/v1/people?profnet_id=1", { token })).status).not.toBe(429);
    expect((await bulk(token, { requests: Array.from({ length: 100 }, () => item) })).res.status).toBe(200);
  });
});

describe("POST /v1/people/bulk: database round trips, counted at the database", () => {
  const counted = { DATABASE_URL: inject("countedDatabaseUrl") };
  async function roundTrips(token: string, body: unknown, headers: Record<string, string> = {}) {
    const before = await databaseRequestsServed(counted.DATABASE_URL);
    const res = await callWith(counted, "/v1/people/bulk", { method: "POST", token, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
    await res.arrayBuffer();
    return { status: res.status, roundTrips: (await databaseRequestsServed(counted.DATABASE_URL)) - before };
  }

  it("a batch (half found) costs two with a warm key, with or without an Idempotency-Key; a replay one", async () => {
    const { accountId } = await newAccount(1_000);
    const people: ReturnType<typeof uniqueIds>[] = [];
    for (let i = 0; i < 24; i++) people.push(await person(["x@example.org"]));
    const body = requests(...people.flatMap((p) => [{ profnet_id: String(p.profnet_id) }, { profnet_id: String(uniqueIds().profnet_id) }]));
    // Each batch of 48 spends 48 of its key's 100 lookups per 10 s; one more warms the key. The replay is the same key's
    // (a replay is served only to whoever made the call), so that key's two calls and its warming fit in 100.
    const warmKey = async () => {
      const { token } = await createApiKey(db, accountId);
      await roundTrips(token, requests({}));
      return token;
    };
    expect(await roundTrips(await warmKey(), body)).toEqual({ status: 200, roundTrips: 2 });
    const key = { "idempotency-key": crypto.randomUUID() };
    const token = await warmKey();
    expect(await roundTrips(token, body, key)).toEqual({ status: 200, roundTrips: 2 });
    expect(await roundTrips(token, body, key)).toEqual({ status: 200, roundTrips: 1 });
  });
});

describe("POST /v1/people/bulk: Idempotency-Key", () => {
  it("a retry with the same key and body returns the first answer and charges nothing; another body is 409", async () => {
    const { token, accountId } = await newAccount(2);
    const ada = await person(["ada@example.org"]);
    const bob = await person();
    const cid = await person();
    const body = requests({ profnet_id: String(ada.profnet_id) }, { codehost_id: bob.codehost_id }, { codehost_id: cid.codehost_id }, { x: 1 });
    const headers = { "idempotency-key": `crm-sync-${crypto.randomUUID()}` };
    const first = await bulk(token, body, headers);
    expect(first.results.map((r) => r.status)).toEqual([200, 200, 402, 400]);
    expect(first.res.headers.get("idempotent-replayed")).toBeNull();
    await addCredits(db, accountId, 5);
    const again = await bulk(token, body, headers);
    expect(again.res.status).toBe(200);
    expect(again.results).toEqual(first.results);
    expect(again.res.headers.get("idempotent-replayed")).toBe("true");
    expect([again.res.headers.get("x-credits-charged"), again.res.headers.get("x-credits-remaining")]).toEqual(["0", "5"]);
    expect(await ledger(accountId)).toHaveLength(2);
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${accountId}`)).toHaveLength(2);
    const other = await bulk(token, requests({ profnet_id: String(ada.profnet_id) }), headers);
    expect([other.res.status, other.body]).toEqual([409, { error: "This Idempotency-Key was already used for a different request" }]);
    // Without the key the same body is a new call.
    const fresh = await bulk(token, body);
    expect(fresh.results.map((r) => r.status)).toEqual([200, 200, 200, 400]);
  });

  it("10 concurrent retries with one key (its bulk_lookup limit per window) charge once: each gets the first answer, or 409 while it is being made", async () => {
    const { token, accountId } = await newAccount(50);
    const people: ReturnType<typeof uniqueIds>[] = [];
    for (let i = 0; i < 5; i++) people.push(await person());
    const body = requests(...people.map((p) => ({ profnet_id: String(p.profnet_id) })));
    const headers = { "idempotency-key": crypto.randomUUID() };
    const answers = await Promise.all(Array.from({ length: 10 }, () => bulk(token, body, headers)));
    const ok = answers.filter((a) => a.res.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const a of answers.filter((x) => x.res.status !== 200)) expect([a.res.status, a.body.error, a.res.headers.get("retry-after")]).toEqual([409, BULK_LOOKUP_MESSAGES.stillAnswering, "1"]);
    for (const a of ok) expect(a.results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(ok.filter((a) => a.res.headers.get("x-credits-charged") === "5")).toHaveLength(1);
    expect(await ledger(accountId)).toHaveLength(5);
    expect(await balance(accountId)).toBe(45);
  });

  it("an erasure reaches the kept answer: a replay says the person was erased (410), and the account is in the erasures feed", async () => {
    const { token } = await newAccount(5);
    const ada = await person(["ada@example.org"]);
    const bob = await person(["bob@example.org"]);
    const body = requests({ profnet_id: String(ada.profnet_id) }, { profnet_id: String(bob.profnet_id) });
    const headers = { "idempotency-key": crypto.randomUUID() };
    const first = await bulk(token, body, headers);
    expect(first.results.map((r) => r.status)).toEqual([200, 200]);
    const client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
    try {
      expect(await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "profnet_id", value: ada.profnet_id }, "test", TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    } finally {
      client.close();
    }
    const again = await bulk(token, body, headers);
    expect(again.results[0]).toEqual({ status: 410, reference: "ref-0", error: BULK_LOOKUP_MESSAGES.erased });
    expect(again.results[1]!.status).toBe(200);
    expect(JSON.stringify(again.body)).not.toContain("ada@example.org");
    // Nothing of the erased person is kept: the item that named them is blanked.
    const kept = await db.all<{ status: number; person: string | null }>(sql`select status, person from lookup_batch_items where batch_id = ${first.res.headers.get("x-request-id")} order by position`);
    expect(kept.map((k) => [k.status, k.person?.includes("ada@example.org") ?? null])).toEqual([
      [410, null],
      [200, false],
    ]);
    const feed = (await (await call("/v1/people/erasures", { token })).json()) as { erasures: { profnet_id: number }[] };
    expect(feed.erasures.map((e) => e.profnet_id)).toContain(ada.profnet_id);
  });
});
