/**
 * Longer than 400 lines on purpose: the import's rules, each against one libSQL database.
 * `people import` against a real libSQL file database: what ends up in people, person_emails and
 * person_phones, which lines are rejected and why, and that importing twice changes nothing.
 */
import { createClient, type Client } from "@libsql/client";
import { createClient as createWebClient } from "@libsql/client/web";
import Database from "libsql";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AdminError } from "../../scripts/admin/accounts.ts";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { importPeople } from "../../scripts/admin/people-import.ts";
import { parsePersonRecord } from "../../scripts/admin/people-record.ts";
import { upsertPeopleBatch } from "../../scripts/admin/people-upsert.ts";
import { applyMigrations, openDatabase, type NodeDatabase } from "../../scripts/lib/database.ts";
import { startLibsqlServer } from "../../scripts/libsql-server.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/import/${name}`, import.meta.url));

let dir: string;
let databaseUrl: string;
let db: NodeDatabase;
let client: Client;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "import-people-"));
  databaseUrl = `file:${join(dir, "test.db")}`;
  db = openDatabase(databaseUrl);
  await applyMigrations(db);
  client = db.$client;
});

afterEach(async () => {
  client.close();
  await rm(dir, { recursive: true, force: true });
});

async function writeLines(name: string, lines: unknown[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, lines.map((line) => (typeof line === "string" ? line : JSON.stringify(line))).join("\n") + "\n");
  return path;
}

type StoredPerson = Record<string, unknown> & { emails: string[]; phones: string[] };

/** Every person with their emails and phones in insertion order, the way a test wants to compare them. */
async function storedPeople(): Promise<StoredPerson[]> {
  const people = (await client.execute("select * from people order by id")).rows;
  const emails = (await client.execute("select person_id, email from person_emails order by id")).rows;
  const phones = (await client.execute("select person_id, phone from person_phones order by id")).rows;
  return people.map((row) => {
    const { id, created_at: _created, updated_at: _updated, ...fields } = { ...row };
    return {
      ...fields,
      emails: emails.filter((e) => e.person_id === id).map((e) => String(e.email)),
      phones: phones.filter((p) => p.person_id === id).map((p) => String(p.phone)),
    };
  });
}

async function rowCounts() {
  const { rows } = await client.execute(
    "select (select count(*) from people) as people, (select count(*) from person_emails) as emails, (select count(*) from person_phones) as phones",
  );
  return { ...rows[0] };
}

async function everyStoredRow() {
  const dump: Record<string, unknown[]> = {};
  for (const table of ["people", "person_emails", "person_phones"]) {
    dump[table] = (await client.execute(`select * from ${table} order by id`)).rows.map((row) => ({ ...row }));
  }
  return dump;
}

const fixturePeople = [
  {
    profnet_id: 101,
    profnet_public_identifier: "ada-lovelace",
    codehost_id: 9001,
    codehost_login: "AdaL",
    codehost_username: 'Ada "Countess" Lovelace',
    socialnet_username: "ada.l",
    microblog_username: "ada",
    emails: ["ada@example.com", "ada@gmail.com"],
    phones: ["+442079460123"],
  },
  {
    profnet_id: 102,
    profnet_public_identifier: "grace-hopper",
    codehost_id: null,
    codehost_login: null,
    codehost_username: "Hopper, Grace",
    socialnet_username: null,
    microblog_username: null,
    emails: ["grace@navy.example.org"],
    phones: ["+16502530000"],
  },
  {
    profnet_id: null,
    profnet_public_identifier: null,
    codehost_id: 9003,
    codehost_login: "linus",
    codehost_username: null,
    socialnet_username: null,
    microblog_username: null,
    emails: [],
    phones: [],
  },
  {
    profnet_id: null,
    profnet_public_identifier: "alan-turing",
    codehost_id: null,
    codehost_login: null,
    codehost_username: null,
    socialnet_username: "alan",
    microblog_username: null,
    emails: ["alan@example.co.uk"],
    phones: [],
  },
];

