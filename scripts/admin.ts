/**
 * The admin CLI, `npm run admin -- <command>`: argument parsing and output only. The operations live
 * in scripts/admin/accounts.ts (accounts, keys, credits) and scripts/admin/ (people import, privacy, merges).
 *
 * With --json, stdout carries exactly one JSON object (the result, or {"error": ...}); anything
 * else, progress included, goes to stderr. Exit status: 0 success, 1 failure, 2 usage error.
 * Longer than 400 lines on purpose: every command in one table, next to the usage text that describes it.
 */
import { Presets, SingleBar } from "cli-progress";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { addCredits, AdminError, createAccount, createApiKey, revokeApiKey, setAccountStatus, showAccount, webhookSecret } from "./admin/accounts.ts";
import { openAdminDatabase } from "./admin/database.ts";
import { DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE } from "./admin/people-import-limits.ts";
import type { ImportProgress, ImportSummary } from "./admin/people-import.ts";
import { erasePeople } from "./admin/people-erase.ts";
import { applyMergeCandidate, dismissMergeCandidate, listMergeCandidatePage, MERGE_LIST_MAX, MERGE_STATES, showMergeCandidate, undoMergeCandidate, type MergeState } from "./admin/people-merge.ts";
import { readFirstLine } from "./admin/stdin-line.ts";
import { accessReport, SUPPRESSION_KEY_MESSAGES, type PersonSelector } from "./admin/people-privacy.ts";
import { suppressionKey } from "./admin/suppression-key.ts";
import { KEY_OPTIONS, parseKeyOptions } from "./admin/key-options.ts";
import { applyMigrations, feedbackHashKey, webhookSecretKey, type NodeDatabase } from "./lib/database.ts";
import { createInvite } from "../edge/identity/store/invites.ts";
import { isRole, ROLES } from "../shared/roles.ts";

/** Where `npm start` serves the console (a passkey's relying party must be a host name, so not 127.0.0.1). */
const DEFAULT_CONSOLE_ORIGIN = "http://localhost:8787";

const USAGE = `Usage: npm run admin -- <command> [options]

Commands:
  db migrate                                Apply edge/db/migrations (a new Turso or sqld database)
  accounts create --name NAME --credits N   Create an account with an opening grant of N credits
  accounts show ID                          Balance, status, keys and recent ledger of an account
  accounts disable ID                       Refuse the account's keys (401) until it is enabled
  accounts enable ID
  accounts invite --account ID --role ROLE [--origin URL]
                                            Print a one-time link (24 hours) that makes a member with
                                            ROLE (${ROLES.join(", ")}) and their first passkey; --origin
                                            is where the console is served (default ${DEFAULT_CONSOLE_ORIGIN})
  accounts webhook-secret --account ID [--rotate]
                                            The secret that signs the account's job callbacks
                                            (made on first use; --rotate replaces it)
  credits add --account ID --amount N       Grant N credits (take them back with --amount=-N)
  keys create --account ID [--name NAME] [--scopes S,S] [--expires TIME] [--daily-credit-cap N]
                                            Create an API key; its token is shown only this once.
                                            Every scope unless --scopes names some (docs/api.md
                                            "Keys and scopes"); --expires is RFC 3339
  keys revoke --key ID
  people import FILE [--strict] [--source NAME] [--batch-size N]
                                            Upsert people from JSON Lines (.jsonl, .ndjson) or
                                            CSV (.csv, header row, ';' between list items)
      --strict       exit with status 1 when any line was rejected (valid lines are still imported)
      --source NAME  recorded on new emails and phones (default: the file's name)
      --batch-size N rows per write transaction (default ${DEFAULT_BATCH_SIZE}, at most ${MAX_BATCH_SIZE})
      A line that carries an erased identifier or address is rejected (reason "suppressed").
  people erase (--profnet-id N | --codehost-id N | --profnet-public-identifier S |
                --codehost-login S | --email E) [--reason TEXT]
                                            Delete the person and suppress their identifiers,
                                            handles, phones and addresses (keyed hashes, any
                                            spelling of an address) so no import brings them back;
                                            accounts that received them see it in
                                            GET /v1/people/erasures. --email alone also suppresses
                                            an address nobody has (an opt-out)
  merges list [--state open|applied|dismissed|undone] [--limit N] [--after ID]
                                            Import lines whose identifiers point at two different
                                            people (rejected, never merged by the import), oldest
                                            first, N a page (default 100, at most 1000); the next
                                            page is --after the id the last one gives (next_after)
  merges show ID                            A candidate, its line and both people as they are now
  merges apply ID                           Make the two people one (the older stays), then import
                                            the line; audited
  merges undo ID                            Take an applied merge back: both people as they were
                                            (refused once the merged person changed since); audited
  merges dismiss ID                         Close a candidate without merging; audited
  people access-report (--profnet-id N | ... | --email E)
                                            What is held about the person and which accounts
                                            received it, when, and how often
      A text selector given as - (--email -) is read from the first line of standard input,
      so the address stays out of shell history: read -rs EMAIL; printf '%s\\n' "$EMAIL" | ...

Every command takes:
  --json   print exactly one JSON object on stdout (errors too: {"error": "..."})
  --help   print this help

Environment:
  DATABASE_URL, DATABASE_AUTH_TOKEN   the database (default: the local file that \`npm start\`
                                      serves, .data/dev.db, created and migrated on first use;
                                      for the libSQL server \`npm start\` runs, the token is read
                                      from .data/libsql-<port>.token)
  SUPPRESSION_KEY                     keys the erasure hashes (base64 of 32 bytes; never change it);
                                      for the local database, made on first use in .data/
  FEEDBACK_HASH_KEY                   the Worker's key for addresses in bounce feedback: erase and
                                      access-report find a person's reports with it (local: .data/)

Exit status: 0 success, 1 failure (unknown account or key, rejected lines with --strict, ...),
2 usage error.`;

