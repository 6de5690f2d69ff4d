/**
 * A job made from a CSV file keeps the customer's columns (docs/jobs.md "CSV files"), end to end inside workerd: a
 * CRM-style export whose address column is neither first nor called "email", with duplicates, a malformed line, a
 * quoted cell across two lines, a short and a long line; its cells come back as an object in every JSON page and
 * filter, and as the file's own columns before ours in every CSV download, row for row, named after the job. The
 * bounds (a line's length, its columns), the refusals (no address column, not text, empty), names and their search.
 */
import { parse as parseCsv } from "csv-parse/sync";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { CSV_COLUMNS } from "../../edge/jobs/csv-export.ts";
import { KEPT_PAGE_CHARS } from "../../edge/routes/job-results.ts";
import { JOB_LIMITS, JobResultsPage, VerificationJob, type JobResult } from "../../shared/jobs.ts";
import { cancelUnfinishedJobs, call, db, newAccount } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";

function postCsv(token: string, csv: string | Uint8Array, query = "") {
  return call(`${PATH}${query}`, { method: "POST", token, headers: { "content-type": "text/csv" }, body: csv });
}

async function created(res: Response): Promise<VerificationJob> {
  expect(res.status, await res.clone().text()).toBe(202);
  return VerificationJob.strict().parse(await res.json());
}

async function finished(token: string, id: string): Promise<VerificationJob> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const job = VerificationJob.strict().parse(await (await call(`${PATH}/${id}`, { token })).json());
    if (job.status === "completed") return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Every JSON result of a job through next_cursor, `limit` a page, with `query` (a filter); and the pages' sizes. */
async function pages(token: string, id: string, query = "", limit = 2): Promise<{ results: JobResult[]; sizes: number[] }> {
  const results: JobResult[] = [];
  const sizes: number[] = [];
  let cursor = "";
  for (;;) {
    const res = await call(`${PATH}/${id}/results?limit=${limit}${query ? `&${query}` : ""}${cursor ? `&cursor=${cursor}` : ""}`, { token });
    expect(res.status).toBe(200);
    const page = JobResultsPage.strict().parse(await res.json());
    results.push(...page.results);
    sizes.push(page.results.length);
    if (page.next_cursor === null) return { results, sizes };
    cursor = page.next_cursor;
  }
}

async function storedJobs(accountId: string) {
  return (await db.all<{ n: number }>(sql`select count(*) as n from verification_jobs where account_id = ${accountId}`))[0]!.n;
}

/** A CRM export: the address in the second column under "E-mail address", commas and a line break inside quoted cells. */
const CRM = [
  "Name,E-mail address,Company,Notes",
  'Ada Lovelace,ana@ok.test,Analytical Engines,"likes, commas"',
  "Bob Nobody,nobody@ok.test,Acme,",
  'Cy Catchall,anyone@catchall.test,"Acme, Inc.","two\r\nlines"',
  "Dup Ada,ANA@OK.TEST,Dup Co,the same address again",
  "Mal Formed,not an address,Bad Co,malformed",
  "Short Line,info@ok.test",
  "Long Line,info@ok.test,Extra Co,note,an extra cell",
].join("\r\n");

const COLUMNS = ["Name", "E-mail address", "Company", "Notes", "column_5"];
/** Each line's cells as the job keeps them, by column ("" where the line has none). */
const LINES: string[][] = [
  ["Ada Lovelace", "ana@ok.test", "Analytical Engines", "likes, commas", ""],
  ["Bob Nobody", "nobody@ok.test", "Acme", "", ""],
  ["Cy Catchall", "anyone@catchall.test", "Acme, Inc.", "two\r\nlines", ""],
  ["Dup Ada", "ANA@OK.TEST", "Dup Co", "the same address again", ""],
  ["Mal Formed", "not an address", "Bad Co", "malformed", ""],
  ["Short Line", "info@ok.test", "", "", ""],
  ["Long Line", "info@ok.test", "Extra Co", "note", "an extra cell"],
];
const asObject = (cells: string[]) => Object.fromEntries(COLUMNS.map((name, i) => [name, cells[i]!]));

