/**
 * What the Worker logs (docs/operations.md "Logs"): one structured access line per request, error lines for
 * failures, and never a token, a looked-up value, an email address or a phone number. The console
 * of this isolate is where the Worker writes them; the test reads what it wrote.
 */
import { OTHER_PROBE_SECRET } from "../fixtures/secrets.ts";
import { afterEach, beforeEach, describe, expect, inject, it, vi, type MockInstance } from "vitest";
import { probeOrder } from "../../edge/verification/probe-ranking.ts";
import { verifyEmail } from "../../edge/verification/verify.ts";
import { hashToken } from "../../edge/identity/tokens.ts";
import { call, callWith, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

let spies: MockInstance[];
beforeEach(() => {
  spies = (["log", "info", "warn", "error", "debug"] as const).map((method) => vi.spyOn(console, method));
});
afterEach(() => {
  for (const spy of spies) spy.mockRestore();
});

const written = () => spies.flatMap((spy) => spy.mock.calls.map((args) => args.map(String).join(" ")));
const entries = () => written().map((line) => JSON.parse(line) as Record<string, unknown>);
const accessLine = (requestId: string | null) => entries().find((entry) => entry.event === "request" && entry.request_id === requestId);

describe("the access line", () => {
  it("one per request: request id, method, route pattern, status, duration, account and key", async () => {
    const { token, accountId, keyId } = await newAccount(5);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id });
    const res = await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token });
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-request-id");
    expect(entries().filter((entry) => entry.request_id === requestId)).toEqual([
      {
        level: "info",
        event: "request",
        request_id: requestId,
        method: "GET",
        route: "/v1/people",
        status: 200,
        duration_ms: expect.any(Number),
        account_id: accountId,
        key_id: keyId,
        member_id: null,
      },
    ]);
  });

  it("for a verification, the verdict and the probe's outcome and timings", async () => {
    const { token } = await newAccount(0);
    const res = await call("/v1/email_verifications?email_address=ana%40ok.test", { token });
    expect(accessLine(res.headers.get("x-request-id"))).toMatchObject({
      route: "/v1/email_verifications",
      status: 200,
      classification: "valid",
      smtp_outcome: "accepted",
      dns_ms: expect.any(Number),
      smtp_ms: expect.any(Number),
    });
  });

  it("for a request nobody authenticated or no route matched: no account, the route as unmatched", async () => {
    expect(accessLine((await call("/v1/people?profnet_id=5")).headers.get("x-request-id"))).toMatchObject({ status: 401, account_id: null, route: "/v1/people" });
    expect(accessLine((await call("/v1/nothing/here?x=1")).headers.get("x-request-id"))).toMatchObject({ status: 404, route: "unmatched" });
  });
});

it("no line carries the token, its hash, a looked-up value, an email address or a phone number", async () => {
  const { token } = await newAccount(5);
  const ids = uniqueIds();
  const email = `private.person.${ids.profnet_id}@gmail.com`;
  const phone = "+14155550199";
  await insertPerson({ ...ids, emails: [email], phones: [phone] });
  const verified = `someone.${ids.codehost_id}@ok.test`;
  const faulty = { DATABASE_URL: inject("faultyDatabaseUrl"), DATABASE_TIMEOUT_MS: "300" };

  const responses = [
    await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token }),
    await call(`/v1/people?profnet_public_identifier=${ids.profnet_public_identifier}&codehost_login=${ids.codehost_login}`, { token }),
    await call(`/v1/people?codehost_id=${ids.codehost_id}x`, { token }),
    await call(`/v1/email_verifications?email_address=${encodeURIComponent(verified)}`, { token }),
    await call("/v1/email_verifications", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_address: verified }) }),
    await call(`/v1/people?profnet_id=${ids.profnet_id}`, { token: `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}` }),
    await call("/v1/account", { token }),
  ];
  await fetch(`${faulty.DATABASE_URL}/__proxy`, { method: "PUT", body: JSON.stringify({ mode: "error" }) });
  try {
    responses.push(await callWith(faulty, `/v1/people?codehost_login=${ids.codehost_login}`, { token: (await newAccount(1)).token }));
  } finally {
    await fetch(`${faulty.DATABASE_URL}/__proxy`, { method: "PUT", body: JSON.stringify({ mode: "pass" }) });
  }
  expect(responses.map((res) => res.status)).toEqual([200, 200, 400, 200, 200, 401, 200, 503]);
  for (const res of responses) expect(accessLine(res.headers.get("x-request-id"))).toBeDefined();

  const forbidden = [
    token,
    await hashToken(token),
    String(ids.profnet_id),
    ids.profnet_public_identifier,
    String(ids.codehost_id),
    ids.codehost_login,
    email,
    verified,
    verified.split("@")[0]!,
    phone,
    "Failed query",
    "params",
  ];
  const lines = written();
  expect(lines.length).toBeGreaterThanOrEqual(responses.length);
  for (const line of lines) for (const value of forbidden) expect(line, line).not.toContain(value);
});

it("a probe that refuses our signature is logged as a configuration error and not failed over", async () => {
  const realProbe = inject("probeUrl");
  const deadProbe = "http://127.0.0.1:9";
  // A domain whose first probe, by rendezvous hashing, is the real one (answering 401 to a wrong secret).
  const domain = ["ok.test", "catchall.test", "implicit.test", "alias-mx.test"].find((d) => probeOrder([realProbe, deadProbe], d)[0] === realProbe)!;
  const result = await verifyEmail(`ana@${domain}`, {
    dohUrl: inject("dohUrl"),
    probeUrls: [realProbe, deadProbe],
    probeSecret: OTHER_PROBE_SECRET,
    smtpTimeoutSeconds: 5,
    requestId: "req-under-test",
  });
  // Failing over to the dead probe would have ended as probe_unreachable.
  expect(result.details!.smtp_outcome).toBe("probe_error_status");
  expect(entries().filter((entry) => entry.event === "probe_configuration_error")).toEqual([
    {
      level: "error",
      event: "probe_configuration_error",
      request_id: "req-under-test",
      probe: new URL(realProbe).origin,
      status: 401,
      message: expect.stringContaining("PROBE_SECRET"),
    },
  ]);
});
