/**
 * The console as a person uses it, in Debian's Chromium (docs/console.md): the owner link, a passkey,
 * a 1,000-line CRM export uploaded, checked and downloaded with its own columns first; a scoped key made (a reload
 * makes no second), used and revoked through its confirmation dialog, by keyboard; a viewer who cannot make keys and
 * whose menu shows only their pages; files refused before upload (no address column, not text, empty), and without
 * script; every page and dialog free of WCAG 2.1 AA violations at desktop and 360 px widths; the list
 * flow by keyboard alone. With CONSOLE_SCREENSHOTS=dir the page tour also saves a screenshot of each
 * page there (`npm run docs:screenshots` writes docs/console/). The tests run in order and share the owner the
 * first one makes (a stack start per file costs seconds; one owner link per start). Over 400 lines for that reason:
 * one stack and one owner for the whole tour, which a split into files would start again for each.
 */
import { readFile } from "node:fs/promises";
import { parse as parseCsv } from "csv-parse/sync";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeViolations, launchBrowser, pageWithAuthenticator } from "./browser.ts";
import { MAIL_DOMAINS, NO_MAIL_DOMAIN, startConsoleStack, type ConsoleStack } from "./stack.ts";

let stack: ConsoleStack;
let browser: Browser;
let owner: Page;

beforeAll(async () => {
  stack = await startConsoleStack();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** The columns the results add after the customer's (edge/jobs/csv-export.ts CSV_COLUMNS). */
const OUR_COLUMNS = ["email", "classification", "valid", "score", "smtp_deliverable", "accepts_any_email", "disposable", "typo_suggestion", "mx_record", "warnings", "reason", "checked_at", "mx_provider"];

/**
 * A 1,000-line export from a CRM: the address in its second column, named "E-mail address"; a company cell holding a
 * comma; every 97th line without its last column; duplicates and malformed addresses. What each line should come out as.
 */
function sampleList(): { csv: string; cells: string[][]; valid: number; duplicates: number; malformed: number } {
  const rows = ["Name,E-mail address,Company"];
  const cells: string[][] = [];
  const existing: string[] = [];
  let valid = 0;
  let duplicates = 0;
  let malformed = 0;
  for (let i = 0; i < 1000; i++) {
    const domain = MAIL_DOMAINS[i % 2]!;
    let email: string;
    if (i % 50 === 7) {
      email = "not an address";
      malformed++;
    } else if (i % 40 === 3 && existing.length > 0) {
      email = existing[i % existing.length]!.replace(/@.*/, (domainPart) => domainPart.toUpperCase()); // an earlier line again, its domain in capitals
      duplicates++;
    } else if (i % 10 === 1) email = `nobody${i}@${domain}`;
    else if (i % 25 === 2) email = `someone${i}@${NO_MAIL_DOMAIN}`;
    else {
      email = `user${i}@${domain}`;
      existing.push(email);
    }
    if (email.startsWith("user")) valid++;
    const short = i % 97 === 5;
    rows.push(short ? `Person ${i},${email}` : `Person ${i},${email},"Company, ${i}"`);
    cells.push([`Person ${i}`, email, short ? "" : `Company, ${i}`]);
  }
  return { csv: rows.join("\n") + "\n", cells, valid, duplicates, malformed };
}

async function api(path: string, token: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${stack.base}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) } });
}

async function joinWithLink(page: Page, link: string, name: string): Promise<void> {
  await page.goto(link);
  expect(await axeViolations(page)).toEqual([]);
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Make a passkey and join" }).click();
  await page.waitForURL(`${stack.base}/console`);
}

