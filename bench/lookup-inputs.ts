/**
 * GET /v1/people by what customers hold (issue 46), against the Worker as `wrangler dev` serves it, over a base of
 * --people people (default 1,000,000), each with a work address, a phone, a name and two employments (current and
 * past, with their domains) as the import stores them:
 *   1. database round trips per lookup by profnet id, email, phone, and name + company_domain (and by company name),
 *      counted at the libSQL server (GET /stats), warm key;
 *   2. the p50 of --requests warm-key hits sent one at a time, each a different person, every kind in turn within each
 *      repetition (so drift on a loaded machine reaches every kind alike), and each kind's ratio to the profnet id's;
 *   3. (--import-rows > 0) the people import's rate (rows/s) of a file without names and employment and of the same
 *      file with them, into the same base, and the ratio.
 * The base is written straight to the database file (one SQL statement per table, keys computed as
 * shared/people/names.ts computes them for these plain ASCII names), then served by the libSQL stand-in in its own
 * process, as under `npm start`. Prints markdown.
 *
 *   npx tsx bench/lookup-inputs.ts [--people 1000000] [--requests 300] [--reps 3] [--import-rows 20000] [--database FILE]
 *
 * --database FILE keeps the base in FILE (seeded when it does not exist yet, reused as it is when it does), to run
 * again without seeding or to look at its query plans.
 */
import { createClient } from "@libsql/client";
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { applyMigrations, openDatabase } from "../scripts/lib/database.ts";
import { fullNameKey } from "../shared/people/names.ts";
import { startDevWorker } from "./dev-worker.ts";
import { databaseRequests, runChild, startChild, stopChild } from "./child.ts";
import { median, percentile } from "./stats.ts";


const { values } = parseArgs({
  options: {
    people: { type: "string", default: "1000000" },
    requests: { type: "string", default: "300" },
    reps: { type: "string", default: "3" },
    "import-rows": { type: "string", default: "20000" },
    database: { type: "string" },
  },
});
const PEOPLE = Number(values.people);
const REQUESTS = Number(values.requests);
const REPS = Number(values.reps);
const IMPORT_ROWS = Number(values["import-rows"]);
/** People per company: a name is unique within its company, shared across companies (2,000 given x 1,000 family names). */
const PER_COMPANY = 20;
const GIVEN = 2_000;

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";

// Plain ASCII names, so SQL's lower() is the key names.ts gives them (checked below for a sample).
const given = (i: number) => `G${i % GIVEN}an`;
const family = (i: number) => `F${Math.floor(i / GIVEN) % 1_000}son`;
const domainOf = (i: number) => `co${Math.floor(i / PER_COMPANY)}.example`;
const phoneOf = (i: number) => `+1202${String(1_000_000 + i).padStart(7, "0")}`;
const emailOf = (i: number) => `${given(i).toLowerCase()}.${family(i).toLowerCase()}.${i}@${domainOf(i)}`;

const dir = await mkdtemp(join(tmpdir(), "bench-lookup-inputs-"));
const databaseFile = values.database ?? join(dir, "bench.db");
const databaseAuthToken = randomBytes(32).toString("base64url");
const stopping: (() => Promise<void>)[] = [() => rm(dir, { recursive: true, force: true })];

