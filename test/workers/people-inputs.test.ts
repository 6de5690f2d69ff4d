/**
 * GET /v1/people by what customers hold (docs/api.md "GET /v1/people"): an email, a phone, a name at a company; the
 * precedence and conflicts between inputs; include=profile; and what the access log says found the person. The Worker
 * in workerd against the real libSQL engine; people are stored as the import stores them (test/workers/helpers.ts).
 */
import { createClient, type Client } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ContactInfo } from "../../shared/api.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

let client: Client;
beforeAll(() => {
  client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
});
afterAll(() => client.close());

async function lookup(token: string, query: Record<string, string | undefined>) {
  const given = Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined);
  const res = await call(`/v1/people?${new URLSearchParams(given)}`, { token });
  return { status: res.status, charged: res.headers.get("x-credits-charged"), body: (await res.json()) as Record<string, unknown> };
}

/** A domain no other test (or run) uses: tests share one database. */
const freshDomain = (ids: { profnet_id: number }) => `co${ids.profnet_id}.example`;

describe("GET /v1/people by email", () => {
  it("finds the person by any address they hold, whatever its spelling (case, Gmail's dots and +tags), and charges 1", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const work = `Ada.Lovelace@${freshDomain(ids)}`;
    await insertPerson({ ...ids, emails: [`ada.lovelace.${ids.profnet_id}@gmail.com`, work] });
    for (const email of [work.toLowerCase(), work.toUpperCase(), `adalovelace${ids.profnet_id}+crm@googlemail.com`, `  ${work}  `]) {
      const r = await lookup(token, { email });
      expect([email, r.status, r.charged, r.body.profnet_id]).toEqual([email, 200, "1", ids.profnet_id]);
    }
    // The answer is the spec's ContactInfo, nothing more without include.
    const { body } = await lookup(token, { email: work });
    expect(Object.keys(body).sort()).toEqual(Object.keys(ContactInfo.strict().parse(body)).sort());
    expect(body).not.toHaveProperty("name");
  });

  it("404 free for an address nobody holds; 400 free for one that is not an address", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    expect(await lookup(token, { email: `nobody@${freshDomain(ids)}` })).toMatchObject({ status: 404, charged: "0", body: { error: "No profile found for the given parameters" } });
    for (const email of ["ada", "ada@", "@x.example", "ada@localhost", "a b@x.example", `${"a".repeat(250)}@x.example`]) {
      const r = await lookup(token, { email });
      expect([email, r.status, r.charged]).toEqual([email, 400, "0"]);
      expect(String(r.body.error)).toMatch(/^email must/);
    }
  });

  it("an address two people hold is ambiguous: 404 with reason ambiguous_match, free; an identifier settles it", async () => {
    const { token } = await newAccount(10);
    const a = uniqueIds();
    const b = uniqueIds();
    const shared = `info@${freshDomain(a)}`;
    await insertPerson({ ...a, emails: [shared] });
    await insertPerson({ ...b, emails: [shared] });
    expect(await lookup(token, { email: shared })).toMatchObject({ status: 404, charged: "0", body: { reason: "ambiguous_match" } });
    expect(await lookup(token, { email: shared, profnet_id: String(b.profnet_id) })).toMatchObject({ status: 200, charged: "1", body: { profnet_id: b.profnet_id } });
  });
});

describe("GET /v1/people by phone", () => {
  it("takes E.164 in any formatting, or a national form with country", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    // A UK number unique to this test: 020 7946 0xxx is Ofcom's drama range.
    const national = `020 7946 ${String(ids.profnet_id % 1000).padStart(3, "0")}${ids.profnet_id % 10}`;
    const e164 = `+44${national.replace(/\s/g, "").slice(1)}`;
    await insertPerson({ ...ids, emails: [`p@${freshDomain(ids)}`], phones: [e164] });
    for (const query of [{ phone: e164 }, { phone: `+44 (0)${national.slice(1)}`.replace("(0)", "") }, { phone: national, country: "GB" }, { phone: national, country: "gb" }]) {
      const r = await lookup(token, query);
      expect([query, r.status, r.body.profnet_id]).toEqual([query, 200, ids.profnet_id]);
    }
    const r = await lookup(token, { phone: national });
    expect([r.status, r.charged, r.body.error]).toEqual([400, "0", "phone must be in E.164 (+ and the country code, such as +442071838750), or give country for a national number"]);
    expect((await lookup(token, { phone: national, country: "GBR" })).status).toBe(400);
    expect((await lookup(token, { phone: "+1 555" })).status).toBe(400);
  });
});

