/**
 * Every operation x every scope (docs/api.md "Keys and scopes"): a key holding only that scope is let
 * through (any answer but 401 and 403) exactly when it is the operation's scope, and otherwise gets 403
 * naming the scope it lacks. The table is written out here, independently of the routes, and checked
 * against the OpenAPI document, so an operation added without a scope, or with another one, fails.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { SCOPES, type Scope } from "../../shared/scopes.ts";
import { createApiKey } from "../../edge/db/admin.ts";
import { call, db, newAccount } from "./helpers.ts";

type Operation = { method: string; path: string; scope: Scope; init?: RequestInit };
const jsonBody = (body: string): RequestInit => ({ headers: { "content-type": "application/json" }, body });

// Where letting a request through could do work, its parameters make it a 400 or a 404 right after the scope check.
const OPERATIONS: Operation[] = [
  { method: "GET", path: "/v1/people", scope: "people:read" },
  { method: "GET", path: "/v1/people/erasures", scope: "people:read", init: {} },
  { method: "GET", path: "/v1/email_verifications", scope: "verifications:write" },
  { method: "POST", path: "/v1/email_verifications", scope: "verifications:write", init: jsonBody("{") },
  { method: "POST", path: "/v1/email_verification_jobs", scope: "jobs:write", init: jsonBody("{") },
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
];

const concrete = (path: string) => path.replace("{id}", "key_or_job_that_does_not_exist");

const tokens = new Map<Scope, string>();
beforeAll(async () => {
  const { accountId } = await newAccount(5);
  for (const scope of SCOPES) tokens.set(scope, (await createApiKey(db, accountId, { name: scope, scopes: [scope] })).token);
});

it("the table covers every operation of the OpenAPI document, with the scope it states", async () => {
  const doc = (await (await call("/v1/openapi.json")).json()) as { paths: Record<string, Record<string, { security?: { bearerAuth?: string[] }[] }>> };
  const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, security: op.security })),
  );
  const authenticated = documented.filter((op) => op.security?.length);
  expect(authenticated.map((op) => `${op.method} ${op.path}`).sort()).toEqual(OPERATIONS.map((op) => `${op.method} ${op.path}`).sort());
  for (const op of authenticated) {
    const row = OPERATIONS.find((o) => o.method === op.method && o.path === op.path)!;
    expect(op.security, `${op.method} ${op.path}`).toEqual([{ bearerAuth: [row.scope] }]);
  }
  // Every operation in the document is authenticated (the document itself and /healthz are not in it).
  expect(documented.filter((op) => !op.security?.length).map((op) => op.path)).toEqual([]);
});

describe.each(OPERATIONS)("$method $path needs $scope", (op) => {
  it.each([...SCOPES])("with only %s", async (held) => {
    const res = await call(concrete(op.path) + (op.path === "/v1/email_verification_jobs/{id}/results" ? "?limit=0" : ""), {
      token: tokens.get(held)!,
      method: op.method,
      ...op.init,
    });
    const body = (await res.json()) as { error?: string; reason?: string; scope?: string };
    if (held === op.scope) {
      expect([401, 403], JSON.stringify(body)).not.toContain(res.status);
    } else {
      expect([res.status, body]).toEqual([403, { error: `This API key lacks the scope ${op.scope}`, reason: "missing_scope", scope: op.scope }]);
    }
  });
});
