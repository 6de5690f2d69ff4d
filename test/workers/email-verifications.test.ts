import { SYNTAX_ERRORS } from "../../shared/email/syntax.ts";
import { beforeEach, describe, expect, inject, it } from "vitest";
import { EmailVerificationResult } from "../../shared/api.ts";
import { WARNINGS, ERRORS } from "../../shared/email/verdict.ts";
import { verifyEmail } from "../../edge/verification/verify.ts";
import { call, newAccount } from "./helpers.ts";

// A key per test, so that the suite never meets the per-key verification limit (docs/api.md "Rate limits").
let token: string;
beforeEach(async () => {
  token = (await newAccount(0)).token;
});

async function verifyGet(query: Record<string, string>) {
  const res = await call(`/v1/email_verifications?${new URLSearchParams(query)}`, { token });
  return { res, body: (await res.json()) as any };
}

async function verify(email: string, extra: Record<string, string> = {}) {
  const { res, body } = await verifyGet({ email_address: email, ...extra });
  expect(res.status).toBe(200);
  return EmailVerificationResult.strict().parse(body);
}

describe("parameters", () => {
  it("400 when email_address is missing or blank, GET and POST", async () => {
    for (const q of [{}, { email_address: "" }, { email_address: "  \t " }] as Record<string, string>[]) {
      const { res, body } = await verifyGet(q);
      expect(res.status).toBe(400);
      expect(body).toEqual({ error: "The email_address parameter is required" });
    }
    const post = await call("/v1/email_verifications", { method: "POST", token });
    expect(post.status).toBe(400);
    expect(await post.json()).toEqual({ error: "The email_address parameter is required" });
  });

  it.each(["0", "61", "-1", "1.5", "1e1", "abc", "10s", "999"])("400 for smtp_timeout=%j", async (t) => {
    const { res, body } = await verifyGet({ email_address: "ana@ok.test", smtp_timeout: t });
    expect(res.status).toBe(400);
    expect(body).toEqual({ error: "smtp_timeout must be an integer between 1 and 60" });
  });

  it("accepts smtp_timeout 1 and 60, and a JSON number in a body", async () => {
    for (const t of ["1", "60", " 5 "]) expect((await verifyGet({ email_address: "ana@ok.test", smtp_timeout: t })).res.status).toBe(200);
    const res = await call("/v1/email_verifications", {
      method: "POST",
      token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_address: "ana@ok.test", smtp_timeout: 3 }),
    });
    expect(res.status).toBe(200);
    const bad = await call("/v1/email_verifications", {
      method: "POST",
      token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_address: "ana@ok.test", smtp_timeout: 2.5 }),
    });
    expect(bad.status).toBe(400);
  });

  it("POST takes a JSON body, a urlencoded form and a multipart form", async () => {
    const json = await call("/v1/email_verifications", {
      method: "POST",
      token,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ email_address: "ana@ok.test" }),
    });
    expect(((await json.json()) as any).email).toBe("ana@ok.test");
    const urlencoded = await call("/v1/email_verifications", {
      method: "POST",
      token,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "email_address=ana%40ok.test&smtp_timeout=2",
    });
    expect(((await urlencoded.json()) as any).email).toBe("ana@ok.test");
    const form = new FormData();
    form.set("email_address", "bob@ok.test");
    const multipart = await call("/v1/email_verifications", { method: "POST", token, body: form });
    expect(multipart.status).toBe(200);
    expect(((await multipart.json()) as any).email).toBe("bob@ok.test");
  });

  it("the query string wins over the body", async () => {
    const res = await call("/v1/email_verifications?email_address=query%40ok.test", {
      method: "POST",
      token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_address: "body@ok.test", smtp_timeout: 99 }),
    });
    // smtp_timeout comes from the body (not in the query) and is out of range.
    expect(res.status).toBe(400);
    const ok = await call("/v1/email_verifications?email_address=query%40ok.test&smtp_timeout=5", {
      method: "POST",
      token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_address: "body@ok.test", smtp_timeout: 99 }),
    });
    expect(((await ok.json()) as any).email).toBe("query@ok.test");
  });

  it("400 for malformed JSON, a non-object body, or a non-string address; 415 for other types", async () => {
    const post = (body: string, type = "application/json") =>
      call("/v1/email_verifications", { method: "POST", token, headers: { "content-type": type }, body });
    const malformed = await post("{");
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ error: "Malformed JSON body" });
    const array = await post("[]");
    expect(array.status).toBe(400);
    expect(await array.json()).toEqual({ error: "The JSON body must be an object" });
    const number = await post(JSON.stringify({ email_address: 42 }));
    expect(number.status).toBe(400);
    expect(await number.json()).toEqual({ error: "email_address must be a string" });
    const xml = await post("<email/>", "application/xml");
    expect(xml.status).toBe(415);
  });

  it("413 with a JSON error for a body over the limit", async () => {
    const res = await call("/v1/email_verifications", {
      method: "POST",
      token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email_address: "ana@ok.test", pad: "x".repeat(20_000) }),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error: "Request body too large" });
  });

  it("trims surrounding ASCII whitespace into `email`", async () => {
    expect((await verify("  ana@ok.test\t")).email).toBe("ana@ok.test");
  });

  it("does not trim a vertical tab: it is not ASCII whitespace for the syntax check either, and is answered as the control character it is", async () => {
    const result = await verify("\u000bana@ok.test\u000b");
    expect(result).toMatchObject({ email: "\u000bana@ok.test\u000b", classification: "invalid", errors: [SYNTAX_ERRORS.controlCharacter], reason: "syntax" });
  });

  it("costs no credits (the account has none)", async () => {
    const { res } = await verifyGet({ email_address: "ana@ok.test" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-charged")).toBeNull();
  });
});

