import { describe, expect, inject, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { ContactInfo } from "../../shared/api.ts";
import { creditLedger, accounts } from "../../edge/db/schema.ts";
import { call, callWith, databaseRequestsServed, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

const REQUIRED = "One of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required";

async function lookup(token: string, query: Record<string, string>) {
  const res = await call(`/v1/people?${new URLSearchParams(query)}`, { token });
  return { res, body: (await res.json()) as Record<string, unknown> };
}

describe("GET /v1/people: happy path", () => {
  it("returns ContactInfo with the personal/work split, E.164 phones and credit headers", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({
      ...ids,
      codehost_username: "ada",
      socialnet_username: "ada.social",
      microblog_username: "ada_mb",
      emails: ["ada@gmail.com", "ada@analytical-engines.example", "ada@mailinator.com"],
      phones: ["+14155550123", "+442071838750"],
    });
    const { res, body } = await lookup(token, { profnet_id: String(ids.profnet_id) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-charged")).toBe("1");
    expect(res.headers.get("x-credits-remaining")).toBe("9");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(ContactInfo.strict().parse(body)).toEqual({
      profnet_id: ids.profnet_id,
      profnet_public_identifier: ids.profnet_public_identifier,
      codehost_id: ids.codehost_id,
      codehost_login: ids.codehost_login,
      codehost_username: "ada",
      socialnet_username: "ada.social",
      microblog_username: "ada_mb",
      email_addresses: ["ada@gmail.com", "ada@analytical-engines.example", "ada@mailinator.com"],
      personal_email_addresses: ["ada@gmail.com", "ada@mailinator.com"],
      work_email_addresses: ["ada@analytical-engines.example"],
      phone_numbers: ["+14155550123", "+442071838750"],
    });
  });

  it("always has the nullable fields, and no email/phone fields without an email", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, phones: ["+14155550123"] });
    const { res, body } = await lookup(token, { profnet_id: String(ids.profnet_id) });
    expect(res.status).toBe(200);
    expect(body).toEqual({
      profnet_id: ids.profnet_id,
      profnet_public_identifier: null,
      codehost_id: null,
      codehost_login: null,
      codehost_username: null,
      socialnet_username: null,
      microblog_username: null,
    });
  });

  it("returns all four list fields with empty subsets and empty phones when so", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ codehost_login: ids.codehost_login, emails: ["dev@company.example"] });
    const { body } = await lookup(token, { codehost_login: ids.codehost_login });
    expect(body.email_addresses).toEqual(["dev@company.example"]);
    expect(body.personal_email_addresses).toEqual([]);
    expect(body.work_email_addresses).toEqual(["dev@company.example"]);
    expect(body.phone_numbers).toEqual([]);
  });

  it("matches public identifiers and logins case-insensitively, after trimming", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ profnet_public_identifier: "Ada-Lovelace-" + ids.profnet_id, codehost_login: ids.codehost_login });
    const a = await lookup(token, { profnet_public_identifier: `  ada-LOVELACE-${ids.profnet_id} ` });
    expect(a.res.status).toBe(200);
    expect(a.body.profnet_public_identifier).toBe("Ada-Lovelace-" + ids.profnet_id);
    const b = await lookup(token, { codehost_login: ids.codehost_login.toUpperCase() });
    expect(b.res.status).toBe(200);
    expect(b.body.codehost_login).toBe(ids.codehost_login);
  });

  it("finds a person by each identifier alone", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson(ids);
    for (const [k, v] of Object.entries(ids)) {
      const { res, body } = await lookup(token, { [k]: String(v) });
      expect(res.status, k).toBe(200);
      expect(body.profnet_id).toBe(ids.profnet_id);
    }
  });
});

