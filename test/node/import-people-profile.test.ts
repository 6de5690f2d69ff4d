/**
 * Longer than 400 lines on purpose: the whole person's import (issue 46) against one libSQL file database, read
 * together: names and employment as `people import` stores them (keys included, from JSON Lines and CSV), the lines it
 * refuses (with their line number and field, nothing of them written), every source kept, a name never merging two
 * people, and a merge, its undo, an erasure and the access report carrying names and employment.
 */
import type { Client } from "@libsql/client";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { erasePeople } from "../../scripts/admin/people-erase.ts";
import { importPeople } from "../../scripts/admin/people-import.ts";
import { applyMergeCandidate, listMergeCandidates, undoMergeCandidate } from "../../scripts/admin/people-merge.ts";
import { accessReport } from "../../scripts/admin/people-privacy.ts";
import { applyMigrations, openDatabase, type NodeDatabase } from "../../scripts/lib/database.ts";
import { employerKey, employmentEntryKey, foldName, fullNameKey, nameKey, normaliseDomain } from "../../shared/people/names.ts";

const SUPPRESSION_KEY = "c3VwcHJlc3Npb24ta2V5LWZvci10ZXN0cy0zMi1ieXQ=";

let dir: string;
let db: NodeDatabase;
let client: Client;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "import-profile-"));
  db = openDatabase(`file:${join(dir, "test.db")}`);
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

const rows = async (sql: string) => (await client.execute(sql)).rows.map((row) => ({ ...row }));

/** The name rows with their sources, as a test compares them. */
const storedNames = async () =>
  rows(`select n.person_id, n.full, n.given, n.middle, n.family, n.folded, n.name_key,
      (select group_concat(source, ',') from (select source from person_name_sources where name_id = n.id order by source)) as sources
    from person_names n order by n.id`);

/** The employment rows (entry_key as hex: the client's text stops at its NUL separators) with domains and sources. */
const storedEmployment = async () =>
  rows(`select e.person_id, e.employer, e.employer_key, e.title, e.start_date, e.end_date, e.current, hex(e.entry_key) as entry_key,
      (select group_concat(domain, ',') from (select domain from person_employment_domains where employment_id = e.id order by domain)) as domains,
      (select group_concat(source, ',') from (select source from person_employment_sources where employment_id = e.id order by source)) as sources
    from person_employment e order by e.id`);

const hex = (text: string) => Buffer.from(text, "utf8").toString("hex").toUpperCase();

const profileCounts = async () =>
  (
    await rows(`select (select count(*) from people) as people, (select count(*) from person_names) as names,
      (select count(*) from person_name_sources) as name_sources, (select count(*) from person_employment) as employment,
      (select count(*) from person_employment_domains) as domains, (select count(*) from person_employment_sources) as employment_sources`)
  )[0];

