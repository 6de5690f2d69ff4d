/**
 * Every operation x every scope (docs/api.md "Keys and scopes"): a key holding only that scope is let
 * through (any answer but 401 and 403) exactly when it is the operation's scope, and otherwise gets 403
 * naming the scope it lacks. The table is written out here, independently of the routes, and checked
 * against the OpenAPI document, so an operation added without a scope, or with another one, fails.
 * Every operation x every role (docs/api.md "Members and roles"): a member's session is let through
 * exactly when the role's published scopes hold the operation's scope, written out here too.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ROLE_SCOPES, ROLES, type Role } from "../../shared/roles.ts";
import { SCOPES, type Scope } from "../../shared/scopes.ts";
import { createApiKey } from "../../scripts/admin/accounts.ts";
import { consoleCall, join } from "./console-session.ts";
import { call, db, newAccount } from "./helpers.ts";

/** `also`: scopes the operation needs besides its own (events:write's routes also need people:read: what they send is people's data). */
type Operation = { method: string; path: string; scope: Scope; also?: Scope[]; init?: RequestInit };
const needed = (op: Operation): Scope[] => [op.scope, ...(op.also ?? [])];
const jsonBody = (body: string): RequestInit => ({ headers: { "content-type": "application/json" }, body });

// Where letting a request through could do work, its parameters make it a 400 or a 404 right after the scope check.
const OPERATIONS: Operation[] = [
  { method: "GET", path: "/v1/people", scope: "people:read" },
  { method: "GET", path: "/v1/people/erasures", scope: "people:read", init: {} },
  { method: "POST", path: "/v1/people/bulk", scope: "people:read", init: jsonBody("{") },
  { method: "GET", path: "/v1/email_finder", scope: "people:read" },
  { method: "POST", path: "/v1/email_finder/bulk", scope: "people:read", init: jsonBody("{") },
  { method: "GET", path: "/v1/domains/{domain}", scope: "people:read" },
  { method: "POST", path: "/v1/lookup_jobs", scope: "people:read", init: jsonBody("{") },
  { method: "GET", path: "/v1/lookup_jobs", scope: "people:read" },
  { method: "GET", path: "/v1/lookup_jobs/{id}", scope: "people:read" },
  { method: "GET", path: "/v1/lookup_jobs/{id}/results", scope: "people:read" },
  { method: "DELETE", path: "/v1/lookup_jobs/{id}", scope: "people:read" },
  { method: "GET", path: "/v1/email_verifications", scope: "verifications:write" },
  { method: "POST", path: "/v1/email_verifications", scope: "verifications:write", init: jsonBody("{") },
  { method: "POST", path: "/v1/email_verification_jobs", scope: "jobs:write", init: jsonBody("{") },
  { method: "GET", path: "/v1/email_verification_jobs", scope: "jobs:read" },
  { method: "GET", path: "/v1/email_verification_jobs/{id}", scope: "jobs:read" },
  { method: "GET", path: "/v1/email_verification_jobs/{id}/results", scope: "jobs:read" },
  { method: "DELETE", path: "/v1/email_verification_jobs/{id}", scope: "jobs:write" },
  { method: "GET", path: "/v1/account", scope: "account:read" },
  { method: "GET", path: "/v1/usage", scope: "account:read" },
  { method: "GET", path: "/v1/keys", scope: "account:read" },
  { method: "POST", path: "/v1/keys", scope: "keys:write", init: jsonBody("{}") },
  { method: "POST", path: "/v1/keys/{id}/roll", scope: "keys:write" },
  { method: "DELETE", path: "/v1/keys/{id}", scope: "keys:write" },
  { method: "GET", path: "/v1/audit-events", scope: "audit:read" },
  { method: "GET", path: "/v1/members", scope: "account:read" },
  { method: "POST", path: "/v1/invites", scope: "members:write", init: jsonBody("{}") },
  { method: "GET", path: "/v1/invites", scope: "account:read" },
  { method: "DELETE", path: "/v1/invites/{id}", scope: "members:write" },
  { method: "PATCH", path: "/v1/members/{id}", scope: "members:write", init: jsonBody("{}") },
  { method: "DELETE", path: "/v1/members/{id}", scope: "members:write" },
  { method: "POST", path: "/v1/email_feedback", scope: "feedback:write", init: jsonBody("{") },
  { method: "GET", path: "/v1/people/events/subscription", scope: "account:read" },
  { method: "PUT", path: "/v1/people/events/subscription", scope: "events:write", also: ["people:read"], init: jsonBody("{") },
  { method: "DELETE", path: "/v1/people/events/subscription", scope: "events:write", also: ["people:read"] },
];

