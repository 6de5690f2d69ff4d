/**
 * The console's "Find an address" page (docs/console.md), server side: the form renders for a role that may look people
 * up and is linked beside the check page; a POST calls GET /v1/email_finder through the member's session and redirects
 * (POST-redirect-GET) to the answer in words, what it cost (X-Credits-Charged) and the domain's free panel; the API's
 * refusals are shown as it says them; a reload shows nothing again and charges nothing. The page in a browser (axe) is
 * test/browser/find.test.ts's.
 */
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { call, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";
import { consoleCall, join, type Joined } from "./console-session.ts";

const html = async (path: string, cookie: string) => {
  const res = await consoleCall(path, { cookie, origin: null });
  expect(res.status, path).toBe(200);
  return res.text();
};

let owner: Joined;
let accountId: string;
let token: string;
const balance = async () => Number((await db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`))[0]!.credit_balance);

/** Posts the form as a browser without script does; the page the redirect leads to. */
async function post(fields: Record<string, string>): Promise<{ location: string; page: string }> {
  const res = await consoleCall("/console/find", { cookie: owner.cookie, method: "POST", body: new URLSearchParams(fields), headers: { "content-type": "application/x-www-form-urlencoded" }, redirect: "manual" });
  expect(res.status).toBe(303);
  const location = res.headers.get("location")!;
  expect(location).toMatch(/^\/console\/find\?note=note_/);
  return { location, page: await html(location, owner.cookie) };
}

beforeAll(async () => {
  ({ accountId, token } = await newAccount(5));
  owner = await join(accountId, "owner", "Fiona Finder");
  // A person we hold at finder.test, whose address follows the domain's {first}.{last} (test/fixtures/test-mail.ts).
  await insertPerson({ ...uniqueIds(), emails: ["ines.faro@finder.test"], names: [{ full: "Inés Faro" }], employment: [{ employer: "Finder Corp", domains: ["finder.test"], current: true }] });
});

describe("Find an address", () => {
  it("renders a labelled form, linked in the menu beside the check page, with a live region for the answer", async () => {
    const page = await html("/console/find", owner.cookie);
    expect(page).toContain("<h1>Find an address</h1>");
    expect(page).toMatch(/href="\/console\/check"[^>]*>Check an address<\/a><\/li><li><a href="\/console\/find" aria-current="page">Find an address<\/a>/);
    expect(page).toContain('<form method="post" action="/console/find">');
    for (const [id, label] of [["find-name", "Full name"], ["find-company", "Company, or its website"], ["find-min", "Minimum confidence (optional)"]]) {
      expect(page).toContain(`<label for="${id}">${label}</label>`);
      expect(page).toContain(`id="${id}"`);
    }
    expect(page).toContain('<div id="find-result" aria-live="polite">');
    expect(page).toContain("A confirmed address costs 1 credit");
    // No inline script or style: the page's only scripts carry the nonce and come from the assets.
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page).not.toMatch(/\sstyle=/);
  });

  it("finds a person we hold: the address, its confidence, the method in words, charged 1 credit, the evidence, and the domain's panel; a reload shows nothing and charges nothing", async () => {
    const before = await balance();
    const { location, page } = await post({ full_name: "Ines Faro", company: "https://www.finder.test/", min_confidence: "" });
    expect(location).not.toContain("ines");
    expect(page).toContain('<h2 id="found">ines.faro@finder.test</h2>');
    expect(page).toMatch(/Confidence \d+ of 100 \((high|medium|low)\)/);
    expect(page).toContain("Known to us: an address we hold for this person at the domain");
    expect(page).toContain("charged 1 credit");
    expect(page).toContain('<th scope="row">Pattern</th><td>{first}.{last}</td>');
    // (The test files share one database: other files' people at finder.test count too.)
    expect(page).toMatch(/<th scope="row">Known addresses that follow it<\/th><td>\d+ of \d+ read at the domain<\/td>/);
    // The form keeps what was asked; the domain's free panel, with its pattern and share.
    expect(page).toContain('value="Ines Faro"');
    expect(page).toContain('<h2 id="domain-facts">What finder.test looks like</h2>');
    expect(page).toMatch(/<td>\{first\}\.\{last\}<\/td><td>\d+ %<\/td>/);
    expect(await balance()).toBe(before - 1);
    const reload = await html(location, owner.cookie);
    expect(reload).not.toContain("ines.faro@finder.test");
    expect(await balance()).toBe(before - 1);
    // The same find again within 30 days is free, and says why.
    const again = await post({ full_name: "Ines Faro", company: "finder.test" });
    expect(again.page).toContain("ines.faro@finder.test");
    expect(again.page).toContain("free: you were charged for this find in the past 30 days");
    expect(await balance()).toBe(before - 1);
  });

  it("shows the API's refusals as it says them, and charges nothing", async () => {
    const before = await balance();
    const noName = await post({ full_name: "", company: "finder.test" });
    expect(noName.page).toMatch(/<p role="alert" class="error">Give full_name, or first_name and last_name[^<]*<\/p>/);
    expect(noName.page).not.toContain('id="domain-facts"');
    const webmail = await post({ full_name: "Ana Lopez", company: "gmail.com" });
    expect(webmail.page).toContain('role="alert"');
    expect(webmail.page).not.toContain('id="found"');
    const range = await post({ full_name: "Ana Lopez", company: "finder.test", min_confidence: "101" });
    expect(range.page).toContain('role="alert"');
    expect(range.page).toContain("min_confidence");
    // What holds no dot is a company name: one we know nothing of is the API's 422.
    const company = await post({ full_name: "Ana Lopez", company: "No Such Company Anywhere" });
    expect(company.page).toContain('role="alert"');
    expect(await balance()).toBe(before);
  });

  it("says a find still checking is still checking, with a button that repeats it, until the API's answer", async () => {
    // slow-console.test's mail server answers after 1.2 s (test/fixtures/test-mail.ts); a find the API is still checking
    // (started here with max_duration=1) answers the same find at once with a 202.
    await insertPerson({ ...uniqueIds(), emails: ["bo.slow@slow-console.test"], names: [{ full: "Bo Slow" }], employment: [{ employer: "Slow Co", domains: ["slow-console.test"], current: true }] });
    const started = await call(`/v1/email_finder?${new URLSearchParams({ full_name: "Cy Slow", domain: "slow-console.test", max_duration: "1" })}`, { token });
    expect(started.status).toBe(202);
    const before = await balance();
    const asked = { full_name: "Cy Slow", company: "slow-console.test", min_confidence: "" };
    let { page } = await post(asked);
    expect(page).toContain('<h2 id="pending">Still checking</h2>');
    expect(page).toContain("try again in a few seconds");
    const repeat = /<section aria-labelledby="pending">[\s\S]*?<\/section>/.exec(page)![0];
    expect(repeat).toContain('<form method="post" action="/console/find"><input type="hidden" name="full_name" value="Cy Slow"/><input type="hidden" name="company" value="slow-console.test"/>');
    expect(repeat).toContain('<button type="submit">Try again</button>');
    // Its domain's panel is shown meanwhile.
    expect(page).toContain("What slow-console.test looks like");
    for (let i = 0; i < 40 && page.includes('id="pending"'); i++) {
      await new Promise((r) => setTimeout(r, 300));
      ({ page } = await post(asked));
    }
    // The mail server accepted the address made from the pattern, and refuses those it does not know: charged.
    expect(page).toContain('<h2 id="found">cy.slow@slow-console.test</h2>');
    expect(page).toContain("Accepted by the mail server, which refuses addresses it does not know");
    expect(page).toContain("charged 1 credit");
    expect(await balance()).toBe(before - 1);
    // A name the server does not know there: the API's 404, in its words, and nothing charged.
    let miss = (await post({ ...asked, full_name: "Di Slow" })).page;
    for (let i = 0; i < 40 && miss.includes('id="pending"'); i++) {
      await new Promise((r) => setTimeout(r, 300));
      miss = (await post({ ...asked, full_name: "Di Slow" })).page;
    }
    expect(miss).toContain('<p role="alert" class="error">No address found for this person at this domain.</p>');
    expect(await balance()).toBe(before - 1);
  }, 30_000);

  it("is not for a role that may not look people up", async () => {
    const viewer = await join(accountId, "viewer", "Vic Viewer");
    const page = await html("/console/find", viewer.cookie);
    expect(page).toContain("Your role cannot find addresses.");
    expect(page).not.toContain('href="/console/find"');
  });
});
