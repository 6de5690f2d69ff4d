/**
 * `POST /mcp` (docs/mcp.md) and `GET /llms.txt`. The endpoint takes an API key as a Bearer token and nothing else (a
 * console session's cookie is no way in: a page on another site could make a browser send it), authenticated as
 * every route is (401 with WWW-Authenticate, and the failed-authentication limit per client address). The protocol's
 * own messages (initialize, tools/list, ping) cost nothing; each tool call is a call of the API's own route, counted,
 * scoped and charged as that route is.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { ERROR_MESSAGES } from "../../shared/api.ts";
import { loadConfig, type AppEnv } from "../env.ts";
import { requireCaller } from "../identity/authenticate.ts";
import { ApiError } from "../lib/errors.ts";
import { handleMcpRequest, MCP_PATH } from "./server.ts";

const bearerOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (!/^bearer\s/i.test(c.req.header("authorization") ?? "")) throw new ApiError(401, ERROR_MESSAGES.unauthorized, { "WWW-Authenticate": "Bearer" });
  c.set("config", loadConfig(c.env));
  await next();
});

/** The llms.txt convention (llmstxt.org): what this is, and where a model finds the rest. */
function llmsTxt(origin: string): string {
  return `# Contact lookup and email verification API

> An HTTP/JSON API that looks up a person's contact details from one identifier (metered by credits; up to 100 in one
> call, or a whole list as a lookup job) and verifies email addresses (syntax, MX, a live SMTP check, catch-all, a
> 0-100 score and a valid / risky / invalid verdict), singly or as bulk jobs. Every call takes an API key as
> \`Authorization: Bearer <key>\`; keys carry scopes, a daily credit cap and rate limits.

## API

- [OpenAPI 3.1 document](${origin}/v1/openapi.json): every route, parameter, answer and error, generated from the schemas the handlers parse with
- [MCP endpoint](${origin}${MCP_PATH}): Streamable HTTP, the same API key as a Bearer token; tools verify_email, lookup_person, lookup_people, get_account, get_job, get_job_results, verify_email_list, enrich_list (the list tools quote first and run only once the quote is confirmed)

## Docs

- docs/api.md: authentication, scopes, rate limits, credits, every route
- docs/mcp.md: the MCP endpoint, its tools, and the configuration for Claude, Cursor and VS Code
- docs/jobs.md: bulk verification jobs
- docs/lookup-jobs.md: lookup jobs, the quote (dry_run), credits running out

## Optional

- CHANGELOG.md: what changed, release by release
`;
}

export function registerMcpRoutes(app: OpenAPIHono<AppEnv>): void {
  app.post(MCP_PATH, bearerOnly, requireCaller, (c) => handleMcpRequest(app, c));
  // Stateless: no stream for the server to open (GET) and no session to end (DELETE).
  app.on(["GET", "DELETE"], MCP_PATH, (c) => c.json({ error: "Method not allowed: send JSON-RPC messages with POST" }, 405, { Allow: "POST" }));
  app.get("/llms.txt", (c) => c.text(llmsTxt(new URL(c.req.url).origin), 200, { "Cache-Control": "public, max-age=300" }));
}