describe("names and employment stored", () => {
  it("stores a JSON Lines line's name and employment with the keys a lookup matches on", async () => {
    const path = await writeLines("people.jsonl", [
      {
        profnet_id: 1,
        name: { full: "  Jose\u0301 Núñez-Ortiz " },
        employment: [
          { employer: "Acme, Inc.", domain: "https://www.Acme.com/about", title: "CTO", start: "2020-02", current: true },
          { employer: "Globex GmbH", domains: ["globex.example", "bücher.de"], title: "Engineer", start: "2015", end: "2019-12-31", current: false },
          { domain: "initech.example" },
        ],
      },
      { codehost_login: "ada", name: { given: "Ada", middle: "King", family: "Lovelace" } },
      { codehost_login: "ludwig", first_name: "Ludwig", last_name: "van Beethoven", company: "Wiener Hofkapelle", company_domain: "hofkapelle.example", title: "Composer" },
    ]);
    expect(await importPeople(client, path, { source: "crm" })).toMatchObject({ inserted: 3, rejected: 0 });

    const full = "José Núñez-Ortiz";
    expect(await storedNames()).toEqual([
      { person_id: 1, full, given: "José", middle: null, family: "Núñez-Ortiz", folded: foldName(full), name_key: fullNameKey(full), sources: "crm" },
      { person_id: 2, full: "Ada King Lovelace", given: "Ada", middle: "King", family: "Lovelace", folded: "ada king lovelace", name_key: "ada lovelace", sources: "crm" },
      {
        person_id: 3,
        full: "Ludwig van Beethoven",
        given: "Ludwig",
        middle: null,
        family: "van Beethoven",
        folded: "ludwig van beethoven",
        name_key: nameKey({ given: "Ludwig", family: "van Beethoven" }),
        sources: "crm",
      },
    ]);
    // The stored full name is NFC: the combining accent above became one character.
    expect((await storedNames())[0]!.full).toBe(full.normalize("NFC"));
    expect(fullNameKey(full)).toBe("jose ortiz");

    expect(await storedEmployment()).toEqual([
      {
        person_id: 1,
        employer: "Acme, Inc.",
        employer_key: "acme",
        title: "CTO",
        start_date: "2020-02",
        end_date: null,
        current: 1,
        entry_key: hex(`acme\u0000cto\u00002020-02`),
        domains: "acme.com",
        sources: "crm",
      },
      {
        person_id: 1,
        employer: "Globex GmbH",
        employer_key: employerKey("Globex GmbH"),
        title: "Engineer",
        start_date: "2015",
        end_date: "2019-12-31",
        current: 0,
        entry_key: hex(employmentEntryKey({ employer: "Globex GmbH", title: "Engineer", start: "2015" })),
        domains: `globex.example,${normaliseDomain("bücher.de")}`,
        sources: "crm",
      },
      {
        person_id: 1,
        employer: "initech.example",
        employer_key: employerKey("initech.example"),
        title: null,
        start_date: null,
        end_date: null,
        current: null,
        entry_key: hex(employmentEntryKey({ employer: "initech.example" })),
        domains: "initech.example",
        sources: "crm",
      },
      {
        person_id: 3,
        employer: "Wiener Hofkapelle",
        employer_key: "wiener hofkapelle",
        title: "Composer",
        start_date: null,
        end_date: null,
        current: 1,
        entry_key: hex(employmentEntryKey({ employer: "Wiener Hofkapelle", title: "Composer" })),
        domains: "hofkapelle.example",
        sources: "crm",
      },
    ]);
    // Each domain row carries its person, as the lookup's (person_id, domain) index expects.
    expect(await rows("select d.person_id = e.person_id as same from person_employment_domains d join person_employment e on e.id = d.employment_id")).toEqual(
      Array.from({ length: 5 }, () => ({ same: 1 })),
    );
  });

  it("stores a CSV line's flat columns: one name, one employment entry (several domains split on ;)", async () => {
    const path = join(dir, "people.csv");
    await writeFile(
      path,
      [
        "codehost_login,full_name,first_name,middle_name,last_name,company,company_domain,title,employment_start,employment_end",
        'grace,,Grace,Brewster,Hopper,"US Navy",navy.example;navy.example.org,Rear Admiral,1943,1986-08-14',
        "alan,\"Turing, Alan Mathison\",,,,,,,,",
        "linus,,,,,,,,,",
      ].join("\n") + "\n",
    );
    expect(await importPeople(client, path)).toMatchObject({ inserted: 3, rejected: 0 });
    expect(await storedNames()).toEqual([
      expect.objectContaining({ person_id: 1, full: "Grace Brewster Hopper", given: "Grace", middle: "Brewster", family: "Hopper", name_key: "grace hopper", sources: "people.csv" }),
      expect.objectContaining({ person_id: 2, full: "Turing, Alan Mathison", given: "Alan", middle: "Mathison", family: "Turing", name_key: "alan turing" }),
    ]);
    expect(await storedEmployment()).toEqual([
      expect.objectContaining({
        person_id: 1,
        employer: "US Navy",
        employer_key: "us navy",
        title: "Rear Admiral",
        start_date: "1943",
        end_date: "1986-08-14",
        // An end given and nothing said of current: not said.
        current: null,
        domains: "navy.example,navy.example.org",
      }),
    ]);
  });

  it("a CSV header with name or employment is refused: a cell cannot hold an object", async () => {
    const path = join(dir, "bad.csv");
    await writeFile(path, "profnet_id,employment\n1,x\n");
    await expect(importPeople(client, path)).rejects.toThrow(/Unknown CSV column "employment"/);
  });
});

