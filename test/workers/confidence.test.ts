/**
 * The confidence of a stored address (docs/api.md "Confidence"), inside workerd against the real database: the
 * function's table, each input alone and combined; the same table evaluated in SQL, for every combination of inputs;
 * and what a lookup does with it (email_details, min_confidence and its 404 that costs nothing).
 */
import { sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import { ContactInfo } from "../../shared/api.ts";
import {
  CHECK_AGE_DAYS,
  confidence,
  confidenceLabel,
  FEEDBACK_VERDICTS,
  feedbackVerdict,
  type FeedbackTally,
  MAX_SOURCES_COUNTED,
  OUR_CHECKS,
  ourCheck,
  SEEN_AGE_DAYS,
  type ConfidenceInputs,
} from "../../shared/people/confidence.ts";
import { VERIFICATION_REASONS } from "../../shared/email/reasons.ts";
import { confidenceOfInputsSql, feedbackVerdictOfTallySql } from "../../edge/people/confidence-sql.ts";
import { writeStoredEmailAnswers } from "../../edge/people/store.ts";
import { call, callWith, databaseRequestsServed, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

const DAY = 86_400_000;
/** A fresh address from one source, never checked, nothing reported: the row every other row changes one thing of. */
const BASE: ConfidenceInputs = { check: "never", checkAgeDays: 0, sources: 1, seenAgeDays: 10, feedback: "none" };

describe("the table, one input at a time", () => {
  it.each<[string, Partial<ConfidenceInputs>, number]>([
    ["never checked, one source seen lately", {}, 40],
    // Our check, fresh.
    ["our check found the mailbox", { check: "valid" }, 97],
    ["the server takes any address", { check: "catch_all" }, 40],
    ["our check said nothing about the mailbox", { check: "unknown" }, 40],
    ["our check found no such mailbox", { check: "invalid" }, 5],
    // Sources, where our check has not settled it.
    ["two independent sources", { sources: 2 }, 83],
    ["three sources", { sources: 3 }, 95],
    ["more sources count as three", { sources: 9 }, 95],
    // Last seen anywhere.
    ["last seen 91 days ago", { seenAgeDays: 91 }, 32],
    ["last seen a year and a day ago", { seenAgeDays: 366 }, 20],
    ["last seen over two years ago", { seenAgeDays: 731 }, 5],
    // Feedback of independent accounts.
    ["independent accounts' hard bounces", { feedback: "bounced" }, 10],
    ["independent accounts' recent deliveries", { feedback: "delivered" }, 95],
  ])("%s %j: %i", (_, change, score) => {
    expect(confidence({ ...BASE, ...change })).toBe(score);
  });

  it.each<[number, number]>([
    [0, 97],
    [30, 97],
    [31, 95],
    [90, 95],
    [91, 90],
  ])("a confirmed mailbox checked %i days ago: %i", (days, score) => {
    expect(confidence({ ...BASE, check: "valid", checkAgeDays: days })).toBe(score);
  });
});

describe("the table, inputs combined", () => {
  it.each<[string, Partial<ConfidenceInputs>, number]>([
    // A confirmed mailbox: sources and sightings add nothing to our own proof; only its age and bounces count.
    ["valid, three sources, seen three years ago", { check: "valid", sources: 3, seenAgeDays: 1_100 }, 97],
    ["valid, checked 100 days ago, bounced", { check: "valid", checkAgeDays: 100, feedback: "bounced" }, 10],
    ["valid, delivered: no floor above our proof", { check: "valid", checkAgeDays: 100, feedback: "delivered" }, 90],
    // A catch-all address: sources and sightings decide, deliveries settle it.
    ["catch-all, two sources, seen 200 days ago", { check: "catch_all", sources: 2, seenAgeDays: 200 }, 75],
    ["catch-all, one source, seen 800 days ago", { check: "catch_all", seenAgeDays: 800 }, 5],
    ["catch-all with deliveries", { check: "catch_all", seenAgeDays: 800, feedback: "delivered" }, 95],
    ["catch-all with bounces", { check: "catch_all", sources: 3, feedback: "bounced" }, 10],
    // Our check found no mailbox: nothing lifts it, not even deliveries (our own check decides).
    ["invalid, three sources, delivered", { check: "invalid", sources: 3, feedback: "delivered" }, 5],
    // Never checked, unknown: as good as each other.
    ["never, three sources, seen 400 days ago", { sources: 3, seenAgeDays: 400 }, 75],
    ["unknown, two sources, seen 800 days ago", { check: "unknown", sources: 2, seenAgeDays: 800 }, 48],
    ["unknown, two sources, seen 800 days ago, bounced", { check: "unknown", sources: 2, seenAgeDays: 800, feedback: "bounced" }, 10],
    // A cap, not a score: what is already below it stays.
    ["unknown, one source, seen 800 days ago, bounced", { check: "unknown", seenAgeDays: 800, feedback: "bounced" }, 5],
  ])("%s %j: %i", (_, change, score) => {
    expect(confidence({ ...BASE, ...change })).toBe(score);
  });

  it("labels: high from 80, medium from 50, low below", () => {
    expect([100, 80, 79, 50, 49, 0].map(confidenceLabel)).toEqual(["high", "high", "medium", "medium", "low", "low"]);
  });

  it("our check, from the stored reason: what it proves (shared/email/reasons.ts)", () => {
    const checks = Object.fromEntries(VERIFICATION_REASONS.map((r) => [r, ourCheck(r, 1)]));
    expect(checks).toMatchObject({ deliverable: "valid", mailbox_full: "valid", catch_all: "catch_all", mailbox_not_found: "invalid", no_mail_domain: "invalid", syntax: "invalid", policy_block: "unknown", provider_forbids_probing: "unknown" });
    expect(ourCheck("deliverable", null)).toBe("never");
  });
});

describe("what independent accounts' reports add up to", () => {
  const tally = (bounceAccounts: number, lastBounceAt: number | null, deliveredAccounts: number, lastDeliveredAt: number | null): FeedbackTally => ({ bounceAccounts, lastBounceAt, deliveredAccounts, lastDeliveredAt });
  it.each<[string, FeedbackTally, string]>([
    ["nothing reported", tally(0, null, 0, null), "none"],
    ["two accounts' bounces", tally(2, 5, 0, null), "none"],
    ["three accounts' bounces", tally(3, 5, 0, null), "bounced"],
    ["three accounts' deliveries", tally(0, null, 3, 5), "delivered"],
    ["three accounts' deliveries, then one account's bounce: one account undoes nothing", tally(1, 9, 3, 5), "delivered"],
    ["three accounts' bounces, then one account's delivery", tally(3, 5, 1, 9), "bounced"],
    ["three of each, bounces later", tally(3, 9, 3, 5), "bounced"],
    ["three of each, deliveries later", tally(3, 5, 3, 9), "delivered"],
  ])("%s: %s", async (_, t, verdict) => {
    expect(feedbackVerdict(t)).toBe(verdict);
    const v = (x: number | null) => sql`${x}`;
    const [row] = await db.all<{ verdict: string }>(
      sql`select ${feedbackVerdictOfTallySql({ bounceAccounts: v(t.bounceAccounts), lastBounceAt: v(t.lastBounceAt), deliveredAccounts: v(t.deliveredAccounts), lastDeliveredAt: v(t.lastDeliveredAt) })} as verdict`,
    );
    expect(row!.verdict).toBe(verdict);
  });
});

describe("the same table in SQL", () => {
  it("gives the same score as confidence() for every combination of inputs", async () => {
    // One age per bucket (its upper bound), and 1..MAX_SOURCES_COUNTED+1 sources.
    const checkAges = [...CHECK_AGE_DAYS, CHECK_AGE_DAYS.at(-1)! + 1];
    const seenAges = [...SEEN_AGE_DAYS, SEEN_AGE_DAYS.at(-1)! + 1];
    const combos: (ConfidenceInputs & { ca: number; sb: number; seen: number })[] = [];
    for (const check of OUR_CHECKS)
      for (const [ca, checkAgeDays] of checkAges.entries())
        for (let sources = 1; sources <= MAX_SOURCES_COUNTED + 1; sources++)
          for (const [seen, seenAgeDays] of seenAges.entries())
            for (const feedback of FEEDBACK_VERDICTS)
              combos.push({ check, checkAgeDays, sources, seenAgeDays, feedback, ca, sb: Math.min(sources, MAX_SOURCES_COUNTED) - 1, seen });
    expect(combos.length).toBe(5 * 3 * 4 * 4 * 3);
    const field = (name: string) => sql.raw(`(value ->> '${name}')`);
    const score = confidenceOfInputsSql({ check: field("check"), checkAgeBucket: field("ca"), sourcesBucket: field("sb"), seenAgeBucket: field("seen"), feedback: field("feedback") });
    const rows = await db.all<{ score: number }>(sql`select ${score} as score from json_each(${JSON.stringify(combos)}) order by key`);
    expect(rows.map((r) => Number(r.score))).toEqual(combos.map((c) => confidence(c)));
  });
});

async function lookup(token: string, query: string) {
  const res = await call(`/v1/people?${query}`, { token });
  return { res, body: (await res.json()) as Record<string, unknown> };
}

const answer = (email: string, reason: string, checked_at: number) => ({
  email,
  classification: reason === "deliverable" ? "valid" : reason === "mailbox_not_found" ? "invalid" : "risky",
  smtp_outcome: reason === "deliverable" ? "accepted" : null,
  reason,
  checked_at,
});
const RULES = { maxAgeSeconds: 2_592_000, recheckSeconds: 86_400 };

describe("GET /v1/people with confidence", () => {
  it("email_details carry each address's confidence and label, from its sources, sightings and our check", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const now = Date.now();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["ok@conf-a.example", "maybe@conf-a.example", "old@conf-a.example"], sources: ["acme", "globex"] });
    await writeStoredEmailAnswers(db, [answer("ok@conf-a.example", "deliverable", now - DAY), answer("maybe@conf-a.example", "catch_all", now - DAY)], RULES);
    await db.run(sql`update person_emails set last_seen_at = ${now - 800 * DAY} where email = 'old@conf-a.example'`);
    const { res, body } = await lookup(token, `profnet_id=${ids.profnet_id}&include=email_details`);
    expect(res.status).toBe(200);
    const details = ContactInfo.strict().parse(body).email_details!;
    expect(details.map((d) => [d.email, d.sources, d.confidence, d.confidence_label])).toEqual([
      ["ok@conf-a.example", 2, 97, "high"],
      ["maybe@conf-a.example", 2, 83, "high"],
      ["old@conf-a.example", 2, 48, "low"],
    ]);
  });

  it("min_confidence leaves out addresses below it, everywhere in the answer", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["ana@gmail.com", "ana@conf-b.example"], phones: ["+14155550123"] });
    await writeStoredEmailAnswers(db, [answer("ana@conf-b.example", "deliverable", Date.now())], RULES);
    const { res, body } = await lookup(token, `profnet_id=${ids.profnet_id}&min_confidence=80&include=email_details`);
    expect([res.status, res.headers.get("x-credits-charged")]).toEqual([200, "1"]);
    expect(body).toMatchObject({ email_addresses: ["ana@conf-b.example"], personal_email_addresses: [], work_email_addresses: ["ana@conf-b.example"], phone_numbers: ["+14155550123"] });
    expect((body.email_details as { email: string }[]).map((d) => d.email)).toEqual(["ana@conf-b.example"]);
    // At the floor is in.
    expect((await lookup(token, `profnet_id=${ids.profnet_id}&min_confidence=40`)).body.email_addresses).toEqual(["ana@gmail.com", "ana@conf-b.example"]);
  });

  it("a person with nothing left at min_confidence is a 404 and costs nothing; the next identifier's person is not tried", async () => {
    const { token, accountId } = await newAccount(3);
    const weak = uniqueIds();
    const strong = uniqueIds();
    await insertPerson({ profnet_id: weak.profnet_id, emails: ["weak@conf-c.example"] });
    await insertPerson({ codehost_login: strong.codehost_login, emails: ["strong@conf-c.example"] });
    await writeStoredEmailAnswers(db, [answer("strong@conf-c.example", "deliverable", Date.now())], RULES);
    const miss = await lookup(token, `profnet_id=${weak.profnet_id}&codehost_login=${strong.codehost_login}&min_confidence=90`);
    expect([miss.res.status, miss.res.headers.get("x-credits-charged"), miss.res.headers.get("x-credits-remaining")]).toEqual([404, "0", "3"]);
    expect(miss.body).toEqual({ error: "No profile found for the given parameters" });
    // Nothing was disclosed, and the usage counts a miss.
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${accountId}`)).toEqual([]);
    const [usage] = await db.all<{ lookups_not_found: number }>(sql`select lookups_not_found from usage_daily where account_id = ${accountId}`);
    expect(Number(usage!.lookups_not_found)).toBe(1);
    // A person without any address has nothing at any floor, even 0.
    const bare = uniqueIds();
    await insertPerson({ profnet_id: bare.profnet_id, phones: ["+14155550123"] });
    expect((await lookup(token, `profnet_id=${bare.profnet_id}&min_confidence=0`)).res.status).toBe(404);
    expect((await lookup(token, `profnet_id=${bare.profnet_id}`)).res.status).toBe(200);
  });

  it.each(["-1", "101", "1.5", "high", "0x10", "1e2"])("min_confidence=%s is 400 naming it, and costs nothing", async (value) => {
    const { token } = await newAccount(3);
    const { res, body } = await lookup(token, `profnet_id=${uniqueIds().profnet_id}&min_confidence=${value}`);
    expect([res.status, res.headers.get("x-credits-charged")]).toEqual([400, "0"]);
    expect(body).toEqual({ error: "min_confidence must be an integer between 0 and 100" });
  });

  it("costs one database round trip warm, with min_confidence as without", async () => {
    const counted = { DATABASE_URL: inject("countedDatabaseUrl") };
    const { token } = await newAccount(5);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["rt@conf-d.example"] });
    await callWith(counted, `/v1/people?profnet_id=${ids.profnet_id}`, { token });
    for (const query of [`profnet_id=${ids.profnet_id}&min_confidence=50&include=email_details`, `profnet_id=${ids.profnet_id}&min_confidence=99`]) {
      const before = await databaseRequestsServed(counted.DATABASE_URL);
      const res = await callWith(counted, `/v1/people?${query}`, { token });
      expect([res.status === 200 || res.status === 404, (await databaseRequestsServed(counted.DATABASE_URL)) - before]).toEqual([true, 1]);
    }
  });
});
