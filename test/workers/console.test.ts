/**
 * The console's server-rendered pages inside workerd (docs/console.md): headers, the way in for someone
 * signed out, forms that reach the API's operations with the member's session and nothing else, a
 * cross-site form refused. The browser's side (passkeys, scripts, axe) is test/browser/console.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { cancelUnfinishedJobs, db, newAccount, send } from "./helpers.ts";
import { CONSOLE_ORIGIN, join } from "./console-session.ts";

afterEach(cancelUnfinishedJobs);

/** A request to a console page as a browser makes it, redirects not followed: the session cookie, and Origin unless told otherwise. */
function consoleCall(path: string, init: RequestInit & { cookie?: string; origin?: string | null } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const origin = init.origin === undefined ? CONSOLE_ORIGIN : init.origin;
  if (origin !== null) headers.set("Origin", origin);
  if (init.cookie) headers.set("Cookie", `session=${init.cookie}`);
  return send(new Request(`${CONSOLE_ORIGIN}${path}`, { method: init.method ?? "GET", headers, body: init.body ?? null, redirect: "manual" }));
}

const form = (fields: [string, string][]) => ({
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
  method: "POST",
});

/** The page a form's redirect leads to, opened with `cookie` as the browser would. */
async function follow(res: Response, cookie: string): Promise<string> {
  expect(res.status).toBe(303);
  return (await consoleCall(res.headers.get("location")!, { cookie, origin: null })).text();
}

