/**
 * Merges that are never wrong (docs/operations.md "Merge candidates"), inside workerd against the real database: an
 * import line whose identifiers point at two people is rejected and recorded, and a lookup never returns data from two
 * people; an operator applies it (one person, the line imported, the access log carried over, audited) and undoes it
 * (both people exactly as they were), and an undo that would lose a later import is refused.
 */
import { inject } from "vitest";
import { createClient, type Client } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PEOPLE_AUDIT_ACCOUNT_ID } from "../../edge/identity/internal-accounts.ts";
import { applyMergeCandidate, dismissMergeCandidate, listMergeCandidates, undoMergeCandidate } from "../../scripts/admin/people-merge.ts";
import { loadPerson } from "../../scripts/admin/people-privacy.ts";
import { parsePersonRecord, type PersonRecord } from "../../scripts/admin/people-record.ts";
import { upsertPeopleBatch } from "../../scripts/admin/people-upsert.ts";
import { call, db, newAccount, uniqueIds } from "./helpers.ts";

let client: Client;
beforeAll(() => {
  client = createClient({ url: inject("databaseUrl"), authToken: inject("databaseAuthToken") });
});
afterAll(() => client.close());

const record = (value: Record<string, unknown>): PersonRecord => {
  const parsed = parsePersonRecord(value);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.record;
};
const importLines = (lines: Record<string, unknown>[], source = "acme") => upsertPeopleBatch(client, lines.map((value, i) => ({ line: i + 1, record: record(value) })), source);

