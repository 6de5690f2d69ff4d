/**
 * Verifies a list of addresses as one bulk job, for people who clean lists (README "Clean a list"):
 *
 *   API_URL=http://127.0.0.1:8787 API_KEY=cv_… npm run verify-list -- list.csv [--column email]
 *     [--out results.csv] [--only valid,risky] [--callback https://…]
 *
 * Uploads the file as it is as one job through the typed client (client/), named after the file, with --column as the
 * API's email_column (else the API finds the address column itself), and an Idempotency-Key derived from what is sent, so running it again after Ctrl-C picks up the same job instead of starting (and
 * counting) a second one; shows the job's progress with its counts by classification and an ETA;
 * then writes the results CSV (the file's own columns, then the verdict's; only the classifications asked for, with --only) readable by its owner alone
 * (0600: it is a list of people's addresses). A 4xx is an exit status of 1 with the API's message; a bad command
 * line is 2. The API key and the list never cross a network in the clear: API_URL must be https, except to a
 * loopback address. Read the key without echo: `read -rs API_KEY && export API_KEY`.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import { parseArgs } from "node:util";
import { Presets, SingleBar } from "cli-progress";
import { createApiClient, createJobFromCsv, type ApiClient, type Schemas } from "../client/index.ts";
import { JOB_RESULT_FILTERS } from "../shared/jobs.ts";
import { writePrivateFile } from "./lib/private-files.ts";
import { isMainModule } from "./lib/main-module.ts";
import { ApiFailure, runListCommand, UsageError } from "./lib/list-cli.ts";
export { UsageError };

/** Between two reads of the job: well inside the job_reads rate limit. */
const POLL_MS = 2_000;


type Options = { file: string; column: string | undefined; out: string; only: string[]; callback: string | undefined; apiUrl: string; apiKey: string };

export function options(argv: string[], env: NodeJS.ProcessEnv): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { column: { type: "string" }, out: { type: "string" }, only: { type: "string" }, callback: { type: "string" } },
  });
  const file = positionals[0];
  if (!file || positionals.length > 1) throw new UsageError("usage: npm run verify-list -- FILE.csv [--column email] [--out results.csv] [--only valid,risky] [--callback URL]");
  const apiKey = env.API_KEY ?? "";
  if (!apiKey) throw new UsageError("API_KEY is not set: the key npm start prints as the demo key, or your own");
  const only = values.only ? values.only.split(",").map((v) => v.trim()) : [];
  const allowed: readonly string[] = JOB_RESULT_FILTERS.classification;
  const unknown = only.find((v) => !allowed.includes(v));
  if (unknown !== undefined) throw new UsageError(`--only "${unknown}": expected one or more of ${allowed.join(", ")}, comma-separated`);
  const out = values.out ?? join(dirname(file), `${basename(file, extname(file))}.results.csv`);
  const apiUrl = env.API_URL || "http://127.0.0.1:8787";
  if (!isSafeApiUrl(apiUrl)) {
    throw new UsageError(`API_URL must be https (http only to a loopback address): ${JSON.stringify(apiUrl.slice(0, 80))} would send the API key and the list in the clear`);
  }
  return { file, column: values.column, out, only, callback: values.callback, apiUrl, apiKey };
}