describe("verdicts through DoH and the probe", () => {
  it("a deliverable mailbox on a clean domain is valid with score 95", async () => {
    const r = await verify("ana@ok.test");
    expect(r).toMatchObject({ classification: "valid", valid: true, score: 95, errors: [], warnings: [] });
    expect(r.checks).toMatchObject({ syntax: true, mx_record: true, smtp_deliverable: true, accepts_any_email: false, disposable: false, typo_suggestion: null });
    expect(r.details!.mx_hosts).toEqual([
      { host: "mx1.ok.test", preference: 10 },
      { host: "mx2.ok.test", preference: 20 },
    ]);
    expect(r.details).toMatchObject({ smtp_host: "mx1.ok.test", smtp_outcome: "accepted", smtp_tls: true });
    expect(r.details!.smtp_reply).toMatchObject({ code: 250 });
  });

  it("names the provider behind the MX hosts; where every recipient is accepted at RCPT time (Yahoo, Microsoft 365) an accepted address is catch-all, risky", async () => {
    expect((await verify("ana@ok.test")).details!.mx_provider).toBeNull();
    expect((await verify("ana@gmail.com")).details).toMatchObject({ mx_provider: "google", smtp_outcome: "accepted" });
    for (const [email, provider] of [["someone@yahoo-hosted.test", "yahoo"], ["someone@m365-hosted.test", "microsoft"]] as const) {
      const r = await verify(email);
      expect([r.classification, r.reason, r.checks.accepts_any_email, r.details!.mx_provider], email).toEqual(["risky", "catch_all", true, provider]);
    }
  });

  it("an unknown mailbox is invalid", async () => {
    const r = await verify("ghost@unknown.test");
    expect(r).toMatchObject({ classification: "invalid", valid: false, score: 0, errors: [ERRORS.mailboxNotFound] });
    expect(r.checks.smtp_deliverable).toBe(false);
    // A server that refuses one address is no catch-all: said, not left null, on an invalid result too.
    expect(r.checks.accepts_any_email).toBe(false);
    expect(r.score_details.accepts_any_email).toBe(false);
  });

  it("a catch-all server is risky with 70 points", async () => {
    const r = await verify("anyone@catchall.test");
    expect(r).toMatchObject({ classification: "risky", score: 20 + 40 + 15 - 5, warnings: [WARNINGS.catchAll] });
    expect(r.checks.accepts_any_email).toBe(true);
    expect(r.score_details.accepts_any_email).toBe(true);
  });

  it.each([
    ["policy", WARNINGS.smtpAssumed],
    ["grey", WARNINGS.smtpAssumed],
  ])("a %s answer is an SMTP assumption, never invalid", async (local, warning) => {
    const r = await verify(`${local}@ok.test`);
    expect(r).toMatchObject({ classification: "risky", valid: true, score: 20 + 40 + 10 - 5, warnings: [warning] });
    expect(r.score_details.smtp_failed_assumption).toBe(true);
    expect(r.checks.smtp_deliverable).toBeNull();
  });

  it("a full mailbox is risky", async () => {
    const r = await verify("full@ok.test");
    expect(r).toMatchObject({ classification: "risky", warnings: [WARNINGS.mailboxFull] });
  });

  // The real probe does not misbehave on request; these run the same verification code in workerd
  // against a stand-in that hangs, fails or answers junk.
  const viaProbeFixture = (email: string, smtpTimeoutSeconds = 10) =>
    verifyEmail(email, {
      dohUrl: inject("dohUrl"),
      probeUrls: [inject("probeFixtureUrl")],
      probeSecret: inject("probeSecret"),
      smtpTimeoutSeconds,
    });

  it.each([
    ["oops", "probe_error_status"],
    ["junk", "probe_bad_response"],
    ["drop", "probe_unreachable"],
  ])("a probe that answers %s degrades to no SMTP check", async (local, outcome) => {
    const r = EmailVerificationResult.strict().parse(await viaProbeFixture(`${local}@ok.test`));
    expect(r).toMatchObject({ classification: "risky", score: 20 + 40 + 20 - 5, warnings: [WARNINGS.smtpNotChecked] });
    expect(r.checks.smtp_deliverable).toBeNull();
    expect(r.details!.smtp_outcome).toBe(outcome);
  });

  it("a probe that hangs is abandoned at the deadline, not later", async () => {
    const started = Date.now();
    const r = await viaProbeFixture("hang@ok.test", 1);
    const elapsed = Date.now() - started;
    expect(r.warnings).toEqual([WARNINGS.smtpNotChecked]);
    expect(r.details!.smtp_outcome).toBe("probe_deadline");
    expect(elapsed).toBeLessThan(1000 + 2000);
  });

  it("with several probes, an unreachable or failing one is skipped for the next", async () => {
    const live = inject("probeUrl");
    const dead = "http://127.0.0.1:9";
    const failing = inject("probeFixtureUrl"); // answers 500 for oops@
    for (const probeUrls of [[dead, live], [live, dead], [failing, live], [dead, failing, live]]) {
      const r = await verifyEmail("oops@ok.test", { dohUrl: inject("dohUrl"), probeUrls, probeSecret: inject("probeSecret"), smtpTimeoutSeconds: 5 });
      // The live probe's answer: oops@ok.test is not a mailbox on the fixture server.
      expect(r.details!.smtp_outcome, probeUrls.join(" ")).toBe("mailbox_not_found");
    }
  });

  it("an implicit MX is usable with a warning", async () => {
    const r = await verify("ana@implicit.test");
    expect(r).toMatchObject({ classification: "risky", valid: true, score: 95 - 5, warnings: [WARNINGS.implicitMx] });
    expect(r.details!.implicit_mx).toBe(true);
  });

  it.each([
    ["nullmx.test", ERRORS.nullMx],
    ["nx.test", ERRORS.nxdomain],
    ["nomail.test", ERRORS.noMail],
    ["gone-mx.test", ERRORS.mxHostsAbsent],
  ])("%s is invalid", async (domain, error) => {
    const r = await verify(`ana@${domain}`);
    expect(r).toMatchObject({ classification: "invalid", valid: false, score: 0, errors: [error] });
    expect(r.checks.mx_record).toBe(false);
  });

  it.each(["servfail.test", "big.test", "loop.test"])("a DNS failure on %s assumes the MX", async (domain) => {
    const r = await verify(`ana@${domain}`);
    expect(r).toMatchObject({
      classification: "risky",
      valid: true,
      score: 20 + 15 + 20 - 10,
      warnings: [WARNINGS.dnsAssumed, WARNINGS.smtpNotChecked],
    });
    expect(r.score_details.dns_failed_assumption).toBe(true);
    expect(r.checks.mx_record).toBe(true);
  });

  it("MX hosts whose address lookups fail are a DNS assumption with their own warning", async () => {
    const r = await verify("ana@hostfail.test");
    expect(r).toMatchObject({
      classification: "risky",
      valid: true,
      score: 20 + 15 + 20 - 10,
      warnings: [WARNINGS.mxHostsAssumed, WARNINGS.smtpNotChecked],
    });
    expect(r.score_details.dns_failed_assumption).toBe(true);
    expect(r.checks.mx_record).toBe(true);
  });

  it("an MX host that is a CNAME is followed to its address and probed", async () => {
    const r = await verify("ana@alias-mx.test");
    expect(r).toMatchObject({ classification: "valid", score: 95 });
    expect(r.details).toMatchObject({ smtp_host: "alias.alias-mx.test", smtp_outcome: "accepted" });
  });

  it("a slow resolver is cut off by the DNS deadline", async () => {
    const started = Date.now();
    const r = await verify("ana@slow.test", { smtp_timeout: "1" });
    expect(r.score_details.dns_failed_assumption).toBe(true);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("disposable domains are risky", async () => {
    const r = await verify("temp@mailinator.com");
    expect(r.checks.disposable).toBe(true);
    expect(r.classification).toBe("risky");
    expect(r.warnings).toContain(WARNINGS.disposable);
  });

  it("a typo of a popular provider is suggested as a whole address", async () => {
    const r = await verify("Ana.Maria+tag@gmial.com");
    expect(r.checks.typo_suggestion).toBe("Ana.Maria+tag@gmail.com");
    expect(r.warnings).toContain(WARNINGS.typo);
    // gmial.com is on a disposable list too: the reason is the typo, which the user can fix, not "disposable".
    expect(r.reason).toBe("typo");
    expect(r.warnings).not.toContain(WARNINGS.disposable);
    // A misspelling the free-provider list carries as a provider is corrected too.
    expect((await verify("ana@yaho.com")).checks.typo_suggestion).toBe("ana@yahoo.com");
    const real = await verify("ana@gmail.com");
    expect(real.checks.typo_suggestion).toBeNull();
    expect(real.checks.free_provider).toBe(true);
  });

  it("syntax errors are invalid without any DNS", async () => {
    for (const bad of ["plainaddress", "a@b", "a..b@ok.test", "ana@[127.0.0.1]", "Ana <ana@ok.test>"]) {
      const r = await verify(bad);
      expect(r.classification, bad).toBe("invalid");
      expect(r.checks.syntax).toBe(false);
      expect(r.errors).toHaveLength(1);
    }
  });

  it("an IDN domain is converted to its A-label before DNS", async () => {
    const r = await verify("ana@bücher.test");
    expect(r.email).toBe("ana@bücher.test");
    expect(r.details!.domain).toBe("xn--bcher-kva.test");
    expect(r.checks.mx_record).toBe(true);
  });

  it("role accounts are flagged", async () => {
    expect((await verify("info@ok.test")).checks.role_account).toBe(true);
  });

  it("the OpenAPI document describes both operations and the result schema", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    const path = doc.paths["/v1/email_verifications"];
    expect(Object.keys(path).sort()).toEqual(["get", "post"]);
    expect(path.get.parameters.map((p: any) => p.name).sort()).toEqual(["email_address", "smtp_timeout"]);
    expect(Object.keys(path.post.requestBody.content).sort()).toEqual([
      "application/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data",
    ]);
    expect(doc.components.schemas.EmailVerificationResult.required.sort()).toEqual(
      ["checks", "classification", "email", "errors", "score", "score_details", "valid", "warnings"],
    );
  });
});
