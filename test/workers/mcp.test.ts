/**
 * The MCP endpoint (docs/mcp.md) with the SDK's own client over Streamable HTTP, against the Worker in workerd and the
 * real database and queues: the tools listed with their schemas and annotations, each called, a key without a scope
 * refused, a list tool that spends nothing before its quote is confirmed and charges the lines found after, and bad
 * arguments answered as tool errors with the API's messages.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { createApiKey } from "../../scripts/admin/accounts.ts";
import { cancelUnfinishedJobs, db, insertPerson, newAccount, send, uniqueIds } from "./helpers.ts";

const MCP_URL = "http://api.test/mcp";

afterEach(async () => {
  await db.run(sql`update lookup_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running', 'paused')`);
  await cancelUnfinishedJobs();
});

/** The SDK's client, its requests answered by the Worker's own fetch handler. */
async function connect(token: string | null) {
  const client = new Client({ name: "mcp-test", version: "1.0.0" }, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: token === null ? {} : { headers: { Authorization: `Bearer ${token}` } },
    fetch: (input, init) => send(new Request(input, init)),
  });
  await client.connect(transport);
  return client;
}

type ToolAnswer = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: Record<string, unknown> };
const text = (answer: ToolAnswer) => answer.content.map((c) => c.text ?? "").join("\n");

async function tool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> {
  return (await client.callTool({ name, arguments: args })) as ToolAnswer;
}

async function balance(accountId: string) {
  const [row] = await db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
  return Number(row!.credit_balance);
}

async function person(emails = ["ana.person@example.com"]) {
  const ids = uniqueIds();
  await insertPerson({ ...ids, emails, phones: ["+14155550123"] });
  return ids;
}

const ANNOTATIONS: Record<string, { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean }> = {
  verify_email: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  lookup_person: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  lookup_people: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  find_email: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  search_domain: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  get_account: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  get_job: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  get_job_results: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  verify_email_list: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  enrich_list: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
};

