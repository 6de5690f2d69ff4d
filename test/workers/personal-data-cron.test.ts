/**
 * The life of personal data inside workerd (docs/operations.md "Personal data"): email_details, the access log,
 * re-verification of stored addresses through the bulk engine (the real probe and the fixture mail servers),
 * erasure and the erasures feed (retention of bulk jobs: job-retention.test.ts).
 */
import { env } from "cloudflare:workers";
import { createClient } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, inject, it } from "vitest";
import { ContactInfo, ErasuresPage } from "../../shared/api.ts";
import { REASON_MEANING, VERIFICATION_REASONS } from "../../shared/email/reasons.ts";
import { confidence, confidenceLabel } from "../../shared/people/confidence.ts";
import { REFRESH_ACCOUNT_ID, runPersonalDataCron, type PersonalDataConfig } from "../../edge/personal-data-cron.ts";
import { writeStoredEmailAnswers } from "../../edge/people/store.ts";
import type { Bindings } from "../../edge/env.ts";
import { jobQueues } from "../../edge/jobs/queue.ts";
import { applyRetention } from "../../edge/jobs/store/envelope.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { accessReport } from "../../scripts/admin/people-privacy.ts";
import { addressHasher } from "../../shared/people/address-hash.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const SUPPRESSION_KEY = TEST_WEBHOOK_SECRET_KEY;
const adminClient = () => createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });

async function lookup(token: string, query: string) {
  const res = await call(`/v1/people?${query}`, { token });
  return { res, body: (await res.json()) as Record<string, unknown> };
}

/** The cron's personal-data part, with these settings, on the Worker's own queue (the consumer runs the refresh job's turns). */
async function runCron(settings: Partial<PersonalDataConfig> = {}) {
  await runPersonalDataCron(db, jobQueues(env as unknown as Bindings), {
    maxAgeSeconds: 2_592_000,
    recheckSeconds: 86_400,
    refreshBatch: 2_000,
    accessLogRetentionSeconds: 31_536_000,
    jobRetentionSeconds: 2_592_000,
    feedbackHashKey: TEST_FEEDBACK_HASH_KEY,
    feedbackRetentionSeconds: 15_552_000,
    ...settings,
  });
}

const emailRows = (personId: number) =>
  db.all<{ email: string; classification: string | null; reason: string | null; not_found_at: number | null; undeliverable_at: number | null; next_check_at: number }>(sql`
    select email, classification, reason, not_found_at, undeliverable_at, next_check_at from person_emails where person_id = ${personId} order by id`);

describe("GET /v1/people?include=email_details", () => {
  it("adds email_details in the order of email_addresses, at no extra credit; without include the keys are exactly ContactInfo's", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const personId = await insertPerson({ profnet_id: ids.profnet_id, emails: ["ada@gmail.com", "ada@engines.example"], phones: ["+14155550123"] });
    await writeStoredEmailAnswers(db, [{ email: "ADA@engines.example", classification: "valid", smtp_outcome: "accepted", reason: "deliverable", checked_at: Date.parse("2026-11-20T10:00:00Z") }], { maxAgeSeconds: 2_592_000, recheckSeconds: 86_400 });
    expect((await emailRows(personId)).map((r) => r.classification)).toEqual([null, "valid"]);

    const plain = await lookup(token, `profnet_id=${ids.profnet_id}`);
    expect(plain.res.status).toBe(200);
    expect(Object.keys(plain.body).sort()).toEqual(
      ["profnet_id", "profnet_public_identifier", "codehost_id", "codehost_login", "email_addresses", "personal_email_addresses", "work_email_addresses", "phone_numbers", "codehost_username", "socialnet_username", "microblog_username"].sort(),
    );

    const detailed = await lookup(token, `profnet_id=${ids.profnet_id}&include=email_details`);
    const checkedConfidence = confidence({ check: "valid", checkAgeDays: (Date.now() - Date.parse("2026-11-20T10:00:00Z")) / 86_400_000, sources: 1, seenAgeDays: 0, feedback: "none" });
    expect(detailed.res.status).toBe(200);
    expect(detailed.res.headers.get("x-credits-charged")).toBe("1");
    const body = ContactInfo.strict().parse(detailed.body);
    expect(body.email_addresses).toEqual(["ada@gmail.com", "ada@engines.example"]);
    expect(body.email_details).toEqual([
      { email: "ada@gmail.com", type: "personal", first_seen_at: "1970-01-01T00:00:01.000Z", last_seen_at: expect.any(String), sources: 1, confidence: 40, confidence_label: "low", verification: null },
      {
        email: "ada@engines.example",
        type: "work",
        first_seen_at: "1970-01-01T00:00:01.001Z",
        last_seen_at: expect.any(String),
        sources: 1,
        // Our check found the mailbox: its confidence is that check's, aged (docs/api.md "Confidence").
        confidence: checkedConfidence,
        confidence_label: confidenceLabel(checkedConfidence),
        verification: { classification: "valid", smtp_outcome: "accepted", checked_at: "2026-11-20T10:00:00.000Z", reason: "deliverable" },
      },
    ]);
  });

  it("any other include value is 400 naming it, and costs nothing", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["a@example.org"] });
    const bad = await lookup(token, `profnet_id=${ids.profnet_id}&include=email_details,phones_history`);
    expect(bad.res.status).toBe(400);
    expect(bad.body).toEqual({ error: 'Unknown include "phones_history": expected email_details, profile' });
    expect(bad.res.headers.get("x-credits-charged")).toBe("0");
    expect(bad.res.headers.get("x-credits-remaining")).toBe("10");
  });
});

