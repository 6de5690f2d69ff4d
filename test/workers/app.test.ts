import { API_VERSION } from "../../shared/api.ts";
import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";

describe("the app surface", () => {
  it("GET /healthz answers 200 without auth", async () => {
    const res = await call("/healthz");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(await res.json()).toEqual({ ok: true });
  });

  it("unknown routes get a JSON 404", async () => {
    // "/" is not among them: it leads to the console (test/workers/console.test.ts).
    for (const path of ["/nothing-here", "/v1", "/v2/people", "/v1/people/123"]) {
      const res = await call(path);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.headers.get("x-request-id")).toBeTruthy();
      expect(await res.json()).toEqual({ error: "Not found" });
    }
  });

  it("every response has a distinct X-Request-Id", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await call("/healthz")).headers.get("x-request-id")!);
    expect(ids.size).toBe(5);
  });

  it("GET /v1/openapi.json is OpenAPI 3.1 generated from the route schemas", async () => {
    const res = await call("/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe(API_VERSION);
    // Every operation has its stable name and a tag; the job callback is a webhook.
    const operations = Object.values(doc.paths).flatMap((path: any) => Object.values(path)) as any[];
    expect(operations.map((o) => o.operationId).sort()).toEqual([
      "acceptInvite",
      "addPasskey",
      "cancelLookupJob",
      "cancelVerificationJob",
      "createInvite",
      "createKey",
      "createLookupJob",
      "createVerificationJob",
      "deletePeopleEventsSubscription",
      "findEmail",
      "findEmails",
      "getAccount",
      "getLookupJob",
      "getMe",
      "getPeopleEventsSubscription",
      "getUsage",
      "getVerificationJob",
      "inviteRegistrationOptions",
      "listAuditEvents",
      "listInvites",
      "listKeys",
      "listLookupJobResults",
      "listLookupJobs",
      "listMembers",
      "listPeopleErasures",
      "listVerificationJobResults",
      "listVerificationJobs",
      "lookupPeople",
      "lookupPerson",
      "passkeyRegistrationOptions",
      "removeMember",
      "removePasskey",
      "reportEmailFeedback",
      "revokeInvite",
      "revokeKey",
      "rollKey",
      "searchDomain",
      "setPeopleEventsSubscription",
      "signIn",
      "signInOptions",
      "signOut",
      "signOutEverywhere",
      "stepUp",
      "stepUpOptions",
      "updateMember",
      "verifyEmail",
      "verifyEmailPost",
    ]);
    for (const o of operations) expect(o.tags?.length, o.operationId).toBe(1);
    expect(Object.keys(doc.webhooks).sort()).toEqual(["lookupJobEnded", "peopleEvent", "verificationJobEnded"]);
    expect(doc.webhooks.verificationJobEnded.post.parameters.map((p: any) => p.name).sort()).toEqual(["webhook-id", "webhook-signature", "webhook-timestamp"]);
    expect(doc.webhooks.verificationJobEnded.post.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/VerificationJob" });
    const people = doc.paths["/v1/people"].get;
    expect(people.parameters.map((p: any) => p.name).sort()).toEqual(
      ["codehost_id", "codehost_login", "company", "company_domain", "country", "email", "first_name", "full_name", "include", "last_name", "min_confidence", "phone", "profnet_id", "profnet_public_identifier"],
    );
    expect(Object.keys(people.responses).sort()).toEqual(["200", "400", "401", "402", "403", "404", "409", "429", "503"]);
    expect(Object.keys(people.responses["429"].headers).sort()).toEqual(["RateLimit-Policy", "Retry-After"]);
    expect(Object.keys(doc.components.schemas.ContactInfo.properties)).toContain("work_email_addresses");
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.securitySchemes.sessionCookie).toMatchObject({ type: "apiKey", in: "cookie", name: "__Host-session" });
  });

  it("GET /v1/openapi.json is built once and served as cacheable bytes: the same ETag each time, 304 when it matches", async () => {
    const first = await call("/v1/openapi.json");
    const second = await call("/v1/openapi.json");
    expect(first.headers.get("cache-control")).toBe("public, max-age=300");
    expect(first.headers.get("content-type")).toMatch(/^application\/json/);
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(second.headers.get("etag")).toBe(etag);
    expect(await second.text()).toBe(await first.text());
    const unchanged = await call("/v1/openapi.json", { headers: { "if-none-match": etag! } });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe("");
  });
});