describe("GET /v1/people: precedence", () => {
  it("tries profnet_id, profnet_public_identifier, codehost_id, codehost_login in that order", async () => {
    const { token } = await newAccount(20);
    const p = [uniqueIds(), uniqueIds(), uniqueIds(), uniqueIds()];
    await insertPerson({ profnet_id: p[0]!.profnet_id });
    await insertPerson({ profnet_public_identifier: p[1]!.profnet_public_identifier });
    await insertPerson({ codehost_id: p[2]!.codehost_id });
    await insertPerson({ codehost_login: p[3]!.codehost_login });
    const all = {
      profnet_id: String(p[0]!.profnet_id),
      profnet_public_identifier: p[1]!.profnet_public_identifier,
      codehost_id: String(p[2]!.codehost_id),
      codehost_login: p[3]!.codehost_login,
    };
    expect((await lookup(token, all)).body.profnet_id).toBe(p[0]!.profnet_id);
    const { profnet_id: _a, ...noProfnetId } = all;
    expect((await lookup(token, noProfnetId)).body.profnet_public_identifier).toBe(p[1]!.profnet_public_identifier);
    const { profnet_public_identifier: _b, ...onlyCodehost } = noProfnetId;
    expect((await lookup(token, onlyCodehost)).body.codehost_id).toBe(p[2]!.codehost_id);
    // A higher-precedence identifier that matches nothing falls through to the next one.
    const missing = uniqueIds();
    const fallThrough = await lookup(token, { profnet_id: String(missing.profnet_id), codehost_login: p[3]!.codehost_login });
    expect(fallThrough.res.status).toBe(200);
    expect(fallThrough.body.codehost_login).toBe(p[3]!.codehost_login);
  });
});

describe("GET /v1/people: errors", () => {
  it("400 when no identifier is given, or all are blank; charges nothing", async () => {
    const { token } = await newAccount(3);
    for (const query of [{}, { profnet_public_identifier: "   " }, { codehost_login: "" }, { other: "x" }]) {
      const { res, body } = await lookup(token, query as Record<string, string>);
      expect(res.status).toBe(400);
      expect(body).toEqual({ error: REQUIRED });
      expect(res.headers.get("x-credits-charged")).toBe("0");
      expect(res.headers.get("x-credits-remaining")).toBe("3");
    }
  });

  const badIds = ["0", "-1", "1.5", "1e3", "9007199254740992", "+5", "0x10", "abc", "12abc", "1 2", "99999999999999999999"];
  it.each(badIds)("400 naming the parameter for integer %j", async (value) => {
    const { token } = await newAccount(3);
    for (const name of ["profnet_id", "codehost_id"]) {
      const { res, body } = await lookup(token, { [name]: value });
      expect(res.status).toBe(400);
      expect(body).toEqual({ error: `${name} must be a positive integer` });
    }
  });

  it("accepts 2^53-1 and surrounding whitespace on integers", async () => {
    const { token } = await newAccount(3);
    for (const value of ["9007199254740991", " 42 ", "\t7"]) {
      const { res } = await lookup(token, { codehost_id: value });
      expect([200, 404]).toContain(res.status);
    }
  });

  it("404 when nothing matches; charges nothing", async () => {
    const { token } = await newAccount(3);
    const { res, body } = await lookup(token, { profnet_id: String(uniqueIds().profnet_id) });
    expect(res.status).toBe(404);
    expect(body).toEqual({ error: "No profile found for the given parameters" });
    expect(res.headers.get("x-credits-charged")).toBe("0");
    expect(res.headers.get("x-credits-remaining")).toBe("3");
  });

  it("402 beats 404 when the balance is short, and 400 beats 402", async () => {
    const { token } = await newAccount(0);
    const miss = await lookup(token, { profnet_id: String(uniqueIds().profnet_id) });
    expect(miss.res.status).toBe(402);
    expect(miss.body).toEqual({ error: "Insufficient credits" });
    expect(miss.res.headers.get("x-credits-remaining")).toBe("0");
    const bad = await lookup(token, {});
    expect(bad.res.status).toBe(400);
  });

  it("rejects an overlong string identifier with 400", async () => {
    const { token } = await newAccount(3);
    const { res, body } = await lookup(token, { codehost_login: "x".repeat(300) });
    expect(res.status).toBe(400);
    expect(body.error).toBe("codehost_login must be at most 256 characters");
  });
});