describe("the console in a real browser", () => {
  it("serves pages with one nonce CSP, frame-ancestors 'none' and the secure headers; / leads to the console", async () => {
    const res = await fetch(`${stack.base}/console/sign-in`);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    const html = await res.text();
    for (const tag of html.match(/<script[^>]*>/g) ?? []) expect(tag).toContain(`nonce="${nonce}"`);
    expect(html).not.toMatch(/ on[a-z]+="|style="/);
    const root = await fetch(`${stack.base}/`, { redirect: "manual" });
    expect(root.headers.get("location")).toBe("/console");
    const signedOut = await fetch(`${stack.base}/console/keys`, { redirect: "manual" });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toMatch(/^\/console\/sign-in/);
  });

  it("walks the whole flow: owner link, passkey, a 1,000-line CRM export to done, downloaded with its own columns first, a scoped key used and revoked through its dialog", async () => {
    const context = await browser.newContext({ acceptDownloads: true });
    owner = await pageWithAuthenticator(context);
    await joinWithLink(owner, stack.ownerLink, "Olive Owner");
    // The link was for one use.
    const again = await (await browser.newContext()).newPage();
    await again.goto(stack.ownerLink);
    await again.getByLabel("Your name").fill("Mallory");
    await again.getByRole("button", { name: "Make a passkey and join" }).click().catch(() => undefined);
    await again.getByRole("status").filter({ hasText: "The invite was already used. Ask whoever invited you for a new link" }).waitFor();

    // Signing out and in again uses the passkey the owner link made.
    await owner.getByRole("button", { name: "Sign out" }).click();
    await owner.waitForURL(/\/console\/sign-in/);
    await owner.getByRole("button", { name: "Sign in with a passkey" }).click();
    await owner.waitForURL(`${stack.base}/console`);

    const list = sampleList();
    await owner.getByRole("link", { name: "Lists", exact: true }).click();
    await owner.getByLabel(/CSV file/).setInputFiles({ name: "crm-export.csv", mimeType: "text/csv", buffer: Buffer.from(list.csv) });
    await owner.getByRole("status").filter({ hasText: "Ready: 1,000 lines" }).waitFor();
    await owner.getByRole("status").filter({ hasText: "addresses in the column “E-mail address”; every column comes back with the results" }).waitFor();
    expect(await owner.getByLabel("Email address column").inputValue()).toBe("1");
    expect(await owner.getByLabel("Name of the list").inputValue()).toBe("crm-export.csv");
    const figure = (term: string) => owner.locator(".figures div", { hasText: term }).locator("dd").innerText();
    expect(await figure("Duplicates")).toBe(String(list.duplicates));
    expect(await figure("Malformed")).toBe(String(list.malformed));
    expect(await figure("Cost")).toBe("no credits");
    await owner.getByRole("button", { name: "Start verifying 1,000 lines" }).click();
    await owner.waitForURL(/\/console\/lists\/job_/);
    const jobId = /job_[A-Za-z0-9_-]+/.exec(owner.url())![0];
    await owner.getByText("1,000 of 1,000 checked · completed").waitFor({ timeout: 150_000 });

    // Every line back, row for row: the customer's columns in their order, then ours; the file named after the list.
    const everything = await Promise.all([owner.waitForEvent("download"), owner.getByRole("link", { name: "All lines (CSV)", exact: true }).click()]).then(([d]) => d);
    expect(everything.suggestedFilename()).toBe("crm-export-all.csv");
    const [header, ...lines] = parseCsv(await readFile((await everything.path())!, "utf8"), { relax_column_count: false }) as string[][];
    expect(header).toEqual(["Name", "E-mail address", "Company", ...OUR_COLUMNS]);
    expect(lines.map((l) => l.slice(0, 3))).toEqual(list.cells);
    expect(lines.map((l) => l[3])).toEqual(list.cells.map((c) => c[1]));
    const download = await Promise.all([owner.waitForEvent("download"), owner.getByRole("link", { name: "Valid only (CSV)", exact: true }).click()]).then(([d]) => d);
    expect(download.suggestedFilename()).toBe("crm-export-valid.csv");
    const rows = (parseCsv(await readFile((await download.path())!, "utf8")) as string[][]).slice(1);
    expect(new Set(rows.map((r) => r[4]))).toEqual(new Set(["valid"]));
    const job = (await (await api(`/v1/email_verification_jobs/${jobId}`, stack.demoKey)).json()) as { counts: { valid: number; risky: number; invalid: number } };
    expect(rows.length).toBe(job.counts.valid);
    expect(job.counts.valid).toBe(list.valid);
    const table = owner.getByRole("table", { name: "Answered lines by classification" });
    expect(await table.getByRole("row", { name: /Valid/ }).getByRole("cell").innerText()).toBe(job.counts.valid.toLocaleString("en"));
    expect(await table.getByRole("row", { name: /Invalid/ }).getByRole("cell").innerText()).toBe(job.counts.invalid.toLocaleString("en"));

    // A lookup states its cost before it is spent, and spends it once.
    await owner.getByRole("link", { name: "Look up a person" }).click();
    await owner.getByLabel("Look up by").selectOption("profnet_id");
    await owner.getByLabel("Identifier", { exact: true }).fill("1001");
    await owner.getByText("A lookup that finds the person costs 1 credit").waitFor();
    await owner.getByRole("button", { name: "Look up" }).click();
    await owner.getByRole("heading", { name: "Answer" }).waitFor();
    await owner.getByText("ada-lovelace", { exact: true }).waitFor();
    // Each address with how far to trust it.
    const trust = owner.getByRole("region", { name: "How far to trust each address" });
    expect(await trust.getByRole("row").count()).toBeGreaterThan(1);
    expect(await trust.getByRole("cell").filter({ hasText: / of 100 \((high|medium|low)\)$/ }).count()).toBe((await trust.getByRole("row").count()) - 1);
    const account = (await (await api("/v1/account", stack.demoKey)).json()) as { credit_balance: number };
    expect(account.credit_balance).toBe(999);

    await owner.getByRole("link", { name: "Keys" }).click();
    await owner.getByLabel("Name", { exact: true }).fill("CRM sync");
    await owner.getByLabel(/Verify single addresses/).check();
    await owner.getByRole("button", { name: "Create key" }).click();
    const secret = await owner.getByLabel("Secret", { exact: true }).inputValue();
    expect(secret).toMatch(/^cv_/);
    // The form redirected: a reload shows the secret no more and makes no second key.
    const keysBefore = ((await (await api("/v1/keys", stack.demoKey)).json()) as { keys: unknown[] }).keys.length;
    await owner.reload();
    await owner.getByRole("heading", { name: "Keys", level: 1 }).waitFor();
    expect(await owner.getByLabel("Secret", { exact: true }).count()).toBe(0);
    expect(((await (await api("/v1/keys", stack.demoKey)).json()) as { keys: unknown[] }).keys.length).toBe(keysBefore);
    expect((await api(`/v1/email_verifications?email_address=user1@${MAIL_DOMAINS[1]}`, secret)).status).toBe(200);
    const outOfScope = await api("/v1/people?profnet_id=1001", secret);
    expect(outOfScope.status).toBe(403);
    // Revoking asks first, in a dialog worked by the keyboard: it opens on Cancel, Escape closes it and gives the focus back.
    const opener = owner.getByRole("link", { name: "Revoke CRM sync" });
    const dialog = owner.getByRole("dialog", { name: "Revoke the key “CRM sync”?" });
    await opener.focus();
    await owner.keyboard.press("Enter");
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain("Integrations using key CRM sync");
    expect(await owner.evaluate(() => document.activeElement?.textContent?.trim())).toBe("Cancel");
    for (const width of [1280, 360]) {
      await owner.setViewportSize({ width, height: 900 });
      expect(await axeViolations(owner), `the revoke dialog at ${width} px`).toEqual([]);
    }
    await owner.setViewportSize({ width: 1280, height: 900 });
    await owner.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    expect(await owner.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Revoke CRM sync");
    expect((await api(`/v1/email_verifications?email_address=user1@${MAIL_DOMAINS[1]}`, secret)).status).toBe(200);
    await owner.keyboard.press("Enter");
    await dialog.waitFor();
    await owner.keyboard.press("Tab");
    expect(await owner.evaluate(() => document.activeElement?.textContent?.trim())).toBe("Revoke the key");
    await owner.keyboard.press("Enter");
    await owner.getByRole("status").filter({ hasText: "revoked" }).waitFor();
    expect((await api(`/v1/email_verifications?email_address=user1@${MAIL_DOMAINS[1]}`, secret)).status).toBe(401);
  });

  it("spends nothing for an image another site of the same site puts on its page (Sec-Fetch-Site: same-site), and shows no alert text a link carries", async () => {
    const port = new URL(stack.base).port;
    // Another port of localhost is the same site (cookies are not bound to a port, and SameSite=Strict lets the member's
    // cookie ride on a same-site request) but another origin. Its page asks for a person as an image, and for an image of
    // its own, which shows whether the browser sends the member's cookie along on such requests.
    let cookieSeen: string | undefined;
    const evil = createServer((req, res) => {
      if (req.url === "/pixel") {
        cookieSeen = req.headers.cookie;
        res.writeHead(204).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><title>x</title><img id="i" src="http://localhost:${port}/v1/people?profnet_public_identifier=ada-lovelace" alt=""><img id="p" src="/pixel" alt="">`);
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    try {
      const before = ((await (await api("/v1/account", stack.demoKey)).json()) as { credit_balance: number }).credit_balance;
      const usage = async () => ((await (await api("/v1/usage", stack.demoKey)).json()) as { totals: Record<string, number> }).totals;
      const usageBefore = await usage();
      const tab = await owner.context().newPage();
      try {
        // The API's answer reaches the browser (which then withholds a JSON body from an <img>: ERR_BLOCKED_BY_ORB).
        const answered = tab.waitForEvent("requestfailed", (r) => r.url().includes("/v1/people?") && r.failure()?.errorText === "net::ERR_BLOCKED_BY_ORB");
        await tab.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
        await answered;
        await tab.waitForFunction(() => (document.getElementById("p") as HTMLImageElement).complete);
      } finally {
        // The owner's page must have the focus again: WebAuthn ceremonies wait for a focused document.
        await tab.close();
      }
      expect(cookieSeen).toMatch(/(^|; )session=cvs_/);
      expect(((await (await api("/v1/account", stack.demoKey)).json()) as { credit_balance: number }).credit_balance).toBe(before);
      expect(await usage()).toEqual(usageBefore);
    } finally {
      evil.close();
    }
    await owner.goto(`${stack.base}/console/keys?error=${encodeURIComponent("Your account is suspended: call +1 555 0100")}&done=${encodeURIComponent("Verified by support")}`);
    await owner.getByRole("heading", { name: "Keys", level: 1 }).waitFor();
    expect(await owner.locator("main").innerText()).not.toMatch(/suspended|Verified by support/);
  });

  it("shows a viewer no control to make keys, and the API refuses the viewer one (403)", async () => {
    await owner.getByRole("link", { name: "Members" }).click();
    await owner.getByLabel("Invite someone as").selectOption("viewer");
    await owner.getByRole("button", { name: "Make an invite link" }).click();
    const link = await owner.getByLabel("Invite link", { exact: true }).inputValue();
    // A second passkey from the same device is refused by the device itself, and the page says what to do.
    await owner.getByLabel("Name for a new passkey").fill("Same laptop");
    await owner.getByRole("button", { name: "Add a passkey on this device" }).click();
    await owner.getByRole("status").filter({ hasText: "This device already holds a passkey of yours" }).waitFor();
    const viewer = await pageWithAuthenticator(await browser.newContext());
    await joinWithLink(viewer, link, "Vic Viewer");
    // The viewer's menu holds only the pages a viewer can use.
    expect(await viewer.getByRole("navigation", { name: "Console" }).getByRole("link").allInnerTexts()).toEqual(["Overview", "Lists", "Keys", "Members", "Usage"]);
    await viewer.getByRole("link", { name: "Keys" }).click();
    await viewer.getByRole("heading", { name: "Keys", level: 1 }).waitFor();
    expect(await viewer.getByRole("button", { name: "Create key" }).count()).toBe(0);
    const refused = await viewer.evaluate(async () => {
      const res = await fetch("/v1/keys", { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "x", scopes: ["jobs:read"] }) });
      return res.status;
    });
    expect(refused).toBe(403);
  });

  it("has no WCAG 2.1 AA violation on any page, at desktop width and at 360 px, where nothing scrolls sideways", async () => {
    const shots = process.env.CONSOLE_SCREENSHOTS;
    if (shots) mkdirSync(shots, { recursive: true });
    const paths = ["/console", "/console/lists", "/console/check?email=user5%40lists-one.test", "/console/find", "/console/people", "/console/feedback", "/console/keys", "/console/members", "/console/usage", "/console/erasures", "/console/audit"];
    const firstJob = await owner.evaluate(async () => ((await (await fetch("/v1/email_verification_jobs?limit=1")).json()) as { jobs: { id: string }[] }).jobs[0]!.id);
    const activeKey = await owner.evaluate(async () => ((await (await fetch("/v1/keys")).json()) as { keys: { id: string; status: string }[] }).keys.find((k) => k.status === "active")!.id);
    const viewerId = await owner.evaluate(async () => ((await (await fetch("/v1/members")).json()) as { members: { id: string; name: string }[] }).members.find((m) => m.name === "Vic Viewer")!.id);
    // The confirmations as pages (without script) too.
    paths.push(`/console/lists/${firstJob}`, `/console/lists/${firstJob}/delete`, `/console/keys/${activeKey}/revoke`, `/console/members/${viewerId}/remove`, "/console/lists?name=crm");
    for (const width of [1280, 360]) {
      await owner.setViewportSize({ width, height: 900 });
      for (const path of paths) {
        await owner.goto(`${stack.base}${path}`);
        expect(await axeViolations(owner), `${path} at ${width} px`).toEqual([]);
        const overflow = await owner.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect(overflow, `${path} at ${width} px scrolls sideways`).toBeLessThanOrEqual(0);
        if (shots && (width === 1280 || path === "/console/lists")) await owner.screenshot({ path: join(shots, `${path.split("?")[0]!.replace(/^\/console\/?/, "").replace(/job_.*/, "job").replace(/\//g, "-") || "overview"}-${width}.png`), fullPage: true });
      }
      // A list's delete confirmation as a dialog.
      await owner.goto(`${stack.base}/console/lists/${firstJob}`);
      await owner.getByRole("link", { name: "Delete the results now" }).click();
      await owner.getByRole("dialog", { name: /^Delete the results of/ }).waitFor();
      expect(await axeViolations(owner), `the delete dialog at ${width} px`).toEqual([]);
      await owner.getByRole("button", { name: "Cancel" }).click();
      // Removing a member: the dialog, with its choice to revoke their keys.
      await owner.goto(`${stack.base}/console/members`);
      await owner.getByRole("link", { name: "Remove Vic Viewer" }).click();
      await owner.getByRole("dialog", { name: "Remove Vic Viewer?" }).waitFor();
      expect(await axeViolations(owner), `the remove-member dialog at ${width} px`).toEqual([]);
      await owner.getByRole("dialog", { name: "Remove Vic Viewer?" }).getByRole("button", { name: "Cancel" }).click();
    }
    await owner.setViewportSize({ width: 1280, height: 900 });
    await owner.goto(`${stack.base}/console/sign-in`);
    expect(await axeViolations(owner)).toEqual([]);
    if (shots) await owner.screenshot({ path: join(shots, "sign-in-1280.png"), fullPage: true });
    // Fourteen pages and two dialogs at two widths, axe on each: minutes on a loaded machine.
  }, 420_000);

  it("says before uploading what the API would refuse, and sends nothing", async () => {
    await owner.setViewportSize({ width: 1280, height: 900 });
    await owner.goto(`${stack.base}/console/lists`);
    const before = (await (await api("/v1/email_verification_jobs", stack.demoKey)).json()) as { jobs: unknown[] };
    await owner.getByLabel("Or paste addresses, one per line").fill(`email\nada@${MAIL_DOMAINS[0]}\n${"a".repeat(400)}@${MAIL_DOMAINS[0]}\n`);
    await owner.getByRole("status").filter({ hasText: "Line 3 of the list: an address is at most 320 bytes" }).waitFor();
    expect(await owner.getByRole("button", { name: /Start verifying/ }).isDisabled()).toBe(true);
    // A fresh page for the files: clearing the paste box would start a (debounced) read of its own.
    await owner.goto(`${stack.base}/console/lists`);

    const status = owner.getByRole("status");
    const choose = (name: string, buffer: Buffer) => owner.getByLabel(/CSV file/).setInputFiles({ name, mimeType: "text/csv", buffer });
    // A file of names and phone numbers: refused naming its columns, even with a column picked by hand.
    await choose("people.csv", Buffer.from("Name,Phone\nAda,555-0100\nBob,555-0101\nCy,555-0102\n"));
    await status.filter({ hasText: "No column of the file looks like email addresses (columns: “Name”, “Phone”)" }).waitFor();
    expect(await owner.getByRole("button", { name: /Start verifying/ }).isDisabled()).toBe(true);
    await owner.getByLabel("Email address column").selectOption({ label: "Name" });
    await status.filter({ hasText: "The column “Name” holds no email addresses" }).waitFor();
    expect(await owner.getByRole("button", { name: /Start verifying/ }).isDisabled()).toBe(true);
    // An image named .csv: said to be one, with none of its bytes.
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), Buffer.from("IHDR\u0000\u0001\u0002\u0003\u001b[31m,@x.test\n")]);
    await choose("photo.csv", png);
    const said = status.filter({ hasText: "it looks like a PNG image" });
    await said.waitFor();
    expect(await said.innerText()).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufffd]|IHDR/);
    expect(await owner.getByRole("button", { name: /Start verifying/ }).isDisabled()).toBe(true);
    await choose("empty.csv", Buffer.alloc(0));
    await status.filter({ hasText: "The file is empty: it has no lines." }).waitFor();
    // A header and nothing under it: the preview says so rather than "the first 0 of 0".
    await choose("header-only.csv", Buffer.from("Name,Email\n"));
    await owner.getByRole("table", { name: "The file has a header row and no lines below it" }).waitFor();
    expect(await owner.getByRole("button", { name: /Start verifying/ }).isDisabled()).toBe(true);
    const after = (await (await api("/v1/email_verification_jobs", stack.demoKey)).json()) as { jobs: unknown[] };
    expect(after.jobs.length).toBe(before.jobs.length);
  });

  it("without script, hands the file to the API as it is, which refuses a file of names naming its columns", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    await context.addCookies(await owner.context().cookies());
    const page = await context.newPage();
    await page.goto(`${stack.base}/console/lists`);
    // (Playwright's switch stops scripts but still parses <noscript> as a scripting browser would: its words are
    // test/workers/console.test.ts's to check.)
    const before = (await (await api("/v1/email_verification_jobs", stack.demoKey)).json()) as { jobs: unknown[] };
    await page.getByLabel(/CSV file/).setInputFiles({ name: "people.csv", mimeType: "text/csv", buffer: Buffer.from("Name,Phone\nAda,555-0100\n") });
    await page.getByRole("button", { name: /Start verifying/ }).click();
    await page.getByText("The list was not accepted: No column of the file looks like email addresses (columns: “Name”, “Phone”)").waitFor();
    expect(((await (await api("/v1/email_verification_jobs", stack.demoKey)).json()) as { jobs: unknown[] }).jobs.length).toBe(before.jobs.length);
    await context.close();
  });

  it("runs the list flow with the keyboard alone, at 360 px", async () => {
    await owner.setViewportSize({ width: 360, height: 800 });
    await owner.goto(`${stack.base}/console/lists`);
    const tabTo = async (name: RegExp) => {
      for (let i = 0; i < 60; i++) {
        await owner.keyboard.press("Tab");
        const label = await owner.evaluate(() => {
          const el = document.activeElement as HTMLElement | null;
          return `${el?.getAttribute("aria-label") ?? ""} ${el?.id ?? ""} ${el?.textContent ?? ""}`;
        });
        if (name.test(label)) return;
      }
      throw new Error(`Tab never reached ${name}`);
    };
    await tabTo(/\bfile\b/);
    const chooser = owner.waitForEvent("filechooser");
    await owner.keyboard.press("Space");
    await (await chooser).setFiles({ name: "few.csv", mimeType: "text/csv", buffer: Buffer.from(`email,other\nuser1@${MAIL_DOMAINS[0]},x\nuser2@${MAIL_DOMAINS[0]},y\nnobody@${MAIL_DOMAINS[1]},z\n`) });
    await owner.getByRole("status").filter({ hasText: "Ready: 3 lines" }).waitFor();
    if (process.env.CONSOLE_SCREENSHOTS) await owner.screenshot({ path: join(process.env.CONSOLE_SCREENSHOTS, "lists-preview-360.png"), fullPage: true });
    await tabTo(/Start verifying 3 lines/);
    await owner.keyboard.press("Enter");
    await owner.waitForURL(/\/console\/lists\/job_/);
    await owner.getByText("3 of 3 checked · completed").waitFor({ timeout: 60_000 });
  });

  it("takes bounce feedback pasted or uploaded, redirects after the post, and names the line of a bad report", async () => {
    await owner.setViewportSize({ width: 1280, height: 900 });
    await owner.goto(`${stack.base}/console`);
    await owner.getByRole("link", { name: "Bounce feedback" }).click();
    await owner.getByRole("heading", { name: "Bounce feedback", level: 1 }).waitFor();
    const at = new Date(Date.now() - 3_600_000).toISOString();
    await owner.getByLabel("Or paste reports, one per line").fill(`email,outcome,occurred_at,reply\nana@${MAIL_DOMAINS[0]},hard_bounce,${at},"550 5.1.1 user unknown"\nbo@${MAIL_DOMAINS[1]},delivered,${at}\n`);
    await owner.getByRole("button", { name: "Send feedback" }).click();
    await owner.waitForURL(/\/console\/feedback\?note=/);
    await owner.getByRole("status").filter({ hasText: "2 reports received" }).waitFor();
    // POST-redirect-GET: a reload shows the page, not the post again.
    await owner.reload();
    await owner.getByRole("heading", { name: "Bounce feedback", level: 1 }).waitFor();
    expect(await owner.getByText("reports received").count()).toBe(0);

    // A bad line: the whole paste is refused, and the message names the line as the member counts them.
    await owner.getByLabel("Or paste reports, one per line").fill(`ana@${MAIL_DOMAINS[0]},hard_bounce,${at}\nbo@${MAIL_DOMAINS[1]},bounced,${at}\n`);
    await owner.getByRole("button", { name: "Send feedback" }).click();
    await owner.getByRole("alert").filter({ hasText: "Line 2, outcome must be one of" }).waitFor();
    await owner.getByText("Nothing was stored.", { exact: false }).waitFor();
    for (const width of [1280, 360]) {
      await owner.setViewportSize({ width, height: 900 });
      expect(await axeViolations(owner), `feedback with an error at ${width} px`).toEqual([]);
    }

    // Uploaded as a file.
    await owner.setViewportSize({ width: 1280, height: 900 });
    await owner.getByLabel("CSV file").setInputFiles({ name: "bounces.csv", mimeType: "text/csv", buffer: Buffer.from(`cy@${MAIL_DOMAINS[0]},replied,${at}\n`) });
    await owner.getByRole("button", { name: "Send feedback" }).click();
    await owner.getByRole("status").filter({ hasText: "1 report received" }).waitFor();
  });
});