describe("happy paths", () => {
  it.each(["people.jsonl", "people.csv"])("imports %s: trimmed fields, emails deduplicated, phones in E.164", async (name) => {
    const summary = await importPeople(client, fixture(name));

    expect(summary).toMatchObject({ format: name.endsWith(".csv") ? "csv" : "jsonl", source: name, rows: 4 });
    expect(summary).toMatchObject({ inserted: 4, updated: 0, unchanged: 0, rejected: 0, rejections: [] });
    expect(await storedPeople()).toEqual(fixturePeople);
    const sources = await client.execute(
      "select distinct source from person_email_sources union select distinct source from person_phone_sources union select distinct source from person_handle_sources",
    );
    expect(sources.rows.map((row) => row.source)).toEqual([name]);
  });

  it("records --source on new emails and phones, and first_seen_at equals last_seen_at at first sight", async () => {
    await importPeople(client, fixture("people.jsonl"), { source: "crm-export-2026" });
    const { rows } = await client.execute("select s.source, s.first_seen_at, s.last_seen_at, e.first_seen_at as row_first from person_email_sources s join person_emails e on e.id = s.email_id");
    expect(rows.length).toBe(4);
    for (const row of rows) {
      expect(row.source).toBe("crm-export-2026");
      expect(row.first_seen_at).toBe(row.last_seen_at);
      expect(row.first_seen_at).toBe(row.row_first);
    }
  });

  it("stores ids up to 2^53-1 exactly and matches them again", async () => {
    const path = await writeLines("big-ids.jsonl", [
      { profnet_id: Number.MAX_SAFE_INTEGER, codehost_id: "9007199254740990" },
      { codehost_id: 9007199254740990, socialnet_username: "big" },
    ]);
    expect(await importPeople(client, path)).toMatchObject({ inserted: 1, updated: 1 });
    expect(await storedPeople()).toEqual([
      expect.objectContaining({ profnet_id: Number.MAX_SAFE_INTEGER, codehost_id: 9007199254740990, socialnet_username: "big" }),
    ]);
  });
});

describe("address_key", () => {
  it("stores each new address with its canonical key (the key a lookup by email matches on)", async () => {
    const path = await writeLines("keys.jsonl", [{ codehost_login: "keyed", email_addresses: ["Ada.L+news@Gmail.com", "ada@example.com"] }]);
    await importPeople(client, path);
    const { rows } = await client.execute("select email, address_key from person_emails order by id");
    expect(rows.map((row) => [row.email, row.address_key])).toEqual(
      rows.map((row) => [row.email, canonicalAddress(String(row.email))]),
    );
    expect(rows.every((row) => typeof row.address_key === "string" && row.address_key.length > 0)).toBe(true);
  });
});