describe("a CSV file's columns, kept", () => {
  it("come back as an object on every JSON page and filter, and before ours in every CSV download, row for row, named after the job", async () => {
    const { token } = await newAccount(0);
    const job = await created(await postCsv(token, CRM, `?name=${encodeURIComponent("CRM export.csv")}`));
    expect(job).toMatchObject({ name: "CRM export.csv", columns: COLUMNS, email_column: "E-mail address", total: 7 });
    const done = await finished(token, job.id);
    expect(done.counts).toEqual({ valid: 4, risky: 1, invalid: 2 });

    // JSON, two lines a page: every line, its own cells.
    const all = await pages(token, job.id);
    expect(all.results.map((r) => r.columns)).toEqual(LINES.map(asObject));
    expect(all.results.map((r) => r.email)).toEqual(LINES.map((l) => l[1]));
    const classOf = new Map(all.results.map((r, i) => [i, r.classification]));

    const filters: [string, string, number[]][] = [
      ["", "all", [0, 1, 2, 3, 4, 5, 6]],
      ["classification=valid", "valid", [0, 3, 5, 6]],
      ["classification=risky", "risky", [2]],
      ["classification=invalid", "invalid", [1, 4]],
      ["classification=valid,risky", "valid-risky", [0, 2, 3, 5, 6]],
      ["reason=mailbox_not_found", "mailbox_not_found", [1]],
    ];
    for (const [query, suffix, lines] of filters) {
      const json = await pages(token, job.id, query);
      expect(json.results.map((r) => r.columns), query).toEqual(lines.map((i) => asObject(LINES[i]!)));

      const res = await call(`${PATH}/${job.id}/results?format=csv${query ? `&${query}` : ""}`, { token });
      expect(res.headers.get("content-disposition"), query).toBe(`attachment; filename="CRM export-${suffix}.csv"`);
      const [header, ...rows] = parseCsv(await res.text(), { relax_column_count: false }) as string[][];
      // The customer's columns in their order, then ours ("email" renamed nowhere: no column of theirs has its name).
      expect(header).toEqual([...COLUMNS, ...CSV_COLUMNS]);
      expect(rows.map((r) => r.slice(0, COLUMNS.length)), query).toEqual(lines.map((i) => LINES[i]));
      expect(rows.map((r) => r[COLUMNS.length + 1]), query).toEqual(lines.map((i) => classOf.get(i)));
      // Ours: the address as checked (trimmed), whatever the cell was.
      expect(rows.map((r) => r[COLUMNS.length]), query).toEqual(lines.map((i) => LINES[i]![1]));
    }
  });

  it("renames our column when the file has one of its name, and keeps nothing extra from a file of one column", async () => {
    const { token } = await newAccount(0);
    const both = await created(await postCsv(token, "email,Score\nx,10\n"));
    const csv = await (await call(`${PATH}/${both.id}/results?format=csv`, { token })).text();
    expect(csv.split("\r\n")[0]).toBe(["email", "Score", "verification_email", "classification", "valid", "verification_score", ...CSV_COLUMNS.slice(4)].join(","));
    expect(csv.split("\r\n")[1]).toMatch(/^x,10,x,invalid,false,0,/);

    const plain = await created(await postCsv(token, "email\nnot one\n"));
    expect(plain).toMatchObject({ columns: [], email_column: null });
    expect((await (await call(`${PATH}/${plain.id}/results?format=csv`, { token })).text()).split("\r\n")[0]).toBe(CSV_COLUMNS.join(","));
    expect((await pages(token, plain.id)).results[0]!.columns).toEqual({});
  });

  it("ends a JSON page early once its kept columns pass 1 MiB; next_cursor gives the rest", async () => {
    const { token } = await newAccount(0);
    // 40 lines of 60,000 characters each: answered at creation (no address), so the job is complete in its 202.
    const wide = "w".repeat(60_000);
    const csv = ["address,notes", ...Array.from({ length: 40 }, (_, i) => `x${i},${wide}`)].join("\n");
    const job = await created(await postCsv(token, csv, "?email_column=address"));
    expect(job.status).toBe("completed");
    const { results, sizes } = await pages(token, job.id, "", 100);
    expect(results.map((r) => r.columns.address)).toEqual(Array.from({ length: 40 }, (_, i) => `x${i}`));
    expect(Math.max(...sizes)).toBe(Math.floor(KEPT_PAGE_CHARS / 60_000));
    expect(sizes.length).toBeGreaterThan(1);
  });
});

