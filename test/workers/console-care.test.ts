/**
 * The console's care for people, server side (docs/console.md): every destructive action is confirmed first, as a dialog
 * in the page and, without script, as a page of its own whose form does it (and nothing is done by opening either);
 * a role's menu lists only the pages it can use; people and keys are named on Usage and Audit, and both narrow to one
 * of them; the sign-in page says what to do without a passkey; the icon is linked. The dialogs' behaviour in a
 * browser (focus, Escape, axe) is test/browser/console.test.ts's.
 */
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { cancelUnfinishedJobs, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";
import { consoleCall, join } from "./console-session.ts";

afterEach(cancelUnfinishedJobs);

const html = async (path: string, cookie: string) => {
  const res = await consoleCall(path, { cookie, origin: null });
  expect(res.status, path).toBe(200);
  return res.text();
};

/** The menu's links, by their words. */
const menu = (page: string) => [...(/<nav aria-label="Console">([\s\S]*?)<\/nav>/.exec(page)?.[1] ?? "").matchAll(/<a [^>]*>([^<]+)<\/a>/g)].map((m) => m[1]);

describe("confirmations", () => {
  it("revoking a key: a dialog on Keys that says integrations stop within 60 s, the same as a page without script; neither revokes, the form does", async () => {
    const { accountId } = await newAccount();
    const owner = await join(accountId, "owner", "Olive Owner");
    const made = await consoleCall("/v1/keys", { cookie: owner.cookie, json: { name: "CRM sync", scopes: ["jobs:read"] } });
    const key = (await made.json()) as { id: string; prefix: string };
    const keysPage = await html("/console/keys", owner.cookie);
    // The opener leads to the confirmation's page; its dialog is labelled by its question and described by what will happen.
    expect(keysPage).toContain(`href="/console/keys/${key.id}/revoke" data-dialog="revoke-${key.id}" aria-haspopup="dialog" aria-label="Revoke CRM sync"`);
    expect(keysPage).toMatch(new RegExp(`<dialog id="revoke-${key.id}" class="confirm" aria-labelledby="revoke-${key.id}-title" aria-describedby="revoke-${key.id}-what">`));
    expect(keysPage).toContain("Integrations using key CRM sync");
    expect(keysPage).toContain("stop within 60 seconds");
    const confirm = await html(`/console/keys/${key.id}/revoke`, owner.cookie);
    expect(confirm).toContain("Revoke the key “CRM sync”?");
    expect(confirm).toContain(`<form method="post" action="/console/keys/${key.id}/revoke">`);
    expect((await db.all<{ revoked_at: number | null }>(sql`select revoked_at from api_keys where id = ${key.id}`))[0]!.revoked_at).toBeNull();
    const revoked = await consoleCall(`/console/keys/${key.id}/revoke`, { cookie: owner.cookie, method: "POST", redirect: "manual" });
    expect(revoked.status).toBe(303);
    expect((await db.all<{ revoked_at: number | null }>(sql`select revoked_at from api_keys where id = ${key.id}`))[0]!.revoked_at).not.toBeNull();
    // A key that no longer works has nothing to confirm.
    expect(await html(`/console/keys/${key.id}/revoke`, owner.cookie)).toContain("No such key works now");
  });

  it("removing a passkey, revoking an invite, cancelling a list and deleting its results: each a dialog and a page that say what will happen", async () => {
    const { accountId } = await newAccount();
    const owner = await join(accountId, "owner", "Olive Owner");
    await db.run(sql`insert into passkeys (id, member_id, account_id, credential_id, public_key, name, created_at)
      values ('pk_second', ${owner.memberId}, ${accountId}, 'cred-second', 'x', 'Old phone', ${Date.now()})`);
    const invite = (await (await consoleCall("/v1/invites", { cookie: owner.cookie, json: { role: "viewer" } })).json()) as { id: string };
    const members = await html("/console/members", owner.cookie);
    expect(members).toContain('data-dialog="remove-pk_second"');
    expect(members).toContain("Remove the passkey “Old phone”?");
    expect(members).toContain(`data-dialog="revoke-${invite.id}"`);
    expect(members).toContain("Revoke the viewer invite made by Olive Owner?");
    expect(await html("/console/members/passkeys/pk_second/remove", owner.cookie)).toContain("You can no longer sign in with it, and the sessions it opened end now");
    expect(await html(`/console/invites/${invite.id}/revoke`, owner.cookie)).toContain("Its link stops working at once");

    const form = new FormData();
    // slow.test answers after 4 s: the list is still running when its page is read.
    form.set("paste", "someone@slow.test\nsomeone.else@slow.test\n");
    form.set("name", "Slow pair");
    const created = await consoleCall("/console/lists", { cookie: owner.cookie, method: "POST", body: form, redirect: "manual" });
    const id = /(job_[A-Za-z0-9_-]+)$/.exec(created.headers.get("location") ?? "")![1]!;
    const list = await html(`/console/lists/${id}`, owner.cookie);
    expect(list).toContain("Cancel the list “Slow pair”?");
    expect(list).toContain("Delete the results of “Slow pair” now?");
    expect(await html(`/console/lists/${id}/cancel`, owner.cookie)).toContain("lines not checked yet will not be checked");
    expect(await html(`/console/lists/${id}/delete`, owner.cookie)).toContain("This cannot be undone.");
    // Opening the confirmations did nothing.
    expect((await db.all<{ status: string }>(sql`select status from verification_jobs where id = ${id}`))[0]!.status).not.toBe("cancelled");
    expect(await db.all(sql`select id from passkeys where id = 'pk_second'`)).toHaveLength(1);
  });
});

describe("a role's menu", () => {
  it.each([
    ["viewer", ["Overview", "Lists", "Keys", "Members", "Usage"]],
    ["developer", ["Overview", "Lists", "Check an address", "Find an address", "Look up a person", "Bounce feedback", "Keys", "Members", "Usage", "Erasures"]],
    ["owner", ["Overview", "Lists", "Check an address", "Find an address", "Look up a person", "Bounce feedback", "Keys", "Members", "Usage", "Erasures", "Audit"]],
  ] as const)("a %s sees only the pages the role can use", async (role, pages) => {
    const { accountId } = await newAccount();
    const member = await join(accountId, role, `A ${role}`);
    const overview = await html("/console", member.cookie);
    expect(menu(overview)).toEqual(pages);
    // The icon is linked from every page (no request for /favicon.ico).
    expect(overview).toContain('<link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml"/>');
  });
});

describe("people by name", () => {
  it("Usage names keys and members and narrows to one; Audit names who did what to whom and narrows to one", async () => {
    const { accountId, token } = await newAccount();
    const owner = await join(accountId, "owner", "Olive Owner");
    const made = (await (await consoleCall("/v1/keys", { cookie: owner.cookie, json: { name: "CRM sync", scopes: ["verifications:write"] } })).json()) as { id: string; token: string };
    const form = new FormData();
    form.set("paste", "not an address\n");
    expect((await consoleCall("/console/lists", { cookie: owner.cookie, method: "POST", body: form, redirect: "manual" })).status).toBe(303);
    expect((await consoleCall(`/v1/email_verification_jobs`, { cookie: null, origin: null, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ email_addresses: ["x"] }) })).status).toBe(202);

    const usage = await html("/console/usage", owner.cookie);
    expect(usage).toMatch(/<th scope="row">Olive Owner<br\/><small class="id">member mem_/);
    expect(usage).toContain(`<option value="${owner.memberId}">Olive Owner (member ${owner.memberId})</option>`);
    const mine = await html(`/console/usage?key=${owner.memberId}`, owner.cookie);
    expect(mine).toContain("The last 30 days, of Olive Owner alone.");
    expect(mine).toContain(`<option value="${owner.memberId}" selected="">`);
    expect(mine).not.toMatch(/<th scope="row">A key without a name/);

    const audit = await html("/console/audit", owner.cookie);
    expect(audit).toMatch(/key\.created<\/td><td>Olive Owner<br\/><small class="id">member mem_[^<]+<\/small><\/td><td>CRM sync<br\/><small class="id">key key_/);
    const byOperator = await html("/console/audit?actor=operator", owner.cookie);
    expect(byOperator).not.toContain("Olive Owner<br/>");
    expect(byOperator).toContain("<td>The operator (admin CLI)</td>");
    expect(made.id).toMatch(/^key_/);
  });

  it("the sign-in page says what to do without a passkey on this device", async () => {
    const page = await (await consoleCall("/console/sign-in", { origin: null })).text();
    expect(page).toContain("No passkey on this device?");
    expect(page).toContain("ask an owner or an admin of your account for an invite link");
  });
});