describe("GET /v1/people: credits", () => {
  it("charges one credit per hit, writes a ledger row per charge, and stops at zero", async () => {
    const { token, accountId } = await newAccount(2);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id });
    const q = { profnet_id: String(ids.profnet_id) };
    const first = await lookup(token, q);
    const second = await lookup(token, q);
    const third = await lookup(token, q);
    expect([first.res.status, second.res.status, third.res.status]).toEqual([200, 200, 402]);
    expect(first.res.headers.get("x-credits-remaining")).toBe("1");
    expect(second.res.headers.get("x-credits-remaining")).toBe("0");
    expect(third.body).toEqual({ error: "Insufficient credits" });
    const ledger = await db.select().from(creditLedger).where(eq(creditLedger.accountId, accountId));
    const charges = ledger.filter((r) => r.reason === "lookup");
    expect(charges.map((r) => [r.delta, r.balanceAfter])).toEqual([
      [-1, 1],
      [-1, 0],
    ]);
    expect(charges.every((r) => typeof r.requestId === "string" && r.requestId.length > 0)).toBe(true);
    expect(charges[0]!.requestId).toBe(first.res.headers.get("x-request-id"));
  });

  it("N parallel lookups with M < N credits give exactly M 200s, a zero balance and M ledger rows", async () => {
    const N = 60;
    const M = 7;
    const { token, accountId } = await newAccount(M);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["x@example.org"] });
    const results = await Promise.all(
      Array.from({ length: N }, () => call(`/v1/people?profnet_id=${ids.profnet_id}`, { token })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(M);
    expect(statuses.filter((s) => s === 402)).toHaveLength(N - M);
    for (const r of results) {
      const body = (await r.json()) as Record<string, unknown>;
      if (r.status === 402) expect(body).toEqual({ error: "Insufficient credits" });
      else expect(body.email_addresses).toEqual(["x@example.org"]);
    }
    const [account] = await db.select().from(accounts).where(eq(accounts.id, accountId));
    expect(account!.creditBalance).toBe(0);
    const charges = (await db.select().from(creditLedger).where(eq(creditLedger.accountId, accountId))).filter(
      (r) => r.reason === "lookup",
    );
    expect(charges).toHaveLength(M);
    expect(charges.map((r) => r.balanceAfter).sort((a, b) => a - b)).toEqual(Array.from({ length: M }, (_, i) => i));
  });
});

describe("GET /v1/people: database round trips (docs/api.md \"Hot path\"), counted at the database", () => {
  const counted = { DATABASE_URL: inject("countedDatabaseUrl") };
  const requestsServed = () => databaseRequestsServed(counted.DATABASE_URL);
  async function roundTrips(token: string, query: string) {
    const before = await requestsServed();
    const res = await callWith(counted, `/v1/people?${query}`, { token });
    return { res, roundTrips: (await requestsServed()) - before };
  }

  it("a hit costs two with a cold key and one with a warm key; a miss, a short balance and a bad request one", async () => {
    const { token } = await newAccount(2);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["a@example.org"] });
    const cold = await roundTrips(token, `profnet_id=${ids.profnet_id}`);
    expect([cold.res.status, cold.roundTrips]).toEqual([200, 2]);
    const warm = await roundTrips(token, `profnet_id=${ids.profnet_id}`);
    expect([warm.res.status, warm.roundTrips, warm.res.headers.get("x-credits-remaining")]).toEqual([200, 1, "0"]);
    const short = await roundTrips(token, `profnet_id=${ids.profnet_id}`);
    expect([short.res.status, short.roundTrips]).toEqual([402, 1]);
    const bad = await roundTrips(token, "profnet_id=x");
    expect([bad.res.status, bad.roundTrips]).toEqual([400, 1]);
    const funded = await newAccount(2);
    await roundTrips(funded.token, `profnet_id=${ids.profnet_id}`);
    const miss = await roundTrips(funded.token, `profnet_id=${uniqueIds().profnet_id}`);
    expect([miss.res.status, miss.roundTrips, miss.res.headers.get("x-credits-remaining")]).toEqual([404, 1, "1"]);
    // The access log is written in the same batch: the two 200s, and nothing for the 402.
    const [logged] = await db.all<{ n: number }>(sql`select count(*) as n from person_access_log where person_id = (select id from people where profnet_id = ${ids.profnet_id})`);
    expect(Number(logged!.n)).toBe(3);
  });
});
