/**
 * The 0011 and 0012 migrations on a database that already holds keys and charges (docs/api.md "Keys and
 * scopes"): existing keys keep working with every scope, no expiry and no cap; the ledger trigger builds the
 * usage roll-up from the next charge on. Run with drizzle's migrator on a real libSQL file, first with the
 * migrations up to 0010, then with all of them, as a deployment would.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "drizzle-orm/libsql/migrator";
import { afterAll, expect, it } from "vitest";
import { SCOPES_BEFORE_1_10_STORED } from "../../shared/scopes.ts";
import { MIGRATIONS_FOLDER, openDatabase } from "../../scripts/lib/database.ts";

const dir = mkdtempSync(join(tmpdir(), "keys-migration-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of the migrations folder whose journal stops at `lastIdx`. */
function migrationsUpTo(lastIdx: number): string {
  const folder = join(dir, `up-to-${lastIdx}`);
  cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalFile = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx <= lastIdx);
  writeFileSync(journalFile, JSON.stringify(journal));
  return folder;
}

it("keys made before 0011 keep every scope there was before 1.10.0 (feedback:write and events:write are granted, not assumed) and no limits; charges after it fill the roll-up", async () => {
  const db = openDatabase(`file:${join(dir, "db.sqlite")}`);
  await migrate(db, { migrationsFolder: migrationsUpTo(10) });
  const c = db.$client;
  await c.execute("insert into accounts (id, name) values ('acc_old', 'old')");
  await c.execute("insert into credit_ledger (account_id, delta, balance_after, reason) values ('acc_old', 10, 10, 'grant')");
  await c.execute("insert into api_keys (id, account_id, token_hash, prefix) values ('key_old', 'acc_old', 'hash', 'cv_old')");
  await c.execute("insert into credit_ledger (account_id, delta, balance_after, reason, request_id) values ('acc_old', -1, 9, 'lookup', 'r1')");

  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  const key = (await c.execute("select name, scopes, created_by, expires_at, daily_credit_cap, last_used_at, revoked_at from api_keys where id = 'key_old'")).rows[0]!;
  expect({ ...key, scopes: JSON.parse(String(key.scopes)) }).toEqual({
    name: "",
    scopes: JSON.parse(SCOPES_BEFORE_1_10_STORED) as string[],
    created_by: "operator",
    expires_at: null,
    daily_credit_cap: null,
    last_used_at: null,
    revoked_at: null,
  });
  // The charge from before has no key: the roll-up starts empty rather than guessing.
  expect((await c.execute("select count(*) as n from usage_daily")).rows[0]!.n).toBe(0);
  const day = Date.UTC(2031, 0, 2, 12);
  await c.execute({ sql: "insert into credit_ledger (account_id, delta, balance_after, reason, request_id, key_id, created_at) values ('acc_old', -2, 7, 'lookup', 'r2', 'key_old', ?)", args: [day] });
  await c.execute({ sql: "insert into credit_ledger (account_id, delta, balance_after, reason, request_id, key_id, created_at) values ('acc_old', -1, 6, 'lookup', 'r3', 'key_old', ?)", args: [day + 1000] });
  await c.execute("insert into credit_ledger (account_id, delta, balance_after, reason) values ('acc_old', 5, 11, 'grant')");
  expect((await c.execute("select day, lookups_charged, credits_spent from usage_daily")).rows.map((r) => ({ ...r }))).toEqual([
    { day: "2031-01-02", lookups_charged: 2, credits_spent: 3 },
  ]);
  expect((await c.execute("select credit_balance from accounts where id = 'acc_old'")).rows[0]!.credit_balance).toBe(11);
  c.close();
});
