/**
 * POST /v1/email_feedback (docs/api.md, the section of that name) inside workerd against the real database: reports
 * stored by keyed hash only and free; bad input named and nothing half-written; the poisoning rule (one account changes
 * nothing for anyone, three independent accounts do); deliveries that settle a catch-all; the per-account hourly bound on
 * the re-verifications hard bounces trigger. What our own check then does with a hard bounce (through the real probe),
 * retention, erasure and the access report: personal-data-cron.test.ts.
 */
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { ContactInfo } from "../../shared/api.ts";
import { addressHasher } from "../../shared/people/address-hash.ts";
import { writeStoredEmailAnswers } from "../../edge/people/store.ts";
import { REVERIFY_FIRST } from "../../edge/people/feedback-store.ts";
import { TEST_FEEDBACK_HASH_KEY } from "../fixtures/secrets.ts";
import { call, callWith, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

const MINUTE = 60_000;
const DAY = 86_400_000;
const RULES = { maxAgeSeconds: 2_592_000, recheckSeconds: 86_400 };
const iso = (ms: number) => new Date(ms).toISOString();
let domainSeq = 0;
/** A domain no other test's addresses are on: feedback is about an address, whoever reports it. */
const freshDomain = () => `fb${Date.now().toString(36)}${++domainSeq}.example`;

function report(token: string, body: unknown, bindings: Record<string, string> = {}) {
  const init = { token, method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) };
  return callWith(bindings, "/v1/email_feedback", init);
}

async function lookup(token: string, query: string) {
  const res = await call(`/v1/people?${query}`, { token });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body, details: res.status === 200 ? (ContactInfo.parse(body).email_details ?? []) : [] };
}

const feedbackOf = (accountId: string) =>
  db.all<{ address_hash: string; outcome: string; occurred_at: number; smtp_reply: string | null; reverify: number }>(
    sql`select address_hash, outcome, occurred_at, smtp_reply, reverify from email_feedback where account_id = ${accountId} order by id`,
  );

describe("POST /v1/email_feedback: stored", () => {
  it("takes one report or a list, free; keeps each address only as its keyed hash, and no address from the SMTP reply", async () => {
    const { token, accountId } = await newAccount(7);
    const domain = freshDomain();
    const at = Date.now() - 10 * MINUTE;
    const one = await report(token, { email_address: `  Ana@${domain} `, outcome: "hard_bounce", occurred_at: iso(at), smtp_reply: `550 5.1.1 <ana@${domain}>: Recipient address rejected` });
    expect([one.status, await one.json()]).toEqual([200, { received: 1 }]);
    const many = await report(token, { feedback: [
      { email_address: `bo@${domain}`, outcome: "delivered", occurred_at: iso(at) },
      { email_address: `ANA@${domain.toUpperCase()}`, outcome: "replied", occurred_at: iso(at).replace("Z", "+00:00") },
    ] });
    expect([many.status, await many.json()]).toEqual([200, { received: 2 }]);
    const hash = await addressHasher(TEST_FEEDBACK_HASH_KEY);
    const rows = await feedbackOf(accountId);
    expect(rows.map((r) => [r.address_hash, r.outcome, Number(r.occurred_at)])).toEqual([
      [await hash(`ana@${domain}`), "hard_bounce", at],
      [await hash(`bo@${domain}`), "delivered", at],
      [await hash(`ana@${domain}`), "replied", at],
    ]);
    expect(rows[0]!.smtp_reply).toBe("550 5.1.1 <[address]>: Recipient address rejected");
    expect(JSON.stringify(rows)).not.toContain(domain);
    const [account] = await db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
    expect(Number(account!.credit_balance)).toBe(7);
  });
});

