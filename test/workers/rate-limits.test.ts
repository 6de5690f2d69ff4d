/**
 * Rate limits (docs/api.md "Rate limits"), with the Rate Limiting binding wrangler.toml declares: per key
 * and family, and per client address for failed authentication, where junk tokens also stop costing
 * database reads.
 */
import { describe, expect, inject, it, vi } from "vitest";
import { BLOCKED_LOOKUP_INTERVAL_MS, KNOWN_KEY_TTL_MS } from "../../edge/identity/authenticate.ts";
import { FAILED_AUTHENTICATION_LIMIT, RATE_LIMITS } from "../../edge/rate-limits.ts";
import { callWith, clientAddress, databaseRequestsServed, db, newAccount } from "./helpers.ts";
import { createApiKey } from "../../scripts/admin/accounts.ts";

// Many requests per test: they go straight to the app (callWith), as the loopback through the
// test runner's `exports` slows down with every request it has carried in one test.

/**
 * Sends `send()` until the first 429, at most 2 x limit + 1 times: the binding's windows are aligned
 * to the clock, so a run that straddles two windows may need up to twice the limit.
 */
async function untilLimited(limit: number, send: () => Promise<Response>) {
  const seen: Response[] = [];
  for (let i = 0; i <= 2 * limit; i++) {
    const res = await send();
    seen.push(res);
    if (res.status === 429) break;
    await res.body?.cancel();
  }
  return { seen, limited: seen.at(-1)!, allowedBefore: seen.length - 1 };
}

async function expect429(res: Response, policy: string, periodSeconds: number) {
  expect(res.status).toBe(429);
  expect(res.headers.get("retry-after")).toBe(String(periodSeconds));
  expect(res.headers.get("ratelimit-policy")).toBe(policy);
  expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  expect(await res.json()).toEqual({ error: "Rate limit exceeded" });
}

const families = [
  { family: "verification", path: "/v1/email_verifications", other: "/v1/people" },
  { family: "lookup", path: "/v1/people", other: "/v1/email_verifications" },
  { family: "account", path: "/v1/usage?from=x", other: "/v1/people" },
] as const;

describe.each(families)("the $family limit, per key", ({ family, path, other }) => {
  const { limit, periodSeconds } = RATE_LIMITS[family];
  const policy = `"${family}";q=${limit};w=${periodSeconds}`;

  it(`allows ${limit} requests per ${periodSeconds} s, then 429 before any parameter is checked; the policy is on every response`, async () => {
    const { token } = await newAccount(5);
    // No parameters: a 400 when allowed, cheap enough to send many.
    const { seen, limited, allowedBefore } = await untilLimited(limit, () => callWith({}, path, { token }));
    expect(allowedBefore).toBeGreaterThanOrEqual(limit);
    for (const res of seen.slice(0, -1)) {
      expect(res.status).toBe(400);
      expect(res.headers.get("ratelimit-policy")).toBe(policy);
    }
    await expect429(limited, policy, periodSeconds);
  });

  it("counts each key apart, and each family apart", async () => {
    const { token, accountId } = await newAccount(5);
    await untilLimited(limit, () => callWith({}, path, { token }));
    const secondKey = await createApiKey(db, accountId);
    expect((await callWith({}, path, { token: secondKey.token })).status).toBe(400);
    expect((await callWith({}, other, { token })).status).toBe(400);
  });
});