describe("refused lines", () => {
  it.each([
    ["a name part over 128 characters", { name: { given: "A".repeat(129), family: "B" } }, "name.given: must be at most 128 characters"],
    ["a full name over 256 characters", { full_name: "A".repeat(257) }, "full_name: must be at most 256 characters"],
    ["an employer over 256 characters", { employment: [{ employer: "E".repeat(257) }] }, "employment[0].employer: must be at most 256 characters"],
    ["a title over 256 characters", { company: "Acme", title: "T".repeat(257) }, "title: must be at most 256 characters"],
    ["a control character", { name: { full: "Ada\u0007 Lovelace" } }, /^name\.full: must not contain control characters/],
    ["a bidi override (U+202E)", { employment: [{ employer: "Acme", title: "\u202eOTC" }] }, /^employment\[0\]\.title: must not contain control characters or bidirectional/],
    ["a bad domain", { employment: [{ employer: "Acme", domain: "not a domain" }] }, 'employment[0].domain: "not a domain" is not a domain name'],
    ["a bad domain in a list", { employment: [{ employer: "Acme", domains: ["acme.com", "127.0.0.1"] }] }, 'employment[0].domains[1]: "127.0.0.1" is not a domain name'],
    ["a bad company_domain", { company: "Acme", company_domain: "acme" }, 'company_domain: "acme" is not a domain name'],
    ["a bad date", { employment: [{ employer: "Acme", start: "2020-13-01" }] }, /^employment\[0\]\.start: "2020-13-01" is not a date/],
    ["an impossible day", { employment: [{ employer: "Acme", end: "2023-02-29" }] }, /^employment\[0\]\.end: "2023-02-29" is not a date/],
    ["an end before the start", { employment: [{ employer: "Acme", start: "2020-05", end: "2019" }] }, "employment[0].end: 2019 is before the start, 2020-05"],
    ["a flat end before its start", { company: "Acme", employment_start: "2021-03-04", employment_end: "2021-02" }, "employment_end: 2021-02 is before the start, 2021-03-04"],
    ["current not a boolean", { employment: [{ employer: "Acme", current: "yes" }] }, "employment[0].current: must be true or false"],
    ["an entry with neither employer nor domain", { employment: [{ title: "CTO" }] }, "employment[0]: needs an employer or a domain"],
    ["an unknown field in an entry", { employment: [{ employer: "Acme", salary: 1 }] }, 'employment[0]: unknown field "salary"'],
    ["an unknown field in a name", { name: { full: "Ada", nickname: "A" } }, 'name: unknown field "nickname"'],
    ["an unknown top-level field", { company_size: 10 }, 'unknown field "company_size"'],
    ["name and full_name both", { name: { full: "Ada" }, full_name: "Ada" }, "name: give either name or full_name, not both"],
    ["21 employment entries", { employment: Array.from({ length: 21 }, (_, i) => ({ employer: `E${i}` })) }, /^employment: must have at most 20 entries/],
    ["11 domains", { employment: [{ employer: "Acme", domains: Array.from({ length: 11 }, (_, i) => `d${i}.example`) }] }, "employment[0].domains: must have at most 10 domains"],
  ])("refuses %s with its line number and field, writing nothing of it", async (_what, fields, reason) => {
    const path = await writeLines("bad.jsonl", [{ profnet_id: 1, name: { full: "Good Line" } }, { profnet_id: 2, ...fields }, { profnet_id: 3 }]);
    const summary = await importPeople(client, path);
    expect(summary).toMatchObject({ inserted: 2, rejected: 1 });
    expect(summary.rejections).toEqual([{ line: 2, reason: typeof reason === "string" ? reason : expect.stringMatching(reason) }]);
    expect(await rows("select profnet_id from people order by id")).toEqual([{ profnet_id: 1 }, { profnet_id: 3 }]);
    expect(await profileCounts()).toMatchObject({ names: 1, employment: 0, domains: 0 });
  });

  it("refuses bad CSV cells by column, and a name alone creates nobody", async () => {
    const path = join(dir, "bad.csv");
    await writeFile(
      path,
      [
        "profnet_id,full_name,company,company_domain,employment_start,employment_end",
        "1,Ada Lovelace,Acme,acme.com;nope,,",
        "2,Ada Lovelace,Acme,,2020,2019",
        ",Ada Lovelace,Acme,acme.com,,",
        "3,Ada Lovelace,Acme,acme.com,2019,2020",
      ].join("\n") + "\n",
    );
    const summary = await importPeople(client, path);
    expect(summary.rejections).toEqual([
      { line: 2, reason: 'company_domain[1]: "nope" is not a domain name' },
      { line: 3, reason: "employment_end: 2019 is before the start, 2020" },
      { line: 4, reason: "one of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required" },
    ]);
    expect(await profileCounts()).toMatchObject({ people: 1, names: 1, employment: 1, domains: 1 });
  });
});

