/**
 * GET /v1/email_finder, POST /v1/email_finder/bulk and GET /v1/domains/{domain} (docs/api.md) against the real probe
 * and the fixture mail servers of test/fixtures/test-mail.ts, whose RCPTs are counted at the server (mailStatsUrl).
 */
import { createClient } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { EmailFinderResult, DomainSearchResult } from "../../shared/api.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

const FINDER_MX = "127.0.0.34";

async function rcptsAt(host: string): Promise<string[]> {
  const res = await fetch(`${inject("mailStatsUrl")}/?host=${host}`);
  return ((await res.json()) as { rcptTo: string[] }).rcptTo;
}
const countOf = (rcpts: string[], address: string) => rcpts.filter((r) => r === address).length;

async function find(token: string, query: Record<string, string>) {
  const res = await call(`/v1/email_finder?${new URLSearchParams(query)}`, { token });
  return { res, body: (await res.json()) as any, charged: res.headers.get("X-Credits-Charged") };
}

/** A person we hold at a domain: a name, the employer and a work address. */
const seed = (full: string, email: string, employer = "Finder Corp", domain = email.split("@")[1]!) =>
  insertPerson({ ...uniqueIds(), emails: [email], names: [{ full }], employment: [{ employer, domains: [domain], current: true }] });

let token: string;
beforeAll(async () => {
  token = (await newAccount(100)).token;
  // Three known pairs at finder.test, all {first}.{last}: the domain's pattern.
  await seed("Tomás Quinn", "tomas.quinn@finder.test");
  await seed("Lena Kraus", "lena.kraus@finder.test");
  await seed("Olga Berg", "olga.berg@finder.test");
});

describe("bad input", () => {
  it.each([
    [{ domain: "finder.test" }, "Give full_name, or first_name and last_name"],
    [{ full_name: "J. Smith", domain: "finder.test" }, "Give full_name, or first_name and last_name"],
    [{ first_name: "Ana", domain: "finder.test" }, "Give full_name, or first_name and last_name"],
    [{ full_name: "Ana Lopez" }, "Give domain or company"],
    [{ full_name: "Ana Lopez", domain: "co.uk" }, "domain must be a registrable domain name"],
    [{ full_name: "Ana Lopez", domain: "10.0.0.1" }, "domain must be a registrable domain name"],
    [{ full_name: "Ana Lopez", domain: "ana@finder.test" }, "domain must be a registrable domain name"],
    [{ full_name: "Ana Lopez", domain: "finder.test", max_duration: "0" }, "max_duration must be an integer between 1 and 20"],
    [{ full_name: "Ana Lopez", domain: "finder.test", max_duration: "21" }, "max_duration must be an integer between 1 and 20"],
    [{ full_name: "A".repeat(201), domain: "finder.test" }, "full_name must be at most 200 characters"],
    [{ full_name: "Ana\u202eLopez", domain: "finder.test" }, "full_name holds control or invisible characters"],
  ])("400 for %j, free", async (query, message) => {
    const { res, body, charged } = await find(token, query as Record<string, string>);
    expect(res.status).toBe(400);
    expect(body.error).toContain(message);
    expect(charged).toBe("0");
  });

  it.each([
    [{ full_name: "Ana Lopez", domain: "nx.test" }, "domain_has_no_mail"],
    [{ full_name: "Ana Lopez", domain: "nullmx.test" }, "domain_has_no_mail"],
    [{ full_name: "Ana Lopez", domain: "gmail.com" }, "webmail_domain"],
    [{ full_name: "Ana Lopez", domain: "mailinator.com" }, "disposable_domain"],
    [{ full_name: "Ana Lopez", company: "No Such Company Anywhere" }, "company_unknown"],
  ])("422 for %j, free, with its reason", async (query, reason) => {
    const { res, body, charged } = await find(token, query as Record<string, string>);
    expect(res.status).toBe(422);
    expect(body.reason).toBe(reason);
    expect(charged).toBe("0");
  });
});