describe("failed authentication, per client address", () => {
  const { limit, periodSeconds } = FAILED_AUTHENTICATION_LIMIT;
  const policy = `"failed_authentication";q=${limit};w=${periodSeconds}`;
  const junkToken = () => `cv_${Array.from(crypto.getRandomValues(new Uint8Array(43)), (b) => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[b % 64]).join("")}`;
  const counted = { DATABASE_URL: inject("countedDatabaseUrl") };
  const requestsServed = () => databaseRequestsServed(counted.DATABASE_URL);

  it("answers 401 up to the limit, then 429 without reading the database, whatever the token", async () => {
    const address = clientAddress();
    const headers = { "CF-Connecting-IP": address };
    const { seen, limited, allowedBefore } = await untilLimited(limit, () => callWith(counted, "/v1/people", { token: junkToken(), headers }));
    expect(allowedBefore).toBeGreaterThanOrEqual(limit);
    for (const res of seen.slice(0, -1)) expect(res.status).toBe(401);
    await expect429(limited, policy, periodSeconds);

    // Blocked: one token never seen is looked up per BLOCKED_LOOKUP_INTERVAL_MS; within it, an
    // unknown token and a valid key this isolate has not seen get the same 429 and no read.
    const fresh = await newAccount(5);
    const before = await requestsServed();
    await expect429(await callWith(counted, "/v1/people", { token: junkToken(), headers }), policy, periodSeconds);
    expect(await requestsServed()).toBe(before + 1);
    for (let i = 0; i < 20; i++) await expect429(await callWith(counted, "/v1/people", { token: junkToken(), headers }), policy, periodSeconds);
    await expect429(await callWith(counted, "/v1/people", { token: fresh.token, headers }), policy, periodSeconds);
    await expect429(await callWith(counted, "/v1/people", { headers }), policy, periodSeconds);
    expect(await requestsServed()).toBe(before + 1);
  });

  it("behind a NAT sending junk, a valid key never seen still gets in, at the blocked client's next lookup", async () => {
    const headers = { "CF-Connecting-IP": clientAddress() };
    await untilLimited(limit, () => callWith({}, "/v1/email_verifications", { token: junkToken(), headers }));
    const { token } = await newAccount(5);
    await new Promise((r) => setTimeout(r, BLOCKED_LOOKUP_INTERVAL_MS + 100));
    // 400: authenticated, then the missing email_address.
    expect((await callWith({}, "/v1/email_verifications", { token, headers })).status).toBe(400);
    expect((await callWith({}, "/v1/email_verifications", { token: junkToken(), headers })).status).toBe(429);
    expect((await callWith({}, "/v1/email_verifications", { token, headers })).status).toBe(400);
  });

  it("a key that worked keeps working from a blocked client after its cache entry has expired (it is renewed by its lookup)", async () => {
    const headers = { "CF-Connecting-IP": clientAddress() };
    const { token } = await newAccount(5);
    expect((await callWith({}, "/v1/email_verifications", { token, headers })).status).toBe(400);
    await untilLimited(limit, () => callWith({}, "/v1/email_verifications", { token: junkToken(), headers }));
    // Spend the trickle, so only "recently valid" can let the key through.
    await callWith({}, "/v1/email_verifications", { token: junkToken(), headers });
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + KNOWN_KEY_TTL_MS + 1_000);
      expect((await callWith({}, "/v1/email_verifications", { token, headers })).status).toBe(400);
      expect((await callWith({}, "/v1/email_verifications", { token: junkToken(), headers })).status).toBe(429);
    } finally {
      vi.useRealTimers();
    }
  });

  it("IPv6 clients are counted by /64: a new address per request inside one /64 still reaches the limit", async () => {
    const prefix = clientAddress().split("::")[0]!.split(":").slice(0, 4).join(":");
    const random16 = () => (crypto.getRandomValues(new Uint16Array(1))[0]!).toString(16);
    const { limited } = await untilLimited(limit, () =>
      callWith({}, "/v1/people", { token: junkToken(), headers: { "CF-Connecting-IP": `${prefix}:${random16()}:${random16()}:${random16()}:${random16()}` } }),
    );
    await expect429(limited, policy, periodSeconds);
  });

  it("keeps serving a key this isolate already knows from a blocked address, and other addresses", async () => {
    const address = clientAddress();
    const { token } = await newAccount(5);
    expect((await callWith({}, "/v1/email_verifications", { token, headers: { "CF-Connecting-IP": address } })).status).toBe(400);
    await untilLimited(limit, () => callWith({}, "/v1/email_verifications", { token: junkToken(), headers: { "CF-Connecting-IP": address } }));
    expect((await callWith({}, "/v1/email_verifications", { token, headers: { "CF-Connecting-IP": address } })).status).toBe(400);
    expect((await callWith({}, "/v1/email_verifications", { token: junkToken(), headers: { "CF-Connecting-IP": clientAddress() } })).status).toBe(401);
  });

  it("reads the database once for a junk token repeated (the unknown token is cached)", async () => {
    const token = junkToken();
    const headers = { "CF-Connecting-IP": clientAddress() };
    const before = await requestsServed();
    for (let i = 0; i < 5; i++) expect((await callWith(counted, "/v1/people", { token, headers })).status).toBe(401);
    expect((await requestsServed()) - before).toBe(1);
  });
});