async function lookup(token: string, query: string) {
  const res = await call(`/v1/people?${query}`, { token });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Two people, the second received by an account, and a line that says they are one. */
async function twoPeopleAndALine() {
  const a = uniqueIds();
  const b = uniqueIds();
  await importLines([
    { profnet_id: a.profnet_id, profnet_public_identifier: a.profnet_public_identifier, email_addresses: [`shared-${a.profnet_id}@merge.example`, `a-${a.profnet_id}@merge.example`], phone_numbers: ["+14155550123"], socialnet_username: "ada.s" },
    { codehost_login: b.codehost_login, codehost_id: b.codehost_id, email_addresses: [`SHARED-${a.profnet_id}@merge.example`, `b-${a.profnet_id}@merge.example`], phone_numbers: ["+14155550123", "+442071838750"], microblog_username: "ada_b" },
  ]);
  const receiver = await newAccount(20);
  expect((await lookup(receiver.token, `codehost_login=${b.codehost_login}`)).status).toBe(200);
  const line = { profnet_id: a.profnet_id, codehost_login: b.codehost_login, email_addresses: [`new-${a.profnet_id}@merge.example`] };
  const outcomes = await importLines([line], "globex");
  return { a, b, receiver, outcomes, line };
}

const idOf = async (where: ReturnType<typeof sql>) => Number((await db.all<{ id: number }>(sql`select id from people where ${where}`))[0]!.id);

describe("merge candidates", () => {
  it("a line whose identifiers point at two people is rejected and recorded once; until an operator decides, each lookup returns one person's data only", async () => {
    const { a, b, receiver, outcomes, line } = await twoPeopleAndALine();
    expect(outcomes).toEqual([{ line: 1, outcome: "rejected", reason: expect.stringMatching(/^conflict: identifiers belong to different people/), mergeCandidate: true }]);
    // The same line again is the same candidate.
    await importLines([line], "globex");
    const [aId, bId] = [await idOf(sql`profnet_id = ${a.profnet_id}`), await idOf(sql`lower(codehost_login) = lower(${b.codehost_login})`)];
    const mine = (await listMergeCandidates(client, "open")).filter((c) => c.people.join() === [aId, bId].join());
    expect(mine).toEqual([expect.objectContaining({ state: "open", people: [aId, bId], source: "globex", line: 1, record: { ...line, phone_numbers: [], source: "globex" } })]);
    const byA = await lookup(receiver.token, `profnet_id=${a.profnet_id}&codehost_login=${b.codehost_login}`);
    expect(byA.body).toMatchObject({ profnet_id: a.profnet_id, codehost_login: null, email_addresses: [`shared-${a.profnet_id}@merge.example`, `a-${a.profnet_id}@merge.example`] });
    const byB = await lookup(receiver.token, `codehost_login=${b.codehost_login}`);
    expect(byB.body).toMatchObject({ profnet_id: null, codehost_login: b.codehost_login, email_addresses: [`SHARED-${a.profnet_id}@merge.example`, `b-${a.profnet_id}@merge.example`] });
  });

  it("applied: one person (the older stays), the line imported, the other's recipients now its own, audited; undone: both exactly as they were", async () => {
    const { a, b, receiver } = await twoPeopleAndALine();
    const [aId, bId] = [await idOf(sql`profnet_id = ${a.profnet_id}`), await idOf(sql`lower(codehost_login) = lower(${b.codehost_login})`)];
    const candidate = (await listMergeCandidates(client, "open")).find((c) => c.people.join() === [aId, bId].join())!;
    const before = [await loadPerson(client, aId), await loadPerson(client, bId)];

    expect(await applyMergeCandidate(client, candidate.id)).toEqual({ kept: aId, merged: bId });
    expect(await loadPerson(client, bId)).toBeNull();
    const merged = await lookup(receiver.token, `codehost_login=${b.codehost_login}&include=email_details`);
    expect(merged.body).toMatchObject({
      profnet_id: a.profnet_id,
      codehost_id: b.codehost_id,
      codehost_login: b.codehost_login,
      socialnet_username: "ada.s",
      microblog_username: "ada_b",
      email_addresses: [`shared-${a.profnet_id}@merge.example`, `a-${a.profnet_id}@merge.example`, `b-${a.profnet_id}@merge.example`, `new-${a.profnet_id}@merge.example`],
      phone_numbers: ["+14155550123", "+442071838750"],
    });
    // The address both had is one row with both people's sources; the line's address came with its own source.
    const details = merged.body.email_details as { email: string; sources: number }[];
    expect(details.map((d) => [d.email, d.sources])).toEqual([
      [`shared-${a.profnet_id}@merge.example`, 1],
      [`a-${a.profnet_id}@merge.example`, 1],
      [`b-${a.profnet_id}@merge.example`, 1],
      [`new-${a.profnet_id}@merge.example`, 1],
    ]);
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${receiver.accountId} and person_id = ${bId}`)).toEqual([]);
    const [audited] = await db.all<{ action: string; actor: string; details: string }>(sql`select action, actor, details from audit_events where account_id = ${PEOPLE_AUDIT_ACCOUNT_ID} and target = ${`merge_${candidate.id}`}`);
    expect(audited).toMatchObject({ action: "person.merged", actor: "operator" });
    expect(JSON.parse(audited!.details)).toMatchObject({ kept: aId, merged: bId, source: "globex" });

    expect(await undoMergeCandidate(client, candidate.id)).toEqual({ restored: [aId, bId] });
    const strip = (p: Awaited<ReturnType<typeof loadPerson>>) => ({ ...p, emails: p!.emails.map(({ last_seen_at: _l, ...e }) => e), updated_at: 0 });
    expect([strip(await loadPerson(client, aId)), strip(await loadPerson(client, bId))]).toEqual(before.map(strip));
    expect(await db.all(sql`select 1 from person_access_log where account_id = ${receiver.accountId} and person_id = ${bId}`)).toHaveLength(1);
    expect((await lookup(receiver.token, `codehost_login=${b.codehost_login}`)).body).toMatchObject({ profnet_id: null, email_addresses: [`SHARED-${a.profnet_id}@merge.example`, `b-${a.profnet_id}@merge.example`] });
    const actions = await db.all<{ action: string }>(sql`select action from audit_events where account_id = ${PEOPLE_AUDIT_ACCOUNT_ID} and target = ${`merge_${candidate.id}`} order by id`);
    expect(actions.map((r) => r.action)).toEqual(["person.merged", "person.merge_undone"]);
    expect((await listMergeCandidates(client, "undone")).map((c) => c.id)).toContain(candidate.id);
    await expect(undoMergeCandidate(client, candidate.id)).rejects.toThrow(/only an applied merge can be undone/);
  });

  it("an undo that would lose what was imported since is refused; two accounts (different ids) are never merged; a dismissed candidate is closed", async () => {
    const first = await twoPeopleAndALine();
    const [aId, bId] = [await idOf(sql`profnet_id = ${first.a.profnet_id}`), await idOf(sql`lower(codehost_login) = lower(${first.b.codehost_login})`)];
    const candidate = (await listMergeCandidates(client, "open")).find((c) => c.people.join() === [aId, bId].join())!;
    await applyMergeCandidate(client, candidate.id);
    await importLines([{ profnet_id: first.a.profnet_id, email_addresses: [`later-${first.a.profnet_id}@merge.example`] }], "initech");
    await expect(undoMergeCandidate(client, candidate.id)).rejects.toThrow(new RegExp(`person ${aId} changed since the merge`));
    expect(await loadPerson(client, bId)).toBeNull();

    // Two people who both have a profnet_id are two accounts: a line joining them is recorded, and never applied.
    const x = uniqueIds();
    const y = uniqueIds();
    await importLines([{ profnet_id: x.profnet_id }, { profnet_id: y.profnet_id, codehost_login: y.codehost_login }]);
    await importLines([{ profnet_id: x.profnet_id, codehost_login: y.codehost_login }]);
    const [xId, yId] = [await idOf(sql`profnet_id = ${x.profnet_id}`), await idOf(sql`profnet_id = ${y.profnet_id}`)];
    const twoAccounts = (await listMergeCandidates(client, "open")).find((c) => c.people.join() === [xId, yId].join())!;
    await expect(applyMergeCandidate(client, twoAccounts.id)).rejects.toThrow(/different profnet_id: they are two accounts/);
    await dismissMergeCandidate(client, twoAccounts.id);
    expect((await listMergeCandidates(client, "dismissed")).map((c) => c.id)).toContain(twoAccounts.id);
    await expect(applyMergeCandidate(client, twoAccounts.id)).rejects.toThrow(/is dismissed, not open/);
  });
});