describe("the console's pages", () => {
  it("leads / to the console, and someone signed out to the sign-in page, coming back where they were", async () => {
    const root = await consoleCall("/", { origin: null });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console");
    for (const path of ["/console", "/console/keys", "/console/lists?x=1"]) {
      const res = await consoleCall(path, { origin: null });
      expect(res.status, path).toBe(303);
      expect(res.headers.get("location")).toBe(`/console/sign-in?next=${encodeURIComponent(path)}`);
    }
  });

  it("sends one nonce CSP with frame-ancestors 'none', every script by that nonce, no inline handler or style", async () => {
    for (const path of ["/console/sign-in", "/console/invite"]) {
      const res = await consoleCall(path, { origin: null });
      expect(res.status).toBe(200);
      const csp = res.headers.get("content-security-policy")!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      const nonce = /script-src 'nonce-([^']+)' 'strict-dynamic'/.exec(csp)![1]!;
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("cache-control")).toBe("no-store");
      const html = await res.text();
      const scripts = html.match(/<script[^>]*>/g) ?? [];
      expect(scripts.length).toBeGreaterThan(0);
      for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
      expect(html).not.toMatch(/\son[a-z]+=|\sstyle=/i);
    }
    const again = await consoleCall("/console/sign-in", { origin: null });
    expect(again.headers.get("content-security-policy")).not.toBe((await consoleCall("/console/sign-in", { origin: null })).headers.get("content-security-policy"));
  });

  it("creates a key from the form with the member's session, shows its secret once, and lists it after", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "developer", "Dev One");
    const res = await consoleCall("/console/keys", { cookie, ...form([["name", "CRM sync"], ["scopes", "verifications:write"], ["scopes", "jobs:read"], ["expires", "30"]]) });
    // POST-redirect-GET: the secret is on the page the form redirects to, by a one-time note (never in the URL).
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toMatch(/^\/console\/keys\?note=note_[A-Za-z0-9_-]+$/);
    const html = await follow(res, cookie);
    const token = /id="new-secret" readonly="" value="(cv_[^"]+)"/.exec(html)?.[1];
    expect(token, html.slice(0, 2000)).toBeDefined();
    const [key] = await db.all<{ name: string; scopes: string; expires_at: number }>(sql`select name, scopes, expires_at from api_keys where account_id = ${accountId} and name = 'CRM sync'`);
    expect(JSON.parse(key!.scopes)).toEqual(["verifications:write", "jobs:read"]);
    expect(key!.expires_at - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const later = await (await consoleCall("/console/keys", { cookie, origin: null })).text();
    expect(later).toContain("CRM sync");
    expect(later).not.toContain(token!);
    // The same URL again (a reload) shows the secret no more, and nothing was made twice.
    expect(await follow(res, cookie)).not.toContain(token!);
    expect(await db.all(sql`select id from api_keys where account_id = ${accountId} and name = 'CRM sync'`)).toHaveLength(1);
    // Another session cannot read the note either (it is sealed with the session's secret, and bound to it).
    const other = await join(accountId, "developer", "Dev Other");
    expect(await follow(res, other.cookie)).not.toContain(token!);
  });

  it("rolls a key from its row: the new secret shown once, the old key working through the overlap; revokes one", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "admin", "Ad Min");
    const created = await consoleCall("/console/keys", { cookie, ...form([["name", "Nightly export"], ["scopes", "jobs:read"], ["expires", "never"]]) });
    const oldToken = /id="new-secret" readonly="" value="(cv_[^"]+)"/.exec(await follow(created, cookie))![1]!;
    const [key] = await db.all<{ id: string }>(sql`select id from api_keys where account_id = ${accountId} and name = 'Nightly export'`);
    const rolled = await follow(await consoleCall(`/console/keys/${key!.id}/roll`, { cookie, method: "POST" }), cookie);
    const newToken = /id="new-secret" readonly="" value="(cv_[^"]+)"/.exec(rolled)?.[1];
    expect(newToken).toBeDefined();
    expect(newToken).not.toBe(oldToken);
    expect(rolled).toContain("The old key keeps working for 24 hours");
    const [old] = await db.all<{ replaced_by: string | null; expires_at: number }>(sql`select replaced_by, expires_at from api_keys where id = ${key!.id}`);
    expect(old!.replaced_by).not.toBeNull();
    expect(old!.expires_at - Date.now()).toBeGreaterThan(23 * 3_600_000);
    const revoked = await consoleCall(`/console/keys/${old!.replaced_by}/revoke`, { cookie, method: "POST" });
    expect(revoked.status).toBe(303);
    expect(await follow(revoked, cookie)).toContain("revoked: it no longer works");
    const [gone] = await db.all<{ revoked_at: number | null }>(sql`select revoked_at from api_keys where id = ${old!.replaced_by}`);
    expect(gone!.revoked_at).not.toBeNull();
  });

  it("shows a viewer no key form, and the API's refusal if the viewer posts one anyway", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "viewer", "Vi Ewer");
    const page = await (await consoleCall("/console/keys", { cookie, origin: null })).text();
    expect(page).not.toContain("Create key");
    const res = await consoleCall("/console/keys", { cookie, ...form([["name", "sneaky"], ["scopes", "jobs:read"]]) });
    const refused = await follow(res, cookie);
    expect(refused).toContain('role="alert"');
    expect(refused).toMatch(/The key was not created: The member(&#39;|')s role \(viewer\) lacks the scope keys:write/);
    expect(await db.all(sql`select id from api_keys where account_id = ${accountId} and name = 'sneaky'`)).toEqual([]);
  });

  it("bounds a form's body before reading it: 413 past 64 KiB, past the jobs API's limit for a list", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "developer", "Dev Four");
    const big = await consoleCall("/console/keys", { cookie, ...form([["name", "x".repeat(70 * 1024)], ["scopes", "jobs:read"]]) });
    expect(big.status).toBe(413);
    const body = new FormData();
    body.set("file", new File(["email\n" + "a@b.test\n".repeat(1_200_000)], "huge.csv", { type: "text/csv" }));
    const list = await consoleCall("/console/lists", { cookie, method: "POST", body });
    expect(list.status).toBe(413);
    expect(await db.all(sql`select id from verification_jobs where account_id = ${accountId}`)).toEqual([]);
  });

  it("refuses a form posted from another site before anything is done", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "owner", "Own Er");
    const res = await consoleCall("/console/keys", { cookie, origin: "https://evil.example", ...form([["name", "evil"], ["scopes", "jobs:read"]]) });
    expect(res.status).toBe(403);
    expect(await db.all(sql`select id from api_keys where account_id = ${accountId} and name = 'evil'`)).toEqual([]);
  });

  it("hands a list posted without script to the jobs API as it is, and opens the job's page", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "developer", "Dev Two");
    const body = new FormData();
    body.set("paste", "not an address\nalso@@not\n");
    body.set("retention_days", "7");
    const res = await consoleCall("/console/lists", { cookie, method: "POST", body });
    expect(res.status).toBe(303);
    const id = /\/console\/lists\/(job_[A-Za-z0-9_-]+)$/.exec(res.headers.get("location") ?? "")?.[1];
    expect(id).toBeDefined();
    const [job] = await db.all<{ total: number; retention_seconds: number; account_id: string }>(sql`select total, retention_seconds, account_id from verification_jobs where id = ${id!}`);
    expect(job).toEqual({ total: 2, retention_seconds: 7 * 86_400, account_id: accountId });
    const page = await (await consoleCall(`/console/lists/${id}`, { cookie, origin: null })).text();
    expect(page).toContain("2 of 2 checked · completed");
    expect(page).toContain("Not a well-formed address");
  });
});