describe("the access log", () => {
  it("records each 200 lookup with its account and key; a 402, a 404 and a 400 record nothing", async () => {
    const { token, accountId, keyId } = await newAccount(1);
    const ids = uniqueIds();
    const personId = await insertPerson({ profnet_id: ids.profnet_id, emails: ["a@example.org"] });
    expect((await lookup(token, `profnet_id=${ids.profnet_id}`)).res.status).toBe(200);
    expect((await lookup(token, `profnet_id=${ids.profnet_id}`)).res.status).toBe(402);
    expect((await lookup(token, `profnet_id=${uniqueIds().profnet_id}`)).res.status).toBe(402);
    const other = await newAccount(5);
    expect((await lookup(other.token, `profnet_id=${uniqueIds().profnet_id}`)).res.status).toBe(404);
    expect((await lookup(other.token, `profnet_id=x`)).res.status).toBe(400);
    const rows = await db.all<{ account_id: string; key_id: string }>(sql`select account_id, key_id from person_access_log where person_id = ${personId}`);
    expect(rows).toEqual([{ account_id: accountId, key_id: keyId }]);
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${other.accountId}`)).toEqual([]);
  });
});

/** The cron makes a refresh job of the addresses due, the queue runs it on the real probe, the next cron writes its answers. */
async function refreshRound(settings: Partial<PersonalDataConfig>) {
  await runCron(settings);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [open] = await db.all<{ n: number }>(sql`select count(*) as n from verification_jobs where account_id = ${REFRESH_ACCOUNT_ID} and status in ('queued', 'running')`);
    if (Number(open!.n) === 0) break;
    if (Date.now() > deadline) throw new Error("the refresh job did not finish");
    await new Promise((r) => setTimeout(r, 100));
  }
  await runCron({ ...settings, refreshBatch: 0 });
}

describe("re-verification of stored addresses through the bulk engine", () => {
  it("a second mailbox_not_found at least EMAIL_RECHECK_SECONDS later makes an address undeliverable; catch-all, blocks and greylisting never do", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const emails = ["ana@ok.test", "nobody@ok.test", "someone@catchall.test", "policy@ok.test", "grey@ok.test"];
    const personId = await insertPerson({ profnet_id: ids.profnet_id, emails, phones: ["+14155550123"] });
    await db.run(sql`update person_emails set next_check_at = 9000000000000 where person_id != ${personId}`);
    const vars = { recheckSeconds: 2 };

    await refreshRound(vars);
    let rows = await emailRows(personId);
    expect(rows.map((r) => [r.email, r.classification, r.reason, r.undeliverable_at === null, r.not_found_at !== null])).toEqual([
      ["ana@ok.test", "valid", "deliverable", true, false],
      ["nobody@ok.test", "invalid", "mailbox_not_found", true, true],
      ["someone@catchall.test", "risky", "catch_all", true, false],
      ["policy@ok.test", "risky", "policy_block", true, false],
      ["grey@ok.test", "risky", "temporary_failure", true, false],
    ]);
    // One 5.1.1 is not enough: the address is still sold, and due again EMAIL_RECHECK_SECONDS after it.
    const nobody = rows[1]!;
    expect(nobody.next_check_at).toBe(Number(nobody.not_found_at) + 2_000);
    expect((await lookup(token, `profnet_id=${ids.profnet_id}`)).body.email_addresses).toEqual(emails);

    // Everything due again now; the second answer for nobody@ comes at least 2 s after the first.
    await new Promise((r) => setTimeout(r, Math.max(0, Number(nobody.not_found_at) + 2_100 - Date.now())));
    await db.run(sql`update person_emails set next_check_at = 0 where person_id = ${personId}`);
    await refreshRound(vars);
    rows = await emailRows(personId);
    expect(rows.map((r) => [r.email, r.undeliverable_at !== null])).toEqual([
      ["ana@ok.test", false],
      ["nobody@ok.test", true],
      ["someone@catchall.test", false],
      ["policy@ok.test", false],
      ["grey@ok.test", false],
    ]);
    const after = await lookup(token, `profnet_id=${ids.profnet_id}&include=email_details`);
    expect(after.body.email_addresses).toEqual(["ana@ok.test", "someone@catchall.test", "policy@ok.test", "grey@ok.test"]);
    expect((after.body.email_details as { email: string }[]).map((d) => d.email)).toEqual(after.body.email_addresses);
    // The refresh jobs leave nothing behind once retention has run.
    for (let i = 0; i < 3; i++) await applyRetention(db, "verification", 2_592_000);
    await runCron({ refreshBatch: 0 });
    expect(await db.all(sql`select id from verification_jobs where account_id = ${REFRESH_ACCOUNT_ID}`)).toEqual([]);
  });

  it("two not-found answers closer together than EMAIL_RECHECK_SECONDS do not; a person with only undeliverable addresses has no emails and no phones; a deliverable answer revives", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const personId = await insertPerson({ profnet_id: ids.profnet_id, emails: ["gone@example.org"], phones: ["+14155550123"] });
    const config = { maxAgeSeconds: 2_592_000, recheckSeconds: 86_400 };
    const at = Date.parse("2026-11-01T00:00:00Z");
    const notFound = (checked_at: number) => ({ email: "gone@example.org", classification: "invalid", smtp_outcome: "mailbox_not_found", reason: "mailbox_not_found", checked_at });
    await writeStoredEmailAnswers(db, [notFound(at)], config);
    await writeStoredEmailAnswers(db, [notFound(at + 3_600_000)], config);
    expect((await emailRows(personId))[0]).toMatchObject({ undeliverable_at: null, not_found_at: at, next_check_at: at + 86_400_000 });
    // A block in between says nothing about the mailbox: the run of not-found answers goes on.
    await writeStoredEmailAnswers(db, [{ ...notFound(at + 7_200_000), classification: "risky", smtp_outcome: "policy_block", reason: "policy_block" }], config);
    await writeStoredEmailAnswers(db, [notFound(at + 86_400_000)], config);
    expect((await emailRows(personId))[0]).toMatchObject({ undeliverable_at: at + 86_400_000, next_check_at: at + 86_400_000 + 2_592_000_000 });
    // An older answer written late changes nothing.
    await writeStoredEmailAnswers(db, [{ ...notFound(at + 1), classification: "valid", reason: "deliverable" }], config);
    expect((await emailRows(personId))[0]!.undeliverable_at).toBe(at + 86_400_000);

    const gone = await lookup(token, `profnet_id=${ids.profnet_id}&include=email_details`);
    expect(gone.res.status).toBe(200);
    expect(gone.body).not.toHaveProperty("email_addresses");
    expect(gone.body).not.toHaveProperty("phone_numbers");
    // Asked for, email_details is there, as for a person we never had an address for: empty.
    expect(gone.body.email_details).toEqual([]);

    await writeStoredEmailAnswers(db, [{ email: "gone@example.org", classification: "valid", smtp_outcome: "accepted", reason: "deliverable", checked_at: at + 90_000_000 }], config);
    expect((await lookup(token, `profnet_id=${ids.profnet_id}`)).body).toMatchObject({ email_addresses: ["gone@example.org"], phone_numbers: ["+14155550123"] });
  });
});

describe("bounce feedback and our own check (docs/api.md \"POST /v1/email_feedback\")", () => {
  const bounce = (token: string, emails: string[], occurredAt = Date.now() - 60_000) =>
    call("/v1/email_feedback", {
      token,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ feedback: emails.map((email_address) => ({ email_address, outcome: "hard_bounce", occurred_at: new Date(occurredAt).toISOString() })) }),
    });

  it("a reported hard bounce is re-verified first; our check confirming it drops the address at once, our check finding the mailbox keeps it", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    const personId = await insertPerson({ profnet_id: ids.profnet_id, emails: ["ana@ok.test", "nobody@ok.test", "someone@catchall.test"] });
    // Everything else is due too, and more than one refresh job takes: the bounced addresses must go first.
    await db.run(sql`update person_emails set next_check_at = 0 where person_id != ${personId} and next_check_at > 0`);
    await db.run(sql`update person_emails set next_check_at = 5 where person_id = ${personId}`);
    expect((await bounce(token, ["ana@ok.test", "nobody@ok.test", "someone@catchall.test"])).status).toBe(200);
    expect((await emailRows(personId)).map((r) => r.next_check_at)).toEqual([-1, -1, -1]);

    await refreshRound({ refreshBatch: 3 });
    const rows = await emailRows(personId);
    expect(rows.map((r) => [r.email, r.reason, r.undeliverable_at !== null])).toEqual([
      ["ana@ok.test", "deliverable", false],
      // One mailbox_not_found after a customer's hard bounce: confirmed, without the day's wait.
      ["nobody@ok.test", "mailbox_not_found", true],
      // A catch-all server cannot confirm anything: kept.
      ["someone@catchall.test", "catch_all", false],
    ]);
    const after = await lookup(token, `profnet_id=${ids.profnet_id}&include=email_details`);
    expect(after.body.email_addresses).toEqual(["ana@ok.test", "someone@catchall.test"]);
    await db.run(sql`update person_emails set next_check_at = 9000000000000 where next_check_at <= 0`);
  });

  it("without a report, one mailbox_not_found is not enough (the day's wait stands)", async () => {
    // An address nobody reported (feedback is about an address, whoever holds it).
    const personId = await insertPerson({ profnet_id: uniqueIds().profnet_id, emails: ["never-reported@ok.test"] });
    await db.run(sql`update person_emails set next_check_at = 9000000000000 where person_id != ${personId}`);
    await refreshRound({ refreshBatch: 10 });
    expect((await emailRows(personId)).map((r) => [r.reason, r.undeliverable_at])).toEqual([["mailbox_not_found", null]]);
  });

  it("the cron names stored addresses so reports find them, and deletes reports past FEEDBACK_RETENTION_SECONDS", async () => {
    const personId = await insertPerson({ profnet_id: uniqueIds().profnet_id, emails: ["Named.One@Feedback-Cron.example"] });
    await runCron({ refreshBatch: 0 });
    const [row] = await db.all<{ address_hash: string | null }>(sql`select address_hash from person_emails where person_id = ${personId}`);
    expect(row!.address_hash).toBe(await (await addressHasher(TEST_FEEDBACK_HASH_KEY))("named.one@feedback-cron.example"));
    const { token, accountId } = await newAccount(1);
    expect((await bounce(token, ["old@feedback-cron.example"], Date.now() - 100 * 86_400_000)).status).toBe(200);
    expect((await bounce(token, ["new@feedback-cron.example"])).status).toBe(200);
    await runCron({ refreshBatch: 0, feedbackRetentionSeconds: 90 * 86_400 });
    const kept = await db.all<{ n: number }>(sql`select count(*) as n from email_feedback where account_id = ${accountId}`);
    expect(Number(kept[0]!.n)).toBe(1);
  });

  it("feedback is erased with the person, in any spelling of their addresses, and counted in the access report", async () => {
    const ids = uniqueIds();
    await insertPerson({ ...ids, emails: ["Erase.Feedback@Gmail.com"] });
    const reporters = [await newAccount(1), await newAccount(1)];
    for (const r of reporters) expect((await bounce(r.token, ["erasefeedback+x@googlemail.com"])).status).toBe(200);
    const other = await newAccount(1);
    expect((await bounce(other.token, ["someone-else@feedback-erase.example"])).status).toBe(200);
    const client = adminClient();
    try {
      const report = await accessReport(client, { kind: "profnet_id", value: ids.profnet_id }, TEST_FEEDBACK_HASH_KEY);
      expect(report.person?.feedback).toEqual([{ outcome: "hard_bounce", reports: 2, accounts: 2, first_at: expect.any(String), last_at: expect.any(String) }]);
      // Without the key, a database with feedback cannot say whose reports are whose: refused, nothing done.
      await expect(erasePeople(client, SUPPRESSION_KEY, { kind: "profnet_id", value: ids.profnet_id }, null)).rejects.toThrow(/FEEDBACK_HASH_KEY is not set/);
      expect(await erasePeople(client, SUPPRESSION_KEY, { kind: "profnet_id", value: ids.profnet_id }, null, TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    } finally {
      client.close();
    }
    for (const r of reporters) expect(await db.all(sql`select 1 from email_feedback where account_id = ${r.accountId}`)).toEqual([]);
    expect(await db.all(sql`select 1 from email_feedback where account_id = ${other.accountId}`)).toHaveLength(1);
  });
});

describe("a stored answer does what its reason proves (shared/email/reasons.ts)", () => {
  it("on an undeliverable address: every reason in the table, and nothing else decides", async () => {
    const config = { maxAgeSeconds: 2_592_000, recheckSeconds: 86_400 };
    const at = Date.parse("2026-11-02T00:00:00Z");
    const emails = VERIFICATION_REASONS.map((reason) => `${reason.replaceAll("_", "-")}@meaning.example`);
    const personId = await insertPerson({ profnet_id: uniqueIds().profnet_id, emails });
    const answer = (email: string, reason: string, checked_at: number) => ({ email, classification: "risky", smtp_outcome: null, reason, checked_at });
    await writeStoredEmailAnswers(db, emails.map((email) => answer(email, "mailbox_not_found", at)), config);
    await writeStoredEmailAnswers(db, emails.map((email) => answer(email, "mailbox_not_found", at + 86_400_000)), config);
    const later = at + 90_000_000;
    await writeStoredEmailAnswers(db, VERIFICATION_REASONS.map((reason, i) => answer(emails[i]!, reason, later)), config);
    const rows = await emailRows(personId);
    expect(rows.map((r) => [r.reason, r.undeliverable_at === null, r.not_found_at === null, r.next_check_at])).toEqual(
      VERIFICATION_REASONS.map((reason) => {
        const { proves } = REASON_MEANING[reason];
        return [
          reason,
          proves === "mailbox_exists",
          proves === "mailbox_exists" || proves === "accepts_any",
          // A still-undeliverable address waits the full age; one that says nothing yet is asked again sooner.
          proves === "nothing_yet" ? later + 86_400_000 : later + 2_592_000_000,
        ];
      }),
    );
  });
});

describe("one mailbox, one address", () => {
  it("a lookup returns a mailbox stored in several spellings once, in its first spelling, as the import de-duplicates it", async () => {
    const { token } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["a.da@gmail.com", "ADA+cv@googlemail.com", "ada@bücher.de", "ada@xn--bcher-kva.de", '"ada"@work.example', "ada@work.example"] });
    const found = await lookup(token, `profnet_id=${ids.profnet_id}&include=email_details`);
    expect(found.body.email_addresses).toEqual(["a.da@gmail.com", "ada@bücher.de", '"ada"@work.example']);
    expect((found.body.email_details as { email: string }[]).map((d) => d.email)).toEqual(["a.da@gmail.com", "ada@bücher.de", '"ada"@work.example']);
  });
});

describe("erasure and GET /v1/people/erasures", () => {
  async function feed(token: string, query = "") {
    const res = await call(`/v1/people/erasures${query}`, { token });
    return { res, body: (await res.json()) as ErasuresPage & { error?: string } };
  }

  it("an erased person is 404 at no charge, and only the accounts that received them learn of it", async () => {
    const receiver = await newAccount(10);
    const bystander = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ ...ids, emails: ["erase-me@example.org"], phones: ["+14155550123"] });
    const since = new Date(Date.now() - 1_000).toISOString();
    expect((await lookup(receiver.token, `codehost_login=${ids.codehost_login}`)).res.status).toBe(200);
    expect((await lookup(receiver.token, `profnet_id=${ids.profnet_id}`)).res.status).toBe(200);

    const client = adminClient();
    try {
      expect(await erasePeople(client, SUPPRESSION_KEY, { kind: "profnet_public_identifier", value: ids.profnet_public_identifier.toUpperCase() }, "data subject request", TEST_FEEDBACK_HASH_KEY)).toEqual({ erased: 1, suppressed: 6 });
    } finally {
      client.close();
    }
    for (const query of [`profnet_id=${ids.profnet_id}`, `codehost_id=${ids.codehost_id}`, `codehost_login=${ids.codehost_login}`, `profnet_public_identifier=${ids.profnet_public_identifier}`]) {
      const miss = await lookup(receiver.token, query);
      expect([miss.res.status, miss.res.headers.get("x-credits-charged")]).toEqual([404, "0"]);
    }
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${receiver.accountId}`)).toEqual([]);

    const mine = await feed(receiver.token, `?since=${encodeURIComponent(since)}`);
    expect(mine.res.status).toBe(200);
    expect(ErasuresPage.strict().parse(mine.body)).toEqual({ erasures: [{ ...ids, erased_at: expect.any(String) }], next_cursor: null });
    expect(Date.parse(mine.body.erasures[0]!.erased_at)).toBeGreaterThanOrEqual(Date.parse(since));
    expect((await feed(bystander.token)).body).toEqual({ erasures: [], next_cursor: null });
    // Later than the erasure: nothing.
    expect((await feed(receiver.token, `?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.erasures).toEqual([]);
  });

  it("a notice names exactly what the account's lookups returned: a person known by a public identifier only, an id added later", async () => {
    const receiver = await newAccount(10);
    const ids = uniqueIds();
    const personId = await insertPerson({ profnet_public_identifier: ids.profnet_public_identifier, emails: ["only-public@example.org"] });
    expect((await lookup(receiver.token, `profnet_public_identifier=${ids.profnet_public_identifier}`)).res.status).toBe(200);
    // After the lookup the person gains a codehost_id: the receiver never got it, so its notice must not carry it.
    await db.run(sql`update people set codehost_id = ${ids.codehost_id} where id = ${personId}`);
    const later = await newAccount(10);
    expect((await lookup(later.token, `codehost_id=${ids.codehost_id}`)).res.status).toBe(200);

    const client = adminClient();
    try {
      expect(await erasePeople(client, SUPPRESSION_KEY, { kind: "codehost_id", value: ids.codehost_id }, null, TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    } finally {
      client.close();
    }
    const notice = { profnet_id: null, profnet_public_identifier: ids.profnet_public_identifier, codehost_login: null, erased_at: expect.any(String) };
    expect((await feed(receiver.token)).body.erasures).toEqual([{ ...notice, codehost_id: null }]);
    expect((await feed(later.token)).body.erasures).toEqual([{ ...notice, codehost_id: ids.codehost_id }]);
  });

  it("pages oldest first with a cursor; bad since, cursor and limit are 400s that say what is wrong", async () => {
    const { token, accountId } = await newAccount(0);
    for (let i = 0; i < 5; i++) await db.run(sql`insert into erasure_notices (account_id, profnet_id, codehost_id, erased_at) values (${accountId}, ${1000 + i}, null, ${Date.parse("2026-11-01T00:00:00Z") + (i % 2)})`);
    const seen: (number | null)[] = [];
    let cursor = "";
    for (let pages = 0; ; pages++) {
      const page = await feed(token, `?since=2026-11-01T00:00:00Z&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.res.status).toBe(200);
      seen.push(...page.body.erasures.map((e) => e.profnet_id));
      if (!page.body.next_cursor) break;
      cursor = page.body.next_cursor;
      expect(pages).toBeLessThan(5);
    }
    expect(seen).toEqual([1000, 1002, 1004, 1001, 1003]);
    expect((await feed(token, "?since=yesterday")).body).toEqual({ error: "since must be an RFC 3339 date-time, such as 2026-11-01T00:00:00Z" });
    expect((await feed(token, "?cursor=zzz")).res.status).toBe(400);
    expect((await feed(token, "?limit=0")).body).toEqual({ error: "limit must be an integer between 1 and 1000" });
    expect((await call("/v1/people/erasures")).status).toBe(401);
  });
});