describe("every source kept, for names and employment too", () => {
  const line = { profnet_id: 7, name: { full: "Ada Lovelace" }, employment: [{ employer: "Acme", domain: "acme.com", title: "CTO", start: "2020" }] };
  const seen = async () =>
    rows(`select 'name' as kind, s.source, s.first_seen_at, s.last_seen_at from person_name_sources s
      union all select 'job', s.source, s.first_seen_at, s.last_seen_at from person_employment_sources s order by 1, 2`);

  it("re-importing a line is unchanged and moves last seen; a new source adds its row and updates; a new domain updates", async () => {
    const path = await writeLines("one.jsonl", [line]);
    expect(await importPeople(client, path, { source: "acme-feed" })).toMatchObject({ inserted: 1 });
    const first = await seen();
    const firstName = (await rows("select first_seen_at, last_seen_at from person_names"))[0]!;
    await new Promise((r) => setTimeout(r, 5));
    expect(await importPeople(client, path, { source: "acme-feed" })).toMatchObject({ inserted: 0, updated: 0, unchanged: 1 });
    const again = await seen();
    expect(again.map((r) => [r.kind, r.source, r.first_seen_at])).toEqual(first.map((r) => [r.kind, r.source, r.first_seen_at]));
    expect(again.every((r, i) => Number(r.last_seen_at) > Number(first[i]!.last_seen_at))).toBe(true);
    const name = (await rows("select first_seen_at, last_seen_at from person_names"))[0]!;
    expect(name.first_seen_at).toBe(firstName.first_seen_at);
    expect(Number(name.last_seen_at)).toBeGreaterThan(Number(firstName.last_seen_at));

    // Another supplier: a second source row for the name and the entry; the line counts as updated.
    expect(await importPeople(client, path, { source: "globex-feed" })).toMatchObject({ updated: 1, unchanged: 0 });
    expect((await seen()).map((r) => [r.kind, r.source])).toEqual([
      ["job", "acme-feed"],
      ["job", "globex-feed"],
      ["name", "acme-feed"],
      ["name", "globex-feed"],
    ]);
    // A spelling that folds the same is the name already held; the same entry with a new domain and an end updates it.
    const more = await writeLines("more.jsonl", [
      { profnet_id: 7, name: { full: "ADA  LOVELACE" }, employment: [{ employer: "ACME Inc", domains: ["acme.com", "acme.io"], title: "cto", start: "2020", end: "2023", current: false }] },
    ]);
    expect(await importPeople(client, more, { source: "acme-feed" })).toMatchObject({ updated: 1 });
    expect(await storedNames()).toEqual([expect.objectContaining({ full: "Ada Lovelace", sources: "acme-feed,globex-feed" })]);
    expect(await storedEmployment()).toEqual([
      expect.objectContaining({ employer: "Acme", title: "CTO", start_date: "2020", end_date: "2023", current: 0, domains: "acme.com,acme.io", sources: "acme-feed,globex-feed" }),
    ]);
    expect(await importPeople(client, more, { source: "acme-feed" })).toMatchObject({ unchanged: 1 });
    // A different title or start is another entry; a different spelling of the name another name.
    const other = await writeLines("other.jsonl", [{ profnet_id: 7, full_name: "Augusta Ada King", company: "Acme", title: "CEO" }]);
    expect(await importPeople(client, other, { source: "acme-feed" })).toMatchObject({ updated: 1 });
    expect(await profileCounts()).toMatchObject({ people: 1, names: 2, employment: 2, domains: 2 });
  });

  it("lines of one batch about one person write each name, entry and source once", async () => {
    const path = await writeLines("dupes.jsonl", [line, { ...line, employment: [...line.employment, ...line.employment] }, { ...line, source: "other" }]);
    expect(await importPeople(client, path, { source: "feed" })).toMatchObject({ inserted: 1, unchanged: 1, updated: 1 });
    expect(await profileCounts()).toEqual({ people: 1, names: 1, name_sources: 2, employment: 1, domains: 1, employment_sources: 2 });
  });
});

