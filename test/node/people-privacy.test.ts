/**
 * Erasure, suppression and access requests as an operator runs them (`npm run admin -- people erase |
 * access-report | import`), a child process against a real libSQL file database.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, createApiKey } from "../../scripts/admin/accounts.ts";
import { suppressionHash } from "../../scripts/admin/people-privacy.ts";
import { applyMigrations, openDatabase, type NodeDatabase } from "../../scripts/lib/database.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const SUPPRESSION_KEY = "c3VwcHJlc3Npb24ta2V5LWZvci10ZXN0cy0zMi1ieXQ=";
// Each run starts a Node process with the TypeScript loader: 1-2 s apiece on an idle machine, several times that
// beside another test file. A hang guard, not a speed test: generous, whatever the load.
const CLI_TEST_TIMEOUT = 240_000;

let dir: string;
let databaseUrl: string;
let db: NodeDatabase;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "people-privacy-"));
  databaseUrl = `file:${join(dir, "privacy.db")}`;
  db = openDatabase(databaseUrl);
  await applyMigrations(db);
});

afterAll(async () => {
  db.$client.close();
  await rm(dir, { recursive: true, force: true });
});

type Run = { status: number; json: Record<string, unknown>; stderr: string };

async function admin(args: string[], env: Record<string, string | undefined> = { SUPPRESSION_KEY }): Promise<Run> {
  let out: { status: number; stdout: string; stderr: string };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args, "--json"], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: databaseUrl, SUPPRESSION_KEY: undefined, ...env },
    });
    out = { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== "number") throw error;
    out = { status: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
  const lines = out.stdout.split("\n").filter((l) => l !== "");
  expect(lines, out.stdout + out.stderr).toHaveLength(1);
  return { status: out.status, json: JSON.parse(lines[0]!) as Record<string, unknown>, stderr: out.stderr };
}

async function importLines(name: string, lines: object[], env?: Record<string, string | undefined>) {
  const path = join(dir, name);
  await writeFile(path, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  return admin(["people", "import", path], env);
}

const count = async (table: string, where = "1") =>
  Number((await db.$client.execute(`select count(*) as n from ${table} where ${where}`)).rows[0]!.n);

describe("people erase", () => {
  it(
    "deletes the person, suppresses each identifier and address by keyed hash only, and no import brings them back",
    async () => {
      const first = await importLines("people.jsonl", [
        { profnet_id: 501, profnet_public_identifier: "Grace-Hopper", codehost_login: "ghopper", email_addresses: ["grace@navy.example", "GH@gmail.com"], phone_numbers: ["+14155550123"] },
        { profnet_id: 502, email_addresses: ["other@example.org"] },
      ]);
      expect(first.json).toMatchObject({ inserted: 2, rejected: 0 });
      // An account received Grace: the erasure leaves it a notice.
      const account = await createAccount(db, "receiver", 0);
      const key = await createApiKey(db, account.id);
      const graceId = Number((await db.$client.execute("select id from people where profnet_id = 501")).rows[0]!.id);
      await db.run(sql`insert into person_access_log (person_id, account_id, key_id, created_at, profnet_id, profnet_public_identifier, codehost_login)
        values (${graceId}, ${account.id}, ${key.id}, 1000, 501, 'Grace-Hopper', 'ghopper'), (${graceId}, ${account.id}, ${key.id}, 2000, 501, 'Grace-Hopper', 'ghopper')`);

      const report = await admin(["people", "access-report", "--email", "gh@GMAIL.com"]);
      expect(report.status).toBe(0);
      expect(report.json).toMatchObject({
        person: { profnet_id: 501, profnet_public_identifier: "Grace-Hopper", codehost_login: "ghopper", email_details: [{ email: "grace@navy.example", verification: null }, { email: "GH@gmail.com" }], phones: [{ phone: "+14155550123" }] },
        recipients: [{ account_id: account.id, account_name: "receiver", first_received_at: "1970-01-01T00:00:01.000Z", last_received_at: "1970-01-01T00:00:02.000Z", lookups: 2, events: 0 }],
      });

      const erased = await admin(["people", "erase", "--codehost-login", "GHopper", "--reason", "GDPR Art. 17 request #12"]);
      expect([erased.status, erased.json]).toEqual([0, { erased: 1, suppressed: 6 }]);
      expect(await count("people", "profnet_id = 501")).toBe(0);
      expect(await count("person_emails", "lower(email) in ('grace@navy.example', 'gh@gmail.com')")).toBe(0);
      expect(await count("person_phones")).toBe(0);
      expect(await count("person_access_log")).toBe(0);
      expect((await db.$client.execute("select account_id, profnet_id, profnet_public_identifier, codehost_id, codehost_login from erasure_notices")).rows.map((r) => ({ ...r }))).toEqual([
        { account_id: account.id, profnet_id: 501, profnet_public_identifier: "Grace-Hopper", codehost_id: null, codehost_login: "ghopper" },
      ]);
      // Hashes, never the values.
      const stored = (await db.$client.execute("select hash, kind, reason from suppressions where kind != 'key_check' order by kind")).rows.map((r) => ({ ...r }));
      expect(stored.map((r) => r.kind)).toEqual(["codehost_login", "email", "email", "phone", "profnet_id", "profnet_public_identifier"]);
      expect(stored.every((r) => r.reason === "GDPR Art. 17 request #12" && /^[0-9a-f]{64}$/.test(String(r.hash)))).toBe(true);
      expect(stored.map((r) => r.hash)).toContain(suppressionHash(SUPPRESSION_KEY, "profnet_public_identifier", "grace-hopper"));
      const dump = JSON.stringify((await db.$client.execute("select * from suppressions")).rows);
      for (const plain of ["Grace", "ghopper", "navy", "gmail"]) expect(dump.toLowerCase()).not.toContain(plain.toLowerCase());

      // Any line carrying any suppressed identifier or address is rejected, and nothing of it stored.
      const again = await importLines("again.jsonl", [
        { profnet_id: 501, email_addresses: ["new@example.org"] },
        { codehost_id: 9001, profnet_public_identifier: "grace-hopper" },
        { codehost_id: 9002, email_addresses: ["fresh@example.org", "gh@gmail.com"], phone_numbers: ["+14155550199"] },
        { codehost_id: 9003, email_addresses: ["fine@example.org"] },
      ]);
      expect(again.json).toMatchObject({
        inserted: 1,
        rejected: 3,
        rejections: [
          { line: 1, reason: "suppressed" },
          { line: 2, reason: "suppressed" },
          { line: 3, reason: "suppressed" },
        ],
      });
      expect(await count("people", "codehost_id in (9001, 9002)")).toBe(0);
      expect(await count("person_emails", "email in ('new@example.org', 'fresh@example.org')")).toBe(0);
      expect(await count("person_phones")).toBe(0);
      expect(await count("people", "codehost_id = 9003")).toBe(1);

      // Without the key, an import into a database with suppressions refuses to run rather than let anyone back.
      const keyless = await importLines("keyless.jsonl", [{ codehost_id: 9010 }], { SUPPRESSION_KEY: undefined });
      expect(keyless.status).toBe(1);
      expect(String(keyless.json.error)).toContain("SUPPRESSION_KEY is not set");
      expect(await count("people", "codehost_id = 9010")).toBe(0);
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "--email alone suppresses an address nobody has; an erase that matches nothing else exits 1 with erased 0; selectors are checked",
    async () => {
      const optOut = await admin(["people", "erase", "--email", "Opt.Out@Example.org"]);
      expect([optOut.status, optOut.json]).toEqual([0, { erased: 0, suppressed: 1 }]);
      const later = await importLines("optout.jsonl", [{ codehost_id: 9100, email_addresses: ["opt.out@example.org"] }]);
      expect(later.json).toMatchObject({ inserted: 0, rejected: 1, rejections: [{ line: 1, reason: "suppressed" }] });

      const none = await admin(["people", "erase", "--profnet-id", "999999"]);
      expect([none.status, none.json]).toEqual([1, { erased: 0 }]);
      const nobody = await admin(["people", "access-report", "--profnet-id", "999999"]);
      expect([nobody.status, nobody.json]).toEqual([1, { person: null, recipients: [], accesses: [] }]);

      const two = await admin(["people", "erase", "--profnet-id", "1", "--email", "a@b.example"]);
      expect(two.status).toBe(2);
      expect(String(two.json.error)).toContain("exactly one of --profnet-id");
      const badKey = await admin(["people", "erase", "--profnet-id", "1"], { SUPPRESSION_KEY: "short" });
      expect([badKey.status, badKey.json]).toEqual([1, { error: "SUPPRESSION_KEY must be 32 bytes in base64 (make one with `openssl rand -base64 32`)" }]);
      const noKey = await admin(["people", "erase", "--profnet-id", "1"], { SUPPRESSION_KEY: undefined });
      expect(noKey.status).toBe(1);
      expect(String(noKey.json.error)).toContain("SUPPRESSION_KEY is not set");
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "a later import does not revive an undeliverable address",
    async () => {
      await importLines("ada.jsonl", [{ profnet_id: 777, email_addresses: ["ada@closed.example"] }]);
      await db.$client.execute("update person_emails set undeliverable_at = 5, classification = 'invalid', reason = 'mailbox_not_found', checked_at = 5 where email = 'ada@closed.example'");
      const again = await importLines("ada-again.jsonl", [{ profnet_id: 777, email_addresses: ["ADA@closed.example", "ada@open.example"] }]);
      expect(again.json).toMatchObject({ updated: 1, rejected: 0 });
      const rows = (await db.$client.execute("select email, undeliverable_at, next_check_at from person_emails where person_id = (select id from people where profnet_id = 777) order by id")).rows.map((r) => ({ ...r }));
      expect(rows).toEqual([
        { email: "ada@closed.example", undeliverable_at: 5, next_check_at: 0 },
        // New addresses are due at once: checked soon after import.
        { email: "ada@open.example", undeliverable_at: null, next_check_at: 0 },
      ]);
    },
    CLI_TEST_TIMEOUT,
  );
});

describe("merge candidates, as an operator decides them (`npm run admin -- merges ...`)", () => {
  it(
    "a conflicting import line is listed; apply makes one person and imports the line; undo gives both back; a bad ID is a usage error",
    async () => {
      await importLines("merge-base.jsonl", [
        { profnet_id: 901, email_addresses: ["m1@merge.example"] },
        { codehost_login: "merge-b", email_addresses: ["m2@merge.example"] },
      ]);
      const conflict = await importLines("merge-line.jsonl", [{ profnet_id: 901, codehost_login: "merge-b", email_addresses: ["m3@merge.example"] }]);
      expect(conflict.json).toMatchObject({ rejected: 1, merge_candidates: 1 });
      const listed = await admin(["merges", "list", "--state", "open"]);
      const [candidate] = (listed.json as { candidates: { id: number; people: number[]; source: string }[] }).candidates.filter((c) => c.source === "merge-line.jsonl");
      expect(candidate).toBeDefined();
      const applied = await admin(["merges", "apply", String(candidate!.id)]);
      expect([applied.status, applied.json]).toEqual([0, { applied: candidate!.id, kept: candidate!.people[0], merged: candidate!.people[1] }]);
      expect(await count("people", "profnet_id = 901 and codehost_login = 'merge-b'")).toBe(1);
      expect(await count("person_emails", `person_id = ${candidate!.people[0]}`)).toBe(3);
      const undone = await admin(["merges", "undo", String(candidate!.id)]);
      expect([undone.status, undone.json]).toEqual([0, { undone: candidate!.id, restored: candidate!.people }]);
      expect(await count("people", "profnet_id = 901 and codehost_login is null")).toBe(1);
      expect(await count("person_emails", `person_id = ${candidate!.people[1]}`)).toBe(1);
      const audited = await db.all<{ action: string; actor: string }>(sql`select action, actor from audit_events where account_id = 'acc_people_data_operators' and target = ${`merge_${candidate!.id}`} order by id`);
      expect(audited).toEqual([
        { action: "person.merged", actor: "operator" },
        { action: "person.merge_undone", actor: "operator" },
      ]);
      const again = await admin(["merges", "undo", String(candidate!.id)]);
      expect([again.status, again.json]).toEqual([1, { error: `Merge candidate ${candidate!.id} is undone: only an applied merge can be undone` }]);

      // Dismissed: closed without merging, and no longer open.
      const second = await importLines("merge-line-2.jsonl", [{ profnet_id: 901, codehost_login: "merge-b", email_addresses: ["m4@merge.example"] }]);
      expect(second.json).toMatchObject({ rejected: 1, merge_candidates: 1 });
      const open = (await admin(["merges", "list"])).json as { candidates: { id: number; state: string; source: string }[] };
      const [next] = open.candidates.filter((c) => c.source === "merge-line-2.jsonl");
      expect(next).toMatchObject({ state: "open" });
      const dismissed = await admin(["merges", "dismiss", String(next!.id)]);
      expect([dismissed.status, dismissed.json]).toEqual([0, { dismissed: next!.id }]);
      const listedDismissed = (await admin(["merges", "list", "--state", "dismissed"])).json as { candidates: { id: number }[] };
      expect(listedDismissed.candidates.map((c) => c.id)).toContain(next!.id);

      // Paged, oldest first: a page of one names where the next starts, and the last page says there is no more.
      const all = (await admin(["merges", "list", "--limit", "1000"])).json as { candidates: { id: number }[]; next_after: number | null };
      expect(all.next_after).toBeNull();
      expect(all.candidates.length).toBeGreaterThanOrEqual(2);
      const [lastButOne, last] = all.candidates.slice(-2).map((c) => c.id);
      const page = (await admin(["merges", "list", "--after", String(lastButOne! - 1), "--limit", "1"])).json;
      expect(page).toEqual({ candidates: [expect.objectContaining({ id: lastButOne })], next_after: lastButOne });
      const rest = (await admin(["merges", "list", "--after", String(lastButOne), "--limit", "1"])).json;
      expect(rest).toEqual({ candidates: [expect.objectContaining({ id: last })], next_after: null });
      const badLimit = await admin(["merges", "list", "--limit", "0"]);
      expect([badLimit.status, badLimit.json]).toEqual([2, { error: '--limit must be a whole number from 1 to 1000, got "0"' }]);
      expect(await count("people", "profnet_id = 901 and codehost_login is null")).toBe(1);

      const bad = await admin(["merges", "apply", "first"]);
      expect([bad.status, bad.json]).toEqual([2, { error: 'ID must be a merge candidate\'s number, got "first"' }]);
      const badState = await admin(["merges", "list", "--state", "merged"]);
      expect([badState.status, badState.json]).toEqual([2, { error: '--state must be one of open, applied, dismissed, undone, got "merged"' }]);
      const missing = await admin(["merges", "show", "999999"]);
      expect([missing.status, missing.json]).toEqual([1, { error: "No merge candidate 999999" }]);
    },
    CLI_TEST_TIMEOUT * 6,
  );
});