describe("finding", () => {
  it("finds the person's own address in our data without asking the receiver, charges 1, records the disclosure, and a repeat within 30 days is free", async () => {
    const { accountId, token: own } = await newAccount(10);
    const personId = await seed("Ana López", "ana.lopez@finder.test");
    const before = countOf(await rcptsAt(FINDER_MX), "ana.lopez@finder.test");
    const first = await find(own, { first_name: "Ana", last_name: "Lopez", domain: "https://www.Finder.test/about" });
    expect(first.res.status).toBe(200);
    const result = EmailFinderResult.strict().parse(first.body);
    expect(result).toMatchObject({ email: "ana.lopez@finder.test", method: "known_address", confirmed: true, repeat: false, domain: "finder.test" });
    expect(result.sources?.count).toBe(1);
    expect(result.evidence.pattern).toBe("{first}.{last}");
    expect(first.charged).toBe("1");
    expect(first.res.headers.get("X-Credits-Remaining")).toBe("9");
    expect(countOf(await rcptsAt(FINDER_MX), "ana.lopez@finder.test")).toBe(before);
    const logged = await db.all<{ n: number }>(sql`select count(*) as n from person_access_log where account_id = ${accountId} and person_id = ${personId} and matched_by = 'name'`);
    expect(Number(logged[0]!.n)).toBe(1);

    const again = await find(own, { full_name: "ana lopez", domain: "finder.test" });
    expect(again.res.status).toBe(200);
    expect(again.body).toMatchObject({ email: "ana.lopez@finder.test", repeat: true });
    expect(again.charged).toBe("0");
    expect(again.res.headers.get("X-Credits-Remaining")).toBe("9");

    // Below the caller's floor the known address is returned unconfirmed, and free.
    const floored = await find((await newAccount(5)).token, { full_name: "Ana Lopez", domain: "finder.test", min_confidence: "99" });
    expect(floored.res.status).toBe(200);
    expect(floored.body).toMatchObject({ email: "ana.lopez@finder.test", method: "known_address", confirmed: false });
    expect(floored.charged).toBe("0");
  });

  it("finds by the domain's pattern with one RCPT for the person at a receiver that refuses unknown addresses, and another account's find asks nothing again", async () => {
    const { token: own } = await newAccount(5);
    const before = await rcptsAt(FINDER_MX);
    const { res, body, charged } = await find(own, { full_name: "Marta Ruiz", domain: "finder.test" });
    expect(res.status).toBe(200);
    expect(EmailFinderResult.strict().parse(body)).toMatchObject({
      email: "marta.ruiz@finder.test",
      method: "receiver_accepted",
      confirmed: true,
      accept_all: false,
      evidence: { pattern: "{first}.{last}", share: 1 },
      verification: { status: "valid" },
    });
    expect(body.evidence.count).toBeGreaterThanOrEqual(3);
    expect(charged).toBe("1");
    const after = await rcptsAt(FINDER_MX);
    expect(countOf(after, "marta.ruiz@finder.test") - countOf(before, "marta.ruiz@finder.test")).toBe(1);
    // The RCPT for her and at most the catch-all test's random address: never a permutation.
    expect(after.length - before.length).toBeLessThanOrEqual(2);

    const other = (await newAccount(5)).token;
    const second = await find(other, { full_name: "Marta Ruiz", domain: "finder.test" });
    expect(second.body).toMatchObject({ email: "marta.ruiz@finder.test", method: "receiver_accepted", repeat: false });
    expect(second.charged).toBe("1");
    expect((await rcptsAt(FINDER_MX)).length).toBe(after.length);
  });

  it("handles a name with diacritics and one with a particle, both ways", async () => {
    const diacritics = await find(token, { full_name: "José Núñez", domain: "finder.test" });
    expect(diacritics.body).toMatchObject({ email: "jose.nunez@finder.test", method: "receiver_accepted", first_name: "José", last_name: "Núñez" });
    const particle = await find(token, { first_name: "Ludwig", last_name: "van Beethoven", domain: "finder.test" });
    expect(particle.body).toMatchObject({ email: "ludwig.vanbeethoven@finder.test", method: "receiver_accepted" });
    // Learned the other way: a known "van der Berg" spelled berg at finder-two.test makes berg for the next particle name.
    await seed("Kim Hale", "kim.hale@finder-two.test", "Two Co");
    await seed("Anouk van der Berg", "anouk.berg@finder-two.test", "Two Co");
    const before = await rcptsAt(FINDER_MX);
    const henk = await find(token, { full_name: "Henk van Dijk", domain: "finder-two.test" });
    expect(henk.res.status).toBe(404);
    const after = await rcptsAt(FINDER_MX);
    expect(countOf(after, "henk.dijk@finder-two.test") - countOf(before, "henk.dijk@finder-two.test")).toBe(1);
    expect(countOf(after, "henk.vandijk@finder-two.test")).toBe(0);
    const domain = await call("/v1/domains/finder-two.test", { token });
    const facts = DomainSearchResult.strict().parse(await domain.json());
    expect(facts.patterns[0]).toMatchObject({ pattern: "{first}.{last}", count: 2 });
  });

  it("never gives a person an address we hold for someone of another name", async () => {
    await seed("Rita Voss", "rvoss@finder-three.test", "Three Co");
    await seed("Carl Berg", "cberg@finder-three.test", "Three Co");
    const before = await rcptsAt(FINDER_MX);
    const { res, charged } = await find(token, { full_name: "Rob Voss", domain: "finder-three.test" });
    expect(res.status).toBe(404);
    expect(charged).toBe("0");
    expect(countOf(await rcptsAt(FINDER_MX), "rvoss@finder-three.test")).toBe(countOf(before, "rvoss@finder-three.test"));
    // Rita herself is found as she is held.
    expect((await find(token, { full_name: "Rita Voss", domain: "finder-three.test" })).body).toMatchObject({ email: "rvoss@finder-three.test", method: "known_address" });
  });

  it("returns an accepted address made without the family name unconfirmed and free: it proves a mailbox, not whose", async () => {
    await seed("Hugo Brandt", "hugo@finder-four.test", "Four Co");
    await seed("Ida Marsh", "ida@finder-four.test", "Four Co");
    const { res, body, charged } = await find(token, { full_name: "Max Power", domain: "finder-four.test" });
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ email: "max@finder-four.test", method: "receiver_accepted", confirmed: false, evidence: { pattern: "{first}" } });
    expect(body.confidence).toBeLessThanOrEqual(70);
    expect(charged).toBe("0");
  });

  it("answers a miss with 404, free, after one RCPT", async () => {
    const before = await rcptsAt(FINDER_MX);
    const { res, charged } = await find(token, { full_name: "Zed Nobody", domain: "finder.test" });
    expect(res.status).toBe(404);
    expect(charged).toBe("0");
    const after = await rcptsAt(FINDER_MX);
    expect(countOf(after, "zed.nobody@finder.test") - countOf(before, "zed.nobody@finder.test")).toBe(1);
    expect(after.length - before.length).toBeLessThanOrEqual(2);
  });

  it("at a catch-all domain returns the pattern's address flagged and free, and later finds there ask the receiver nothing", async () => {
    await seed("Ines Mora", "ines.mora@catchall.test", "Catch Co");
    await seed("Paul Amsel", "paul.amsel@catchall.test", "Catch Co");
    const first = await find(token, { full_name: "Nina Sol", domain: "catchall.test" });
    expect(first.res.status).toBe(200);
    expect(first.body).toMatchObject({ email: "nina.sol@catchall.test", method: "pattern", confirmed: false, accept_all: true });
    expect(first.charged).toBe("0");
    const before = await rcptsAt("127.0.0.26");
    const second = await find(token, { full_name: "Omar Vale", domain: "catchall.test" });
    expect(second.body).toMatchObject({ email: "omar.vale@catchall.test", method: "pattern", confirmed: false, accept_all: true });
    expect(second.charged).toBe("0");
    expect((await rcptsAt("127.0.0.26")).length).toBe(before.length);
  });

  it.each([
    ["m365-hosted.test", "127.0.0.33"],
    ["yahoo-hosted.test", "127.0.0.33"],
  ])("sends no RCPT at %s (its receiver accepts every address): the pattern grades the answer, free", async (domain, host) => {
    await seed("Rita Lang", `rita.lang@${domain}`, `Hosted ${domain}`);
    const before = await rcptsAt(host);
    const { res, body, charged } = await find(token, { full_name: "Sven Ek", domain });
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ email: `sven.ek@${domain}`, method: "pattern", confirmed: false });
    expect(body.confidence).toBeLessThanOrEqual(75);
    expect(charged).toBe("0");
    expect((await rcptsAt(host)).length).toBe(before.length);
  });

  it("lets an account's own delivery reports raise or remove a pattern answer for itself only: one account cannot poison another's", async () => {
    await seed("Rita Lang", "rita.lang@m365-hosted.test", "Hosted m365-hosted.test");
    const report = async (who: string, outcome: string) => {
      const res = await call("/v1/email_feedback", {
        method: "POST",
        token: who,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ feedback: [{ email_address: "uwe.fink@m365-hosted.test", outcome, occurred_at: new Date(Date.now() - 60_000).toISOString() }] }),
      });
      expect(res.status).toBe(200);
    };
    const [poisoner, delivered, bystander] = [(await newAccount(5)).token, (await newAccount(5)).token, (await newAccount(5)).token];
    await report(poisoner, "hard_bounce");
    await report(delivered, "delivered");
    const q = { full_name: "Uwe Fink", domain: "m365-hosted.test" };
    expect((await find(poisoner, q)).res.status).toBe(404);
    const raised = await find(delivered, q);
    expect(raised.body).toMatchObject({ email: "uwe.fink@m365-hosted.test", method: "pattern", confirmed: false, evidence: { feedback: "delivered" } });
    expect(raised.body.confidence).toBeGreaterThanOrEqual(90);
    const plain = await find(bystander, q);
    expect(plain.body).toMatchObject({ email: "uwe.fink@m365-hosted.test", method: "pattern", evidence: { feedback: "none" } });
    expect(plain.body.confidence).toBeLessThanOrEqual(75);
  });

  it("never finds or lists an erased person, even where the pattern makes their address again", async () => {
    await seed("Pia Erased", "pia.erased@finder.test");
    const client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
    expect(await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "email", value: "pia.erased@finder.test" }, "test", TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    const before = await rcptsAt(FINDER_MX);
    const { res, charged } = await find(token, { full_name: "Pia Erased", domain: "finder.test" });
    expect(res.status).toBe(404);
    expect(charged).toBe("0");
    expect(countOf(await rcptsAt(FINDER_MX), "pia.erased@finder.test")).toBe(countOf(before, "pia.erased@finder.test"));
    const listed = DomainSearchResult.parse(await (await call("/v1/domains/finder.test?include=people&limit=100", { token })).json());
    expect(listed.people!.map((p) => p.email)).not.toContain("pia.erased@finder.test");
  });

  it("answers 202 past max_duration, and the same call later gets the answer without a second RCPT", async () => {
    await seed("Bo Slow", "bo.slow@slow-finder.test", "Slow Co");
    const first = await find(token, { full_name: "Ana Slow", domain: "slow-finder.test", max_duration: "1" });
    expect(first.res.status).toBe(202);
    expect(first.body).toMatchObject({ status: "pending" });
    expect(Number(first.res.headers.get("Retry-After"))).toBeGreaterThan(0);
    let answer = first;
    for (let i = 0; i < 40 && answer.res.status === 202; i++) {
      await new Promise((r) => setTimeout(r, 500));
      answer = await find(token, { full_name: "Ana Slow", domain: "slow-finder.test", max_duration: "1" });
    }
    expect(answer.res.status).toBe(200);
    expect(answer.body).toMatchObject({ email: "ana.slow@slow-finder.test", method: "receiver_accepted" });
    expect(countOf(await rcptsAt("127.0.0.35"), "ana.slow@slow-finder.test")).toBe(1);
  }, 30_000);
});