async function seed(): Promise<number> {
  const started = performance.now();
  const file = createClient({ url: `file:${databaseFile}` });
  await file.execute("pragma journal_mode = wal");
  const migrating = openDatabase(`file:${databaseFile}`);
  await applyMigrations(migrating);
  migrating.$client.close();
  const n = `with recursive n(i) as (select 0 union all select i + 1 from n where i < ${PEOPLE - 1})`;
  const g = `('G' || (i % ${GIVEN}) || 'an')`;
  const f = `('F' || ((i / ${GIVEN}) % 1000) || 'son')`;
  const d = `('co' || (i / ${PER_COMPANY}) || '.example')`;
  const now = Date.now();
  const statements = [
    `insert into people (id, profnet_id, profnet_public_identifier, codehost_id, codehost_login, created_at, updated_at)
       ${n} select i + 1, 10000000 + i, 'person-' || i, 50000000 + i, 'coder-' || i, ${now}, ${now} from n`,
    `insert into person_emails (id, person_id, email, address_key, first_seen_at, last_seen_at)
       ${n} select i + 1, i + 1, lower(${g}) || '.' || lower(${f}) || '.' || i || '@' || ${d}, lower(${g}) || '.' || lower(${f}) || '.' || i || '@' || ${d}, ${now}, ${now} from n`,
    `insert into person_email_sources (email_id, source, first_seen_at, last_seen_at) ${n} select i + 1, 'bench', ${now}, ${now} from n`,
    `insert into person_phones (id, person_id, phone, first_seen_at, last_seen_at) ${n} select i + 1, i + 1, '+1202' || (1000000 + i), ${now}, ${now} from n`,
    `insert into person_phone_sources (phone_id, source, first_seen_at, last_seen_at) ${n} select i + 1, 'bench', ${now}, ${now} from n`,
    `insert into person_names (id, person_id, full, given, family, middle, folded, name_key, first_seen_at, last_seen_at)
       ${n} select i + 1, i + 1, ${g} || ' ' || ${f}, ${g}, ${f}, null, lower(${g} || ' ' || ${f}), lower(${g} || ' ' || ${f}), ${now}, ${now} from n`,
    `insert into person_name_sources (name_id, source, first_seen_at, last_seen_at) ${n} select i + 1, 'bench', ${now}, ${now} from n`,
    // Two employments each: the current one at the person's company, a past one at the company 1,000 further on.
    `insert into person_employment (id, person_id, employer, employer_key, title, start_date, end_date, current, entry_key, first_seen_at, last_seen_at)
       ${n} select 2 * i + 1, i + 1, 'Company ' || (i / ${PER_COMPANY}) || ' Ltd', 'company ' || (i / ${PER_COMPANY}), 'Engineer', '2021', null, 1,
         'company ' || (i / ${PER_COMPANY}) || char(0) || 'engineer' || char(0) || '2021', ${now}, ${now} from n
       union all select 2 * i + 2, i + 1, 'Company ' || ((i / ${PER_COMPANY} + 1000) % ${Math.ceil(PEOPLE / PER_COMPANY)}) || ' Ltd',
         'company ' || ((i / ${PER_COMPANY} + 1000) % ${Math.ceil(PEOPLE / PER_COMPANY)}), 'Intern', '2018', '2020', 0,
         'company ' || ((i / ${PER_COMPANY} + 1000) % ${Math.ceil(PEOPLE / PER_COMPANY)}) || char(0) || 'intern' || char(0) || '2018', ${now}, ${now} from n`,
    `insert into person_employment_domains (employment_id, person_id, domain)
       select id, person_id, 'co' || substr(employer_key, 9) || '.example' from person_employment`,
    `insert into person_employment_sources (employment_id, source, first_seen_at, last_seen_at) select id, 'bench', ${now}, ${now} from person_employment`,
    "analyze",
  ];
  for (const statement of statements) await file.execute(statement);
  file.close();
  return (performance.now() - started) / 1000;
}

const startWorker = (url: string) => startDevWorker(url, databaseAuthToken);

type Kind = { label: string; path: (i: number) => string };
const KINDS: Kind[] = [
  { label: "profnet_id", path: (i) => `profnet_id=${10_000_000 + i}` },
  { label: "email", path: (i) => `email=${encodeURIComponent(emailOf(i).toUpperCase())}` },
  { label: "phone", path: (i) => `phone=${encodeURIComponent(phoneOf(i))}` },
  { label: "name + company_domain", path: (i) => `full_name=${encodeURIComponent(`${given(i)} ${family(i)}`)}&company_domain=${domainOf(i)}` },
  { label: "name + company (its name)", path: (i) => `first_name=${given(i)}&last_name=${family(i)}&company=${encodeURIComponent(`Company ${Math.floor(i / PER_COMPANY)}`)}` },
];

