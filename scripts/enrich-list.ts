/**
 * Enriches a list of people as one lookup job, for sales tools and CRM exports (README "Enrich a list"):
 *
 *   API_URL=http://127.0.0.1:8787 API_KEY=cv_… npm run enrich-list -- people.csv [--out results.csv]
 *     [--column profnet_id=LinkedIn] [--only found,not_found] [--include email_details] [--verify-emails]
 *     [--max-credits 500] [--callback https://…]
 *
 * Asks for the quote first (what the list can cost at most, and the balance) and stops when it is over --max-credits;
 * then uploads the file as one job through the typed client (client/), with an Idempotency-Key derived from what is
 * sent, so running it again after Ctrl-C picks up the same job instead of starting (and paying for) a second one; shows
 * the job's progress with its counts, and why it is paused when the credits run out (it resumes by itself once they are
 * added); then writes the results (CSV with the file's own columns, or JSON Lines for a .jsonl file; only the statuses
 * asked for, with --only) readable by its owner alone (0600: they are people's contact details). A 4xx is an exit status
 * of 1 with the API's message; a bad command line is 2. API_URL must be https, except to a loopback address.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import { parseArgs } from "node:util";
import { Presets, SingleBar } from "cli-progress";
import { createApiClient, createLookupJob, type ApiClient, type Schemas } from "../client/index.ts";
import { IDENTIFIER_NAMES, type IdentifierName } from "../shared/identifiers.ts";
import { LOOKUP_LINE_STATUSES } from "../shared/lookup-job-limits.ts";
import { isMainModule } from "./lib/main-module.ts";
import { writePrivateFile } from "./lib/private-files.ts";
import { isSafeApiUrl } from "./verify-list.ts";
import { ApiFailure, runListCommand, UsageError } from "./lib/list-cli.ts";
export { UsageError };

/** Between two reads of the job: well inside the job_reads rate limit. */
const POLL_MS = 2_000;


type Job = Schemas["LookupJob"];

export type Options = {
  file: string;
  format: "csv" | "jsonl";
  out: string;
  columns: Partial<Record<IdentifierName, string>>;
  only: string[];
  include: string | undefined;
  verifyEmails: boolean;
  maxCredits: number | null;
  callback: string | undefined;
  apiUrl: string;
  apiKey: string;
};

const USAGE =
  "usage: npm run enrich-list -- FILE.csv|FILE.jsonl [--out results.csv] [--column profnet_id=Header]... [--only found,not_found] [--include email_details] [--verify-emails] [--max-credits N] [--callback URL]";

export function options(argv: string[], env: NodeJS.ProcessEnv): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      column: { type: "string", multiple: true },
      only: { type: "string" },
      include: { type: "string" },
      "verify-emails": { type: "boolean", default: false },
      "max-credits": { type: "string" },
      callback: { type: "string" },
    },
  });
  const file = positionals[0];
  if (!file || positionals.length > 1) throw new UsageError(USAGE);
  const apiKey = env.API_KEY ?? "";
  if (!apiKey) throw new UsageError("API_KEY is not set: the key npm start prints as the demo key, or your own");
  const format = /^\.(jsonl|ndjson)$/i.test(extname(file)) ? "jsonl" : "csv";
  const columns: Options["columns"] = {};
  for (const pair of values.column ?? []) {
    const at = pair.indexOf("=");
    const identifier = pair.slice(0, at).trim() as IdentifierName;
    if (at < 0 || !(IDENTIFIER_NAMES as readonly string[]).includes(identifier) || pair.slice(at + 1).trim() === "") {
      throw new UsageError(`--column "${pair}": expected IDENTIFIER=COLUMN, IDENTIFIER one of ${IDENTIFIER_NAMES.join(", ")}`);
    }
    columns[identifier] = pair.slice(at + 1).trim();
  }
  const only = values.only ? values.only.split(",").map((v) => v.trim()) : [];
  const unknown = only.find((v) => !(LOOKUP_LINE_STATUSES as readonly string[]).includes(v));
  if (unknown !== undefined) throw new UsageError(`--only "${unknown}": expected one or more of ${LOOKUP_LINE_STATUSES.join(", ")}, comma-separated`);
  let maxCredits: number | null = null;
  if (values["max-credits"] !== undefined) {
    maxCredits = /^[0-9]{1,12}$/.test(values["max-credits"]) ? Number(values["max-credits"]) : Number.NaN;
    if (Number.isNaN(maxCredits)) throw new UsageError("--max-credits must be a whole number of credits");
  }
  const out = values.out ?? join(dirname(file), `${basename(file, extname(file))}.enriched.${format}`);
  const apiUrl = env.API_URL || "http://127.0.0.1:8787";
  if (!isSafeApiUrl(apiUrl)) {
    throw new UsageError(`API_URL must be https (http only to a loopback address): ${JSON.stringify(apiUrl.slice(0, 80))} would send the API key and the list in the clear`);
  }
  return { file, format, out, columns, only, include: values.include, verifyEmails: values["verify-emails"], maxCredits, callback: values.callback, apiUrl, apiKey };
}

