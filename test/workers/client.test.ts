/**
 * The typed client (client/) against the real Worker in workerd: the committed OpenAPI document is the
 * one the Worker serves, and every operation in it is called through the client, its answer typed by
 * the generated schema and parsed by the shared one, so the document is proven against the Worker.
 */
import { afterEach, describe, expect, it } from "vitest";
import createClient from "openapi-fetch";
import committed from "../../client/openapi.json";
import { createJobFromCsv, createLookupJob, type paths } from "../../client/index.ts";
import { Invite, InviteList, Me, Member, MemberList, MemberRemoval, Passkey, PendingInvite } from "../../shared/members.ts";
import { SoftwareAuthenticator } from "../fixtures/software-authenticator.ts";
import { CONSOLE_ORIGIN, inviteToken, join, sessionCookieOf } from "./console-session.ts";
import { AccountInfo, ContactInfo, EmailFeedbackReceipt, EmailVerificationResult, PeopleEventsSubscription } from "../../shared/api.ts";
import { JobResultsPage, VerificationJob } from "../../shared/jobs.ts";
import { PeopleBulkResponse } from "../../shared/bulk-lookups.ts";
import { LookupJob, LookupJobQuote, LookupJobResultsPage } from "../../shared/lookup-jobs.ts";
import { ApiKeyWithToken, AuditPage, UsageReport } from "../../shared/keys.ts";
import { apiClient, call, cancelUnfinishedJobs, insertPerson, newAccount, send, uniqueIds } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const operations = Object.values((committed as { paths: Record<string, Record<string, { operationId: string }>> }).paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
const called = new Set<string>();

/** The typed client as the console's scripts would use it: same origin, the session cookie kept as a browser keeps it. */
function consoleClient() {
  let cookie: string | null = null;
  return createClient<paths>({
    baseUrl: CONSOLE_ORIGIN,
    headers: { origin: CONSOLE_ORIGIN },
    fetch: async (request) => {
      if (cookie) request.headers.set("cookie", `session=${cookie}`);
      const res = await send(request);
      const set = sessionCookieOf(res);
      if (set !== null) cookie = set === "" ? null : set;
      return res;
    },
  });
}

describe("the typed client", () => {
  it("is generated from the document the Worker serves (npm run client:generate rewrites it)", async () => {
    expect(await (await call("/v1/openapi.json")).json()).toEqual(committed);
  });

  it("calls every key operation of the document", async () => {
    const { token } = await newAccount(10);
    const api = apiClient(token);

    const ids = uniqueIds();
    await insertPerson({ ...ids, emails: ["ana@example.com"] });
    const person = await api.GET("/v1/people", { params: { query: { profnet_id: String(ids.profnet_id) } } });
    expect(person.response.status).toBe(200);
    expect(ContactInfo.strict().parse(person.data).email_addresses).toEqual(["ana@example.com"]);
    expect(person.response.headers.get("x-credits-remaining")).toBe("9");
    called.add("lookupPerson");
    const detailed = await api.GET("/v1/people", { params: { query: { profnet_id: String(ids.profnet_id), include: "email_details" } } });
    expect(detailed.data?.email_details?.map((d) => [d.email, d.type, d.verification])).toEqual([["ana@example.com", "work", null]]);
    const erasures = await api.GET("/v1/people/erasures", { params: { query: { since: "2026-01-01T00:00:00Z" } } });
    expect(erasures.data).toEqual({ erasures: [], next_cursor: null });
    called.add("listPeopleErasures");
    const missing = await api.GET("/v1/people", { params: { query: { profnet_id: String(ids.profnet_id + 1) } } });
    expect([missing.response.status, missing.error]).toEqual([404, { error: "No profile found for the given parameters" }]);
    const feedback = await api.POST("/v1/email_feedback", { body: { feedback: [{ email_address: "ana@example.com", outcome: "delivered", occurred_at: new Date().toISOString() }] } });
    expect(EmailFeedbackReceipt.strict().parse(feedback.data)).toEqual({ received: 1 });
    called.add("reportEmailFeedback");
    const hookUrl = "http://127.0.0.1:9/hooks/client";
    const subscribed = await api.PUT("/v1/people/events/subscription", { body: { url: hookUrl } });
    expect(PeopleEventsSubscription.strict().parse(subscribed.data).url).toBe(hookUrl);
    called.add("setPeopleEventsSubscription");
    expect((await api.GET("/v1/people/events/subscription")).data?.url).toBe(hookUrl);
    called.add("getPeopleEventsSubscription");
    expect((await api.DELETE("/v1/people/events/subscription")).data?.url).toBeNull();
    called.add("deletePeopleEventsSubscription");

    await insertPerson({ ...uniqueIds(), emails: ["eve.client@finder.test"], names: [{ full: "Eve Client" }], employment: [{ employer: "Finder Corp", domains: ["finder.test"] }] });
    const found = await api.GET("/v1/email_finder", { params: { query: { full_name: "Eve Client", domain: "finder.test", min_confidence: "100" } } });
    // Below the floor: returned unconfirmed and free, so the balance below is the lookups' alone.
    expect(found.response.status).toBe(200);
    expect(found.response.headers.get("x-credits-charged")).toBe("0");
    expect(found.data && "email" in found.data ? found.data.email : null).toBe("eve.client@finder.test");
    called.add("findEmail");
    const finds = await api.POST("/v1/email_finder/bulk", { body: { items: [{ full_name: "Eve Client", domain: "finder.test" }], min_confidence: 100 } });
    expect(finds.data?.results.map((r) => r.status)).toEqual(["found"]);
    called.add("findEmails");
    const domain = await api.GET("/v1/domains/{domain}", { params: { path: { domain: "finder.test" } } });
    expect(domain.data?.domain).toBe("finder.test");
    called.add("searchDomain");

    const batch = await api.POST("/v1/people/bulk", { body: { requests: [{ params: { profnet_id: ids.profnet_id }, reference: "r1" }, { params: {} }] } });
    expect(PeopleBulkResponse.strict().parse(batch.data).results.map((r) => [r.status, r.reference])).toEqual([
      [200, "r1"],
      [400, null],
    ]);
    called.add("lookupPeople");
    const list = `name,profnet_id\nAna,${ids.profnet_id}\nNobody,${ids.profnet_id + 1}\n`;
    const quote = await createLookupJob(api, list, { query: { dry_run: "true" } });
    expect(LookupJobQuote.strict().parse(quote.data).max_credits).toBe(2);
    const lookupJob = LookupJob.strict().parse((await createLookupJob(api, list, { header: { "idempotency-key": "client-lookup" } })).data);
    called.add("createLookupJob");
    let lookedUp = lookupJob;
    for (let i = 0; i < 100 && lookedUp.status !== "completed"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      lookedUp = LookupJob.strict().parse((await api.GET("/v1/lookup_jobs/{id}", { params: { path: { id: lookupJob.id } } })).data);
    }
    expect(lookedUp.counts).toMatchObject({ found: 1, not_found: 1 });
    called.add("getLookupJob");
    const lookupPage = await api.GET("/v1/lookup_jobs/{id}/results", { params: { path: { id: lookupJob.id }, query: { status: "found" } } });
    expect(LookupJobResultsPage.strict().parse(lookupPage.data).results.map((r) => r.input)).toEqual([{ name: "Ana", profnet_id: String(ids.profnet_id) }]);
    called.add("listLookupJobResults");
    expect((await api.GET("/v1/lookup_jobs", { params: { query: { limit: "5" } } })).data?.jobs.map((j) => j.id)).toContain(lookupJob.id);
    called.add("listLookupJobs");
    const purgedLookups = await api.DELETE("/v1/lookup_jobs/{id}", { params: { path: { id: lookupJob.id }, query: { purge: "true" } } });
    expect(LookupJob.strict().parse(purgedLookups.data).results_expired).toBe(true);
    called.add("cancelLookupJob");

    const verified = await api.GET("/v1/email_verifications", { params: { query: { email_address: "ana@ok.test" } } });
    expect(EmailVerificationResult.parse(verified.data)).toMatchObject({ classification: "valid", reason: "deliverable" });
    called.add("verifyEmail");
    const posted = await api.POST("/v1/email_verifications", { body: { email_address: "nobody@ok.test", smtp_timeout: "5" } });
    expect(EmailVerificationResult.parse(posted.data)).toMatchObject({ classification: "invalid", reason: "mailbox_not_found" });
    called.add("verifyEmailPost");

    const account = await api.GET("/v1/account");
    expect(AccountInfo.strict().parse(account.data).credit_balance).toBe(6);
    called.add("getAccount");

    const created = await api.POST("/v1/email_verification_jobs", { body: { email_addresses: ["ana@ok.test", "not-an-address"] }, params: { header: { "idempotency-key": "client-test" } } });
    expect(created.response.status).toBe(202);
    const job = VerificationJob.strict().parse(created.data);
    called.add("createVerificationJob");
    const fromCsv = await createJobFromCsv(api, "email\nben@ok.test\n", { query: { smtp_timeout: "5" } });
    expect(VerificationJob.strict().parse(fromCsv.data).total).toBe(1);

    let current = job;
    for (let i = 0; i < 100 && current.status !== "completed"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const read = await api.GET("/v1/email_verification_jobs/{id}", { params: { path: { id: job.id } } });
      current = VerificationJob.strict().parse(read.data);
    }
    expect(current).toMatchObject({ status: "completed", processed: 2, summary: { reason: { deliverable: 1, syntax: 1 } } });
    called.add("getVerificationJob");

    const page = await api.GET("/v1/email_verification_jobs/{id}/results", { params: { path: { id: job.id }, query: { classification: "invalid" } } });
    expect(JobResultsPage.strict().parse(page.data).results.map((r) => r.email)).toEqual(["not-an-address"]);
    called.add("listVerificationJobResults");
    const listed = await api.GET("/v1/email_verification_jobs", { params: { query: { limit: "10" } } });
    expect(listed.data?.jobs.map((j) => j.id)).toContain(job.id);
    called.add("listVerificationJobs");
    const badFilter = await api.GET("/v1/email_verification_jobs/{id}/results", { params: { path: { id: job.id }, query: { reason: "bounced" } } });
    expect(badFilter.response.status).toBe(400);

    const cancelled = await api.DELETE("/v1/email_verification_jobs/{id}", { params: { path: { id: VerificationJob.parse(fromCsv.data).id } } });
    expect(cancelled.response.status).toBe(200);
    called.add("cancelVerificationJob");
    const purged = await api.DELETE("/v1/email_verification_jobs/{id}", { params: { path: { id: job.id }, query: { purge: "true" } } });
    expect(VerificationJob.strict().parse(purged.data)).toMatchObject({ status: "completed", results_expired: true });
    const gone = await api.GET("/v1/email_verification_jobs/{id}/results", { params: { path: { id: job.id } } });
    expect([gone.response.status, gone.error]).toEqual([410, { error: "Job results have expired" }]);

    const key = await api.POST("/v1/keys", { body: { name: "client", scopes: ["account:read"], daily_credit_cap: 5 } });
    expect(key.response.status).toBe(201);
    const made = ApiKeyWithToken.strict().parse(key.data);
    called.add("createKey");
    const keys = await api.GET("/v1/keys");
    expect(keys.data?.keys.map((k) => k.id)).toContain(made.id);
    called.add("listKeys");
    const rolled = await api.POST("/v1/keys/{id}/roll", { params: { path: { id: made.id } }, body: { overlap_seconds: 0 } });
    const replacement = ApiKeyWithToken.strict().parse(rolled.data);
    called.add("rollKey");
    const revoked = await api.DELETE("/v1/keys/{id}", { params: { path: { id: replacement.id } } });
    expect(revoked.data?.status).toBe("revoked");
    called.add("revokeKey");
    const usage = await api.GET("/v1/usage", { params: { query: { group_by: "key" } } });
    expect(UsageReport.strict().parse(usage.data).totals.lookups_charged).toBe(4);
    called.add("getUsage");
    const audit = await api.GET("/v1/audit-events", { params: { query: { limit: "10" } } });
    expect(AuditPage.strict().parse(audit.data).events.map((e) => e.action)).toEqual([
      "key.revoked",
      "key.rolled",
      "key.created",
      // The people events subscription set and removed above, each audited (issue 43).
      "account.people_events_url_removed",
      "account.people_events_url_set",
      "key.created",
    ]);
    called.add("listAuditEvents");
  });

  it("calls every member operation of the document, with a session", async () => {
    const { accountId } = await newAccount(0);
    const api = consoleClient();
    const authenticator = new SoftwareAuthenticator();
    const token = await inviteToken(accountId, "owner");
    const options = await api.POST("/v1/auth/invites/options", { body: { token } });
    expect(options.response.status).toBe(200);
    called.add("inviteRegistrationOptions");
    const credential = await authenticator.create(options.data as Parameters<SoftwareAuthenticator["create"]>[0], CONSOLE_ORIGIN);
    const accepted = await api.POST("/v1/auth/invites/accept", { body: { token, name: "Olga", credential } });
    const owner = Member.strict().parse(accepted.data?.member);
    called.add("acceptInvite");
    const me = await api.GET("/v1/me");
    expect(Me.strict().parse(me.data).member.id).toBe(owner.id);
    called.add("getMe");
    const invite = await api.POST("/v1/invites", { body: { role: "viewer" } });
    expect(Invite.strict().parse(invite.data).role).toBe("viewer");
    called.add("createInvite");
    const invites = await api.GET("/v1/invites");
    expect(InviteList.strict().parse(invites.data).invites.map((i) => [i.id, i.status])).toContainEqual([Invite.parse(invite.data).id, "pending"]);
    called.add("listInvites");
    const revokedInvite = await api.DELETE("/v1/invites/{id}", { params: { path: { id: Invite.parse(invite.data).id } } });
    expect(PendingInvite.strict().parse(revokedInvite.data).status).toBe("revoked");
    called.add("revokeInvite");
    const colleague = await join(accountId, "viewer", "Vic");
    const members = await api.GET("/v1/members");
    expect(MemberList.strict().parse(members.data).members.map((m) => m.name)).toEqual(["Olga", "Vic"]);
    called.add("listMembers");
    const updated = await api.PATCH("/v1/members/{id}", { params: { path: { id: colleague.memberId } }, body: { role: "developer" } });
    expect(Member.strict().parse(updated.data).role).toBe("developer");
    called.add("updateMember");
    const removed = await api.DELETE("/v1/members/{id}", { params: { path: { id: colleague.memberId } } });
    expect(MemberRemoval.strict().parse(removed.data)).toMatchObject({ member: { id: colleague.memberId }, keys: [] });
    called.add("removeMember");

    const stepUpOptions = await api.POST("/v1/auth/step-up/options");
    called.add("stepUpOptions");
    const proof = await authenticator.get(stepUpOptions.data as Parameters<SoftwareAuthenticator["get"]>[0], CONSOLE_ORIGIN);
    expect((await api.POST("/v1/auth/step-up", { body: { credential: proof } })).response.status).toBe(204);
    called.add("stepUp");
    const addOptions = await api.POST("/v1/me/passkeys/options");
    called.add("passkeyRegistrationOptions");
    const second = await authenticator.create(addOptions.data as Parameters<SoftwareAuthenticator["create"]>[0], CONSOLE_ORIGIN);
    const added = await api.POST("/v1/me/passkeys", { body: { credential: second, name: "Backup" } });
    const passkey = Passkey.strict().parse(added.data);
    called.add("addPasskey");
    expect((await api.DELETE("/v1/me/passkeys/{id}", { params: { path: { id: passkey.id } } })).response.status).toBe(204);
    called.add("removePasskey");

    expect((await api.POST("/v1/auth/sign-out")).response.status).toBe(204);
    called.add("signOut");
    expect((await api.GET("/v1/me")).response.status).toBe(401);
    const request = await api.POST("/v1/auth/sign-in/options");
    called.add("signInOptions");
    const assertion = await authenticator.get(request.data as Parameters<SoftwareAuthenticator["get"]>[0], CONSOLE_ORIGIN, (c) => c === authenticator.credentials[0]);
    const signedIn = await api.POST("/v1/auth/sign-in", { body: { credential: assertion } });
    expect(Member.strict().parse(signedIn.data?.member).id).toBe(owner.id);
    called.add("signIn");
    expect((await api.POST("/v1/auth/sign-out-everywhere")).response.status).toBe(204);
    called.add("signOutEverywhere");
    expect((await api.GET("/v1/me")).response.status).toBe(401);
  });

  it("has called every operation of the document", () => {
    expect([...called].sort()).toEqual([...operations].sort());
  });
});