describe("GET /v1/people by name at a company", () => {
  it("finds by full name or first and last name at a current or past employer's domain; case, accents, particles and middle names do not count", async () => {
    const { token } = await newAccount(20);
    const ids = uniqueIds();
    const domain = freshDomain(ids);
    const past = `past${ids.profnet_id}.example`;
    await insertPerson({
      ...ids,
      emails: [`ludwig@${domain}`],
      names: [{ given: "Ludwig", middle: "Maria", family: "van Beethoven" }],
      employment: [
        { employer: "Bonn Orchestra GmbH", domains: [domain], title: "Composer", start: "1792", current: true },
        { employer: "Court of Cologne", domains: [past], start: "1784", end: "1792", current: false },
      ],
    });
    const asked = [
      { full_name: "Ludwig van Beethoven", company_domain: domain },
      { full_name: "LUDWIG BEETHOVEN", company_domain: `https://www.${domain}/about` },
      { full_name: "Beethoven, Ludwig Maria", company_domain: domain },
      { first_name: "ludwig", last_name: "Van Beethoven", company_domain: domain },
      { first_name: "Lüdwig", last_name: "Beethóven", company_domain: past },
      { full_name: "Ludwig van Beethoven", company: "Bonn Orchestra" },
      { full_name: "Ludwig van Beethoven", company: "bonn orchestra gmbh" },
    ];
    for (const query of asked) {
      const r = await lookup(token, query);
      expect([query, r.status, r.charged, r.body.profnet_id]).toEqual([query, 200, "1", ids.profnet_id]);
    }
    for (const query of [
      { full_name: "Ludwig van Beethoven", company_domain: `other${ids.profnet_id}.example` },
      { full_name: "Johann van Beethoven", company_domain: domain },
      { full_name: "Ludwig van Beethoven", company: "Vienna Philharmonic" },
    ]) {
      expect(await lookup(token, query)).toMatchObject({ status: 404, charged: "0", body: { error: "No profile found for the given parameters" } });
    }
  });

  it("a company's name finds only the domains our data ties to that employer", async () => {
    const { token } = await newAccount(10);
    const a = uniqueIds();
    const b = uniqueIds();
    const employer = `Globex ${a.profnet_id} Inc.`;
    // Ana works at the employer's domain; Bea at another company whose name is not the employer's.
    await insertPerson({ ...a, emails: [`ana@${freshDomain(a)}`], names: [{ full: "Ana Ruiz" }], employment: [{ employer, domains: [freshDomain(a)], current: true }] });
    await insertPerson({ ...b, emails: [`ana@${freshDomain(b)}`], names: [{ full: "Ana Ruiz" }], employment: [{ employer: `Initech ${b.profnet_id}`, domains: [freshDomain(b)], current: true }] });
    expect(await lookup(token, { full_name: "Ana Ruiz", company: `globex ${a.profnet_id}` })).toMatchObject({ status: 200, body: { profnet_id: a.profnet_id } });
  });

  it("two people of one name at one company are never guessed between: 404 ambiguous_match, free; an email settles it", async () => {
    const { token } = await newAccount(10);
    const a = uniqueIds();
    const b = uniqueIds();
    const domain = freshDomain(a);
    await insertPerson({ ...a, emails: [`jsmith@${domain}`], names: [{ full: "John Smith" }], employment: [{ employer: "Acme", domains: [domain] }] });
    await insertPerson({ ...b, emails: [`john.smith@${domain}`], names: [{ full: "John A. Smith" }], employment: [{ employer: "Acme", domains: [domain] }] });
    const r = await lookup(token, { full_name: "John Smith", company_domain: domain });
    expect([r.status, r.charged, r.body.reason]).toEqual([404, "0", "ambiguous_match"]);
    expect(String(r.body.error)).toMatch(/more than one person/);
    expect(await lookup(token, { full_name: "John Smith", company_domain: domain, email: `john.smith@${domain}` })).toMatchObject({ status: 200, body: { profnet_id: b.profnet_id } });
  });

  it("refuses a name without a company, a company without a name, an initial and a bad domain: 400, free", async () => {
    const { token } = await newAccount(10);
    const cases: [Record<string, string>, RegExp][] = [
      [{ full_name: "Ada Lovelace" }, /needs company_domain or company/],
      [{ company_domain: "acme.example" }, /company_domain needs a name/],
      [{ first_name: "Ada", company_domain: "acme.example" }, /last_name is required/],
      [{ first_name: "A.", last_name: "Lovelace", company_domain: "acme.example" }, /not an initial/],
      [{ full_name: "Ada", company_domain: "acme.example" }, /given name and a family name/],
      [{ full_name: "Ada Lovelace", company_domain: "not a domain" }, /company_domain must be a domain/],
      [{ full_name: "Ada Lovelace", company_domain: "10.0.0.1" }, /company_domain must be a domain/],
      [{ full_name: "Ada\u202eLovelace", company_domain: "acme.example" }, /control or bidi/],
      [{ full_name: "x".repeat(300), company_domain: "acme.example" }, /at most 256/],
    ];
    for (const [query, message] of cases) {
      const r = await lookup(token, query);
      expect([query, r.status, r.charged]).toEqual([query, 400, "0"]);
      expect(String(r.body.error)).toMatch(message);
    }
  });
});

