/**
 * One owner per table (issue 35 item 2): every statement on a table lives in the store that owns it (the jobs', the
 * people's, identity's), so a reader knows
 * where a new one belongs, and the guards that must agree with each other (a lease, a job's state, what a lookup may
 * return) sit side by side. A statement here is SQL text that names the table (after from, into, update, join, table
 * or exists), a string that is the table's name (a table picked at run time; for names with an underscore, which no
 * sentence uses), or Drizzle's query builder given the table's object; comments do not count. The schema and the migrations declare the tables: they are nobody's.
 * Product code only: tests and benchmarks set up and inspect the database as they need.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const PRODUCT = ["edge", "probe", "shared", "scripts"];
/** Where the tables are declared, not used. */
const DECLARATIONS = ["edge/db/schema.ts", "edge/db/migrations/"];

type Owner = {
  name: string;
  /** The tables as SQL names them, and their objects in edge/db/schema.ts. */
  tables: string[];
  objects: string[];
  /** The store that owns them: a folder (ending in /) or files. */
  owners: string[];
  /** Others that may keep statements of their own, each with the reason. */
  alsoAllowed: Record<string, string>;
};

const OWNERS: Owner[] = [
  {
    name: "the job tables",
    // Both kinds of job, verification and lookup (edge/jobs/, one engine); receiver_lessons: what probes learned by
    // being blocked or throttled, kept and handed to the fleet with job batches.
    tables: ["verification_jobs", "verification_job_items", "receiver_lessons", "lookup_jobs", "lookup_job_lines", "lookup_job_verdicts"],
    objects: ["verificationJobs", "verificationJobItems", "receiverLessons", "lookupJobs", "lookupJobLines", "lookupJobVerdicts"],
    owners: ["edge/jobs/store/"],
    alsoAllowed: {},
  },
  {
    name: "the people tables",
    // lookup_batches and lookup_batch_items: the batch call (POST /v1/people/bulk), a lookup of up to 100 people, not a job.
    // domain_facts, finder_checks, finder_finds, erased_addresses: the email finder's (edge/people/finder-store.ts).
    tables: ["people", "person_emails", "person_phones", "person_email_sources", "person_phone_sources", "person_handle_sources", "person_access_log", "erasure_notices", "suppressions", "email_feedback", "person_changes", "people_events", "merge_candidates", "lookup_batches", "lookup_batch_items", "domain_facts", "finder_checks", "finder_finds", "erased_addresses"],
    objects: ["people", "personEmails", "personPhones", "personEmailSources", "personPhoneSources", "personHandleSources", "personAccessLog", "erasureNotices", "suppressions", "emailFeedback", "personChanges", "peopleEvents", "mergeCandidates", "lookupBatches", "lookupBatchItems", "domainFacts", "finderChecks", "finderFinds", "erasedAddresses"],
    owners: ["edge/people/"],
    alsoAllowed: {
      // The operator's tools: the import's upsert, access reports and erasure run on Node's client in write batches of
      // their own, over tables the Worker only reads, and the Worker never loads them (import-graph.test.ts).
      "scripts/admin/people-*.ts": "the admin CLI's import, access report and erasure",
      // The three sample people `npm start` seeds into a new local database.
      "scripts/lib/samples.ts": "npm start's sample people",
    },
  },
  {
    name: "the money tables",
    // The credit ledger (a charge is one guarded INSERT; the trigger moves accounts.credit_balance) and the usage roll-up.
    tables: ["credit_ledger", "usage_daily"],
    objects: ["creditLedger", "usageDaily"],
    owners: ["edge/money/"],
    alsoAllowed: {
      // The operator's credit grants and account setup, on Node's client; the Worker never loads them.
      "scripts/admin/accounts.ts": "the admin CLI's credit grants",
    },
  },
  {
    name: "identity's tables",
    tables: ["api_keys", "members", "passkeys", "invites", "sessions", "session_notes", "webauthn_challenges", "audit_events", "key_cap_spend"],
    objects: ["apiKeys", "members", "passkeys", "invites", "sessions", "sessionNotes", "webauthnChallenges", "auditEvents", "keyCapSpend"],
    owners: ["edge/identity/store/"],
    alsoAllowed: {},
  },
];