class UsageError extends Error {
  override name = "UsageError";
}

type Options = NonNullable<ParseArgsConfig["options"]>;
type Values = Record<string, string | boolean | undefined>;
type CommandInput = { values: Values; args: string[] };
type CommandResult = { json: object; text: string; exitStatus?: number };

type Command = {
  /** Names of the positional arguments after the command words. */
  args: string[];
  options: Options;
  run(db: NodeDatabase, input: CommandInput): Promise<CommandResult>;
};

const GLOBAL_OPTIONS: Options = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } };

function requiredOption(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== "string") throw new UsageError(`--${name} is required`);
  if (value.trim() === "") throw new UsageError(`--${name} must not be empty`);
  return value.trim();
}

function integerOption(values: Values, name: string, accept: (n: number) => boolean, expected: string): number {
  const raw = requiredOption(values, name);
  const value = /^[+-]?[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || !accept(value)) throw new UsageError(`--${name} must be ${expected}, got ${JSON.stringify(raw)}`);
  return value;
}

function formatTime(ms: number | null): string {
  return ms === null ? "-" : new Date(ms).toISOString();
}

/** The text summary stays readable; --json carries the longer list. */
const REJECTIONS_LISTED_AS_TEXT = 20;

function formatImportSummary(summary: ImportSummary): string {
  const lines = [
    `Imported ${summary.file} (${summary.format}, source ${JSON.stringify(summary.source)}): ` +
      `${summary.rows} rows in ${(summary.elapsed_ms / 1000).toFixed(2)} s (${summary.rows_per_second} rows/s)`,
    `  inserted ${summary.inserted}, updated ${summary.updated}, unchanged ${summary.unchanged}, rejected ${summary.rejected}`,
    ...summary.rejections.slice(0, REJECTIONS_LISTED_AS_TEXT).map((r) => `  line ${r.line}: ${r.reason}`),
  ];
  const unlisted = summary.rejected - Math.min(summary.rejections.length, REJECTIONS_LISTED_AS_TEXT);
  if (unlisted > 0) lines.push(`  ... and ${unlisted} more rejected lines (--json lists the first ${summary.rejections.length})`);
  return lines.join("\n");
}