/** The create's query: the columns named, include, verify_emails, callback_url. */
export function jobQuery(opts: Options): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [identifier, column] of Object.entries(opts.columns)) query[`${identifier}_column`] = column;
  if (opts.include) query.include = opts.include;
  if (opts.verifyEmails) query.verify_emails = "true";
  if (opts.callback) query.callback_url = opts.callback;
  return query;
}

/** The same file and options are the same key: a rerun gets the job the first run created. */
export function idempotencyKey(list: string, opts: Options): string {
  return `enrich-list-${createHash("sha256").update(list).update("\0").update(JSON.stringify(jobQuery(opts))).digest("hex").slice(0, 40)}`;
}

function failure(what: string, response: Response, error: unknown): ApiFailure {
  const message = typeof error === "object" && error !== null && "error" in error ? String((error as { error: unknown }).error) : response.statusText;
  const retry = response.headers.get("retry-after");
  return new ApiFailure(`${what}: ${response.status} ${message}${retry ? ` (retry after ${retry} s)` : ""}`);
}

/** One line of what the job says: its counts, and why it is paused when it is. */
export function describeJob(job: Job): string {
  const c = job.counts;
  const counts = `found ${c.found}, not found ${c.not_found}, invalid ${c.invalid}${c.refused ? `, waiting for credits ${c.refused}` : ""}, ${job.credits.charged} credits`;
  return job.pause ? `${counts}; paused: ${job.pause.message}` : counts;
}

function progress(total: number): { update(job: Job): void; stop(): void } {
  if (process.stderr.isTTY) {
    const bar = new SingleBar({ stream: process.stderr, format: "Enriching |{bar}| {value}/{total} | {state}", hideCursor: true }, Presets.shades_classic);
    bar.start(total, 0, { state: "" });
    return { update: (job) => bar.update(job.processed, { state: describeJob(job) }), stop: () => bar.stop() };
  }
  let last = "";
  return {
    update(job) {
      const line = `${job.processed}/${total} answered (${describeJob(job)})`;
      if (line !== last) process.stderr.write(`${line}\n`);
      last = line;
    },
    stop() {},
  };
}

async function run(opts: Options, api: ApiClient): Promise<void> {
  const started = Date.now();
  const list = await readFile(opts.file, "utf8");
  const query = jobQuery(opts);
  const quoted = await createLookupJob(api, list, { query: { ...query, dry_run: "true" } }, opts.format);
  if (!quoted.data) throw failure("the list was refused", quoted.response, quoted.error);
  const quote = quoted.data as unknown as Schemas["LookupJobQuote"];
  process.stderr.write(
    `${quote.lines.toLocaleString("en")} lines (${quote.invalid.toLocaleString("en")} invalid, ${quote.repeated.toLocaleString("en")} repeated): at most ${quote.max_credits.toLocaleString("en")} credits; the balance is ${quote.credit_balance.toLocaleString("en")}\n`,
  );
  if (opts.maxCredits !== null && quote.max_credits > opts.maxCredits) {
    throw new ApiFailure(`the list may cost up to ${quote.max_credits} credits, over --max-credits ${opts.maxCredits}: nothing was started`);
  }
  const created = await createLookupJob(api, list, { query, header: { "idempotency-key": idempotencyKey(list, opts) } }, opts.format);
  if (!created.data) throw failure("the job could not be created", created.response, created.error);
  let job = created.data as unknown as Job;
  const resumed = Date.parse(job.created_at) < started - 1_000;
  process.stderr.write(`Job ${job.id}${resumed ? " (resumed: this file's job from an earlier run)" : ""}: ${job.total.toLocaleString("en")} lines\n`);
  const bar = progress(job.total);
  try {
    bar.update(job);
    while (job.status === "queued" || job.status === "running" || job.status === "paused") {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const read = await api.GET("/v1/lookup_jobs/{id}", { params: { path: { id: job.id } } });
      if (!read.data) throw failure("the job could not be read", read.response, read.error);
      job = read.data;
      bar.update(job);
    }
  } finally {
    bar.stop();
  }
  if (job.status === "cancelled") throw new ApiFailure(`job ${job.id} was cancelled (${describeJob(job)})`);
  const results = await api.GET("/v1/lookup_jobs/{id}/results", {
    params: { path: { id: job.id }, query: { format: opts.format, ...(opts.only.length ? { status: opts.only.join(",") } : {}) } },
    parseAs: "text",
  });
  if (results.error !== undefined || typeof results.data !== "string") throw failure("the results could not be read", results.response, results.error);
  writePrivateFile(opts.out, results.data);
  const rows = results.data.split(/\r?\n/).filter((l) => l !== "").length - (opts.format === "csv" ? 1 : 0);
  process.stderr.write(`Done: ${describeJob(job)}. ${rows.toLocaleString("en")} lines${opts.only.length ? ` (${opts.only.join(", ")})` : ""} written to ${opts.out}\n`);
}

async function main(): Promise<void> {
  await runListCommand("enrich-list", async () => {
    const opts = options(process.argv.slice(2), process.env);
    await run(opts, createApiClient({ baseUrl: opts.apiUrl, apiKey: opts.apiKey }));
  });
}

if (isMainModule(import.meta.url)) await main();