describe("a CSV file's address column", () => {
  it("is email_column when given, by name or number; one that is not a column is 400 naming the columns", async () => {
    const { token, accountId } = await newAccount(0);
    const csv = "Name,Contact,Phone\nAda,ana@ok.test,1\n";
    expect((await created(await postCsv(token, csv, "?email_column=Contact"))).email_column).toBe("Contact");
    expect((await created(await postCsv(token, csv, "?email_column=2"))).email_column).toBe("Contact");
    const before = await storedJobs(accountId);
    for (const [query, error] of [
      ["?email_column=Email", 'email_column "Email" is not a column of the file (columns: “Name”, “Contact”, “Phone”)'],
      ["?email_column=4", "email_column 4: the file has 3 columns"],
    ]) {
      const res = await postCsv(token, csv, query);
      expect([res.status, await res.json()]).toEqual([400, { error }]);
    }
    const json = await call(`${PATH}?email_column=1`, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: ["a@b.co"] }) });
    expect([json.status, await json.json()]).toEqual([400, { error: "email_column is for a CSV file: the addresses of a JSON body are its email_addresses" }]);
    expect(await storedJobs(accountId)).toBe(before);
  });

  it("is refused, naming the columns, when no column looks like addresses: no job is made", async () => {
    const { token, accountId } = await newAccount(0);
    const res = await postCsv(token, "Name,Phone\nAda,+44 20 7946 0000\nBob,555-0100\nCy,555-0101\n");
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: "No column of the file looks like email addresses (columns: “Name”, “Phone”). Name the column that holds the addresses with email_column",
    });
    const semicolons = await postCsv(token, "Nom;E-mail;Société\nAda;ana@ok.test;Acme\n");
    expect(((await semicolons.json()) as { error: string }).error).toMatch(/^No column of the file looks like email addresses \(columns: “Nom;E-mail;Société”\)\. Its first row reads as one column: /);
    expect(await storedJobs(accountId)).toBe(0);
  });
});

