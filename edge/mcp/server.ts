/**
 * The MCP endpoint (docs/mcp.md): `POST /mcp`, Streamable HTTP, stateless (a new server and transport per request,
 * as a Worker has no memory between requests worth relying on). It is no new way in: every tool calls the API's own
 * route in this Worker (`app.request`, no network hop) with the caller's own Authorization header, so authentication,
 * scopes, rate limits, credits, the key's daily cap, the access log and every message are the API's. The tools'
 * input and output schemas are the zod schemas those routes parse and answer with.
 *
 * The email finder's tools (find_email, search_domain) sit beside the lookups, calling their routes the same way.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { AccountInfo, API_VERSION, ContactInfo, DomainSearchQuery, DomainSearchResult, EmailFinderQuery, EmailFinderResult, EmailVerificationQuery, EmailVerificationResult, PeopleQuery } from "../../shared/api.ts";
import { PeopleBulkRequest, PeopleBulkResponse } from "../../shared/bulk-lookups.ts";
import { JobCreateRequest, JobResultsPage, VerificationJob } from "../../shared/jobs.ts";
import { LookupJob, LookupJobCreateQuery, LookupJobQuote, LookupJobResultsPage } from "../../shared/lookup-jobs.ts";
import type { AppEnv } from "../env.ts";
import { jobResultsRoute } from "../routes/job-results.ts";
import { lookupJobResultsRoute } from "../routes/lookup-job-results.ts";

export const MCP_PATH = "/mcp";

/** What the API answered to one internal call. */
type Answer = { status: number; ok: boolean; data: Record<string, unknown> | null; retryAfter: string | null };
type Call = (method: string, path: string, init?: { query?: Record<string, string | undefined>; json?: unknown; text?: { body: string; type: string }; idempotencyKey?: string }) => Promise<Answer>;

/** Request headers the API's routes rely on: the key, the failed-authentication bucket, the client's name. */
const FORWARDED = ["authorization", "cf-connecting-ip", "user-agent"];

function apiCall(app: Hono<AppEnv>, c: Context<AppEnv>): Call {
  return async (method, path, init = {}) => {
    const url = new URL(path, c.req.url);
    for (const [name, value] of Object.entries(init.query ?? {})) if (value !== undefined && value !== "") url.searchParams.set(name, value);
    const headers = new Headers();
    for (const name of FORWARDED) {
      const value = c.req.header(name);
      if (value) headers.set(name, value);
    }
    let body: string | undefined;
    if (init.json !== undefined) {
      headers.set("content-type", "application/json");
      body = JSON.stringify(init.json);
    } else if (init.text) {
      headers.set("content-type", init.text.type);
      body = init.text.body;
    }
    if (init.idempotencyKey) headers.set("idempotency-key", init.idempotencyKey);
    let executionCtx: Context<AppEnv>["executionCtx"] | undefined;
    try {
      executionCtx = c.executionCtx;
    } catch {
      executionCtx = undefined; // app.request in a test: none
    }
    const res = await app.request(url.toString(), { method, headers, body }, c.env, executionCtx);
    const text = await res.text();
    let data: Record<string, unknown> | null = null;
    if (text && (res.headers.get("content-type") ?? "").includes("json")) data = JSON.parse(text) as Record<string, unknown>;
    return { status: res.status, ok: res.ok, data, retryAfter: res.headers.get("retry-after") };
  };
}

/** A tool error a model can act on: the API's status and its own message (and reason), and when to retry. */
function refusal(answer: Answer): CallToolResult {
  const error = typeof answer.data?.error === "string" ? answer.data.error : `HTTP ${answer.status}`;
  const extra = Object.fromEntries(Object.entries(answer.data ?? {}).filter(([name]) => name !== "error"));
  const parts = [`${answer.status}: ${error}`];
  if (Object.keys(extra).length) parts.push(JSON.stringify(extra));
  if (answer.retryAfter) parts.push(`Retry after ${answer.retryAfter} s.`);
  return { isError: true, content: [{ type: "text", text: parts.join(" ") }] };
}

function result(answer: Answer): CallToolResult {
  if (!answer.ok || !answer.data) return refusal(answer);
  return { content: [{ type: "text", text: JSON.stringify(answer.data) }], structuredContent: answer.data };
}

/** A tool error of the tool's own (before any call to the API). */
function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: message }] };
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A quote's id: a hash of what the list tool was asked (every argument but the confirmation) and of the quote's
 * numbers. Calling again with the same arguments and this id runs the job; a list or an option that changed, or a
 * quote that moved (another cost per line), gives another id, so nothing runs on a quote the user did not see.
 */