/**
 * Every operation a key can call states its families (docs/api.md "Rate limits"), declared in its createRoute
 * (edge/routes/access.ts): written out here, independently of the routes, and checked against the OpenAPI document,
 * so an operation added without a family, or with another one, fails.
 */
const FAMILIES: Record<string, string> = {
  "GET /v1/people": `"lookup";q=100;w=10`,
  "GET /v1/people/erasures": `"lookup";q=100;w=10`,
  "POST /v1/people/bulk": `"bulk_lookup";q=10;w=10`,
  "GET /v1/email_finder": `"lookup";q=100;w=10`,
  "POST /v1/email_finder/bulk": `"bulk_lookup";q=10;w=10`,
  "GET /v1/domains/{domain}": `"lookup";q=100;w=10`,
  "GET /v1/email_verifications": `"verification";q=100;w=10`,
  "POST /v1/email_verifications": `"verification";q=100;w=10`,
  "POST /v1/email_verification_jobs": `"job_creation";q=60;w=60, "verification";q=100;w=10`,
  "GET /v1/email_verification_jobs": `"job_reads";q=120;w=10`,
  "GET /v1/email_verification_jobs/{id}": `"job_reads";q=120;w=10`,
  "DELETE /v1/email_verification_jobs/{id}": `"job_reads";q=120;w=10`,
  "GET /v1/email_verification_jobs/{id}/results": `"job_reads";q=120;w=10`,
  "POST /v1/lookup_jobs": `"job_creation";q=60;w=60`,
  "GET /v1/lookup_jobs": `"job_reads";q=120;w=10`,
  "GET /v1/lookup_jobs/{id}": `"job_reads";q=120;w=10`,
  "DELETE /v1/lookup_jobs/{id}": `"job_reads";q=120;w=10`,
  "GET /v1/lookup_jobs/{id}/results": `"job_reads";q=120;w=10`,
  "GET /v1/account": `"account";q=120;w=10`,
  "GET /v1/usage": `"account";q=120;w=10`,
  "GET /v1/audit-events": `"account";q=120;w=10`,
  "GET /v1/keys": `"account";q=120;w=10`,
  "POST /v1/keys": `"account";q=120;w=10`,
  "POST /v1/keys/{id}/roll": `"account";q=120;w=10`,
  "DELETE /v1/keys/{id}": `"account";q=120;w=10`,
  "GET /v1/members": `"account";q=120;w=10`,
  "PATCH /v1/members/{id}": `"account";q=120;w=10`,
  "DELETE /v1/members/{id}": `"account";q=120;w=10`,
  "GET /v1/invites": `"account";q=120;w=10`,
  "POST /v1/invites": `"account";q=120;w=10`,
  "DELETE /v1/invites/{id}": `"account";q=120;w=10`,
  "POST /v1/email_feedback": `"feedback";q=60;w=60`,
  "GET /v1/people/events/subscription": `"account";q=120;w=10`,
  "PUT /v1/people/events/subscription": `"account";q=120;w=10`,
  "DELETE /v1/people/events/subscription": `"account";q=120;w=10`,
};

describe("each operation's families, as its route declares them", () => {
  it("covers every operation a key can call in the OpenAPI document, and states the families on its answers", async () => {
    const { token } = await newAccount(0);
    const doc = (await (await callWith({}, "/v1/openapi.json")).json()) as { paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>> };
    const keyed = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, op]) => op.security?.some((s) => s.bearerAuth))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(keyed.sort()).toEqual(Object.keys(FAMILIES).sort());
    for (const [operation, policy] of Object.entries(FAMILIES)) {
      const [method, path] = operation.split(" ") as [string, string];
      const res = await callWith({}, path.replace("{id}", "none_such"), { token, method, headers: { "content-type": "application/json" }, ...(method === "GET" || method === "DELETE" ? {} : { body: "{" }) });
      expect(res.headers.get("ratelimit-policy"), operation).toBe(policy);
      await res.body?.cancel();
    }
  });
});

/**
 * What a polite client does (issue 48): it reads its balance, then sends batches of 100. The bulk_lookup family counts
 * calls, not items (edge/rate-limits.ts): 10 batches of 100 per 10 s, refused calls not counted. The binding's windows
 * are aligned to the clock (floor(now / period)), so these tests start just after a window opens and, when a run still
 * straddles two windows (a slow machine), start again in the next one, at most three times.
 */