describe("domain search", () => {
  it("is free: the patterns with shares and counts, catch-all and when checked, the mail provider, flags and counts by type", async () => {
    await seed("Info Desk", "info@finder.test");
    const res = await call("/v1/domains/finder.test", { token });
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Credits-Charged")).toBe("0");
    const body = DomainSearchResult.strict().parse(await res.json());
    expect(body).toMatchObject({ domain: "finder.test", disposable: false, webmail: false, accept_all: false });
    expect(body.accept_all_checked_at).not.toBeNull();
    expect(body.patterns[0]).toMatchObject({ pattern: "{first}.{last}", share: 1 });
    expect(body.known_addresses.generic).toBeGreaterThanOrEqual(1);
    expect(body.known_addresses.total).toBe(body.known_addresses.personal + body.known_addresses.generic);
    expect(body.people).toBeUndefined();
  });

  it("lists people only with include=people, charged per person and recorded", async () => {
    const { accountId, token: own } = await newAccount(2);
    const res = await call("/v1/domains/finder.test?include=people&limit=5", { token: own });
    expect(res.status).toBe(200);
    const body = DomainSearchResult.parse(await res.json());
    // Two credits: two people listed, not five.
    expect(body.people).toHaveLength(2);
    expect(res.headers.get("X-Credits-Charged")).toBe("2");
    const logged = await db.all<{ n: number }>(sql`select count(*) as n from person_access_log where account_id = ${accountId} and matched_by = 'domain'`);
    expect(Number(logged[0]!.n)).toBe(2);
    const broke = await call("/v1/domains/finder.test?include=people", { token: own });
    expect(broke.status).toBe(402);
  });

  it.each([
    ["/v1/domains/co.uk", 400],
    ["/v1/domains/finder.test?limit=0&include=people", 400],
    ["/v1/domains/finder.test?include=everything", 400],
    ["/v1/domains/nx.test", 422],
  ])("%s answers %i", async (path, status) => {
    const res = await call(path, { token });
    expect(res.status).toBe(status);
    expect(res.headers.get("X-Credits-Charged")).toBe("0");
  });
});

describe("POST /v1/email_finder/bulk", () => {
  it("finds each item as the single call does and totals the credits", async () => {
    const { token: own } = await newAccount(10);
    const res = await call("/v1/email_finder/bulk", {
      method: "POST",
      token: own,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: [{ full_name: "Marta Ruiz", domain: "finder.test" }, { full_name: "Zed Nobody", domain: "finder.test" }, { full_name: "X", domain: "finder.test" }, { first_name: "Nina", last_name: "Sol", domain: "catchall.test" }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.results.map((r: any) => r.status)).toEqual(["found", "not_found", "error", "found"]);
    expect(body.results[0].result.email).toBe("marta.ruiz@finder.test");
    expect(body.results[3].result.confirmed).toBe(false);
    expect(body.credits_charged).toBe(1);
    expect(res.headers.get("X-Credits-Charged")).toBe("1");
  });

  it("400 for no items or more than 100", async () => {
    for (const items of [[], Array.from({ length: 101 }, () => ({ full_name: "Ana Lopez", domain: "finder.test" }))]) {
      const res = await call("/v1/email_finder/bulk", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ items }) });
      expect(res.status).toBe(400);
    }
  });
});