describe("every source kept", () => {
  type SourceRow = { thing: string; source: string; first_seen_at: number; last_seen_at: number };
  const sourceRows = async (): Promise<SourceRow[]> =>
    (
      await client.execute(`select e.email as thing, s.source, s.first_seen_at, s.last_seen_at from person_email_sources s join person_emails e on e.id = s.email_id
        union all select p.phone, s.source, s.first_seen_at, s.last_seen_at from person_phone_sources s join person_phones p on p.id = s.phone_id
        union all select field || '=' || value, source, first_seen_at, last_seen_at from person_handle_sources
        order by 1, 2`)
    ).rows.map((r) => ({ thing: String(r.thing), source: String(r.source), first_seen_at: Number(r.first_seen_at), last_seen_at: Number(r.last_seen_at) }));

  it("a second source adds its own row (the line counts as updated); re-importing a source moves only its last seen", async () => {
    const path = await writeLines("one.jsonl", [{ profnet_id: 1, email_addresses: ["ada@example.com"], phone_numbers: ["+442079460123"], socialnet_username: "ada.l" }]);
    expect(await importPeople(client, path, { source: "acme" })).toMatchObject({ inserted: 1 });
    const first = await sourceRows();
    expect(first.map((r) => [r.thing, r.source])).toEqual([
      ["+442079460123", "acme"],
      ["ada@example.com", "acme"],
      ["socialnet_username=ada.l", "acme"],
    ]);

    await new Promise((r) => setTimeout(r, 5));
    // The same line from another supplier is news: each thing gains a second source.
    expect(await importPeople(client, path, { source: "globex" })).toMatchObject({ updated: 1, unchanged: 0 });
    await new Promise((r) => setTimeout(r, 5));
    // acme again: nothing new, but acme's last seen moves and globex's stays.
    expect(await importPeople(client, path, { source: "acme" })).toMatchObject({ updated: 0, unchanged: 1 });
    const rows = await sourceRows();
    expect(rows.map((r) => [r.thing, r.source])).toEqual([
      ["+442079460123", "acme"],
      ["+442079460123", "globex"],
      ["ada@example.com", "acme"],
      ["ada@example.com", "globex"],
      ["socialnet_username=ada.l", "acme"],
      ["socialnet_username=ada.l", "globex"],
    ]);
    const of = (thing: string, source: string) => rows.find((r) => r.thing === thing && r.source === source)!;
    const acme = of("ada@example.com", "acme");
    const globex = of("ada@example.com", "globex");
    expect(acme.first_seen_at).toBe(first.find((r) => r.thing === "ada@example.com")!.first_seen_at);
    expect(acme.last_seen_at).toBeGreaterThan(globex.last_seen_at);
    expect(globex.first_seen_at).toBe(globex.last_seen_at);
    // The address's own first and last seen are the earliest and latest of its sources.
    const [address] = (await client.execute("select first_seen_at, last_seen_at from person_emails")).rows;
    expect([Number(address!.first_seen_at), Number(address!.last_seen_at)]).toEqual([acme.first_seen_at, acme.last_seen_at]);
  });

  it("a line's own source wins over the file's, in JSON Lines and CSV; a canonical spelling of a known address joins its sources", async () => {
    const jsonl = await writeLines("mixed.jsonl", [
      { profnet_id: 2, email_addresses: ["a.da@gmail.com"], source: "initech" },
      { profnet_id: 2, email_addresses: ["ADA@googlemail.com"] },
    ]);
    expect(await importPeople(client, jsonl, { source: "file-default" })).toMatchObject({ inserted: 1, updated: 1, rejected: 0 });
    const csv = join(dir, "mixed.csv");
    await writeFile(csv, "codehost_login,email_addresses,source\nhopper,grace@navy.example.org,umbrella\nhopper,grace@navy.example.org,\n");
    expect(await importPeople(client, csv)).toMatchObject({ inserted: 1, updated: 1 });
    expect((await sourceRows()).map((r) => [r.thing, r.source])).toEqual([
      ["a.da@gmail.com", "file-default"],
      ["a.da@gmail.com", "initech"],
      ["grace@navy.example.org", "mixed.csv"],
      ["grace@navy.example.org", "umbrella"],
    ]);
    expect(await rowCounts()).toMatchObject({ emails: 2 });
  });

  it("rejects a source over 100 characters, naming it", async () => {
    const path = await writeLines("long.jsonl", [{ profnet_id: 3, source: "x".repeat(101) }]);
    const summary = await importPeople(client, path);
    expect(summary.rejections).toEqual([{ line: 1, reason: "source: must be at most 100 characters" }]);
  });
});