/** About the signed-in member themselves: a session of any role, never a key (403 session_required). */
const SESSION_ONLY = [
  "GET /v1/me",
  "POST /v1/me/passkeys/options",
  "POST /v1/me/passkeys",
  "DELETE /v1/me/passkeys/{id}",
  "POST /v1/auth/sign-out-everywhere",
  "POST /v1/auth/step-up/options",
  "POST /v1/auth/step-up",
];
/** Signing in: no credential yet (each is bounded and rate limited per address instead). */
const PUBLIC = ["POST /v1/auth/invites/options", "POST /v1/auth/invites/accept", "POST /v1/auth/sign-in/options", "POST /v1/auth/sign-in", "POST /v1/auth/sign-out"];

/** The published matrix (docs/api.md "Members and roles"), written out independently of shared/roles.ts. */
const ROLE_MATRIX: Record<Role, Scope[]> = {
  owner: [...SCOPES],
  admin: [...SCOPES],
  developer: ["people:read", "verifications:write", "jobs:write", "jobs:read", "account:read", "keys:write", "feedback:write", "events:write"],
  viewer: ["account:read", "jobs:read"],
};

const concrete = (path: string) => path.replace("{id}", "key_or_job_that_does_not_exist");

const tokens = new Map<Scope, string>();
const sessions = new Map<Role, string>();
beforeAll(async () => {
  const { accountId } = await newAccount(5);
  for (const scope of SCOPES) tokens.set(scope, (await createApiKey(db, accountId, { name: scope, scopes: [scope] })).token);
  for (const role of ROLES) sessions.set(role, (await join(accountId, role)).cookie);
});

it("the table covers every operation of the OpenAPI document, with the scope it states", async () => {
  const doc = (await (await call("/v1/openapi.json")).json()) as { paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>> };
  const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, security: op.security })),
  );
  const scopedOps = documented.filter((op) => op.security?.some((s) => s.bearerAuth));
  expect(scopedOps.map((op) => op.name).sort()).toEqual(OPERATIONS.map((op) => `${op.method} ${op.path}`).sort());
  for (const op of scopedOps) {
    const row = OPERATIONS.find((o) => `${o.method} ${o.path}` === op.name)!;
    expect(op.security, op.name).toEqual([{ bearerAuth: needed(row) }, { sessionCookie: needed(row) }]);
  }
  const sessionOnly = documented.filter((op) => op.security?.length && !op.security.some((s) => s.bearerAuth));
  expect(sessionOnly.map((op) => op.name).sort()).toEqual([...SESSION_ONLY].sort());
  for (const op of sessionOnly) expect(op.security, op.name).toEqual([{ sessionCookie: [] }]);
  // The rest take no credential, stated as an empty security list (the document itself and /healthz are not in it).
  const open = documented.filter((op) => !op.security?.length);
  expect(open.map((op) => op.name).sort()).toEqual([...PUBLIC].sort());
  for (const op of open) expect(op.security, op.name).toEqual([]);
});

it("the roles' scopes are the published matrix", () => {
  expect(ROLE_SCOPES).toEqual(ROLE_MATRIX);
});

describe.each(OPERATIONS)("$method $path needs $scope", (op) => {
  it.each([...SCOPES])("with only %s", async (held) => {
    const res = await call(concrete(op.path) + (op.path === "/v1/email_verification_jobs/{id}/results" ? "?limit=0" : ""), {
      token: tokens.get(held)!,
      method: op.method,
      ...op.init,
    });
    const body = (await res.json()) as { error?: string; reason?: string; scope?: string };
    const missing = needed(op).find((s) => s !== held);
    if (missing === undefined) {
      expect([401, 403], JSON.stringify(body)).not.toContain(res.status);
    } else {
      expect([res.status, body]).toEqual([403, { error: `This API key lacks the scope ${missing}`, reason: "missing_scope", scope: missing }]);
    }
  });
});

describe.each(SESSION_ONLY)("%s needs a session", (name) => {
  it("a key holding every scope gets 403 session_required", async () => {
    const [method, path] = name.split(" ") as [string, string];
    const { token } = await newAccount(0);
    const res = await call(path.replace("{id}", "pk_none"), { token, method, ...(method === "POST" ? jsonBody("{}") : {}) });
    expect([res.status, await res.json()]).toEqual([403, { error: "This operation needs a member's session: sign in to the console", reason: "session_required" }]);
  });
});

describe.each(OPERATIONS)("$method $path by role", (op) => {
  it.each([...ROLES])("a session of a %s", async (role) => {
    const path = concrete(op.path) + (op.path === "/v1/email_verification_jobs/{id}/results" ? "?limit=0" : "");
    const res = await consoleCall(path, { cookie: sessions.get(role)!, method: op.method, ...op.init });
    const body = (await res.json()) as { error?: string; reason?: string; scope?: string };
    const missing = needed(op).find((s) => !ROLE_MATRIX[role].includes(s));
    if (missing === undefined) {
      expect([401, 403], JSON.stringify(body)).not.toContain(res.status);
    } else {
      expect([res.status, body]).toEqual([403, { error: `The member's role (${role}) lacks the scope ${missing}`, reason: "missing_scope", scope: missing }]);
    }
  });
});
