import { beforeAll, describe, expect, it } from "vitest";
import { call, clientAddress, newAccount, revokeApiKey, setAccountStatus, db } from "./helpers.ts";
import { createApiKey } from "../../scripts/admin/accounts.ts";

// Every authenticated route, each with parameters that would otherwise be a 400 where it has any,
// so the matrix also proves that 401 is decided before parameter validation (docs/api.md "Authentication").
const routes: { name: string; path: string; init?: RequestInit; withLiveKey: number }[] = [
  { name: "GET /v1/people", path: "/v1/people", withLiveKey: 400 },
  { name: "GET /v1/email_verifications", path: "/v1/email_verifications", withLiveKey: 400 },
  {
    name: "POST /v1/email_verifications",
    path: "/v1/email_verifications",
    init: { method: "POST", headers: { "content-type": "application/json" }, body: "{" },
    withLiveKey: 400,
  },
  { name: "GET /v1/account", path: "/v1/account", withLiveKey: 200 },
];

let live: string;
let revoked: string;
let disabled: string;

beforeAll(async () => {
  live = (await newAccount(5)).token;
  const r = await newAccount(5);
  await revokeApiKey(db, r.keyId);
  revoked = r.token;
  const d = await newAccount(5);
  await setAccountStatus(db, d.accountId, "disabled");
  disabled = d.token;
});

// A revoked key is refused like the rest, and says so (reason, and RFC 6750's error_description).
const cases: { name: string; header: () => string | undefined; reason?: string }[] = [
  { name: "missing header", header: () => undefined },
  { name: "empty header", header: () => "" },
  { name: "scheme only", header: () => "Bearer" },
  { name: "scheme and blank", header: () => "Bearer    " },
  { name: "wrong scheme", header: () => `Basic ${live}` },
  { name: "token without scheme", header: () => live },
  { name: "malformed token", header: () => "Bearer not-a-token" },
  { name: "two tokens", header: () => `Bearer ${live} ${live}` },
  { name: "unknown token", header: () => `Bearer cv_${"A".repeat(43)}` },
  { name: "revoked key", header: () => `Bearer ${revoked}`, reason: "key_revoked" },
  { name: "disabled account", header: () => `Bearer ${disabled}` },
  { name: "oversized header", header: () => `Bearer ${"x".repeat(10_000)}` },
];

describe.each(routes)("$name authentication", ({ path, init, withLiveKey }) => {
  // Failed authentications are limited per client address (docs/api.md "Rate limits"): the matrix stays well under it.
  const address = clientAddress();
  it.each(cases)("answers 401 for $name", async ({ header, reason }) => {
    const headers = new Headers(init?.headers);
    headers.set("CF-Connecting-IP", address);
    const value = header();
    if (value !== undefined) headers.set("Authorization", value);
    const res = await call(path, { ...init, headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(reason ? 'Bearer error="invalid_token", error_description="The API key was revoked"' : "Bearer");
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(await res.json()).toEqual(reason ? { error: "Unauthorized", reason } : { error: "Unauthorized" });
  });

  it("lets a live key through, with the scheme word in any case", async () => {
    for (const scheme of ["Bearer", "bearer", "BEARER"]) {
      const headers = new Headers(init?.headers);
      headers.set("Authorization", `${scheme} ${live}`);
      const res = await call(path, { ...init, headers });
      expect(res.status).toBe(withLiveKey);
    }
  });
});

it("never lets a key authenticate another account's token hash (fresh keys work at once)", async () => {
  const a = await newAccount(1);
  const second = await createApiKey(db, a.accountId);
  const res = await call("/v1/people?profnet_id=1", { token: second.token });
  expect(res.status).not.toBe(401);
});