describe("rejected lines", () => {
  it("rejects each bad JSON Lines line with its line number and a reason, and imports the rest", async () => {
    const summary = await importPeople(client, fixture("rejections.jsonl"));

    expect(summary).toMatchObject({ rows: 12, inserted: 2, updated: 0, unchanged: 0, rejected: 10, rejections_not_listed: 0 });
    const reasons = new Map(summary.rejections.map((r) => [r.line, r.reason]));
    expect([...reasons.keys()]).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(reasons.get(2)).toMatch(/^malformed JSON/);
    expect(reasons.get(3)).toMatch(/^phone_numbers: "\+1 555 0100" is not a valid phone number/);
    expect(reasons.get(4)).toMatch(/^phone_numbers: "4155550123" has no \+country code/);
    expect(reasons.get(5)).toBe('unknown field "nickname"');
    expect(reasons.get(6)).toBe("one of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required");
    expect(reasons.get(7)).toMatch(/^profnet_id: must be a positive integer/);
    expect(reasons.get(8)).toMatch(/^profnet_id: must be a positive integer/);
    expect(reasons.get(9)).toMatch(/^codehost_id: must be a positive integer/);
    expect(reasons.get(10)).toBe('email_addresses: "not-an-email" is not a valid email address');
    expect(reasons.get(11)).toBe("expected a JSON object");

    const stored = await storedPeople();
    expect(stored.map((p) => [p.profnet_id, p.codehost_login])).toEqual([
      [201, null],
      [213, null],
    ]);
    expect(await rowCounts()).toEqual({ people: 2, emails: 1, phones: 0 });
  });

  it("rejects bad CSV rows (unterminated quote, wrong field count, bad email, no identifier)", async () => {
    const summary = await importPeople(client, fixture("rejections.csv"));

    expect(summary).toMatchObject({ format: "csv", rows: 6, inserted: 2, rejected: 4 });
    const reasons = new Map(summary.rejections.map((r) => [r.line, r.reason]));
    expect([...reasons.keys()]).toEqual([3, 4, 5, 6]);
    expect(reasons.get(3)).toMatch(/^malformed CSV/);
    expect(reasons.get(4)).toBe("expected 3 fields, found 4");
    expect(reasons.get(5)).toBe('email_addresses: "bad-email" is not a valid email address');
    expect(reasons.get(6)).toMatch(/is required$/);
    expect((await storedPeople()).map((p) => [p.codehost_login, p.emails])).toEqual([
      ["octo", ["octo@example.com"]],
      ["fine", ["fine@example.com", "also@example.com"]],
    ]);
  });

  it("fails before writing anything when the CSV header has an unknown column", async () => {
    const path = join(dir, "bad-header.csv");
    await writeFile(path, "profnet_id,nickname\n1,x\n");
    await expect(importPeople(client, path)).rejects.toThrow(/Unknown CSV column "nickname"/);
    await expect(importPeople(client, path)).rejects.toBeInstanceOf(AdminError);
    expect(await rowCounts()).toEqual({ people: 0, emails: 0, phones: 0 });
  });

  it("rejects an overlong line without stopping, and keeps the lines around it", async () => {
    const path = await writeLines("long.jsonl", [
      { profnet_id: 1 },
      { profnet_id: 2, codehost_username: "x".repeat(100 * 1024) },
      { profnet_id: 3 },
    ]);
    const summary = await importPeople(client, path);
    expect(summary).toMatchObject({ inserted: 2, rejected: 1, rejections: [{ line: 2, reason: "line is longer than 65536 bytes" }] });
  });

  it("lists at most 1000 rejections and counts the rest", async () => {
    const lines = Array.from({ length: 1005 }, () => "{not json");
    const summary = await importPeople(client, await writeLines("junk.jsonl", lines));
    expect(summary).toMatchObject({ rejected: 1005, rejections_not_listed: 5 });
    expect(summary.rejections).toHaveLength(1000);
    expect(summary.rejections.at(-1)?.line).toBe(1000);
  });
});