describe("POST /v1/email_feedback: bad input is a 400 that names it, and nothing is written", () => {
  const good = () => ({ email_address: `ok@${freshDomain()}`, outcome: "hard_bounce", occurred_at: iso(Date.now() - MINUTE) });
  it.each<[string, (g: Record<string, unknown>) => unknown, string]>([
    ["an unknown outcome", (g) => ({ feedback: [g, { ...g, outcome: "bounced" }] }), "feedback[1].outcome must be one of hard_bounce, soft_bounce, delivered, replied, complaint"],
    ["a date in the future", (g) => ({ feedback: [g, g, { ...g, occurred_at: iso(Date.now() + 3_600_000) }] }), "feedback[2].occurred_at is in the future"],
    ["a date that is not one", (g) => ({ ...g, occurred_at: "yesterday" }), "occurred_at must be an RFC 3339 date-time, such as 2026-11-26T14:03:00Z"],
    ["a date older than feedback is kept", (g) => ({ feedback: [{ ...g, occurred_at: iso(Date.now() - 200 * DAY) }] }), "feedback[0].occurred_at is more than 180 days ago, older than feedback is kept"],
    ["1,001 items", (g) => ({ feedback: Array.from({ length: 1_001 }, () => g) }), "feedback holds 1001 reports: at most 1000 per call"],
    ["an address that is not one", (g) => ({ feedback: [g, { ...g, email_address: "ana.example.com" }] }), "feedback[1].email_address is not an email address: The email address has no @ sign."],
    ["a missing address", (g) => ({ outcome: g.outcome, occurred_at: g.occurred_at }), "email_address is required"],
    ["an unknown field", (g) => ({ feedback: [{ ...g, status: "bounced" }] }), 'feedback[0] has an unknown field "status"'],
    ["an empty list", () => ({ feedback: [] }), "feedback must be an array of 1 to 1000 reports"],
    ["a reply too long", (g) => ({ ...g, smtp_reply: "x".repeat(1_001) }), "smtp_reply must be at most 1000 characters"],
    ["an array", (g) => [g], 'The JSON body must be an object: one report, or {"feedback": [...]}'],
    ["malformed JSON", () => "{", "Malformed JSON body"],
  ])("%s", async (_, make, message) => {
    const { token, accountId } = await newAccount(1);
    const res = await report(token, make(good()));
    expect([res.status, await res.json()]).toEqual([400, { error: message }]);
    expect(await feedbackOf(accountId)).toEqual([]);
  });
});

/** A person with `n` addresses on a fresh domain, each confirmed by our check a day ago. */
async function personWithCheckedAddresses(n: number, reason = "deliverable") {
  const ids = uniqueIds();
  const domain = freshDomain();
  const emails = Array.from({ length: n }, (_, i) => `p${i}@${domain}`);
  await insertPerson({ profnet_id: ids.profnet_id, emails });
  await writeStoredEmailAnswers(db, emails.map((email) => ({ email, classification: reason === "deliverable" ? "valid" : "risky", smtp_outcome: "accepted", reason, checked_at: Date.now() - DAY })), RULES);
  return { query: `profnet_id=${ids.profnet_id}&include=email_details`, emails };
}

const confidences = (details: { email: string; confidence: number }[]) => details.map((d) => [d.email, d.confidence]);

describe("the poisoning rule: no single account sinks or lifts an address for others", () => {
  it("one account reporting 100 live addresses as bounced changes nothing for anyone else, nor for itself", async () => {
    const { query, emails } = await personWithCheckedAddresses(100);
    const bystander = await newAccount(10);
    const poisoner = await newAccount(10);
    const before = await lookup(bystander.token, query);
    expect(before.details.every((d) => d.confidence === 97)).toBe(true);
    const res = await report(poisoner.token, { feedback: emails.map((email) => ({ email_address: email, outcome: "hard_bounce", occurred_at: iso(Date.now() - MINUTE) })) });
    expect(res.status).toBe(200);
    for (const who of [bystander, poisoner]) {
      const after = await lookup(who.token, query);
      expect(after.body.email_addresses).toEqual(emails);
      expect(confidences(after.details)).toEqual(confidences(before.details));
      expect(after.details.map((d) => d.verification?.reason)).toEqual(emails.map(() => "deliverable"));
    }
    // Nothing was removed: only our own check can do that (personal-data-cron.test.ts).
    expect(await db.all(sql`select 1 from person_emails where email in (select value from json_each(${JSON.stringify(emails)})) and undeliverable_at is not null`)).toEqual([]);
  });

  it("two accounts do not either; a third independent account's hard bounce caps it at 10 for everyone", async () => {
    const { query, emails } = await personWithCheckedAddresses(2);
    const reporters = [await newAccount(1), await newAccount(1), await newAccount(1)];
    const bystander = await newAccount(10);
    const bounce = { email_address: emails[0], outcome: "hard_bounce", occurred_at: iso(Date.now() - MINUTE) };
    // One account reporting three times is still one account.
    for (let i = 0; i < 3; i++) expect((await report(reporters[0]!.token, bounce)).status).toBe(200);
    expect((await report(reporters[1]!.token, bounce)).status).toBe(200);
    expect(confidences((await lookup(bystander.token, query)).details)).toEqual([[emails[0], 97], [emails[1], 97]]);
    expect((await report(reporters[2]!.token, bounce)).status).toBe(200);
    const after = await lookup(bystander.token, query);
    expect(after.details.map((d) => [d.email, d.confidence, d.confidence_label])).toEqual([[emails[0], 10, "low"], [emails[1], 97, "high"]]);
    // min_confidence then leaves it out.
    expect((await lookup(bystander.token, `${query}&min_confidence=50`)).body.email_addresses).toEqual([emails[1]]);
  });

  it("bounces older than our last check that found the mailbox do not count: our newer proof wins", async () => {
    const { query, emails } = await personWithCheckedAddresses(1);
    for (let i = 0; i < 3; i++) {
      const { token } = await newAccount(1);
      expect((await report(token, { email_address: emails[0], outcome: "hard_bounce", occurred_at: iso(Date.now() - 2 * DAY) })).status).toBe(200);
    }
    expect(confidences((await lookup((await newAccount(5)).token, query)).details)).toEqual([[emails[0], 97]]);
  });
});

