/**
 * Erasure that holds (docs/operations.md "Personal data"), as an operator runs it: equivalent spellings of an
 * address, phones and handles stay suppressed; a wrong SUPPRESSION_KEY is refused; the selector can come from
 * standard input; refresh jobs lose the erased addresses; internal accounts get neither keys nor credits. A child
 * process of the admin CLI against a real libSQL file database.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REFRESH_ACCOUNT_ID } from "../../edge/identity/internal-accounts.ts";
import { canonicalAddress, canonicalAddressByParsing } from "../../shared/email/canonical-address.ts";
import { applyMigrations, openDatabase, type NodeDatabase } from "../../scripts/lib/database.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const SUPPRESSION_KEY = "c3VwcHJlc3Npb24ta2V5LWZvci10ZXN0cy0zMi1ieXQ=";
const OTHER_KEY = "b3RoZXIta2V5LW9mLTMyLWJ5dGVzLWZvci10ZXN0cy0=";
// Each run starts a Node process with the TypeScript loader: 1-2 s apiece on an idle machine, several times that
// beside another test file. A hang guard, not a speed test: generous, whatever the load.
const CLI_TEST_TIMEOUT = 240_000;

let dir: string;
let databaseUrl: string;
let db: NodeDatabase;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "people-erasure-"));
  databaseUrl = `file:${join(dir, "erasure.db")}`;
  db = openDatabase(databaseUrl);
  await applyMigrations(db);
});

afterAll(async () => {
  db.$client.close();
  await rm(dir, { recursive: true, force: true });
});

type Run = { status: number; json: Record<string, unknown> };

/** The admin CLI with --json, optionally fed `stdin`. */
function admin(args: string[], options: { key?: string; stdin?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args, "--json"], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: databaseUrl, SUPPRESSION_KEY: options.key ?? SUPPRESSION_KEY },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (status) => {
      const lines = stdout.split("\n").filter((l) => l !== "");
      if (lines.length !== 1) return reject(new Error(`expected one JSON line, got: ${stdout}${stderr}`));
      resolve({ status: status ?? -1, json: JSON.parse(lines[0]!) as Record<string, unknown> });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

async function importLines(name: string, lines: object[], key?: string) {
  const path = join(dir, name);
  await writeFile(path, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  return admin(["people", "import", path], { key });
}

const count = async (table: string, where = "1") => Number((await db.$client.execute(`select count(*) as n from ${table} where ${where}`)).rows[0]!.n);

describe("canonicalAddress", () => {
  it.each([
    ["a.da@gmail.com", "ada@gmail.com"],
    ["Ada+news@gmail.com", "ada@gmail.com"],
    ["a.d.a@GoogleMail.com", "ada@gmail.com"],
    ["ada@BÜCHER.de", "ada@xn--bcher-kva.de"],
    ["ada@bücher.de", "ada@xn--bcher-kva.de"],
    ["ada@xn--bcher-kva.de", "ada@xn--bcher-kva.de"],
    ['"ada"@x.example', "ada@x.example"],
    ['"a b"@x.example', '"a b"@x.example'],
    ["jose\u0301@x.example", "jos\u00e9@x.example"],
    // Dots and tags are Gmail's rule only.
    ["a.da+x@example.org", "a.da+x@example.org"],
  ])("%s -> %s", (email, canonical) => {
    expect(canonicalAddress(email)).toBe(canonical);
  });

  it("the short way for plain ASCII gives the key the syntax check's way gives, whatever the input", () => {
    const atext = fc.constantFrom(..."abcXYZ09.+-_!#'~@\"()<> ".split(""));
    const local = fc.array(atext, { maxLength: 70 }).map((chars) => chars.join(""));
    const domain = fc.constantFrom("gmail.com", "GoogleMail.com", "example.org", "xn--bcher-kva.de", "xn--zz.com", "a..b", "EXAMPLE.ORG", "gmail.com@x.org", "");
    const address = fc.oneof(fc.tuple(local, domain).map(([l, d]) => `${l}@${d}`), fc.emailAddress(), fc.string({ maxLength: 80 }));
    fc.assert(fc.property(address, (email) => canonicalAddress(email) === canonicalAddressByParsing(email)), { numRuns: 5_000 });
  });
});

describe("people erase holds for equivalent forms", () => {
  it(
    "suppresses phones, handles and every spelling of an address, removes equivalent rows of other people, and no import brings any back",
    async () => {
      const first = await importLines("people.jsonl", [
        {
          profnet_id: 601,
          codehost_username: "AdaCodes",
          socialnet_username: "ada_social",
          microblog_username: "ada_micro",
          email_addresses: ["a.da+x@gmail.com", "ada@BÜCHER.de", '"zoe"@quoted.example', "jose\u0301@accent.example"],
          phone_numbers: ["+1 415 555 0134"],
        },
        // Another person holds one of Ada's mailboxes in another spelling: erased for everyone.
        { codehost_id: 700, email_addresses: ["ADA@googlemail.com", "keep@example.org"] },
      ]);
      expect(first.json).toMatchObject({ inserted: 2, rejected: 0 });

      const erased = await admin(["people", "erase", "--profnet-id", "601"]);
      expect(erased).toMatchObject({ status: 0, json: { erased: 1 } });
      expect(await count("person_emails", "lower(email) = 'ada@googlemail.com'")).toBe(0);
      expect(await count("person_emails", "email = 'keep@example.org'")).toBe(1);

      const again = await importLines("again.jsonl", [
        { codehost_id: 801, email_addresses: ["ada@gmail.com"] },
        { codehost_id: 802, email_addresses: ["ad.a+other@googlemail.com"] },
        { codehost_id: 803, email_addresses: ["ada@bücher.de"] },
        { codehost_id: 804, email_addresses: ["ADA@xn--bcher-kva.de"] },
        { codehost_id: 805, email_addresses: ["zoe@quoted.example"] },
        { codehost_id: 806, email_addresses: ["jos\u00e9@accent.example"] },
        { codehost_id: 807, phone_numbers: ["+14155550134"] },
        { codehost_id: 808, codehost_username: "adacodes" },
        { codehost_id: 809, socialnet_username: "ADA_SOCIAL" },
        { codehost_id: 810, microblog_username: "ada_micro" },
        { codehost_id: 811, email_addresses: ["someone.else@gmail.com"], phone_numbers: ["+14155550199"], codehost_username: "someone" },
      ]);
      expect(again.json).toMatchObject({
        inserted: 1,
        rejected: 10,
        rejections: Array.from({ length: 10 }, (_, i) => ({ line: i + 1, reason: "suppressed" })),
      });
      expect(await count("people", "codehost_id between 801 and 810")).toBe(0);
      expect(await count("people", "codehost_id = 811")).toBe(1);
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "--email - reads the address from standard input, for erase and access-report, in any spelling",
    async () => {
      await importLines("stdin.jsonl", [{ profnet_id: 901, email_addresses: ["Grace.Hopper@gmail.com"] }]);
      const report = await admin(["people", "access-report", "--email", "-"], { stdin: "gracehopper+cv@googlemail.com\n" });
      expect(report).toMatchObject({ status: 0, json: { person: { profnet_id: 901 } } });
      const erased = await admin(["people", "erase", "--email", "-"], { stdin: "grace.hopper@gmail.com\n" });
      expect(erased).toMatchObject({ status: 0, json: { erased: 1 } });
      expect(await count("people", "profnet_id = 901")).toBe(0);
      const empty = await admin(["people", "erase", "--email", "-"], { stdin: "" });
      expect(empty.status).toBe(2);
      expect(String(empty.json.error)).toContain("standard input is empty");
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "a SUPPRESSION_KEY other than the erasures' is refused by erase and import, with a message that says so",
    async () => {
      // Erasures above stored the check value of SUPPRESSION_KEY.
      const wrongImport = await importLines("wrong-key.jsonl", [{ codehost_id: 950, email_addresses: ["ada@gmail.com"] }], OTHER_KEY);
      expect(wrongImport.status).toBe(1);
      expect(String(wrongImport.json.error)).toContain("SUPPRESSION_KEY is not the key this database's erasures were made with");
      expect(await count("people", "codehost_id = 950")).toBe(0);
      const wrongErase = await admin(["people", "erase", "--email", "someone@example.org"], { key: OTHER_KEY });
      expect(wrongErase.status).toBe(1);
      expect(String(wrongErase.json.error)).toContain("SUPPRESSION_KEY is not the key this database's erasures were made with");
      expect(await count("suppressions", "kind = 'key_check'")).toBe(1);
      const right = await importLines("right-key.jsonl", [{ codehost_id: 951, email_addresses: ["new@example.org"] }]);
      expect(right).toMatchObject({ status: 0, json: { inserted: 1 } });
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "removes the erased addresses from a running refresh job, counts it again, and completes one left with nothing to do",
    async () => {
      await importLines("refresh.jsonl", [
        { profnet_id: 1001, email_addresses: ["refresh.me@gmail.com"] },
        { profnet_id: 1002, email_addresses: ["stays@example.org", "answered@example.org"] },
        { profnet_id: 1003, email_addresses: ["alone@example.org"] },
      ]);
      const now = Date.now();
      await db.$client.batch(
        [
          { sql: "insert into accounts (id, name) values (?, 'internal') on conflict do nothing", args: [REFRESH_ACCOUNT_ID] },
          { sql: "insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash) values ('job_refresh_a', ?, 'running', 3, 10, ''), ('job_refresh_b', ?, 'running', 1, 10, '')", args: [REFRESH_ACCOUNT_ID, REFRESH_ACCOUNT_ID] },
          {
            sql: `insert into verification_job_items (job_id, position, email, seq, state, classification, reason, checked_at, result) values
              ('job_refresh_a', 0, 'refresh.me@gmail.com', 0, 'pending', null, null, null, null),
              ('job_refresh_a', 1, 'stays@example.org', 1, 'pending', null, null, null, null),
              ('job_refresh_a', 2, 'answered@example.org', 2, 'done', 'valid', 'deliverable', ?, '{}'),
              ('job_refresh_b', 0, 'alone@example.org', 0, 'claimed', null, null, null, null)`,
            args: [now],
          },
        ],
        "write",
      );
      expect((await admin(["people", "erase", "--profnet-id", "1001"])).json).toMatchObject({ erased: 1 });
      expect((await admin(["people", "erase", "--profnet-id", "1003"])).json).toMatchObject({ erased: 1 });
      const lines = await db.$client.execute("select job_id, email from verification_job_items where job_id like 'job_refresh_%' order by job_id, position");
      expect(lines.rows.map((r) => `${r.job_id} ${r.email}`)).toEqual(["job_refresh_a stays@example.org", "job_refresh_a answered@example.org"]);
      const jobs = await db.$client.execute("select id, status, total, processed, valid_count, reason_counts from verification_jobs where id like 'job_refresh_%' order by id");
      expect(jobs.rows.map((r) => ({ ...r }))).toEqual([
        { id: "job_refresh_a", status: "running", total: 2, processed: 1, valid_count: 1, reason_counts: '{"deliverable":1}' },
        { id: "job_refresh_b", status: "completed", total: 0, processed: 0, valid_count: 0, reason_counts: "{}" },
      ]);
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "an erased address answered in a refresh job, and its duplicate, leave the job's counts as a taken-back answer does (the triggers count)",
    async () => {
      await importLines("refresh-answered.jsonl", [{ profnet_id: 1011, email_addresses: ["answered.gone@example.org"] }]);
      await db.$client.batch(
        [
          { sql: "insert into verification_jobs (id, account_id, status, total, smtp_timeout, request_hash) values ('job_refresh_c', ?, 'running', 4, 10, '')", args: [REFRESH_ACCOUNT_ID] },
          {
            sql: `insert into verification_job_items (job_id, position, email, seq, state, duplicate_of, classification, reason, checked_at, result) values
              ('job_refresh_c', 0, 'answered.gone@example.org', 0, 'done', null, 'invalid', 'mailbox_not_found', ?1, '{}'),
              ('job_refresh_c', 1, 'kept@example.org', 1, 'done', null, 'valid', 'deliverable', ?1, '{}'),
              ('job_refresh_c', 2, 'ANSWERED.GONE@example.org', 2, 'done', 0, 'invalid', 'mailbox_not_found', ?1, '{}'),
              ('job_refresh_c', 3, 'later@example.org', 3, 'pending', null, null, null, null, null)`,
            args: [Date.now()],
          },
        ],
        "write",
      );
      expect((await admin(["people", "erase", "--profnet-id", "1011"])).json).toMatchObject({ erased: 1 });
      const lines = await db.$client.execute("select email from verification_job_items where job_id = 'job_refresh_c' order by position");
      expect(lines.rows.map((r) => r.email)).toEqual(["kept@example.org", "later@example.org"]);
      const [job] = (await db.$client.execute("select status, total, processed, valid_count, invalid_count, reason_counts from verification_jobs where id = 'job_refresh_c'")).rows;
      expect({ ...job, reason_counts: undefined }).toEqual({ status: "running", total: 2, processed: 1, valid_count: 1, invalid_count: 0, reason_counts: undefined });
      const reasons = JSON.parse(String(job!.reason_counts)) as Record<string, number>;
      expect({ deliverable: reasons.deliverable, mailbox_not_found: reasons.mailbox_not_found ?? 0 }).toEqual({ deliverable: 1, mailbox_not_found: 0 });
    },
    CLI_TEST_TIMEOUT,
  );
});

describe("internal accounts", () => {
  it(
    "the admin CLI refuses keys and credits for every internal account",
    async () => {
      await db.$client.execute({ sql: "insert into accounts (id, name) values (?, 'internal') on conflict do nothing", args: [REFRESH_ACCOUNT_ID] });
      const key = await admin(["keys", "create", "--account", REFRESH_ACCOUNT_ID]);
      expect(key).toEqual({ status: 1, json: { error: `${REFRESH_ACCOUNT_ID} is an internal account of the service: it cannot be given API keys` } });
      const credits = await admin(["credits", "add", "--account", REFRESH_ACCOUNT_ID, "--amount", "100"]);
      expect(credits).toEqual({ status: 1, json: { error: `${REFRESH_ACCOUNT_ID} is an internal account of the service: it cannot be given credits` } });
      expect(await count("api_keys", `account_id = '${REFRESH_ACCOUNT_ID}'`)).toBe(0);
      expect(await count("credit_ledger", `account_id = '${REFRESH_ACCOUNT_ID}'`)).toBe(0);
    },
    CLI_TEST_TIMEOUT,
  );
});