describe("GET /v1/people: several inputs", () => {
  it("inputs that name different people are a 409 conflicting_inputs, free; inputs that agree find the person", async () => {
    const { token } = await newAccount(10);
    const a = uniqueIds();
    const b = uniqueIds();
    const phoneA = `+1202555${String(a.profnet_id % 10_000).padStart(4, "0")}`;
    await insertPerson({ ...a, emails: [`a@${freshDomain(a)}`], phones: [phoneA] });
    await insertPerson({ ...b, emails: [`b@${freshDomain(b)}`] });
    expect(await lookup(token, { email: `a@${freshDomain(a)}`, phone: phoneA })).toMatchObject({ status: 200, charged: "1", body: { profnet_id: a.profnet_id } });
    for (const query of [
      { email: `b@${freshDomain(b)}`, phone: phoneA },
      { profnet_id: String(a.profnet_id), email: `b@${freshDomain(b)}` },
      { codehost_login: b.codehost_login, phone: phoneA },
    ]) {
      const r = await lookup(token, query);
      expect([query, r.status, r.charged, r.body.reason]).toEqual([query, 409, "0", "conflicting_inputs"]);
    }
    // An input that matches nobody does not conflict: the others find the person.
    expect(await lookup(token, { profnet_id: String(a.profnet_id), email: `gone@${freshDomain(a)}` })).toMatchObject({ status: 200, body: { profnet_id: a.profnet_id } });
  });

  it("the four identifiers keep their rule when several are given: the first in precedence that matches wins", async () => {
    const { token } = await newAccount(10);
    const a = uniqueIds();
    const b = uniqueIds();
    await insertPerson(a);
    await insertPerson(b);
    expect(await lookup(token, { profnet_id: String(a.profnet_id), codehost_login: b.codehost_login })).toMatchObject({ status: 200, body: { profnet_id: a.profnet_id } });
  });
});