describe("matching people", () => {
  it.each([1, 2, 500])("lets later rows of the same file update the person an earlier row created (batch size %i)", async (batchSize) => {
    const path = await writeLines("dupes.jsonl", [
      { profnet_id: 1, email_addresses: ["a@example.com"] },
      { codehost_login: "someone-else" },
      { profnet_id: 1, codehost_login: "Octo", email_addresses: ["A@EXAMPLE.COM", "b@example.com"] },
      { codehost_login: "octo", phone_numbers: ["+16502530000"] },
      { codehost_login: "OCTO", profnet_id: "1" },
    ]);
    const summary = await importPeople(client, path, { batchSize });

    expect(summary).toMatchObject({ inserted: 2, updated: 2, unchanged: 1, rejected: 0 });
    expect((await storedPeople())[0]).toMatchObject({
      profnet_id: 1,
      codehost_login: "Octo",
      emails: ["a@example.com", "b@example.com"],
      phones: ["+16502530000"],
    });
    expect(await rowCounts()).toEqual({ people: 2, emails: 2, phones: 1 });
  });

  it("updates a person already in the database, matching the login case-insensitively and keeping fields the row leaves out", async () => {
    await importPeople(
      client,
      await writeLines("first.jsonl", [
        { codehost_login: "OctoCat", socialnet_username: "octo_social", email_addresses: ["cat@example.com"] },
      ]),
    );
    const before = (await client.execute("select first_seen_at, last_seen_at from person_emails")).rows[0];

    const summary = await importPeople(
      client,
      await writeLines("second.jsonl", [
        { codehost_login: "octocat", profnet_id: 77, email_addresses: ["CAT@example.com", "new@example.com"] },
      ]),
    );

    expect(summary).toMatchObject({ inserted: 0, updated: 1, unchanged: 0 });
    expect(await storedPeople()).toEqual([
      expect.objectContaining({
        profnet_id: 77,
        codehost_login: "OctoCat",
        socialnet_username: "octo_social",
        emails: ["cat@example.com", "new@example.com"],
      }),
    ]);
    const after = (await client.execute("select first_seen_at, last_seen_at from person_emails order by id")).rows[0];
    expect(after?.first_seen_at).toBe(before?.first_seen_at);
    expect(Number(after?.last_seen_at)).toBeGreaterThanOrEqual(Number(before?.last_seen_at));
  });

  it("rejects a row whose identifiers belong to two different people and touches nothing else", async () => {
    await importPeople(
      client,
      await writeLines("seed.jsonl", [
        { profnet_id: 1, codehost_login: "alice", email_addresses: ["alice@example.com"] },
        { profnet_id: 2, codehost_login: "bob", email_addresses: ["bob@example.com"] },
      ]),
    );
    const before = await everyStoredRow();

    const summary = await importPeople(
      client,
      await writeLines("conflict.jsonl", [
        { profnet_id: 1, codehost_login: "BOB", email_addresses: ["merged@example.com"] },
        { codehost_login: "alice", profnet_id: 3 },
        { profnet_id: 4, codehost_login: "carol" },
      ]),
    );

    expect(summary).toMatchObject({ inserted: 1, updated: 0, unchanged: 0, rejected: 2 });
    expect(summary.rejections[0]).toEqual({
      line: 1,
      reason: 'conflict: identifiers belong to different people (profnet_id 1: person 1; codehost_login "BOB": person 2)',
    });
    expect(summary.rejections[1]).toEqual({
      line: 2,
      reason: 'conflict: codehost_login "alice" matches person 1, whose profnet_id is 1, not 3',
    });
    const after = await everyStoredRow();
    expect(after.person_emails).toEqual(before.person_emails);
    expect(after.people?.slice(0, 2)).toEqual(before.people);
    expect(after.people).toHaveLength(3);
  });

  it("moves a login from one person to another within one batch (renames applied in order)", async () => {
    await importPeople(
      client,
      await writeLines("seed.jsonl", [
        { profnet_id: 1, codehost_login: "x" },
        { profnet_id: 2, codehost_login: "y" },
      ]),
    );
    const renames = [
      { profnet_id: 2, codehost_login: "w" },
      { profnet_id: 1, codehost_login: "y" },
      { profnet_id: 2, codehost_login: "x" },
      { codehost_login: "w", codehost_id: 5 },
    ];
    // Straight to the batch writer: importPeople would hide a failed batch behind its row-by-row retry.
    const batch = renames.map((row, index) => {
      const parsed = parsePersonRecord(row);
      if (!parsed.ok) throw new Error(parsed.reason);
      return { line: index + 1, record: parsed.record };
    });
    const outcomes = await upsertPeopleBatch(client, batch, "renames");

    expect(outcomes.map((o) => o.outcome)).toEqual(["updated", "updated", "updated", "inserted"]);
    expect((await storedPeople()).map((p) => [p.profnet_id, p.codehost_login, p.codehost_id])).toEqual([
      [1, "y", null],
      [2, "x", null],
      [null, "w", 5],
    ]);
  });

  it("rejects only the row the database refuses and still commits the rest of its batch", async () => {
    // A trigger stands in for any row-specific failure that validation cannot foresee.
    await client.execute(
      "create trigger refuse_login before insert on people when new.codehost_login = 'refused' begin select raise(abort, 'login refused by trigger'); end",
    );
    const path = await writeLines("mixed.jsonl", [{ profnet_id: 1 }, { codehost_login: "refused" }, { profnet_id: 3, email_addresses: ["c@example.com"] }]);

    const summary = await importPeople(client, path);

    expect(summary).toMatchObject({ inserted: 2, rejected: 1 });
    expect(summary.rejections).toEqual([{ line: 2, reason: expect.stringMatching(/^the database rejected the row: .*login refused by trigger/) }]);
    expect(await rowCounts()).toEqual({ people: 2, emails: 1, phones: 0 });
  });
});