describe("a name never merges two people", () => {
  it("two lines with different profnet_ids and the same name at the same company are two people, not a merge candidate", async () => {
    const same = { name: { full: "John Smith" }, company: "Acme", company_domain: "acme.com", title: "Engineer" };
    const path = await writeLines("smiths.jsonl", [{ profnet_id: 10, ...same }, { profnet_id: 11, ...same }]);
    expect(await importPeople(client, path)).toMatchObject({ inserted: 2, rejected: 0, merge_candidates: 0 });
    const again = await writeLines("smiths-again.jsonl", [{ profnet_id: 12, ...same }]);
    expect(await importPeople(client, again)).toMatchObject({ inserted: 1, merge_candidates: 0 });
    expect(await profileCounts()).toMatchObject({ people: 3, names: 3, employment: 3 });
    expect(await rows("select count(*) as n from merge_candidates")).toEqual([{ n: 0 }]);
    expect(await rows("select distinct name_key from person_names")).toEqual([{ name_key: "john smith" }]);
  });
});

describe("merge, undo, erasure and the access report carry names and employment", () => {
  /** Two people holding one name and one entry in common, each with one of their own, and a line that says they are one. */
  async function twoPeople() {
    const path = await writeLines("two.jsonl", [
      {
        profnet_id: 21,
        name: { full: "Ada Lovelace" },
        employment: [{ employer: "Acme", domain: "acme.com", title: "CTO", start: "2020" }, { employer: "Analytical Engines Ltd", start: "1840" }],
      },
      {
        codehost_login: "ada-b",
        name: { full: "ada lovelace" },
        employment: [
          { employer: "ACME", domains: ["acme.io"], title: "cto", start: "2020", end: "2024" },
          { employer: "Difference Engines", domain: "difference.example" },
        ],
        source: "other-feed",
      },
      { codehost_login: "ada-b", full_name: "Augusta Ada King" },
    ]);
    expect(await importPeople(client, path, { source: "feed" })).toMatchObject({ inserted: 2, updated: 1 });
    const conflict = await writeLines("conflict.jsonl", [{ profnet_id: 21, codehost_login: "ada-b", company: "Babbage & Co", company_domain: "babbage.example" }]);
    expect(await importPeople(client, conflict, { source: "merge-feed" })).toMatchObject({ rejected: 1, merge_candidates: 1 });
    const [candidate] = await listMergeCandidates(client, "open");
    return candidate!.id;
  }

  const snapshot = async () => ({ names: await storedNames(), employment: await storedEmployment(), counts: await profileCounts() });

  it("applying moves the loser's names and employment to the winner (twins folded, sources and domains merged); undo restores both", async () => {
    const id = await twoPeople();
    const before = await snapshot();
    expect(before.counts).toMatchObject({ people: 2, names: 3, employment: 4 });

    expect(await applyMergeCandidate(client, id)).toEqual({ kept: 1, merged: 2 });
    expect(await storedNames()).toEqual([
      expect.objectContaining({ person_id: 1, full: "Ada Lovelace", sources: "feed,other-feed" }),
      expect.objectContaining({ person_id: 1, full: "Augusta Ada King", sources: "feed" }),
    ]);
    expect(await storedEmployment()).toEqual([
      // The twin keeps its own spelling and end (none: the other's), with both rows' domains and sources.
      expect.objectContaining({ person_id: 1, employer: "Acme", end_date: "2024", domains: "acme.com,acme.io", sources: "feed,other-feed" }),
      expect.objectContaining({ person_id: 1, employer: "Analytical Engines Ltd", sources: "feed" }),
      expect.objectContaining({ person_id: 1, employer: "Difference Engines", domains: "difference.example", sources: "other-feed" }),
      // The line, imported onto the one person.
      expect.objectContaining({ person_id: 1, employer: "Babbage & Co", domains: "babbage.example", sources: "merge-feed" }),
    ]);
    expect(await rows("select count(*) as n from person_employment_domains d join person_employment e on e.id = d.employment_id where d.person_id <> e.person_id")).toEqual([{ n: 0 }]);

    expect(await undoMergeCandidate(client, id)).toEqual({ restored: [1, 2] });
    expect(await snapshot()).toEqual(before);
  });

  it("an undo is refused once a name was imported to the merged person since", async () => {
    const id = await twoPeople();
    await applyMergeCandidate(client, id);
    const later = await writeLines("later.jsonl", [{ profnet_id: 21, full_name: "Countess of Lovelace" }]);
    expect(await importPeople(client, later)).toMatchObject({ updated: 1 });
    await expect(undoMergeCandidate(client, id)).rejects.toThrow(/changed since the merge/);
  });

  it("an erasure deletes the person's names, employment, domains and their sources", async () => {
    const path = await writeLines("erase.jsonl", [
      { profnet_id: 31, name: { full: "Ada Lovelace" }, employment: [{ employer: "Acme", domains: ["acme.com", "acme.io"], title: "CTO" }] },
      { profnet_id: 31, name: { full: "Augusta King" }, employment: [{ employer: "Acme", domains: ["acme.com"], title: "CTO" }], source: "second" },
      { profnet_id: 32, name: { full: "Grace Hopper" }, company: "US Navy", company_domain: "navy.example" },
    ]);
    await importPeople(client, path);
    expect(await profileCounts()).toEqual({ people: 2, names: 3, name_sources: 3, employment: 2, domains: 3, employment_sources: 3 });
    expect(await erasePeople(client, SUPPRESSION_KEY, { kind: "profnet_id", value: 31 }, "request")).toMatchObject({ erased: 1 });
    // Only the other person's rows are left: nothing of the erased one, in any of the tables.
    expect(await profileCounts()).toEqual({ people: 1, names: 1, name_sources: 1, employment: 1, domains: 1, employment_sources: 1 });
    expect(await storedNames()).toEqual([expect.objectContaining({ full: "Grace Hopper", person_id: 2 })]);
    expect(await rows("select person_id from person_employment union all select person_id from person_employment_domains")).toEqual([{ person_id: 2 }, { person_id: 2 }]);
  });

  it("the access report lists the person's names and employment, and what found them in each access", async () => {
    const path = await writeLines("report.jsonl", [
      { profnet_id: 41, email_addresses: ["ada@example.com"], name: { full: "Ada Lovelace" }, employment: [{ employer: "Acme", domain: "acme.com", title: "CTO", start: "2020-01", current: true }] },
    ]);
    await importPeople(client, path, { source: "feed" });
    await client.execute(`insert into person_access_log (person_id, account_id, key_id, created_at, profnet_id, matched_by) values
      (1, 'acct_a', 'key_1', 1000, 41, 'name'), (1, 'acct_a', 'key_1', 2000, 41, 'email'), (1, 'acct_b', 'people_event', 3000, 41, null)`);
    const report = await accessReport(client, { kind: "profnet_id", value: 41 });
    expect(report.person).toMatchObject({
      names: [{ full: "Ada Lovelace", given: "Ada", middle: null, family: "Lovelace", sources: [{ source: "feed" }] }],
      employment: [{ employer: "Acme", domains: ["acme.com"], title: "CTO", start: "2020-01", end: null, current: true, sources: [{ source: "feed" }] }],
    });
    expect(report.accesses).toEqual([
      { account_id: "acct_a", received_at: new Date(1000).toISOString(), via: "lookup", matched_by: "name" },
      { account_id: "acct_a", received_at: new Date(2000).toISOString(), via: "lookup", matched_by: "email" },
      { account_id: "acct_b", received_at: new Date(3000).toISOString(), via: "people_event", matched_by: null },
    ]);
    expect(report.recipients.map((r) => [r.account_id, r.lookups, r.events])).toEqual([
      ["acct_a", 2, 0],
      ["acct_b", 0, 1],
    ]);
  });
});
