/**
 * A database that hangs, resets connections, answers errors or is not there: every request that
 * needs it gets a bounded wait and a 503 with Retry-After, never a hang or a 500; the next request
 * after it recovers works; and a verification whose key is cached needs no database at all
 * (README "Errors").
 */
import { afterEach, beforeEach, describe, expect, inject, it, vi } from "vitest";
import { callWith, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

const proxyUrl = inject("faultyDatabaseUrl");
const viaProxy = { DATABASE_URL: proxyUrl, DATABASE_TIMEOUT_MS: "300" };

async function setProxyMode(mode: "pass" | "hang" | "reset" | "error") {
  const res = await fetch(`${proxyUrl}/__proxy`, { method: "PUT", body: JSON.stringify({ mode }) });
  expect(res.status).toBe(204);
}

async function expect503(res: Response) {
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toBe("5");
  expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  expect(await res.json()).toEqual({ error: "Service temporarily unavailable" });
}

let token: string;
let ids: ReturnType<typeof uniqueIds>;
beforeEach(async () => {
  token = (await newAccount(10)).token;
  ids = uniqueIds();
  await insertPerson({ profnet_id: ids.profnet_id, emails: ["a@example.org"] });
});
afterEach(() => setProxyMode("pass"));

describe.each(["hang", "reset", "error"] as const)("a database that fails by %s", (mode) => {
  it("gives a key that is not cached 503, not a hang or a 500", async () => {
    await setProxyMode(mode);
    await expect503(await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
  });

  it("gives a lookup with a cached key 503, and the next request after it recovers works", async () => {
    expect((await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token })).status).toBe(200);
    await setProxyMode(mode);
    await expect503(await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
    await setProxyMode("pass");
    const again = await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token });
    expect(again.status).toBe(200);
    expect(again.headers.get("x-credits-remaining")).toBe("8");
  });
});

it("a database where nothing listens: 503", async () => {
  await expect503(await callWith({ DATABASE_URL: inject("refusedDatabaseUrl") }, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
});

it("a verification whose key is cached keeps working while the database is down", async () => {
  expect((await callWith(viaProxy, "/v1/email_verifications?email_address=ana%40ok.test", { token })).status).toBe(200);
  await setProxyMode("hang");
  const res = await callWith(viaProxy, "/v1/email_verifications?email_address=ana%40ok.test", { token });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { classification: string }).classification).toBe("valid");
});

it("logs the failure by name, code and cause, without SQL, parameters, the token or the identifier", async () => {
  const errors = vi.spyOn(console, "error");
  try {
    await setProxyMode("error");
    await expect503(await callWith(viaProxy, `/v1/people?profnet_id=${ids.profnet_id}`, { token }));
    const lines = errors.mock.calls.map((args) => String(args[0]));
    const line = lines.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => entry.event === "database_unavailable");
    expect(line).toMatchObject({ level: "error", request_id: expect.any(String) });
    const chain = line!.error as { name: string; code?: string }[];
    expect(chain.map((e) => e.name)).toContain("DatabaseUnavailableError");
    expect(chain.some((e) => e.code !== undefined)).toBe(true);
    for (const text of lines) {
      for (const secret of [token, String(ids.profnet_id), "select", "params"]) expect(text).not.toContain(secret);
    }
  } finally {
    errors.mockRestore();
  }
});
