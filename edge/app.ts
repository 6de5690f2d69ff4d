/**
 * The Worker's HTTP surface: one app, one error path (docs/api.md "API summary"). Routes live one per file in
 * ./routes and register themselves here.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { SCOPES } from "../shared/scopes.ts";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { matchedRoutes } from "hono/route";
import { API_VERSION, ERROR_MESSAGES } from "../shared/api.ts";
import { DatabaseUnavailableError } from "./db/client.ts";
import { loadConfig, type AppEnv } from "./env.ts";
import { ApiError } from "./lib/errors.ts";
import { describeError, stackOf, writeLog } from "./log.ts";
import { registerAccountRoute } from "./routes/account.ts";
import { registerEmailVerificationRoutes } from "./routes/email-verifications.ts";
import { registerJobRoutes } from "./routes/jobs.ts";
import { registerErasuresRoute } from "./routes/erasures.ts";
import { registerKeyRoutes } from "./routes/keys.ts";
import { registerJobListRoute } from "./routes/job-list.ts";
import { registerConsole } from "./console/routes.tsx";
import { registerAuditRoute } from "./routes/audit-events.ts";
import { registerUsageRoute } from "./routes/usage.ts";
import { registerPeopleRoute } from "./routes/people.ts";
import { registerPeopleBulkRoute } from "./routes/people-bulk.ts";
import { registerEmailFinderRoutes } from "./routes/email-finder.ts";
import { registerDomainRoutes } from "./routes/domains.ts";
import { registerLookupJobRoutes } from "./routes/lookup-jobs.ts";
import { registerEmailFeedbackRoute } from "./routes/email-feedback.ts";
import { registerPeopleEventsRoutes } from "./routes/people-events.ts";
import { registerAuthRoutes } from "./routes/auth.ts";
import { registerMeRoutes } from "./routes/me.ts";
import { registerMemberRoutes } from "./routes/members.ts";
import { registerMcpRoutes } from "./mcp/route.ts";

/** What a 503 for a database failure tells the client to wait: a little longer than one DATABASE_TIMEOUT_MS. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

function isCausedBy(error: unknown, kind: abstract new (...args: never[]) => Error): boolean {
  for (let cause = error; cause instanceof Error; cause = (cause as Error).cause) if (cause instanceof kind) return true;
  return false;
}

/** The route pattern that answered (never the raw URL, which carries the query's values), or "unmatched". */
function routePattern(c: Context<AppEnv>): string {
  return matchedRoutes(c).findLast((route) => route.method !== "ALL")?.path ?? "unmatched";
}