/** A progress bar on stderr when a person is watching it; nothing when stderr is a file or pipe. */
function progressReporter(): { onProgress?: (progress: ImportProgress) => void; stop: () => void } {
  if (!process.stderr.isTTY) return { stop: () => {} };
  const bar = new SingleBar(
    { stream: process.stderr, format: "Importing |{bar}| {percentage}% | {rows} rows", hideCursor: true, clearOnComplete: true },
    Presets.shades_classic,
  );
  let started = false;
  return {
    onProgress: ({ bytesRead, totalBytes, rows }) => {
      if (!started) bar.start(Math.max(totalBytes, 1), 0, { rows });
      started = true;
      bar.update(bytesRead, { rows });
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

const PERSON_SELECTORS: Options = {
  "profnet-id": { type: "string" },
  "codehost-id": { type: "string" },
  "profnet-public-identifier": { type: "string" },
  "codehost-login": { type: "string" },
  email: { type: "string" },
};

/** `--email -`: the address from standard input (its first line), so that it never sits in shell history. */
async function selectorFromStdin(name: string): Promise<string> {
  const read = await readFirstLine(process.stdin);
  if (!read.ok) throw new UsageError(`--${name} -: ${read.problem}`);
  return read.line;
}

/** Exactly one of the person selectors; a text selector given as `-` is read from standard input. */
async function personSelector(values: Values): Promise<PersonSelector> {
  const given = Object.keys(PERSON_SELECTORS).filter((name) => values[name] !== undefined);
  if (given.length !== 1) throw new UsageError(`exactly one of ${Object.keys(PERSON_SELECTORS).map((n) => `--${n}`).join(", ")} is required`);
  const name = given[0]!;
  const kind = name.replaceAll("-", "_") as PersonSelector["kind"];
  if (kind === "profnet_id" || kind === "codehost_id") return { kind, value: integerOption(values, name, (n) => n >= 1, "a positive integer") };
  const value = values[name] === "-" ? await selectorFromStdin(name) : requiredOption(values, name);
  if (kind === "email" && !value.includes("@")) throw new UsageError(`--email must be an email address, got ${JSON.stringify(value)}`);
  return { kind, value };
}

function candidateId(raw: string): number {
  const id = /^[0-9]{1,15}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(id) || id < 1) throw new UsageError(`ID must be a merge candidate's number, got ${JSON.stringify(raw)}`);
  return id;
}

const COMMANDS: Record<string, Command> = {
  "db migrate": {
    args: [],
    options: {},
    async run(db) {
      await applyMigrations(db);
      return { json: { migrated: true }, text: "Migrations applied" };
    },
  },
  "accounts create": {
    args: [],
    options: { name: { type: "string" }, credits: { type: "string" } },
    async run(db, { values }) {
      const name = requiredOption(values, "name");
      const credits = integerOption(values, "credits", (n) => n >= 0, "a non-negative integer");
      const { id } = await createAccount(db, name, credits);
      return { json: { id }, text: `Created account ${id} (${name}) with ${credits} credits` };
    },
  },
  "accounts show": {
    args: ["ID"],
    options: {},
    async run(db, { args: [id = ""] }) {
      const account = await showAccount(db, id);
      const text = [
        `${account.id}  ${JSON.stringify(account.name)}  ${account.status}  balance ${account.balance}  created ${formatTime(account.created_at)}`,
        account.keys.length ? "Keys:" : "Keys: none",
        ...account.keys.map(
          (key) =>
            `  ${key.id}  ${key.prefix}...  ${JSON.stringify(key.name)}  ${key.scopes.join(",")}  created ${formatTime(key.created_at)}  ` +
            `last used ${formatTime(key.last_used_at)}  ${key.revoked_at === null ? `expires ${formatTime(key.expires_at)}` : `revoked ${formatTime(key.revoked_at)}`}` +
            `${key.daily_credit_cap === null ? "" : `  cap ${key.daily_credit_cap}/day`}`,
        ),
        account.recent_ledger.length ? "Recent ledger (newest first):" : "Recent ledger: empty",
        ...account.recent_ledger.map(
          (entry) =>
            `  #${entry.id}  ${entry.delta > 0 ? "+" : ""}${entry.delta}  balance ${entry.balance_after}  ${entry.reason}` +
            `${entry.request_id ? `  request ${entry.request_id}` : ""}  ${formatTime(entry.created_at)}`,
        ),
      ];
      return { json: account, text: text.join("\n") };
    },
  },
  "accounts disable": {
    args: ["ID"],
    options: {},
    async run(db, { args: [id = ""] }) {
      const result = await setAccountStatus(db, id, "disabled");
      return { json: result, text: `Account ${id} is disabled; its keys are refused until it is enabled` };
    },
  },
  "accounts enable": {
    args: ["ID"],
    options: {},
    async run(db, { args: [id = ""] }) {
      const result = await setAccountStatus(db, id, "active");
      return { json: result, text: `Account ${id} is active` };
    },
  },
  "accounts invite": {
    args: [],
    options: { account: { type: "string" }, role: { type: "string" }, origin: { type: "string" } },
    async run(db, { values }) {
      const account = requiredOption(values, "account");
      const role = requiredOption(values, "role");
      if (!isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(", ")}, got ${JSON.stringify(role)}`);
      const origin = typeof values.origin === "string" ? values.origin : DEFAULT_CONSOLE_ORIGIN;
      if (!URL.canParse(origin) || new URL(origin).origin !== origin) throw new UsageError(`--origin must be an origin such as ${DEFAULT_CONSOLE_ORIGIN}, got ${JSON.stringify(origin)}`);
      const invite = await createInvite(db, { accountId: account, role, createdBy: "operator", origin });
      if (!invite) throw new AdminError(`No account ${account}`);
      const { id, url, expires_at } = invite;
      return { json: { id, role, url, expires_at }, text: `One-time ${role} invite to ${account}, good until ${expires_at}:\n${url}` };
    },
  },
  "accounts webhook-secret": {
    args: [],
    options: { account: { type: "string" }, rotate: { type: "boolean" } },
    async run(db, { values }) {
      const account = requiredOption(values, "account");
      const { secret } = await webhookSecret(db, account, webhookSecretKey(), values.rotate === true);
      return {
        json: { secret },
        text: `Webhook secret of ${account}${values.rotate ? " (new)" : ""}; verify callbacks with it (Standard Webhooks):\n${secret}`,
      };
    },
  },
  "credits add": {
    args: [],
    options: { account: { type: "string" }, amount: { type: "string" } },
    async run(db, { values }) {
      const account = requiredOption(values, "account");
      const amount = integerOption(values, "amount", (n) => n !== 0, "a non-zero integer");
      const { balance } = await addCredits(db, account, amount);
      return { json: { account, balance }, text: `Account ${account} balance: ${balance}` };
    },
  },
  "keys create": {
    args: [],
    options: { account: { type: "string" }, ...KEY_OPTIONS },
    async run(db, { values }) {
      const account = requiredOption(values, "account");
      const parsed = parseKeyOptions(values);
      if ("problem" in parsed) throw new UsageError(parsed.problem);
      const { id, token, prefix } = await createApiKey(db, account, parsed.options);
      return {
        json: { id, account, prefix, token },
        text: `Created key ${id} for account ${account}\nToken (shown only this once, store it now):\n${token}`,
      };
    },
  },
  "keys revoke": {
    args: [],
    options: { key: { type: "string" } },
    async run(db, { values }) {
      const result = await revokeApiKey(db, requiredOption(values, "key"));
      return { json: result, text: `Key ${result.id} revoked at ${formatTime(result.revoked_at)}` };
    },
  },
  "people import": {
    args: ["FILE"],
    options: { strict: { type: "boolean" }, source: { type: "string" }, "batch-size": { type: "string" } },
    async run(db, { values, args: [file = ""] }) {
      const batchSize =
        values["batch-size"] === undefined
          ? DEFAULT_BATCH_SIZE
          : integerOption(values, "batch-size", (n) => n >= 1 && n <= MAX_BATCH_SIZE, `an integer from 1 to ${MAX_BATCH_SIZE}`);
      const source = values.source === undefined ? undefined : requiredOption(values, "source");
      const progress = progressReporter();
      let summary: ImportSummary;
      try {
        // Loaded on demand: its validation libraries would add a third of a second to every command.
        const { importPeople } = await import("./admin/people-import.ts");
        summary = await importPeople(db.$client, file, { batchSize, source, onProgress: progress.onProgress, suppressionKey: suppressionKey() });
      } finally {
        progress.stop();
      }
      const failed = values.strict === true && summary.rejected > 0;
      if (failed) process.stderr.write(`admin: ${summary.rejected} lines were rejected (--strict)\n`);
      return { json: summary, text: formatImportSummary(summary), exitStatus: failed ? 1 : 0 };
    },
  },
  "people erase": {
    args: [],
    options: { ...PERSON_SELECTORS, reason: { type: "string" } },
    async run(db, { values }) {
      const selector = await personSelector(values);
      const reason = values.reason === undefined ? null : requiredOption(values, "reason");
      const key = suppressionKey();
      if (!key) throw new AdminError(SUPPRESSION_KEY_MESSAGES.missing);
      const result = await erasePeople(db.$client, key, selector, reason, feedbackHashKey());
      if (result.erased === 0 && selector.kind !== "email") return { json: { erased: 0 }, text: "Nobody matches: nothing erased", exitStatus: 1 };
      return {
        json: result,
        text: `Erased ${result.erased} ${result.erased === 1 ? "person" : "people"}; ${result.suppressed} identifiers and addresses suppressed`,
      };
    },
  },
  "merges list": {
    args: [],
    options: { state: { type: "string" }, limit: { type: "string" }, after: { type: "string" } },
    async run(db, { values }) {
      const state = values.state === undefined ? null : requiredOption(values, "state");
      if (state !== null && !(MERGE_STATES as readonly string[]).includes(state)) throw new UsageError(`--state must be one of ${MERGE_STATES.join(", ")}, got ${JSON.stringify(state)}`);
      const limit = values.limit === undefined ? 100 : integerOption(values, "limit", (n) => n >= 1 && n <= MERGE_LIST_MAX, `a whole number from 1 to ${MERGE_LIST_MAX}`);
      const after = values.after === undefined ? 0 : integerOption(values, "after", (n) => n >= 0, "a merge candidate's number (0 or more)");
      const { candidates, nextAfter } = await listMergeCandidatePage(db.$client, state as MergeState | null, { limit, after });
      const lines = candidates.map((c) => `#${c.id}  ${c.state}  people ${c.people.join(" + ")}  ${c.source} line ${c.line}  ${c.created_at}\n  ${c.reason}`);
      if (nextAfter !== null) lines.push(`More: --after ${nextAfter}`);
      const text = candidates.length ? lines.join("\n") : "No merge candidates";
      return { json: { candidates, next_after: nextAfter }, text };
    },
  },
  "merges show": {
    args: ["ID"],
    options: {},
    async run(db, { args: [id = ""] }) {
      const shown = await showMergeCandidate(db.$client, candidateId(id));
      return { json: shown, text: JSON.stringify(shown, null, 2) };
    },
  },
  "merges apply": {
    args: ["ID"],
    options: {},
    async run(db, { args: [id = ""] }) {
      const { kept, merged } = await applyMergeCandidate(db.$client, candidateId(id));
      return { json: { applied: Number(id), kept, merged }, text: `Merge candidate ${id} applied: person ${merged} is now person ${kept}, and its line imported` };
    },
  },
  "merges undo": {
    args: ["ID"],
    options: {},
    async run(db, { args: [id = ""] }) {
      const { restored } = await undoMergeCandidate(db.$client, candidateId(id));
      return { json: { undone: Number(id), restored }, text: `Merge candidate ${id} undone: people ${restored.join(" and ")} are as they were` };
    },
  },
  "merges dismiss": {
    args: ["ID"],
    options: {},
    async run(db, { args: [id = ""] }) {
      await dismissMergeCandidate(db.$client, candidateId(id));
      return { json: { dismissed: Number(id) }, text: `Merge candidate ${id} dismissed` };
    },
  },
  "people access-report": {
    args: [],
    options: PERSON_SELECTORS,
    async run(db, { values }) {
      const report = await accessReport(db.$client, await personSelector(values), feedbackHashKey());
      const { matches, ...json } = report;
      if (!report.person) return { json, text: "Nobody matches: we hold nothing about this person", exitStatus: 1 };
      if (matches > 1) process.stderr.write(`admin: ${matches} people have this address; this report is the first one's (name one by an identifier for another)\n`);
      const text = [
        JSON.stringify(report.person, null, 2),
        report.recipients.length ? "Received by:" : "Received by: nobody",
        ...report.recipients.map((r) => `  ${r.account_id}  ${JSON.stringify(r.account_name)}  ${r.lookups} lookups, ${r.events} events, ${r.first_received_at} .. ${r.last_received_at}`),
        ...(report.accesses.length ? ["Each access (what found them):"] : []),
        ...report.accesses.map((a) => `  ${a.received_at}  ${a.account_id}  ${a.via}  ${a.matched_by ?? "-"}`),
      ];
      return { json, text: text.join("\n") };
    },
  },
};

const ALL_OPTIONS: Options = Object.assign({}, GLOBAL_OPTIONS, ...Object.values(COMMANDS).map((command) => command.options));

type Invocation = { kind: "help" } | { kind: "command"; command: Command; input: CommandInput };

function parseInvocation(argv: string[]): Invocation {
  // A first, lenient pass only finds the command words; the command's own options are then
  // parsed strictly, so an option of another command is an error too.
  const { values, positionals } = parseArgs({ args: argv, options: ALL_OPTIONS, strict: false, allowPositionals: true });
  if (values.help) return { kind: "help" };
  const [group, name] = positionals;
  if (!group) throw new UsageError("No command given");
  const commandName = `${group} ${name ?? ""}`.trim();
  const command = COMMANDS[commandName];
  if (!command) throw new UsageError(`Unknown command "${commandName}"`);

  let parsed: { values: Values; positionals: string[] };
  try {
    // No option is declared `multiple`, so no value is an array.
    parsed = parseArgs({ args: argv, options: { ...GLOBAL_OPTIONS, ...command.options }, strict: true, allowPositionals: true }) as {
      values: Values;
      positionals: string[];
    };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const args = parsed.positionals.slice(2);
  if (args.length < command.args.length) throw new UsageError(`${commandName} needs ${command.args.slice(args.length).join(" ")}`);
  if (args.length > command.args.length) throw new UsageError(`Unexpected argument ${JSON.stringify(args[command.args.length])}`);
  return { kind: "command", command, input: { values: parsed.values, args } };
}

/** Our own errors carry a message for the operator; for others the innermost cause says most. */
function errorMessage(error: unknown): string {
  if (error instanceof UsageError || error instanceof AdminError) return error.message;
  let innermost = error;
  while (innermost instanceof Error && innermost.cause instanceof Error) innermost = innermost.cause;
  const message = innermost instanceof Error ? innermost.message : String(innermost);
  return /no such table/.test(message) ? `${message} (has this database been migrated?)` : message;
}

function reportError(error: unknown, json: boolean): number {
  const message = errorMessage(error);
  process.stderr.write(`admin: ${message}\n`);
  if (error instanceof UsageError) process.stderr.write("Run `npm run admin -- --help` for usage.\n");
  if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
  return error instanceof UsageError ? 2 : 1;
}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes("--json");
  let invocation: Invocation;
  try {
    invocation = parseInvocation(argv);
  } catch (error) {
    return reportError(error, json);
  }
  if (invocation.kind === "help") {
    process.stdout.write(json ? `${JSON.stringify({ usage: USAGE })}\n` : `${USAGE}\n`);
    return 0;
  }

  let db: NodeDatabase | undefined;
  try {
    const opened = await openAdminDatabase();
    for (const line of opened.narrowed) process.stderr.write(`admin: narrowed to owner-only access: ${line}\n`);
    db = opened.db;
    const result = await invocation.command.run(db, invocation.input);
    process.stdout.write(json ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
    return result.exitStatus ?? 0;
  } catch (error) {
    return reportError(error, json);
  } finally {
    db?.$client.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