describe("looking up a person from the console", () => {
  it("is POST-redirect-GET: the answer is shown once after the redirect, and a reload shows nothing and charges nothing", async () => {
    const { accountId } = await newAccount(5);
    const owner = await join(accountId, "owner", "Olive Owner");
    const ids = uniqueIds();
    await insertPerson({ ...ids, emails: ["grace@prg-lookup.example"] });
    const balance = async () => Number((await db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`))[0]!.credit_balance);
    const before = await balance();
    const form = new URLSearchParams({ kind: "profnet_id", value: String(ids.profnet_id) });
    const posted = await consoleCall("/console/people", { cookie: owner.cookie, method: "POST", body: form, headers: { "content-type": "application/x-www-form-urlencoded" }, redirect: "manual" });
    expect(posted.status).toBe(303);
    const location = posted.headers.get("location")!;
    expect(location).toMatch(/^\/console\/people\?note=note_/);
    // The address never travels in the URL; the page after the redirect shows the person, once.
    expect(location).not.toContain("grace");
    expect(await balance()).toBe(before - 1);
    expect(await html(location, owner.cookie)).toContain("grace@prg-lookup.example");
    const reload = await html(location, owner.cookie);
    expect(reload).not.toContain("grace@prg-lookup.example");
    expect(await balance()).toBe(before - 1);
    // Nobody found: said after the redirect, and nothing spent.
    const missing = new URLSearchParams({ kind: "profnet_id", value: String(uniqueIds().profnet_id) });
    const miss = await consoleCall("/console/people", { cookie: owner.cookie, method: "POST", body: missing, headers: { "content-type": "application/x-www-form-urlencoded" }, redirect: "manual" });
    expect(miss.status).toBe(303);
    expect(await html(miss.headers.get("location")!, owner.cookie)).toContain("Nobody found: no credit was spent.");
    expect(await balance()).toBe(before - 1);
  });

  it("takes an email, a phone, or a name with its company (a name or a website), shows the name and work history, and says when several people fit", async () => {
    const { accountId } = await newAccount(5);
    const owner = await join(accountId, "owner", "Olive Owner");
    const ids = uniqueIds();
    const domain = `console${ids.profnet_id}.example`;
    await insertPerson({ ...ids, emails: [`katherine@${domain}`], names: [{ full: "Katherine Johnson" }], employment: [{ employer: "Langley Research Ltd", domains: [domain], title: "Mathematician", start: "1953", current: true }] });
    const twin = uniqueIds();
    await insertPerson({ ...twin, emails: [`dorothy1@${domain}`], names: [{ full: "Dorothy Vaughan" }], employment: [{ employer: "Langley Research Ltd", domains: [domain] }] });
    await insertPerson({ ...uniqueIds(), emails: [`dorothy2@${domain}`], names: [{ full: "Dorothy Vaughan" }], employment: [{ employer: "Langley Research Ltd", domains: [domain] }] });
    const ask = async (fields: Record<string, string | undefined>) => {
      const given = Object.entries(fields).filter((e): e is [string, string] => e[1] !== undefined);
      const posted = await consoleCall("/console/people", { cookie: owner.cookie, method: "POST", body: new URLSearchParams([["kind", "profnet_id"], ["value", ""], ...given]), headers: { "content-type": "application/x-www-form-urlencoded" }, redirect: "manual" });
      expect(posted.status).toBe(303);
      return html(posted.headers.get("location")!, owner.cookie);
    };
    for (const fields of [{ email: `Katherine@${domain}` }, { full_name: "katherine johnson", company: `https://www.${domain}/` }, { full_name: "Katherine Johnson", company: "Langley Research" }]) {
      const page = await ask(fields);
      expect([fields, page.includes(`katherine@${domain}`), page.includes("Name: Katherine Johnson"), page.includes("Mathematician")]).toEqual([fields, true, true, true]);
    }
    expect(await ask({ full_name: "Dorothy Vaughan", company: domain })).toContain("More than one person fits: add an email, a phone or an identifier to say which. No credit was spent.");
    expect(await ask({ email: `katherine@${domain}`, full_name: "Dorothy Vaughan", company: domain })).toContain("What you gave points at different people");
    expect(await ask({ full_name: "Katherine Johnson" })).toContain("company_domain");
    expect(await ask({})).toContain("Give an identifier, an email, a phone, or a name with its company.");
  });
});