const files = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === "node_modules" || entry.name === "dist" ? [] : files(path);
    return /\.(ts|tsx|mjs)$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });

/** The code without its comments: JSDoc and block comment lines, and a trailing `// ...`. */
function code(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .split("\n")
    .map((line) => (line.trimStart().startsWith("//") ? "" : line.replace(/\s\/\/\s.*$/, "")))
    .join("\n");
}

/** The statements on `owner`'s tables in this text: each as the words that name the table. */
export function statementsIn(text: string, owner: Pick<Owner, "tables" | "objects">): string[] {
  const tables = owner.tables.join("|");
  // A string that is a table's name: only for names no sentence uses ("people" is also a word).
  const named = owner.tables.filter((t) => t.includes("_")).join("|");
  const objects = owner.objects.join("|");
  const patterns = [
    new RegExp(`\\b(?:from|into|update|join|table|exists)\\s+[\`"']?(?:${tables})\\b(?![\\w-])`, "gi"),
    new RegExp(`["'\`](?:${named})["'\`]`, "g"),
    new RegExp(`\\b(?:from|insert|update|delete|join|innerJoin|leftJoin|rightJoin|fullJoin)\\(\\s*(?:${objects})\\b|\\.query\\.(?:${objects})\\b|\\$\\{\\s*(?:${objects})\\b`, "g"),
  ];
  const body = code(text);
  return patterns.flatMap((p) => [...body.matchAll(p)].map((m) => m[0]));
}

const owned = (path: string, prefixes: string[]) => prefixes.some((p) => (p.endsWith("/") ? path.startsWith(p) : path === p));
const matchesPattern = (path: string, pattern: string) => new RegExp(`^${pattern.replace(/[.]/g, "\\.").replace(/\*/g, "[^/]*")}$`).test(path);

const product = PRODUCT.flatMap(files).map((path) => relative(root, join(root, path)));

describe("the statement finder (so the rules below can fail)", () => {
  const jobs = OWNERS[0]!;
  it("finds SQL text, a table picked by name and Drizzle's builder; not a comment, a type or an index's name", () => {
    for (const statement of [
      "const q = sql`select id from verification_jobs where 1`;",
      "db.run(sql`delete from `verification_job_items` where x`)",
      'const table = "verification_jobs";',
      "await db.select().from(verificationJobs)",
      "sql`update ${verificationJobItems} set state = 'done'`",
    ])
      expect(statementsIn(statement, jobs), statement).not.toEqual([]);
    expect(statementsIn("/** reads from verification_jobs */\n// update verification_jobs\nconst x = 1; // from verification_jobs", jobs)).toEqual([]);
    expect(statementsIn("type Row = typeof verificationJobs.$inferSelect;", jobs)).toEqual([]);
    expect(statementsIn("// by the index\nconst i = sql`indexed by verification_job_items_done_idx`;", jobs)).toEqual([]);
  });

  it("finds each owner's own statements", () => {
    for (const owner of OWNERS) {
      const inOwner = product.filter((path) => owned(path, owner.owners) && statementsIn(readFileSync(join(root, path), "utf8"), owner).length > 0);
      expect(inOwner.length, owner.name).toBeGreaterThan(0);
    }
  });
});

describe.each(OWNERS)("$name", (owner) => {
  it(`have statements only in ${owner.owners.join(", ")}${Object.keys(owner.alsoAllowed).length ? " and the files allowed their own" : ""}`, () => {
    const outside = product
      .filter((path) => !DECLARATIONS.some((d) => path === d || path.startsWith(d)))
      .filter((path) => !owned(path, owner.owners) && !Object.keys(owner.alsoAllowed).some((pattern) => matchesPattern(path, pattern)))
      .flatMap((path) => statementsIn(readFileSync(join(root, path), "utf8"), owner).map((s) => `${path}: ${s}`));
    expect(outside).toEqual([]);
  });
});

describe("the routes", () => {
  it("hold no SQL: every statement is a store's (edge/routes/ only calls them)", () => {
    const withSql = product.filter((path) => path.startsWith("edge/routes/") && /\bsql`|\bsql\.raw\(/.test(code(readFileSync(join(root, path), "utf8"))));
    expect(withSql).toEqual([]);
  });
});