describe("idempotency", () => {
  it.each(["people.jsonl", "people.csv", "rejections.jsonl"])("re-importing %s changes nothing but last_seen_at", async (name) => {
    const first = await importPeople(client, fixture(name));
    const countsAfterFirst = await rowCounts();
    const peopleAfterFirst = await storedPeople();
    const rowsAfterFirst = await everyStoredRow();

    const second = await importPeople(client, fixture(name));

    expect(second).toMatchObject({ inserted: 0, updated: 0, unchanged: first.inserted + first.updated, rejected: first.rejected });
    expect(second.rejections).toEqual(first.rejections);
    expect(await rowCounts()).toEqual(countsAfterFirst);
    expect(await storedPeople()).toEqual(peopleAfterFirst);
    const rowsAfterSecond = await everyStoredRow();
    expect(rowsAfterSecond.people).toEqual(rowsAfterFirst.people);
    const withoutLastSeen = (rows: unknown[] = []) => rows.map((row) => ({ ...(row as object), last_seen_at: undefined }));
    expect(withoutLastSeen(rowsAfterSecond.person_emails)).toEqual(withoutLastSeen(rowsAfterFirst.person_emails));
    expect(withoutLastSeen(rowsAfterSecond.person_phones)).toEqual(withoutLastSeen(rowsAfterFirst.person_phones));
  });
});

describe("volume", () => {
  it("imports a generated 10,000-row file", async () => {
    const rows = Array.from({ length: 10_000 }, (_, index) => ({
      profnet_id: index + 1,
      codehost_login: `user-${index}`,
      email_addresses: [`user${index}@example.com`, `USER${index}@example.com`],
      phone_numbers: [`+33 6 ${String(10_000_000 + index).slice(-8)}`],
    }));
    const summary = await importPeople(client, await writeLines("generated.jsonl", rows));

    expect(summary).toMatchObject({ rows: 10_000, inserted: 10_000, rejected: 0 });
    expect(await rowCounts()).toEqual({ people: 10_000, emails: 10_000, phones: 10_000 });
    const { rows: sample } = await client.execute("select p.codehost_login, f.phone from people p join person_phones f on f.person_id = p.id where p.profnet_id = 1234");
    expect({ ...sample[0] }).toEqual({ codehost_login: "user-1233", phone: "+33610001233" });
  });
});