export function createApp(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    // Schema failures on request parts become a 400 that names the parameter.
    defaultHook: (result) => {
      if (!result.success) {
        const issue = result.error.issues[0];
        const name = issue?.path.join(".") || "request";
        throw new ApiError(400, `Invalid parameter ${name}: ${issue?.message ?? "malformed"}`);
      }
    },
  });

  // Every request: its id, and one access line when it is answered (docs/operations.md "Logs").
  app.use("*", async (c, next) => {
    const started = Date.now();
    const requestId = crypto.randomUUID();
    c.set("requestId", requestId);
    c.set("accessLog", {});
    c.header("X-Request-Id", requestId);
    await next();
    const auth = c.get("auth") as AppEnv["Variables"]["auth"] | undefined;
    writeLog("info", {
      event: "request",
      request_id: requestId,
      method: c.req.method,
      route: routePattern(c),
      status: c.res.status,
      // workerd's clock moves only across I/O, which is where a request's time goes.
      duration_ms: Date.now() - started,
      account_id: auth?.accountId ?? null,
      key_id: auth?.keyId ?? null,
      member_id: auth?.memberId ?? null,
      ...c.get("accessLog"),
    });
  });

  app.get("/healthz", (c) => c.json({ ok: true }));

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description:
      "An API key (cv_…). Each operation's security requirement names the scope the key must hold (OpenAPI 3.1 allows role names for http schemes); " +
      `without it the answer is 403 with reason missing_scope. Scopes: ${SCOPES.join(", ")}.`,
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "sessionCookie", {
    type: "apiKey",
    in: "cookie",
    name: "__Host-session",
    description:
      "A member's console session (docs/api.md \"Sessions\"), set by sign-in; named session over plain http to localhost. A session holds its role's scopes " +
      "(shared/roles.ts); a request with an unsafe method must come from the console's origin (Origin or Sec-Fetch-Site), else 403 with reason cross_site_request.",
  });
  // Generated once per isolate, on first request (every route has registered by then): building it
  // costs milliseconds of CPU, and it only changes with a deploy. Its ETag is a hash of its bytes.
  let openApi: Promise<{ json: string; etag: string }> | undefined;
  app.get("/v1/openapi.json", async (c) => {
    openApi ??= (async () => {
      const json = JSON.stringify(
        app.getOpenAPI31Document({
          openapi: "3.1.0",
          info: {
            title: "Contact lookup and email verification API",
            version: API_VERSION,
            description:
              "Every error body is {\"error\": message}. Every response carries X-Request-Id. " +
              "Versioning: additions (an operation, a parameter, a response property, an enum value) are not breaking; removals and renames are, " +
              "and come only after the affected operation has carried Deprecation (RFC 9745) and Sunset (RFC 8594) headers for at least 180 days. " +
              "What changed, release by release: CHANGELOG.md.",
            contact: { name: "The operators of this deployment" },
            // OpenAPI 3.1's SPDX `identifier`; the generator's types are 3.0's, which only know `url`.
            license: { name: "Proprietary", ...{ identifier: "LicenseRef-Proprietary" } },
          },
          servers: [{ url: "/" }],
          tags: [
            { name: "People", description: "A person's contact details from one identifier, metered by credits; the people you received that were erased since; and what your mail to addresses did" },
            { name: "Email verification", description: "One address checked end to end: syntax, MX over DoH, SMTP, catch-all, score and verdict" },
            { name: "Bulk verification jobs", description: "Up to 100,000 addresses per job on a queue, results while it runs, a signed callback when it ends" },
            { name: "Lookup jobs", description: "Up to 100,000 identifiers per job, charged line by line as lines find someone; paused when the credits run out; the customer's columns kept" },
            { name: "Account", description: "The calling key's account: balance, limits and usage" },
            { name: "Keys", description: "The account's API keys: named, scoped, expiring, capped; created, rolled and revoked by keys holding keys:write" },
            { name: "Members", description: "The people who sign in to the console with passkeys: invites, roles, passkeys and sessions" },
          ],
        }),
      );
      const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(json));
      const etag = `"${Array.from(new Uint8Array(digest).slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("")}"`;
      return { json, etag };
    })();
    const { json, etag } = await openApi;
    const headers = { ETag: etag, "Cache-Control": "public, max-age=300" };
    if (c.req.header("if-none-match") === etag) return c.body(null, 304, headers);
    return c.body(json, 200, { ...headers, "Content-Type": "application/json" });
  });

  app.use("/v1/*", async (c, next) => {
    c.set("config", loadConfig(c.env));
    await next();
  });
  // Each route declares who may call it, the rate-limit families it counts against and the body it takes, in its
  // createRoute (edge/routes/access.ts): authentication first (401, or 429 for an address with too many failures),
  // then the key's limits (429), then the scope (403), then the route's own checks (400 and after).
  registerErasuresRoute(app);
  registerPeopleRoute(app);
  registerPeopleBulkRoute(app);
  registerEmailFinderRoutes(app);
  registerDomainRoutes(app);
  registerEmailFeedbackRoute(app);
  registerPeopleEventsRoutes(app);
  registerEmailVerificationRoutes(app);
  registerAccountRoute(app);
  registerJobRoutes(app);
  registerJobListRoute(app);
  registerLookupJobRoutes(app);
  registerKeyRoutes(app);
  registerUsageRoute(app);
  registerAuditRoute(app);
  registerAuthRoutes(app);
  registerMemberRoutes(app);
  registerMeRoutes(app);
  // The console's pages (docs/console.md) call the routes above through this same app.
  registerConsole(app);
  // So do the MCP endpoint's tools (docs/mcp.md), with the caller's own key; and /llms.txt points to both.
  registerMcpRoutes(app);

  app.notFound((c) => c.json({ error: ERROR_MESSAGES.notFound }, 404));

  app.onError((err, c) => {
    if (err instanceof ApiError) {
      return c.json({ error: err.message, ...err.fields }, err.status, err.headers);
    }
    if (err instanceof HTTPException && err.status < 500) {
      return c.json({ error: err.message || "Bad request" }, err.status);
    }
    if (isCausedBy(err, DatabaseUnavailableError)) {
      writeLog("error", { event: "database_unavailable", request_id: c.get("requestId"), error: describeError(err) });
      return c.json({ error: ERROR_MESSAGES.unavailable }, 503, { "Retry-After": String(DATABASE_RETRY_AFTER_SECONDS) });
    }
    // Unexpected: log what helps an operator (never the request's secrets) and say nothing else.
    writeLog("error", { event: "unexpected_error", request_id: c.get("requestId"), error: describeError(err), stack: stackOf(err) });
    return c.json({ error: ERROR_MESSAGES.internal }, 500);
  });

  return app;
}