describe("deliveries settle a catch-all address", () => {
  it("three independent accounts' recent deliveries or replies lift it to 95, and the verdict's reason says so; two do not", async () => {
    const { query, emails } = await personWithCheckedAddresses(1, "catch_all");
    const bystander = await newAccount(10);
    const catchAll = await lookup(bystander.token, query);
    expect(catchAll.details.map((d) => [d.confidence, d.verification?.classification, d.verification?.reason])).toEqual([[40, "risky", "catch_all"]]);
    const outcomes = ["delivered", "replied", "complaint"];
    for (const [i, outcome] of outcomes.entries()) {
      const { token } = await newAccount(1);
      expect((await report(token, { email_address: emails[0], outcome, occurred_at: iso(Date.now() - (i + 1) * MINUTE) })).status).toBe(200);
      const seen = await lookup(bystander.token, query);
      expect(seen.details.map((d) => [d.confidence, d.verification?.reason]), `${i + 1} accounts`).toEqual([i < 2 ? [40, "catch_all"] : [95, "catch_all_delivered"]]);
    }
    // One account's later hard bounce changes nothing for anyone else: it is not independent accounts agreeing.
    const { token: lone } = await newAccount(1);
    expect((await report(lone, { email_address: emails[0], outcome: "hard_bounce", occurred_at: iso(Date.now()) })).status).toBe(200);
    expect((await lookup(bystander.token, query)).details.map((d) => [d.confidence, d.verification?.reason])).toEqual([[95, "catch_all_delivered"]]);
    // A later hard bounce from two others as well (three in all) undoes it: the newer kind wins.
    for (let i = 0; i < 2; i++) {
      const { token } = await newAccount(1);
      expect((await report(token, { email_address: emails[0], outcome: "hard_bounce", occurred_at: iso(Date.now()) })).status).toBe(200);
    }
    expect((await lookup(bystander.token, query)).details.map((d) => [d.confidence, d.verification?.reason])).toEqual([[10, "catch_all"]]);
  });
});

describe("a hard bounce moves its address to the front of re-verification, within the account's hourly bound", () => {
  const nextChecks = (emails: string[]) =>
    db.all<{ email: string; next_check_at: number }>(sql`select email, next_check_at from person_emails where email in (select value from json_each(${JSON.stringify(emails)})) order by id`);

  it("at most FEEDBACK_REVERIFY_PER_HOUR addresses per account per hour, each once; another account has its own bound", async () => {
    const bound = { FEEDBACK_REVERIFY_PER_HOUR: "3" };
    const { emails } = await personWithCheckedAddresses(6);
    const first = await newAccount(1);
    const bounces = (list: string[]) => ({ feedback: list.map((email) => ({ email_address: email, outcome: "hard_bounce", occurred_at: iso(Date.now() - MINUTE) })) });
    // The same address twice in one call is moved once.
    expect((await report(first.token, bounces([emails[0]!, emails[0]!, emails[1]!, emails[2]!, emails[3]!]), bound)).status).toBe(200);
    const moved = (rows: { next_check_at: number }[]) => rows.map((r) => Number(r.next_check_at) === REVERIFY_FIRST);
    expect(moved(await nextChecks(emails))).toEqual([true, true, true, false, false, false]);
    expect((await feedbackOf(first.accountId)).map((r) => Number(r.reverify))).toEqual([1, 0, 1, 1, 0]);
    // The hour's bound is spent: more reports are stored, and move nothing.
    await db.run(sql`update person_emails set next_check_at = 0 where email in (select value from json_each(${JSON.stringify(emails)}))`);
    expect((await report(first.token, bounces(emails.slice(3)), bound)).status).toBe(200);
    expect(moved(await nextChecks(emails))).toEqual([false, false, false, false, false, false]);
    // Another account has a bound of its own.
    const second = await newAccount(1);
    expect((await report(second.token, bounces(emails.slice(3)), bound)).status).toBe(200);
    expect(moved(await nextChecks(emails))).toEqual([false, false, false, true, true, true]);
  });

  it("not for an address our check looked at after the bounce, nor for a delivery", async () => {
    const { emails } = await personWithCheckedAddresses(2);
    const { token } = await newAccount(1);
    const res = await report(token, { feedback: [
      { email_address: emails[0], outcome: "hard_bounce", occurred_at: iso(Date.now() - 2 * DAY) },
      { email_address: emails[1], outcome: "delivered", occurred_at: iso(Date.now() - MINUTE) },
    ] });
    expect(res.status).toBe(200);
    expect((await nextChecks(emails)).map((r) => Number(r.next_check_at) === REVERIFY_FIRST)).toEqual([false, false]);
  });
});