describe("beside other writers", () => {
  it("retries a batch refused while another process held the write lock longer than the busy timeout, and finishes", async () => {
    // As npm start's libSQL server keeps it, in WAL mode.
    const other = new Database(join(dir, "test.db"));
    other.pragma("journal_mode = WAL");
    other.exec("BEGIN IMMEDIATE");
    setTimeout(() => {
      other.exec("COMMIT");
      other.close();
    }, 300);
    const path = await writeLines("locked.jsonl", [{ profnet_id: 1 }, { profnet_id: 2 }]);
    const impatient = createClient({ url: databaseUrl, timeout: 20 });

    const summary = await importPeople(impatient, path);
    impatient.close();

    expect(summary).toMatchObject({ inserted: 2, rejected: 0 });
    expect(summary.batch_retries).toBeGreaterThan(0);
  });

  it("runs beside another import of the same people and beside lookups, through the libSQL server: nothing lost, nothing refused", async () => {
    const server = await startLibsqlServer({ file: join(dir, "test.db") });
    try {
      const people = 150;
      const fileFor = (tag: string) =>
        writeLines(
          `${tag}.jsonl`,
          Array.from({ length: people }, (_, i) => ({ profnet_id: i + 1, codehost_login: `Login-${i + 1}`, email_addresses: [`${tag}${i + 1}@example.com`] })),
        );
      const [a, b] = await Promise.all([fileFor("a"), fileFor("b")]);
      const connect = { url: server.url, authToken: server.authToken };
      const importers = [createClient(connect), createClient(connect)];
      const reader = createWebClient(connect);
      let importing = true;
      const lookups = (async () => {
        let n = 0;
        for (; importing; n++) await reader.execute({ sql: "select id from people where lower(codehost_login) = lower(?)", args: [`login-${(n % people) + 1}`] });
        return n;
      })();

      // One row per batch: the two imports interleave as much as they can.
      const summaries = await Promise.all([importPeople(importers[0]!, a, { batchSize: 1 }), importPeople(importers[1]!, b, { batchSize: 1 })]);
      importing = false;

      expect(await lookups).toBeGreaterThan(0);
      for (const summary of summaries) expect(summary).toMatchObject({ rows: people, rejected: 0 });
      expect(summaries[0]!.inserted + summaries[1]!.inserted).toBe(people);
      const stored = await storedPeople();
      expect(stored).toHaveLength(people);
      for (const person of stored) {
        expect([...person.emails].sort()).toEqual([`a${person.profnet_id}@example.com`, `b${person.profnet_id}@example.com`]);
      }
      for (const c of [...importers, reader]) c.close();
    } finally {
      await server.close();
    }
  });
});

describe("through the CLI", () => {
  const runImport = (args: string[]) =>
    promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/admin.ts", "people", "import", ...args], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: databaseUrl },
    }).then(
      ({ stdout }) => ({ status: 0, stdout }),
      (error: { code: number; stdout: string }) => ({ status: error.code, stdout: error.stdout }),
    );

  it("exits 1 with --strict when lines were rejected, 0 without, and prints one JSON summary", async () => {
    // One after the other: two writers on one file would race for its lock.
    const strict = await runImport([fixture("rejections.jsonl"), "--strict", "--json"]);
    const lenient = await runImport([fixture("people.jsonl"), "--strict", "--json", "--batch-size", "2"]);
    expect(strict.status).toBe(1);
    expect(JSON.parse(strict.stdout)).toMatchObject({ inserted: 2, rejected: 10 });
    expect(strict.stdout.trim().split("\n")).toHaveLength(1);
    expect(lenient.status).toBe(0);
    expect(JSON.parse(lenient.stdout)).toMatchObject({ inserted: 4, rejected: 0 });

    const again = await runImport([fixture("rejections.jsonl"), "--json"]);
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ inserted: 0, unchanged: 2, rejected: 10 });
  });
});