/** Rows of an import file with and without names and employment, new people numbered from `first`. */
async function importFile(path: string, rows: number, first: number, whole: boolean) {
  const out = createWriteStream(path);
  for (let k = 0; k < rows; k++) {
    const i = first + k;
    const line: Record<string, unknown> = { profnet_id: 900_000_000 + i, codehost_login: `imported-${i}`, email_addresses: [`imported.${i}@imp${i % 997}.example`], phone_numbers: [`+1303${200 + (Math.floor(i / 10_000) % 800)}${String(i % 10_000).padStart(4, "0")}`] };
    if (whole) {
      line.name = { given: `Imp${i % 3_000}`, family: `Orted${Math.floor(i / 3_000)}` };
      line.employment = [
        { employer: `Importer ${i % 997} GmbH`, domain: `imp${i % 997}.example`, title: "Analyst", start: "2022-03", current: true },
        { employer: `Earlier ${i % 501} Inc`, domains: [`earlier${i % 501}.example`, `earlier${i % 501}.example.org`], title: "Clerk", start: "2019", end: "2022", current: false },
      ];
    }
    if (!out.write(`${JSON.stringify(line)}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}

try {
  // Keys as names.ts computes them, for this bench's names.
  if (fullNameKey(`${given(7)} ${family(7)}`) !== `${given(7)} ${family(7)}`.toLowerCase()) throw new Error("the bench's names do not key as lower()");
  const seedSeconds = values.database !== undefined && existsSync(values.database) ? 0 : await seed();
  const server = await startChild(process.execPath, ["--import", "tsx", "scripts/libsql-server.ts", "--file", databaseFile, "--port", "0"], {
    env: { LIBSQL_AUTH_TOKEN: databaseAuthToken },
    ready: /libSQL server on (\S+)/,
  });
  stopping.unshift(() => stopChild(server.child));
  const databaseUrl = /libSQL server on (\S+)/.exec(server.stdout)![1]!;
  const db = openDatabase(databaseUrl, databaseAuthToken);
  const account = await createAccount(db, "bench", 100_000_000);
  const tokens: string[] = [];
  for (let i = 0; i < 50; i++) tokens.push((await createApiKey(db, account.id)).token);
  const worker = await startWorker(databaseUrl);
  stopping.unshift(worker.dispose);

  const get = async (path: string, token: string) => {
    const res = await fetch(`${worker.base}/v1/people?${path}`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { profnet_id?: number };
    return { status: res.status, profnetId: body.profnet_id };
  };
  // Warm every key, and check each kind finds the person it names.
  for (const token of tokens) await get(KINDS[0]!.path(1), token);
  for (const kind of KINDS) {
    const i = 123_457 % PEOPLE;
    const r = await get(kind.path(i), tokens[0]!);
    if (r.status !== 200 || r.profnetId !== 10_000_000 + i) throw new Error(`${kind.label} answered ${r.status} (${r.profnetId}) for person ${i}`);
  }

  // ---- 1. Round trips ----
  const trips = new Map<string, number[]>();
  for (const kind of KINDS) {
    for (let rep = 0; rep < REPS; rep++) {
      const before = await databaseRequests(databaseUrl, databaseAuthToken);
      await get(kind.path((rep * 7919 + 11) % PEOPLE), tokens[1]!);
      trips.set(kind.label, [...(trips.get(kind.label) ?? []), (await databaseRequests(databaseUrl, databaseAuthToken)) - before]);
    }
  }

  // ---- 2. Latency, kinds interleaved per repetition ----
  const p50 = new Map<string, number[]>();
  let person = 1;
  for (let rep = 0; rep < REPS; rep++) {
    for (const kind of KINDS) {
      const ms: number[] = [];
      for (let k = 0; k < REQUESTS; k++) {
        person = (person * 48_271) % 2_147_483_647;
        const i = person % PEOPLE;
        const started = performance.now();
        const r = await get(kind.path(i), tokens[k % tokens.length]!);
        ms.push(performance.now() - started);
        if (r.status !== 200) throw new Error(`${kind.label} answered ${r.status} for person ${i}`);
      }
      p50.set(kind.label, [...(p50.get(kind.label) ?? []), percentile(ms.sort((a, b) => a - b), 50)]);
    }
  }

  // ---- 3. The import with and without the new fields ----
  const imports: { label: string; rate: number[] }[] = [];
  if (IMPORT_ROWS > 0) {
    let first = 0;
    const rates = { without: [] as number[], with: [] as number[] };
    for (let rep = 0; rep < REPS; rep++) {
      for (const whole of [false, true]) {
        const file = join(dir, `import-${first}.jsonl`);
        await importFile(file, IMPORT_ROWS, first, whole);
        first += IMPORT_ROWS;
        const out = await runChild(process.execPath, ["--import", "tsx", "scripts/admin.ts", "people", "import", file, "--json", "--source", "bench"], {
          env: { DATABASE_URL: databaseUrl, DATABASE_AUTH_TOKEN: databaseAuthToken },
        });
        const summary = JSON.parse(out) as { rows_per_second: number; rejected: number; inserted: number };
        if (summary.rejected > 0 || summary.inserted !== IMPORT_ROWS) throw new Error(`import rejected ${summary.rejected}, inserted ${summary.inserted}: ${out.slice(0, 400)}`);
        (whole ? rates.with : rates.without).push(summary.rows_per_second);
      }
    }
    imports.push({ label: "ids, an address and a phone (today's lines)", rate: rates.without }, { label: "the same with a name and two employments (three domains)", rate: rates.with });
  }

  // ---- Report ----
  const fmt = (v: number[], digits = 1) => `${median(v).toFixed(digits)} (${v.map((x) => x.toFixed(digits)).join(", ")})`;
  const base = median(p50.get("profnet_id")!);
  console.log(`GET /v1/people by input: wrangler dev (workerd) on loopback, libSQL stand-in in its own process, ${PEOPLE.toLocaleString("en")} people (seeded in ${seedSeconds.toFixed(0)} s), ${REPS} repetitions\n`);
  console.log(`| Looked up by | Database round trips (each repetition) | p50 of ${REQUESTS} warm-key hits, ms: median (each repetition) | Against profnet_id |`);
  console.log("|---|---|---|---|");
  for (const kind of KINDS) {
    const v = p50.get(kind.label)!;
    console.log(`| ${kind.label} | ${trips.get(kind.label)!.join(", ")} | ${fmt(v, 2)} | ${(median(v) / base).toFixed(2)}x |`);
  }
  if (imports.length > 0) {
    console.log(`\n| ${IMPORT_ROWS.toLocaleString("en")}-line import into the same base, through the libSQL server | rows/s: median (each repetition) |`);
    console.log("|---|---|");
    for (const run of imports) console.log(`| ${run.label} | ${fmt(run.rate, 0)} |`);
    console.log(`\nImport rate with names and employment against without: ${(median(imports[1]!.rate) / median(imports[0]!.rate)).toFixed(2)}x`);
  }
  db.$client.close();
} finally {
  for (const stop of stopping) await stop();
}