async function quoteId(tool: string, args: Record<string, unknown>, quote: unknown): Promise<string> {
  const { confirm_quote_id: _confirm, ...asked } = args;
  const sorted = Object.fromEntries(Object.entries(asked).sort(([a], [b]) => a.localeCompare(b)));
  return `q_${(await sha256Hex(JSON.stringify([tool, sorted, quote]))).slice(0, 32)}`;
}

const JOB_ID = z.string().regex(/^(job|lkj)_[A-Za-z0-9_-]+$/, "job_id is a bulk verification job's id (job_…) or a lookup job's (lkj_…)");
const confirmQuoteId = z
  .string()
  .optional()
  .describe("Leave out on the first call: the answer is the quote and nothing runs. After the user has agreed to the quote, call again with the same arguments and this set to the quote's quote_id.");

const verifyListInput = JobCreateRequest.extend({ confirm_quote_id: confirmQuoteId });
const VerifyListQuote = z.object({
  addresses: z.number().int().describe("Addresses in the list, each one line of the job"),
  credits: z.literal(0).describe("Verification costs no credits"),
  counts_against: z.string(),
});
const verifyListOutput = z.object({
  status: z.enum(["quote", "created"]),
  quote_id: z.string(),
  quote: VerifyListQuote,
  job: VerificationJob.optional().describe("When created: the job, to follow with get_job and get_job_results"),
});

const enrichListInput = LookupJobCreateQuery.omit({ dry_run: true }).extend({
  list: z.string().min(1, "list is required: the CSV (with its header row) or JSON Lines text of the people to look up").describe("The list: a CSV with a header row, or JSON Lines (one object per line)"),
  format: z.enum(["csv", "jsonl"]).default("csv").describe("csv (default) or jsonl"),
  confirm_quote_id: confirmQuoteId,
});
const enrichListOutput = z.object({
  status: z.enum(["quote", "created"]),
  quote_id: z.string(),
  quote: LookupJobQuote,
  job: LookupJob.optional().describe("When created: the job, to follow with get_job and get_job_results"),
});

const jobOutput = z.object({ kind: z.enum(["verification", "lookup"]), job: z.union([VerificationJob, LookupJob]) });
const jobResultsOutput = z.object({ kind: z.enum(["verification", "lookup"]), page: z.union([JobResultsPage, LookupJobResultsPage]) });
const jobResultsInput = z.object({
  job_id: JOB_ID,
  ...jobResultsRoute.request.query.omit({ format: true }).shape,
  ...lookupJobResultsRoute.request.query.omit({ format: true, limit: true, cursor: true }).shape,
});

const LIST_QUOTE_RULE =
  "Two calls: the first answers the quote and runs nothing; show it to the user, and only once they agree, call again with the same arguments and confirm_quote_id set to the quote's quote_id.";