describe("what a CSV upload may hold", () => {
  it(`a line over ${JOB_LIMITS.maxCsvLineChars.toLocaleString("en")} characters or ${JOB_LIMITS.maxColumns.toLocaleString("en")} columns is 400 naming it: nothing is cut, nothing stored`, async () => {
    const { token, accountId } = await newAccount(0);
    const long = await postCsv(token, `email,notes\nana@ok.test,short\nben@ok.test,${"n".repeat(JOB_LIMITS.maxCsvLineChars)}\n`);
    expect([long.status, await long.json()]).toEqual([400, { error: `Line 3: a line is at most ${JOB_LIMITS.maxCsvLineChars.toLocaleString("en")} characters, all its columns together` }]);
    const cells = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`).join(",");
    const wide = await postCsv(token, `email,${cells(10)}\nana@ok.test,x\nben@ok.test,${cells(JOB_LIMITS.maxColumns)}\n`);
    expect([wide.status, await wide.json()]).toEqual([400, { error: `Line 3: a line has at most ${JOB_LIMITS.maxColumns.toLocaleString("en")} columns` }]);
    expect(await storedJobs(accountId)).toBe(0);
    // At the bounds, every cell is kept.
    const fits = await created(await postCsv(token, `email,${cells(JOB_LIMITS.maxColumns - 2)}\nnot one,${cells(JOB_LIMITS.maxColumns - 2)}\n`));
    expect(fits.columns).toHaveLength(JOB_LIMITS.maxColumns - 1);
    const [line] = (await pages(token, fits.id)).results;
    expect(line!.columns[`c${JOB_LIMITS.maxColumns - 3}`]).toBe(`c${JOB_LIMITS.maxColumns - 3}`);
  });

  it("a file that is not text is refused as what it looks like, quoting none of its bytes; an empty file is said to be empty", async () => {
    const { token, accountId } = await newAccount(0);
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0x2c, 0x40]);
    const res = await postCsv(token, png);
    const { error } = (await res.json()) as { error: string };
    expect([res.status, error]).toEqual([400, "The file is not a CSV file: it looks like a PNG image. Save the list as CSV (comma-separated values) and send that"]);
    const zip = await postCsv(token, new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0]));
    expect(((await zip.json()) as { error: string }).error).toContain("an Excel workbook (.xlsx)");
    for (const empty of ["", "\r\n\r\n", "\uFEFF"]) {
      const answer = await postCsv(token, empty);
      expect([answer.status, await answer.json()], JSON.stringify(empty)).toEqual([400, { error: "The file is empty" }]);
    }
    // The parser's own messages quote the line: ours say what is wrong and where.
    const quote = await postCsv(token, 'email\n"ana@ok.test\n');
    expect(await quote.json()).toEqual({ error: "Malformed CSV at line 2: a quoted cell is never closed" });
    expect(await storedJobs(accountId)).toBe(0);
  });
});

describe("a job's name", () => {
  it("is given in the query or the JSON body, else the job's id; lists are searched by it; a download is named after it (RFC 6266, filename* beyond ASCII)", async () => {
    const { token } = await newAccount(0);
    const unnamed = await created(await call(PATH, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: ["x"] }) }));
    expect(unnamed.name).toBe(unnamed.id);
    const named = await created(
      await call(PATH, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: ["x"], name: "  Müller: Kunden/2026.csv " }) }),
    );
    expect(named.name).toBe("Müller: Kunden/2026.csv");
    const res = await call(`${PATH}/${named.id}/results?format=csv&classification=invalid`, { token });
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="M_ller_ Kunden_2026-invalid.csv"; filename*=UTF-8''M%C3%BCller_%20Kunden_2026-invalid.csv`);
    const byId = await call(`${PATH}/${unnamed.id}/results?format=csv`, { token });
    expect(byId.headers.get("content-disposition")).toBe(`attachment; filename="${unnamed.id}-all.csv"`);

    const found = (await (await call(`${PATH}?name=kunden`, { token })).json()) as { jobs: VerificationJob[] };
    expect(found.jobs.map((j) => j.id)).toEqual([named.id]);
    const wildcard = (await (await call(`${PATH}?name=${encodeURIComponent("%")}`, { token })).json()) as { jobs: VerificationJob[] };
    expect(wildcard.jobs).toEqual([]);

    for (const [query, body] of [
      [`?name=${"n".repeat(JOB_LIMITS.maxNameChars + 1)}`, { email_addresses: ["x"] }],
      ["", { email_addresses: ["x"], name: "a\u0007b" }],
      ["", { email_addresses: ["x"], name: "" }],
    ] as const) {
      const refused = await call(`${PATH}${query}`, { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect([refused.status, await refused.json()]).toEqual([400, { error: `name must be 1 to ${JOB_LIMITS.maxNameChars} characters, without control characters` }]);
    }
    const tooLong = await call(`${PATH}?name=${"n".repeat(JOB_LIMITS.maxNameChars + 1)}`, { token });
    expect(tooLong.status).toBe(400);
  });
});