describe("a polite client: its balance, then batches of 100", () => {
  const bulk = RATE_LIMITS.bulk_lookup;
  const windowMs = bulk.periodSeconds * 1000;
  const windowOf = (t: number) => Math.floor(t / windowMs);
  const bulkPolicy = `"bulk_lookup";q=${bulk.limit};w=${bulk.periodSeconds}`;
  /** Resolves 100 ms into the next window of the bulk family's period. */
  const nextWindow = () => new Promise((r) => setTimeout(r, windowMs - (Date.now() % windowMs) + 100));
  // 100 lookups of people nobody has: each item a 404, one round trip for the lot.
  const hundred = () => JSON.stringify({ requests: Array.from({ length: 100 }, (_, i) => ({ params: { profnet_id: String(9_000_000_000_000 + i) }, reference: `r${i}` })) });
  const batch = (token: string) => callWith({}, "/v1/people/bulk", { method: "POST", token, headers: { "content-type": "application/json" }, body: hundred() });

  it("reading the account, keys, usage and audit events spends none of the lookup budgets: a balance read, then a batch of 100, is 200", async () => {
    const { token } = await newAccount(5);
    for (let attempt = 0; attempt < 3; attempt++) {
      if (attempt > 0) await nextWindow();
      const started = Date.now();
      // As many account reads in one window as the lookup family allows (100): before issue 48 they were lookups, and
      // the batch after them was a 429.
      for (let i = 0; i < 25; i++) for (const path of ["/v1/account", "/v1/keys", "/v1/usage", "/v1/audit-events"]) {
        const res = await callWith({}, path, { token });
        expect(res.status, path).toBe(200);
        expect(res.headers.get("ratelimit-policy")).toBe(`"account";q=${RATE_LIMITS.account.limit};w=${RATE_LIMITS.account.periodSeconds}`);
        await res.body?.cancel();
      }
      const res = await batch(token);
      const single = await callWith({}, "/v1/people?profnet_id=9000000000001", { token });
      if (windowOf(Date.now()) !== windowOf(started) && attempt < 2) continue;
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-policy")).toBe(bulkPolicy);
      expect(((await res.json()) as { results: { status: number }[] }).results.map((r) => r.status)).toEqual(Array(100).fill(404));
      expect(single.status).toBe(404);
      return;
    }
  }, 60_000);

  it("10 batches of 100 in one window are 200; the 11th is 429 with Retry-After and spends nothing; the next window serves the next batch", async () => {
    const { token } = await newAccount(5);
    for (let attempt = 0; attempt < 3; attempt++) {
      await nextWindow();
      const started = Date.now();
      // Ten at once, as a client keeping its batches going would send them.
      const answers = await Promise.all(Array.from({ length: bulk.limit }, () => batch(token)));
      const eleventh = await batch(token);
      const ended = Date.now();
      if (windowOf(ended) !== windowOf(started) && attempt < 2) {
        for (const res of [...answers, eleventh]) await res.body?.cancel();
        continue;
      }
      expect(windowOf(ended)).toBe(windowOf(started));
      expect(answers.map((r) => r.status)).toEqual(Array(bulk.limit).fill(200));
      for (const res of answers) expect(((await res.json()) as { results: unknown[] }).results).toHaveLength(100);
      await expect429(eleventh, bulkPolicy, bulk.periodSeconds);
      // Within the same window, the other families are untouched: the balance and a single lookup are served.
      expect((await callWith({}, "/v1/account", { token })).status).toBe(200);
      expect((await callWith({}, "/v1/people?profnet_id=9000000000001", { token })).status).toBe(404);
      // The refused batch counted nothing: the next window holds 10 batches again, the first of them served.
      await nextWindow();
      const next = await Promise.all(Array.from({ length: bulk.limit }, () => batch(token)));
      const afterNext = await batch(token);
      if (windowOf(Date.now()) !== windowOf(ended) + 1) return; // served, at least; the count past it straddled a window
      expect(next.map((r) => r.status)).toEqual(Array(bulk.limit).fill(200));
      expect(afterNext.status).toBe(429);
      for (const res of [...next, afterNext]) await res.body?.cancel();
      return;
    }
  }, 90_000);
});