function registerTools(server: McpServer, call: Call): void {
  server.registerTool(
    "verify_email",
    {
      title: "Verify an email address",
      description:
        "Checks one address end to end (syntax, disposable domain, typo, MX over DNS, a live SMTP conversation with the receiving server, catch-all) and answers a verdict: " +
        "classification valid / risky / invalid, a 0-100 score, and the checks behind it. Free (no credits). Takes up to smtp_timeout + 2 seconds. Needs the key's verifications:write scope.",
      inputSchema: EmailVerificationQuery.extend({ email_address: z.string().describe("The address to verify, e.g. ana@example.com") }).shape,
      outputSchema: EmailVerificationResult.shape,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    async (args) => result(await call("GET", "/v1/email_verifications", { query: args })),
  );

  server.registerTool(
    "lookup_person",
    {
      title: "Look up a person's contact details",
      description:
        "A person's emails (personal and work), phone numbers and handles from one identifier (profnet_id, profnet_public_identifier, codehost_id or codehost_login; several are tried in that order), " +
        "or from what a CRM holds: an email, a phone (E.164, or national with country), or full_name (or first_name and last_name) with company_domain or company. Every input given must point at the same person: two people is a 409 tool error, and a name that fits several people is a 404 (ambiguous_match), never a guess. " +
        "Costs LOOKUP_COST credits (usually 1) when someone is found, nothing when not (a 404 tool error). include=email_details adds when each address was seen and checked; include=profile adds the name and employment; min_confidence (0-100) leaves out weaker addresses. Needs people:read.",
      inputSchema: PeopleQuery.shape,
      outputSchema: ContactInfo.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async (args) => result(await call("GET", "/v1/people", { query: args })),
  );

  server.registerTool(
    "find_email",
    {
      title: "Find a person's work address",
      description:
        "A work email from full_name (or first_name and last_name) and domain (or company): an address we hold for the person, else one made from the domain's address pattern (learned from the addresses we hold there) and checked with at most one question to its mail server. " +
        "The answer says how (method known_address, receiver_accepted or pattern), its confidence 0-100, whether it is confirmed, accept_all and the evidence (pattern, share, count). " +
        "Costs LOOKUP_COST credits (usually 1) only when confirmed; a pattern-only answer, a miss (404 tool error) and the same find within 30 days are free. A 202 says it is still checking: call again with the same arguments after retry_after_seconds. Needs people:read.",
      inputSchema: EmailFinderQuery.shape,
      outputSchema: EmailFinderResult.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (args) => {
      const answer = await call("GET", "/v1/email_finder", { query: args });
      if (answer.status === 202) return { content: [{ type: "text", text: `Still checking: call find_email again with the same arguments in ${String(answer.data?.retry_after_seconds ?? 3)} s.` }] };
      return result(answer);
    },
  );

  server.registerTool(
    "search_domain",
    {
      title: "What a domain's work addresses look like",
      description:
        "Free: the domain's address patterns with shares and counts, whether its mail server accepts every address (accept_all) and when we checked, who runs its mail, disposable and webmail flags, and how many addresses we hold there. " +
        "include=people also lists the people we hold there (limit 1-100), LOOKUP_COST credits per person listed. Needs people:read.",
      inputSchema: { domain: z.string().describe("The domain, e.g. acme.com"), ...DomainSearchQuery.shape },
      outputSchema: DomainSearchResult.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ domain, ...query }) => result(await call("GET", `/v1/domains/${encodeURIComponent(domain)}`, { query })),
  );

  server.registerTool(
    "lookup_people",
    {
      title: "Look up to 100 people in one call",
      description:
        "Up to 100 lookups, each item's params as lookup_person takes them, answered item by item in request order (status 200 with data, or 400, 402 or 404 with error). " +
        "Each person found costs LOOKUP_COST credits; when the credits (or the key's daily cap) cover only k, the first k are served and later items answer 402. " +
        "idempotency_key makes a retry within 24 hours answer the first result and charge nothing. For a longer list use enrich_list. Needs people:read.",
      inputSchema: PeopleBulkRequest.extend({ idempotency_key: z.string().optional().describe("1 to 255 printable ASCII characters: a retry with the same one is free") }).shape,
      outputSchema: PeopleBulkResponse.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ idempotency_key, ...body }) => result(await call("POST", "/v1/people/bulk", { json: body, idempotencyKey: idempotency_key })),
  );

  server.registerTool(
    "get_account",
    {
      title: "The account: balance, limits, usage",
      description: "The calling key's account: credit balance, rate limits, credits spent today and this month, and how many jobs may run at once. Free. Needs account:read.",
      inputSchema: {},
      outputSchema: AccountInfo.shape,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async () => result(await call("GET", "/v1/account")),
  );

  server.registerTool(
    "get_job",
    {
      title: "A job's status and progress",
      description:
        "A bulk verification job (job_…, from verify_email_list; needs jobs:read) or a lookup job (lkj_…, from enrich_list; needs people:read): its status (queued, running, paused when credits ran out, completed, cancelled), lines done, counts and credits charged. Free.",
      inputSchema: { job_id: JOB_ID },
      outputSchema: jobOutput.shape,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ job_id }) => {
      const kind = job_id.startsWith("lkj_") ? "lookup" : "verification";
      const answer = await call("GET", `${kind === "lookup" ? "/v1/lookup_jobs" : "/v1/email_verification_jobs"}/${encodeURIComponent(job_id)}`);
      return answer.ok && answer.data ? result({ ...answer, data: { kind, job: answer.data } }) : refusal(answer);
    },
  );

  server.registerTool(
    "get_job_results",
    {
      title: "A job's results, a page at a time",
      description:
        "The results of a job (job_… or lkj_…) in input order, while it runs or after: a page of at most limit lines and next_cursor for the next page (null when there is none yet). " +
        "A verification job's lines can be filtered by classification or reason, a lookup job's by status (e.g. found). Free.",
      inputSchema: jobResultsInput.shape,
      outputSchema: jobResultsOutput.shape,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ job_id, classification, reason, status, ...page }) => {
      const kind = job_id.startsWith("lkj_") ? "lookup" : "verification";
      const query = kind === "lookup" ? { ...page, status, format: "json" } : { ...page, classification, reason, format: "json" };
      const answer = await call("GET", `${kind === "lookup" ? "/v1/lookup_jobs" : "/v1/email_verification_jobs"}/${encodeURIComponent(job_id)}/results`, { query });
      return answer.ok && answer.data ? result({ ...answer, data: { kind, page: answer.data } }) : refusal(answer);
    },
  );

  server.registerTool(
    "verify_email_list",
    {
      title: "Verify a list of addresses (a bulk job)",
      description:
        "Starts a bulk verification job for up to 100,000 addresses, run on a queue; follow it with get_job and read it with get_job_results. Verification costs no credits, " +
        "but every address counts against the account's daily line quota and starts an SMTP conversation with its receiving server. " +
        `${LIST_QUOTE_RULE} Confirming the same list again within 24 hours returns the first job. Needs jobs:write.`,
      inputSchema: verifyListInput.shape,
      outputSchema: verifyListOutput.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    async (args) => {
      const quote = { addresses: args.email_addresses.length, credits: 0 as const, counts_against: "JOB_MAX_LINES_PER_DAY (the account's daily line quota) and JOB_MAX_RUNNING" };
      const id = await quoteId("verify_email_list", args, quote);
      if (args.confirm_quote_id === undefined) return listAnswer({ status: "quote", quote_id: id, quote });
      if (args.confirm_quote_id !== id) return toolError(staleQuote(id));
      const { confirm_quote_id: _c, ...body } = args;
      const answer = await call("POST", "/v1/email_verification_jobs", { json: body, idempotencyKey: `mcp-${id}` });
      return answer.ok && answer.data ? listAnswer({ status: "created", quote_id: id, quote, job: answer.data }) : refusal(answer);
    },
  );

  server.registerTool(
    "enrich_list",
    {
      title: "Enrich a list of people (a lookup job)",
      description:
        "Starts a lookup job for a list of up to 100,000 people (a CSV with a header row, or JSON Lines), each line looked up as lookup_person does; the identifier columns are guessed from the header or named with the *_column arguments. " +
        "Each line that finds someone not found before in the job costs LOOKUP_COST credits; the job never costs more than the quote's max_credits, and pauses when the credits run out. " +
        `${LIST_QUOTE_RULE} The quote (from the API's own dry run) says the lines, the well-formed ones, the repeats, max_credits and the balance. ` +
        "verify_emails=true also verifies each address found; find_emails=true finds a work address (as find_email does, charged only when confirmed) for each line with a name at a company that the lookup gave none at that domain, and the quote counts those lines (find_lines) in max_credits. Follow the job with get_job, read it with get_job_results. Confirming the same list again within 24 hours returns the first job. Needs people:read.",
      inputSchema: enrichListInput.shape,
      outputSchema: enrichListOutput.shape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    async (args) => {
      const { list, format, confirm_quote_id: confirm, ...query } = args;
      const text = { body: list, type: format === "jsonl" ? "application/x-ndjson" : "text/csv" };
      // The quote is the API's: the same route with dry_run=true, which creates nothing and charges nothing.
      const dry = await call("POST", "/v1/lookup_jobs", { query: { ...query, dry_run: "true" }, text });
      if (!dry.ok || !dry.data) return refusal(dry);
      const { credit_balance: _balance, ...priced } = dry.data;
      const id = await quoteId("enrich_list", args, priced);
      if (confirm === undefined) return listAnswer({ status: "quote", quote_id: id, quote: dry.data });
      if (confirm !== id) return toolError(staleQuote(id));
      const answer = await call("POST", "/v1/lookup_jobs", { query, text, idempotencyKey: `mcp-${id}` });
      return answer.ok && answer.data ? listAnswer({ status: "created", quote_id: id, quote: dry.data, job: answer.data }) : refusal(answer);
    },
  );
}

function listAnswer(data: Record<string, unknown>): CallToolResult {
  const text =
    data.status === "quote"
      ? `Quote ${String(data.quote_id)}: nothing has run and nothing was spent. ${JSON.stringify(data.quote)}. Show this to the user; if they agree, call again with the same arguments and confirm_quote_id "${String(data.quote_id)}".`
      : JSON.stringify(data);
  return { content: [{ type: "text", text }], structuredContent: data };
}

function staleQuote(current: string): string {
  return `confirm_quote_id does not match this list and these arguments (their quote is ${current}): nothing was run. Call without confirm_quote_id to get the quote, show it to the user, and confirm that one.`;
}

export function mcpServer(app: Hono<AppEnv>, c: Context<AppEnv>): McpServer {
  const server = new McpServer(
    { name: "contact-verify-api", title: "Contact lookup and email verification", version: API_VERSION },
    {
      // No code generation in workerd: @cfworker/json-schema, not Ajv.
      jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
      instructions:
        "Contact lookups (metered by credits) and email verification (free), with the calling API key's scopes, rate limits and credits. " +
        "Check the balance with get_account before spending. For one person use lookup_person, for up to 100 lookup_people, for a whole list enrich_list. " +
        "The list tools answer a quote first and run only when called again with its quote_id after the user agreed.",
    },
  );
  registerTools(server, apiCall(app, c));
  return server;
}

/** One Streamable HTTP exchange: a new server and a stateless transport, JSON answers (no stream to hold open). */
export async function handleMcpRequest(app: Hono<AppEnv>, c: Context<AppEnv>): Promise<Response> {
  const server = mcpServer(app, c);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  return transport.handleRequest(c.req.raw);
}