/** https anywhere; http only to loopback (npm start's stack), where nothing crosses a network. */
export function isSafeApiUrl(raw: string): boolean {
  if (!URL.canParse(raw)) return false;
  const url = new URL(raw);
  if (url.protocol === "https:") return true;
  if (url.protocol !== "http:") return false;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The results, readable by their owner alone whatever the umask; a file already there is replaced, mode and all. */
export function writeResultsFile(path: string, csv: string): void {
  writePrivateFile(path, csv);
}

/** The query a file's job is created with: named after the file, its address column when --column names one, a callback. */
export function uploadQuery(opts: Pick<Options, "file" | "column" | "callback">): { name: string; email_column?: string; callback_url?: string } {
  return { name: basename(opts.file), ...(opts.column !== undefined ? { email_column: opts.column } : {}), ...(opts.callback ? { callback_url: opts.callback } : {}) };
}

/** What an error answer says, for the person at the terminal. */
function failure(what: string, response: Response, error: unknown): ApiFailure {
  const message = typeof error === "object" && error !== null && "error" in error ? String((error as { error: unknown }).error) : response.statusText;
  const retry = response.headers.get("retry-after");
  return new ApiFailure(`${what}: ${response.status} ${message}${retry ? ` (retry after ${retry} s)` : ""}`);
}

function progress(total: number, answered: number): { update(job: Schemas["VerificationJob"]): void; stop(): void } {
  const started = Date.now();
  const counts = (job: Schemas["VerificationJob"]) => `valid ${job.counts.valid}, risky ${job.counts.risky}, invalid ${job.counts.invalid}`;
  // From the pace since the start, not counting lines answered before it (syntax failures, an earlier run's).
  const eta = (job: Schemas["VerificationJob"]) => {
    const pace = (job.processed - answered) / ((Date.now() - started) / 1000);
    return pace > 0 && job.processed < total ? `${Math.ceil((total - job.processed) / pace)} s` : job.processed >= total ? "0 s" : "…";
  };
  if (process.stderr.isTTY) {
    const bar = new SingleBar({ stream: process.stderr, format: "Verifying |{bar}| {value}/{total} | {counts} | ETA {remaining}", hideCursor: true }, Presets.shades_classic);
    bar.start(total, answered, { counts: "", remaining: "…" });
    return { update: (job) => bar.update(job.processed, { counts: counts(job), remaining: eta(job) }), stop: () => bar.stop() };
  }
  // Not a terminal (a log, CI): one line per change.
  let last = -1;
  return {
    update(job) {
      if (job.processed === last) return;
      last = job.processed;
      process.stderr.write(`${job.processed}/${total} answered (${counts(job)}), ETA ${eta(job)}\n`);
    },
    stop() {},
  };
}

async function run(opts: Options, api: ApiClient): Promise<void> {
  const started = Date.now();
  const body = await readFile(opts.file, "utf8");
  const query = uploadQuery(opts);
  // The same file (and column, and callback) is the same key: a rerun gets the job the first run created.
  const key = `verify-list-${createHash("sha256").update(body).update("\0").update(JSON.stringify(query)).digest("hex").slice(0, 40)}`;
  const created = await createJobFromCsv(api, body, { header: { "idempotency-key": key }, query });
  if (!created.data) throw failure("the job could not be created", created.response, created.error);
  let job = created.data;
  // A job created before this run started is the one an earlier run of the same file created.
  const resumed = Date.parse(job.created_at) < started - 1_000;
  const addresses = job.email_column === null ? "" : `, addresses in column “${job.email_column}”`;
  process.stderr.write(`Job ${job.id}${resumed ? " (resumed: this file's job from an earlier run)" : ""}: ${job.total.toLocaleString("en")} lines${addresses}\n`);
  const bar = progress(job.total, job.processed);
  try {
    bar.update(job);
    while (job.status === "queued" || job.status === "running") {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const read = await api.GET("/v1/email_verification_jobs/{id}", { params: { path: { id: job.id } } });
      if (!read.data) throw failure("the job could not be read", read.response, read.error);
      job = read.data;
      bar.update(job);
    }
  } finally {
    bar.stop();
  }
  if (job.status === "cancelled") throw new ApiFailure(`job ${job.id} was cancelled`);
  const results = await api.GET("/v1/email_verification_jobs/{id}/results", {
    params: { path: { id: job.id }, query: { format: "csv", ...(opts.only.length ? { classification: opts.only.join(",") } : {}) } },
    parseAs: "text",
  });
  if (results.error !== undefined || typeof results.data !== "string") throw failure("the results could not be read", results.response, results.error);
  writeResultsFile(opts.out, results.data);
  const rows = results.data.split("\r\n").filter((l) => l !== "").length - 1;
  process.stderr.write(
    `Done: valid ${job.counts.valid}, risky ${job.counts.risky}, invalid ${job.counts.invalid}. ` +
      `${rows.toLocaleString("en")} rows${opts.only.length ? ` (${opts.only.join(", ")})` : ""} written to ${opts.out}\n`,
  );
}

async function main(): Promise<void> {
  await runListCommand("verify-list", async () => {
    const opts = options(process.argv.slice(2), process.env);
    await run(opts, createApiClient({ baseUrl: opts.apiUrl, apiKey: opts.apiKey }));
  });
}

if (isMainModule(import.meta.url)) await main();