async function waitForJob(client: Client, jobId: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await tool(client, "get_job", { job_id: jobId });
    expect(answer.isError, text(answer)).toBeFalsy();
    const job = answer.structuredContent!.job as { status: string };
    if (job.status === "completed" || job.status === "cancelled" || job.status === "paused") return answer.structuredContent!.job as Record<string, unknown>;
    if (Date.now() > deadline) throw new Error(`job ${jobId} still ${job.status}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("the MCP endpoint", () => {
  it("refuses a request without a key (401, WWW-Authenticate) and takes no session cookie; GET is 405", async () => {
    const init = { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) };
    const res = await send(new Request(MCP_URL, init));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(await res.json()).toEqual({ error: "Unauthorized" });
    const cookie = await send(new Request(MCP_URL, { ...init, headers: { ...init.headers, cookie: "session=whatever" } }));
    expect(cookie.status).toBe(401);
    const bad = await send(new Request(MCP_URL, { ...init, headers: { ...init.headers, authorization: "Bearer cv_not_a_key" } }));
    expect(bad.status).toBe(401);
    expect((await send(new Request(MCP_URL, { method: "GET" }))).status).toBe(405);
    await expect(connect(null)).rejects.toThrow();
  });

  it("lists the tools with descriptions, input and output schemas, and annotations", async () => {
    const { token } = await newAccount(0);
    const client = await connect(token);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(Object.keys(ANNOTATIONS).sort());
    for (const t of tools) {
      expect(t.description!.length, t.name).toBeGreaterThan(80);
      expect(t.inputSchema.type).toBe("object");
      expect(t.outputSchema?.type, t.name).toBe("object");
      expect(t.annotations, t.name).toMatchObject(ANNOTATIONS[t.name]!);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    // The routes' own schemas: GET /v1/people's parameters, POST /v1/people/bulk's body, the verification's answer.
    expect(Object.keys(byName.lookup_person!.inputSchema.properties!).sort()).toEqual(["codehost_id", "codehost_login", "company", "company_domain", "country", "email", "first_name", "full_name", "include", "last_name", "min_confidence", "phone", "profnet_id", "profnet_public_identifier"]);
    expect(byName.lookup_people!.inputSchema.required).toEqual(["requests"]);
    expect(Object.keys(byName.verify_email!.outputSchema!.properties!)).toEqual(expect.arrayContaining(["email", "classification", "score", "checks"]));
    expect(byName.enrich_list!.inputSchema.properties).toHaveProperty("confirm_quote_id");
    expect(byName.enrich_list!.inputSchema.properties).toHaveProperty("verify_emails");
    expect(byName.enrich_list!.inputSchema.properties).toHaveProperty("find_emails");
    await client.close();
  });

  it("finds an address and searches a domain through the API, charged as the API charges", async () => {
    const { token, accountId } = await newAccount(10);
    const client = await connect(token);
    await insertPerson({ ...uniqueIds(), emails: ["una.mcp@finder.test"], names: [{ full: "Una Mcp" }], employment: [{ employer: "Finder Corp", domains: ["finder.test"] }] });
    const found = await tool(client, "find_email", { full_name: "Una Mcp", domain: "finder.test" });
    expect(found.isError, text(found)).toBeFalsy();
    expect(found.structuredContent).toMatchObject({ email: "una.mcp@finder.test", method: "known_address", confirmed: true });
    expect(await balance(accountId)).toBe(9);
    const missing = await tool(client, "find_email", { full_name: "Una Mcp" });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain("400: Give domain or company");
    const searched = await tool(client, "search_domain", { domain: "finder.test" });
    expect(searched.isError, text(searched)).toBeFalsy();
    expect(searched.structuredContent).toMatchObject({ domain: "finder.test", webmail: false });
    expect(await balance(accountId)).toBe(9);
    await client.close();
  });

  it("calls the single tools through the API: verify, look up, batch, account; each charged as the API charges", async () => {
    const { token, accountId } = await newAccount(10);
    const client = await connect(token);
    const verified = await tool(client, "verify_email", { email_address: "ana@example.com", smtp_timeout: "2" });
    expect(verified.isError, text(verified)).toBeFalsy();
    expect(verified.structuredContent).toMatchObject({ email: "ana@example.com" });
    expect(["valid", "risky", "invalid"]).toContain(verified.structuredContent!.classification);
    expect(await balance(accountId)).toBe(10);

    const ada = await person();
    const found = await tool(client, "lookup_person", { profnet_id: String(ada.profnet_id) });
    expect(found.isError, text(found)).toBeFalsy();
    expect(found.structuredContent!.email_addresses).toEqual(["ana.person@example.com"]);
    expect(await balance(accountId)).toBe(9);

    const other = await person(["bo.person@example.com"]);
    const batch = await tool(client, "lookup_people", { requests: [{ params: { codehost_login: other.codehost_login }, reference: "r1" }, { params: { profnet_id: "9999999999999" } }] });
    expect(batch.isError, text(batch)).toBeFalsy();
    expect((batch.structuredContent!.results as { status: number; reference?: string | null }[]).map((r) => [r.status, r.reference ?? null])).toEqual([[200, "r1"], [404, null]]);
    expect(await balance(accountId)).toBe(8);

    const account = await tool(client, "get_account");
    expect(account.isError, text(account)).toBeFalsy();
    expect(account.structuredContent).toMatchObject({ account_id: accountId, credit_balance: 8 });
    await client.close();
  });

  it("a key without the scope is refused with the API's 403 message; what it may do still works", async () => {
    const { accountId } = await newAccount(10);
    const narrow = await createApiKey(db, accountId, { scopes: ["account:read"] });
    const client = await connect(narrow.token);
    const ada = await person();
    const refused = await tool(client, "lookup_person", { profnet_id: String(ada.profnet_id) });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain("403: This API key lacks the scope people:read");
    expect(text(refused)).toContain("missing_scope");
    const verify = await tool(client, "verify_email", { email_address: "ana@example.com" });
    expect(text(verify)).toContain("lacks the scope verifications:write");
    expect(await balance(accountId)).toBe(10);
    expect((await tool(client, "get_account")).structuredContent).toMatchObject({ credit_balance: 10 });
    await client.close();
  });

  it("bad arguments are tool errors with clear messages: the API's own, or the schema's", async () => {
    const { token, accountId } = await newAccount(10);
    const client = await connect(token);
    const none = await tool(client, "lookup_person", {});
    expect(none.isError).toBe(true);
    expect(text(none)).toBe("400: One of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required");
    const badId = await tool(client, "lookup_person", { profnet_id: "abc" });
    expect(badId.isError).toBe(true);
    expect(text(badId)).toMatch(/^400: .*profnet_id/);
    const timeout = await tool(client, "verify_email", { email_address: "ana@example.com", smtp_timeout: "99" });
    expect(text(timeout)).toBe("400: smtp_timeout must be an integer between 1 and 60");
    const empty = await tool(client, "lookup_people", { requests: [] });
    expect(empty.isError).toBe(true);
    expect(text(empty)).toMatch(/requests/);
    const wrongType = await tool(client, "lookup_person", { profnet_id: 12 });
    expect(wrongType.isError).toBe(true);
    expect(text(wrongType)).toMatch(/profnet_id/);
    const job = await tool(client, "get_job", { job_id: "nope" });
    expect(text(job)).toMatch(/job_id is a bulk verification job's id/);
    const missing = await tool(client, "get_job", { job_id: "lkj_NoSuchJob000000" });
    expect(text(missing)).toMatch(/^404: /);
    expect(await balance(accountId)).toBe(10);
    await client.close();
  });

  it("enrich_list: the quote first (the API's dry run), nothing spent or created; confirmed, it runs and charges exactly the lines found", async () => {
    const { token, accountId } = await newAccount(20);
    const client = await connect(token);
    const found = [await person(), await person(["cy.person@example.com"]), await person(["di.person@example.com"])];
    const lines = ["profnet_public_identifier,note", ...found.map((p, i) => `${p.profnet_public_identifier},n${i}`), "nobody-here-at-all-xyz,n3", `${found[0]!.profnet_public_identifier},again`];
    const args = { list: lines.join("\n") + "\n" };
    const jobsBefore = await db.all<{ n: number }>(sql`select count(*) as n from lookup_jobs where account_id = ${accountId}`);

    const quoted = await tool(client, "enrich_list", args);
    expect(quoted.isError, text(quoted)).toBeFalsy();
    expect(quoted.structuredContent).toMatchObject({ status: "quote", quote: { lines: 5, well_formed: 5, repeated: 1, max_credits: 4, credit_balance: 20 } });
    const quoteId = quoted.structuredContent!.quote_id as string;
    expect(text(quoted)).toContain("nothing has run and nothing was spent");
    expect(await balance(accountId)).toBe(20);
    expect(await db.all(sql`select count(*) as n from lookup_jobs where account_id = ${accountId}`)).toEqual(jobsBefore);

    // Another list under the same quote is not confirmed by it.
    const other = await tool(client, "enrich_list", { list: args.list + "someone-else-entirely,n5\n", confirm_quote_id: quoteId });
    expect(other.isError).toBe(true);
    expect(text(other)).toContain("does not match");
    expect(await balance(accountId)).toBe(20);
    expect(await db.all(sql`select count(*) as n from lookup_jobs where account_id = ${accountId}`)).toEqual(jobsBefore);

    const started = await tool(client, "enrich_list", { ...args, confirm_quote_id: quoteId });
    expect(started.isError, text(started)).toBeFalsy();
    expect(started.structuredContent).toMatchObject({ status: "created", quote_id: quoteId });
    const jobId = (started.structuredContent!.job as { id: string }).id;
    expect(jobId).toMatch(/^lkj_/);
    // Confirming again is the same job (the quote's id is its Idempotency-Key), not a second one.
    const again = await tool(client, "enrich_list", { ...args, confirm_quote_id: quoteId });
    expect((again.structuredContent!.job as { id: string }).id).toBe(jobId);

    const job = await waitForJob(client, jobId);
    expect(job.status).toBe("completed");
    // 3 people found (the repeat is the same person, charged once), the unknown one free: 3 credits, within the quote's 4.
    expect(await balance(accountId)).toBe(17);
    const page = await tool(client, "get_job_results", { job_id: jobId, status: "found" });
    expect(page.isError, text(page)).toBeFalsy();
    expect(page.structuredContent!.kind).toBe("lookup");
    expect(((page.structuredContent!.page as { results: unknown[] }).results).length).toBe(4);
    await client.close();
  }, 60_000);

  it("verify_email_list: the quote (free, the lines it counts), then the job; its status and results", async () => {
    const { token, accountId } = await newAccount(0);
    const client = await connect(token);
    // Addresses whose syntax already decides them: the job needs no mail server, so it leaves no turn waiting on one.
    const args = { email_addresses: ["not-an-address", "two@@at.example"], name: "mcp list" };
    const quoted = await tool(client, "verify_email_list", args);
    expect(quoted.structuredContent).toMatchObject({ status: "quote", quote: { addresses: 2, credits: 0 } });
    expect(await db.all(sql`select id from verification_jobs where account_id = ${accountId}`)).toEqual([]);
    const started = await tool(client, "verify_email_list", { ...args, confirm_quote_id: quoted.structuredContent!.quote_id });
    expect(started.isError, text(started)).toBeFalsy();
    const jobId = (started.structuredContent!.job as { id: string }).id;
    expect(jobId).toMatch(/^job_/);
    const job = await waitForJob(client, jobId);
    expect(job.status).toBe("completed");
    const page = await tool(client, "get_job_results", { job_id: jobId });
    expect(page.isError, text(page)).toBeFalsy();
    const results = (page.structuredContent!.page as { results: { email: string; classification: string }[] }).results;
    expect(results.map((r) => [r.email, r.classification])).toEqual([["not-an-address", "invalid"], ["two@@at.example", "invalid"]]);
    await client.close();
  }, 60_000);
});

describe("GET /llms.txt", () => {
  it("points to the OpenAPI document, the MCP endpoint and the docs", async () => {
    const res = await send(new Request("http://api.test/llms.txt"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const body = await res.text();
    expect(body).toMatch(/^# Contact lookup and email verification API\n/);
    expect(body).toContain("(http://api.test/v1/openapi.json)");
    expect(body).toContain("(http://api.test/mcp)");
    expect(body).toContain("docs/mcp.md");
  });
});