describe("a list sent without script", () => {
  it("goes to the API as the file it is: every column kept, the address column found by the API's rule, named after the file", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "developer", "Dev Five");
    const form = await (await consoleCall("/console/lists", { cookie, origin: null })).text();
    expect(form).toMatch(/<noscript><p class="hint">Without JavaScript there is no preview: the file is sent as it is/);
    const body = new FormData();
    body.set("file", new File(["Name,E-mail address,Company\r\nAda,not an address,Acme\r\nBob,also@@not,Initech\r\n"], "crm export.csv", { type: "text/csv" }));
    body.set("retention_days", "1");
    const res = await consoleCall("/console/lists", { cookie, method: "POST", body });
    expect(res.status).toBe(303);
    const id = /\/console\/lists\/(job_[A-Za-z0-9_-]+)$/.exec(res.headers.get("location") ?? "")![1]!;
    const [job] = await db.all<{ name: string; columns: string; email_column: number }>(sql`select name, columns, email_column from verification_jobs where id = ${id}`);
    expect(job).toEqual({ name: "crm export.csv", columns: JSON.stringify(["Name", "E-mail address", "Company"]), email_column: 1 });
    const page = await (await consoleCall(`/console/lists/${id}`, { cookie, origin: null })).text();
    expect(page).toContain("List “crm export.csv”");
    expect(page).toContain("the column “E-mail address”");
    expect(page).toContain("Name, E-mail address, Company");
  });

  it("is refused, naming its columns, when none holds addresses: no job is made, the form's page says why", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "developer", "Dev Six");
    const body = new FormData();
    body.set("file", new File(["Name,Phone\nAda,555-0100\nBob,555-0101\n"], "people.csv", { type: "text/csv" }));
    const res = await consoleCall("/console/lists", { cookie, method: "POST", body });
    const page = await follow(res, cookie);
    expect(page).toMatch(/role="alert"[^>]*>The list was not accepted: No column of the file looks like email addresses \(columns: “Name”, “Phone”\)/);
    const png = new FormData();
    png.set("file", new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])], "photo.csv", { type: "text/csv" }));
    const refused = await follow(await consoleCall("/console/lists", { cookie, method: "POST", body: png }), cookie);
    expect(refused).toContain("it looks like a PNG image");
    const empty = new FormData();
    empty.set("file", new File([""], "empty.csv", { type: "text/csv" }));
    expect(await follow(await consoleCall("/console/lists", { cookie, method: "POST", body: empty }), cookie)).toContain("The file is empty: it has no lines.");
    expect(await db.all(sql`select id from verification_jobs where account_id = ${accountId}`)).toEqual([]);
  });
});

describe("the console's forms for lists and members", () => {
  it("cancels a list, then deletes its results, through the jobs API, and says so on the list's page", async () => {
    const { accountId } = await newAccount();
    const { cookie } = await join(accountId, "developer", "Dev Three");
    const body = new FormData();
    // The test zone answers for slow.test after 4 s: the job is still running when it is cancelled.
    body.set("paste", "someone@slow.test\nsomeone.else@slow.test\n");
    const created = await consoleCall("/console/lists", { cookie, method: "POST", body });
    const id = /(job_[A-Za-z0-9_-]+)$/.exec(created.headers.get("location") ?? "")![1]!;
    const cancelled = await consoleCall(`/console/lists/${id}/cancel`, { cookie, method: "POST" });
    expect(cancelled.status).toBe(303);
    expect(cancelled.headers.get("location")).toMatch(new RegExp(`^/console/lists/${id}\\?note=`));
    expect(await follow(cancelled, cookie)).toContain("The list was cancelled");
    const [job] = await db.all<{ status: string }>(sql`select status from verification_jobs where id = ${id}`);
    expect(job!.status).toBe("cancelled");
    const deleted = await consoleCall(`/console/lists/${id}/delete`, { cookie, method: "POST" });
    expect(deleted.status).toBe(303);
    const page = await (await consoleCall(deleted.headers.get("location")!, { cookie, origin: null })).text();
    expect(page).toContain("The results were deleted.");
    expect(page).toContain("The results were deleted; the counts above stay.");
    expect(page).not.toContain("Valid only (CSV)");
  });

  it("lets an owner change a member's role and remove them, and tells a developer they may not", async () => {
    const { accountId } = await newAccount();
    const owner = await join(accountId, "owner", "Olga Owner");
    const dev = await join(accountId, "developer", "Dmitri Dev");
    const changed = await consoleCall(`/console/members/${dev.memberId}/role`, { cookie: owner.cookie, ...form([["role", "viewer"]]) });
    expect(await follow(changed, owner.cookie)).toContain("The role was changed.");
    const [row] = await db.all<{ role: string }>(sql`select role from members where id = ${dev.memberId}`);
    expect(row!.role).toBe("viewer");
    // The viewer (as the developer now is) sees no controls and the API refuses the form.
    const viewerPage = await (await consoleCall("/console/members", { cookie: dev.cookie, origin: null })).text();
    expect(viewerPage).not.toContain("Make an invite link");
    const refused = await consoleCall(`/console/members/${owner.memberId}/remove`, { cookie: dev.cookie, method: "POST" });
    expect(await follow(refused, dev.cookie)).toMatch(/role="alert"[^>]*>[^<]*lacks the scope members:write/);
    // Remove first shows what will happen, and which keys the member made, before anything is done.
    const confirm = await (await consoleCall(`/console/members/${dev.memberId}/remove`, { cookie: owner.cookie, origin: null })).text();
    expect(confirm).toContain("Remove Dmitri Dev?");
    expect(confirm).toContain("They made no key that still works.");
    const removed = await consoleCall(`/console/members/${dev.memberId}/remove`, { cookie: owner.cookie, method: "POST" });
    expect(await follow(removed, owner.cookie)).toContain("The member was removed and signed out.");
    // Their session ended with them: the console sends them to sign in.
    const after = await consoleCall("/console/members", { cookie: dev.cookie, origin: null });
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toMatch(/^\/console\/sign-in/);
  });
});