describe("GET /v1/people?include=profile", () => {
  it("adds the name reported last and the employment, current first, then newest start first, with domains", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const d = freshDomain(ids);
    await insertPerson({
      ...ids,
      emails: [`grace@${d}`],
      names: [{ full: "Grace Brewster Murray" }, { given: "Grace", middle: "Brewster", family: "Hopper" }],
      employment: [
        { employer: "Vassar College", start: "1931", end: "1943", current: false },
        { employer: "US Navy", domains: [`navy.${d}`, d], title: "Rear Admiral", start: "1943", current: true },
        { employer: "Eckert-Mauchly", title: "Mathematician", start: "1949-06" },
      ],
    });
    const { status, body } = await lookup(token, { profnet_id: String(ids.profnet_id), include: "profile,email_details" });
    expect(status).toBe(200);
    expect(ContactInfo.strict().parse(body)).toMatchObject({ email_addresses: [`grace@${d}`] });
    expect(body.name).toEqual({ full: "Grace Brewster Hopper", given: "Grace", family: "Hopper", middle: "Brewster" });
    expect(body.employment).toEqual([
      { employer: "US Navy", domains: [d, `navy.${d}`], title: "Rear Admiral", start: "1943", end: null, current: true },
      { employer: "Eckert-Mauchly", domains: [], title: "Mathematician", start: "1949-06", end: null, current: null },
      { employer: "Vassar College", domains: [], title: null, start: "1931", end: "1943", current: false },
    ]);
    expect(body.email_details).toHaveLength(1);
  });

  it("a person without a name or employment: name null, employment []", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson(ids);
    expect(await lookup(token, { profnet_id: String(ids.profnet_id), include: "profile" })).toMatchObject({ status: 200, body: { name: null, employment: [] } });
  });
});

describe("GET /v1/people: what found the person, and erasure", () => {
  it("the access log records which input found the person", async () => {
    const { token, accountId } = await newAccount(10);
    const ids = uniqueIds();
    const domain = freshDomain(ids);
    const phone = `+1202556${String(ids.profnet_id % 10_000).padStart(4, "0")}`;
    const personId = await insertPerson({ ...ids, emails: [`m@${domain}`], phones: [phone], names: [{ full: "Mary Jackson" }], employment: [{ employer: "NACA", domains: [domain] }] });
    await lookup(token, { codehost_login: ids.codehost_login });
    await lookup(token, { email: `M@${domain}` });
    await lookup(token, { phone });
    await lookup(token, { full_name: "Mary Jackson", company_domain: domain });
    const rows = await db.all<{ matched_by: string }>(
      sql`select matched_by from person_access_log where person_id = ${personId} and account_id = ${accountId} order by id`,
    );
    expect(rows.map((r) => r.matched_by)).toEqual(["codehost_login", "email", "phone", "name"]);
  });

  it("an erased person is found by no email, phone or name, and their names and employment are gone", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const domain = freshDomain(ids);
    const phone = `+1202557${String(ids.profnet_id % 10_000).padStart(4, "0")}`;
    const personId = await insertPerson({ ...ids, emails: [`k@${domain}`], phones: [phone], names: [{ full: "Katherine Johnson" }], employment: [{ employer: "NASA", domains: [domain] }] });
    expect((await lookup(token, { email: `k@${domain}` })).status).toBe(200);
    await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "profnet_id", value: ids.profnet_id }, "test", TEST_FEEDBACK_HASH_KEY);
    for (const query of [{ email: `k@${domain}` }, { phone }, { full_name: "Katherine Johnson", company_domain: domain }, { full_name: "Katherine Johnson", company: "NASA" }]) {
      expect(await lookup(token, query)).toMatchObject({ status: 404, charged: "0" });
    }
    for (const table of ["person_names", "person_employment", "person_employment_domains"]) {
      const [row] = await db.all<{ n: number }>(sql`select count(*) as n from ${sql.identifier(table)} where person_id = ${personId}`);
      expect([table, Number(row!.n)]).toEqual([table, 0]);
    }
  });
});
