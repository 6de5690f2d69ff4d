/**
 * People events (docs/api.md "People events") inside workerd against the real database and the real queue: the
 * subscription; an address the account received becoming undeliverable, a new address, an erasure, each signed the
 * Standard Webhooks way with the account's secret and sent only to subscribed accounts that looked the person up
 * lately; a failed delivery retried with back-off as a job callback is, then given up.
 */
import { env } from "cloudflare:workers";
import { createClient } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import { PeopleEvent, PeopleEventsSubscription } from "../../shared/api.ts";
import type { Bindings, JobsQueue } from "../../edge/env.ts";
import { deliverPeopleEvent, runPeopleEventsCron } from "../../edge/people-events.ts";
import { writeStoredEmailAnswers } from "../../edge/people/store.ts";
import { webhookSecret } from "../../scripts/admin/accounts.ts";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { call, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

const DAY = 86_400_000;
const WINDOW_SECONDS = 90 * 86_400;
const bindings = env as unknown as Bindings & { JOBS_QUEUE: JobsQueue };
const deps = () => ({ db, queue: bindings.JOBS_QUEUE, dohUrl: bindings.DOH_URL!, allowPrivateCallbacks: true, webhookSecretKey: TEST_WEBHOOK_SECRET_KEY });
const cron = () => runPeopleEventsCron(deps(), WINDOW_SECONDS);

type Delivery = { headers: Record<string, string>; body: string; answered: number };
const hook = () => `${inject("webhookUrl")}/hooks/${crypto.randomUUID()}`;
const deliveries = async (url: string) => (await (await fetch(url.replace("/hooks/", "/__deliveries/"))).json()) as Delivery[];
async function received(url: string, count: number, waitMs = 5_000): Promise<Delivery[]> {
  const deadline = Date.now() + waitMs;
  let got = await deliveries(url);
  while (got.length < count && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    got = await deliveries(url);
  }
  return got;
}

async function verifySignature(accountId: string, d: Delivery): Promise<boolean> {
  const { secret } = await webhookSecret(db, accountId, TEST_WEBHOOK_SECRET_KEY);
  const key = await crypto.subtle.importKey("raw", Uint8Array.from(atob(secret.slice(6)), (ch) => ch.charCodeAt(0)), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const [version, mac] = d.headers["webhook-signature"]!.split(",");
  const signed = `${d.headers["webhook-id"]}.${d.headers["webhook-timestamp"]}.${d.body}`;
  return version === "v1" && crypto.subtle.verify("HMAC", key, Uint8Array.from(atob(mac!), (ch) => ch.charCodeAt(0)), new TextEncoder().encode(signed));
}

const json = (body: unknown) => ({ method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function subscribed(url: string) {
  const account = await newAccount(10);
  const res = await call("/v1/people/events/subscription", { token: account.token, ...json({ url }) });
  expect(res.status).toBe(200);
  return account;
}

async function lookup(token: string, query: string) {
  const res = await call(`/v1/people?${query}`, { token });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

/** Two not-found answers a day apart: our re-verification makes the address undeliverable. */
async function makeUndeliverable(email: string) {
  const rules = { maxAgeSeconds: 2_592_000, recheckSeconds: 86_400 };
  const notFound = (checked_at: number) => ({ email, classification: "invalid", smtp_outcome: "mailbox_not_found", reason: "mailbox_not_found", checked_at });
  await writeStoredEmailAnswers(db, [notFound(Date.now() - 2 * DAY)], rules);
  await writeStoredEmailAnswers(db, [notFound(Date.now())], rules);
}

describe("the subscription", () => {
  it("PUT sets it, GET reads it, DELETE clears it; a URL the callback rules refuse is 400 naming it", async () => {
    const { token } = await newAccount(1);
    const path = "/v1/people/events/subscription";
    expect(PeopleEventsSubscription.strict().parse(await (await call(path, { token })).json())).toEqual({ url: null, window_seconds: 7_776_000 });
    const url = hook();
    expect(await (await call(path, { token, ...json({ url }) })).json()).toEqual({ url, window_seconds: 7_776_000 });
    expect(await (await call(path, { token })).json()).toEqual({ url, window_seconds: 7_776_000 });
    const bad = await call(path, { token, ...json({ url: "ftp://example.com/x" }) });
    expect([bad.status, await bad.json()]).toEqual([400, { error: "url must be an https URL" }]);
    expect(await (await call(path, { token, method: "DELETE" })).json()).toEqual({ url: null, window_seconds: 7_776_000 });
  });
});

describe("events to the accounts that received the person", () => {
  it("an address the account received became undeliverable: signed, with the identifiers as it received them; only subscribed accounts that looked the person up within the window", async () => {
    const ids = uniqueIds();
    const email = `gone-${ids.profnet_id}@events.example`;
    await insertPerson({ ...ids, emails: [email, `kept-${ids.profnet_id}@events.example`] });
    const url = hook();
    const subscriber = await subscribed(url);
    const lateUrl = hook();
    const late = await subscribed(lateUrl);
    const unsubscribed = await newAccount(5);
    await lookup(subscriber.token, `codehost_login=${ids.codehost_login}`);
    await lookup(late.token, `profnet_id=${ids.profnet_id}`);
    await lookup(unsubscribed.token, `profnet_id=${ids.profnet_id}`);
    // The late account's lookup is older than the window.
    await db.run(sql`update person_access_log set created_at = ${Date.now() - WINDOW_SECONDS * 1000 - DAY} where account_id = ${late.accountId}`);

    await makeUndeliverable(email);
    expect((await cron()).people_events_created).toBe(1);
    const [d] = await received(url, 1);
    expect(d!.answered).toBe(204);
    expect(d!.headers["webhook-id"]).toMatch(/^evt_[0-9a-f]+$/);
    expect(await verifySignature(subscriber.accountId, d!)).toBe(true);
    const body = PeopleEvent.parse(JSON.parse(d!.body));
    expect(body).toEqual({
      type: "person.address_undeliverable",
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: { person: { profnet_id: ids.profnet_id, profnet_public_identifier: ids.profnet_public_identifier, codehost_id: ids.codehost_id, codehost_login: ids.codehost_login }, email_address: email },
    });
    // Delivered events are not kept; nobody else was sent anything.
    expect(await db.all(sql`select 1 from people_events where id = ${d!.headers["webhook-id"]}`)).toEqual([]);
    await new Promise((r) => setTimeout(r, 300));
    expect(await deliveries(lateUrl)).toEqual([]);
    expect((await cron()).people_events_created).toBe(0);
  });

  it("a new address appeared: sent, and recorded as a disclosure; an address added to a person nobody received is nobody's event", async () => {
    const ids = uniqueIds();
    const personId = await insertPerson({ profnet_id: ids.profnet_id, emails: [`first-${ids.profnet_id}@events.example`] });
    const url = hook();
    const subscriber = await subscribed(url);
    await lookup(subscriber.token, `profnet_id=${ids.profnet_id}`);
    const other = uniqueIds();
    await insertPerson({ profnet_id: other.profnet_id, emails: ["x@events.example"] });
    const added = `second-${ids.profnet_id}@events.example`;
    await db.run(sql`insert into person_emails (person_id, email, first_seen_at, last_seen_at) values (${personId}, ${added}, ${Date.now()}, ${Date.now()})`);
    await db.run(sql`insert into person_emails (person_id, email, first_seen_at, last_seen_at) select id, 'y@events.example', 0, 0 from people where profnet_id = ${other.profnet_id}`);
    await cron();
    const [d] = await received(url, 1);
    expect(PeopleEvent.parse(JSON.parse(d!.body))).toMatchObject({ type: "person.address_added", data: { person: { profnet_id: ids.profnet_id }, email_address: added } });
    const log = await db.all<{ key_id: string }>(sql`select key_id from person_access_log where account_id = ${subscriber.accountId} order by id`);
    expect(log.map((r) => r.key_id)).toEqual([subscriber.keyId, "people_event"]);
    expect(await db.all(sql`select 1 from person_changes where person_id = (select id from people where profnet_id = ${other.profnet_id})`)).toEqual([]);
  });

  it("an erasure: what to delete, to each subscribed account that received the person, while the erasures feed still lists it; events not yet sent about them are dropped", async () => {
    const ids = uniqueIds();
    await insertPerson({ ...ids, emails: [`erased-${ids.profnet_id}@events.example`] });
    const url = hook();
    const subscriber = await subscribed(url);
    await lookup(subscriber.token, `profnet_id=${ids.profnet_id}`);
    // An event about them that has not gone out yet.
    await makeUndeliverable(`erased-${ids.profnet_id}@events.example`);
    const client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
    try {
      expect(await erasePeople(client, TEST_WEBHOOK_SECRET_KEY, { kind: "profnet_id", value: ids.profnet_id }, null, TEST_FEEDBACK_HASH_KEY)).toMatchObject({ erased: 1 });
    } finally {
      client.close();
    }
    await cron();
    const got = await received(url, 1);
    expect(got).toHaveLength(1);
    expect(await verifySignature(subscriber.accountId, got[0]!)).toBe(true);
    expect(PeopleEvent.parse(JSON.parse(got[0]!.body))).toEqual({
      type: "person.erased",
      timestamp: expect.any(String),
      data: {
        person: { profnet_id: ids.profnet_id, profnet_public_identifier: ids.profnet_public_identifier, codehost_id: ids.codehost_id, codehost_login: ids.codehost_login },
        erased_at: expect.any(String),
        delete: ["profnet_id", "profnet_public_identifier", "codehost_id", "codehost_login", "codehost_username", "socialnet_username", "microblog_username", "email_addresses", "phone_numbers", "name", "employment"],
      },
    });
    const feed = (await (await call("/v1/people/erasures", { token: subscriber.token })).json()) as { erasures: { profnet_id: number }[] };
    expect(feed.erasures.map((e) => e.profnet_id)).toEqual([ids.profnet_id]);
  });
});

describe("delivery, as job callbacks are delivered", () => {
  it("a failed delivery is retried on the schedule with the same webhook-id, then taken; after the last retry the event is given up", async () => {
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: [`retry-${ids.profnet_id}@events.example`] });
    const url = hook();
    await fetch(url.replace("/hooks/", "/__script/"), { method: "POST", body: JSON.stringify({ fail: 1, status: 500 }) });
    const subscriber = await subscribed(url);
    await lookup(subscriber.token, `profnet_id=${ids.profnet_id}`);
    await makeUndeliverable(`retry-${ids.profnet_id}@events.example`);
    await cron();
    const [first] = await received(url, 1);
    expect(first!.answered).toBe(500);
    const [row] = await db.all<{ attempts: number; last_error: string; next_at: number; state: string }>(sql`select attempts, last_error, next_at, state from people_events where id = ${first!.headers["webhook-id"]}`);
    expect(row).toMatchObject({ attempts: 1, last_error: "HTTP 500", state: "pending" });
    // The first retry comes 5 s later (CALLBACK_RETRY_DELAYS_SECONDS), on the queue.
    expect(Number(row!.next_at) - Date.now()).toBeGreaterThan(3_000);
    const both = await received(url, 2, 10_000);
    expect(both.map((d) => [d.headers["webhook-id"], d.answered])).toEqual([[first!.headers["webhook-id"], 500], [first!.headers["webhook-id"], 204]]);
    expect(await verifySignature(subscriber.accountId, both[1]!)).toBe(true);
    expect(await db.all(sql`select 1 from people_events where id = ${first!.headers["webhook-id"]}`)).toEqual([]);

    // After the last of the schedule's attempts: given up, kept a week for the record.
    await fetch(url.replace("/hooks/", "/__script/"), { method: "POST", body: JSON.stringify({ fail: 1, status: 503 }) });
    const last = `evt_lastattempt${ids.profnet_id}`;
    await db.run(sql`insert into people_events (id, account_id, person_id, type, body, created_at, attempts, next_at) values (${last}, ${subscriber.accountId}, null, 'person.erased', '{}', ${Date.now()}, 7, ${Date.now()})`);
    await deliverPeopleEvent(deps(), last, 7);
    const [given] = await db.all<{ state: string; attempts: number }>(sql`select state, attempts from people_events where id = ${last}`);
    expect(given).toEqual({ state: "failed", attempts: 8 });
  });
});
