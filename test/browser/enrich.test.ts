/**
 * "Enrich a list" as a person uses it, in Debian's Chromium (docs/console.md "Enrich a list"): a CRM export whose
 * identifier column is not named as one, so the preview asks for it and the person picks it; the repeats, the invalid
 * lines and the most it can cost said before anything is sent; the job's page to done; the download with the person's
 * own columns first; the pages free of WCAG 2.1 AA violations at 1280 and 360 px, and the flow by keyboard alone.
 * With CONSOLE_SCREENSHOTS=dir it saves screenshots there (`npm run docs:screenshots`).
 */
import { readFile } from "node:fs/promises";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeViolations, launchBrowser, pageWithAuthenticator } from "./browser.ts";
import { startConsoleStack, type ConsoleStack } from "./stack.ts";

let stack: ConsoleStack;
let browser: Browser;
let owner: Page;
const shots = process.env.CONSOLE_SCREENSHOTS;

beforeAll(async () => {
  stack = await startConsoleStack();
  browser = await launchBrowser();
  if (shots) mkdirSync(shots, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

async function api(path: string): Promise<Response> {
  return fetch(`${stack.base}${path}`, { headers: { authorization: `Bearer ${stack.demoKey}` } });
}

/** npm start's sample people (scripts/lib/samples.ts), a repeat in other letter case, one nobody, one line with no identifier. */
const EXPORT = ["Name,Team,LinkedIn", "Ada,Engines,ada-lovelace", "Grace,Navy,grace-hopper", "Ada again,Engines,ADA-LOVELACE", "Nobody,None,no-such-person", "Blank,Somewhere,"].join("\n") + "\n";

describe("Enrich a list, in a real browser", () => {
  it("previews the list, asks for the identifier column, says the most it can cost, and enriches it keeping the person's columns", async () => {
    const context = await browser.newContext({ acceptDownloads: true });
    owner = await pageWithAuthenticator(context);
    await owner.goto(stack.ownerLink);
    await owner.getByLabel("Your name").fill("Erin Enricher");
    await owner.getByRole("button", { name: "Make a passkey and join" }).click();
    await owner.waitForURL(`${stack.base}/console`);

    await owner.getByRole("link", { name: "Lists", exact: true }).click();
    await owner.getByRole("heading", { name: "Enrich a list" }).waitFor();
    await owner.getByLabel(/CSV or JSON Lines file of people/).setInputFiles({ name: "crm.csv", mimeType: "text/csv", buffer: Buffer.from(EXPORT) });
    // "LinkedIn" names no identifier: the preview says so and sends nothing until one is picked.
    await owner.getByRole("status").filter({ hasText: "Pick at least one identifier column" }).waitFor();
    expect(await owner.getByRole("button", { name: /Start enriching/ }).isDisabled()).toBe(true);
    await owner.getByLabel("profnet_public_identifier", { exact: true }).selectOption({ label: "LinkedIn" });
    await owner.getByRole("status").filter({ hasText: "Ready: 5 lines, at most 3 credits." }).waitFor();
    const figure = (term: string) => owner.locator("#enrich-figures div", { hasText: term }).locator("dd").innerText();
    expect(await figure("Repeats")).toBe("1");
    expect(await figure("Invalid")).toBe("1");
    expect(await figure("The most it can cost")).toBe("3 credits");
    if (shots) await owner.screenshot({ path: join(shots, "lists-enrich-1280.png"), fullPage: true });
    await owner.getByRole("button", { name: "Start enriching 5 lines" }).click();
    await owner.waitForURL(/\/console\/enrichments\/lkj_/);
    const jobId = /lkj_[A-Za-z0-9_-]+/.exec(owner.url())![0];
    await owner.getByText("5 of 5 looked up · completed").waitFor({ timeout: 60_000 });
    const table = owner.getByRole("table", { name: "Lines by outcome" });
    expect(await table.getByRole("row", { name: /^Found/ }).getByRole("cell").innerText()).toBe("3");
    expect(await table.getByRole("row", { name: /^Not found/ }).getByRole("cell").innerText()).toBe("1");
    await owner.getByText("Credits charged: 2 of at most 3").waitFor();
    if (shots) await owner.screenshot({ path: join(shots, "lists-enrich-job-1280.png"), fullPage: true });

    const download = await Promise.all([owner.waitForEvent("download"), owner.getByRole("link", { name: "All lines, your columns first (CSV)" }).click()]).then(([d]) => d);
    const lines = (await readFile((await download.path())!, "utf8")).trim().split("\r\n");
    expect(lines[0]!.startsWith("Name,Team,LinkedIn,lookup_status,lookup_error,lookup_personal_emails")).toBe(true);
    expect(lines[1]).toContain("Ada,Engines,ada-lovelace,found,,ada.lovelace@gmail.com");
    expect(lines[4]).toContain("Nobody,None,no-such-person,not_found");
    const job = (await (await api(`/v1/lookup_jobs/${jobId}`)).json()) as { counts: { found: number; invalid: number }; input: { columns: Record<string, string> } };
    expect(job.input.columns).toEqual({ profnet_public_identifier: "LinkedIn" });
    expect(job.counts).toMatchObject({ found: 3, invalid: 1 });

    // A CRM's export of names, companies and emails: its columns are guessed as the API guesses them.
    await owner.goto(`${stack.base}/console/lists`);
    const crm = "First Name,Last Name,Company Website,Email Address,Mobile\nGrace,Hopper,navy.example,,\n";
    await owner.getByLabel(/CSV or JSON Lines file of people/).setInputFiles({ name: "crm2.csv", mimeType: "text/csv", buffer: Buffer.from(crm) });
    await owner.getByRole("status").filter({ hasText: "Ready: 1 line" }).waitFor();
    const picked = async (field: string) => owner.getByLabel(field, { exact: true }).evaluate((s: HTMLSelectElement) => s.selectedOptions[0]?.textContent ?? "");
    const guessed: Record<string, string> = {};
    for (const field of ["first_name", "last_name", "company_domain", "email", "phone", "full_name", "profnet_id"]) guessed[field] = await picked(field);
    expect(guessed).toEqual({ first_name: "First Name", last_name: "Last Name", company_domain: "Company Website", email: "Email Address", phone: "Mobile", full_name: "(not read)", profnet_id: "(not read)" });
  });

  it("has no WCAG 2.1 AA violation on the Lists page with its preview and on a job's page, at 1280 and 360 px, nothing scrolling sideways", async () => {
    const jobId = ((await (await api("/v1/lookup_jobs?limit=1")).json()) as { jobs: { id: string }[] }).jobs[0]!.id;
    for (const width of [1280, 360]) {
      await owner.setViewportSize({ width, height: 900 });
      await owner.goto(`${stack.base}/console/lists`);
      await owner.getByLabel(/CSV or JSON Lines file of people/).setInputFiles({ name: "crm.csv", mimeType: "text/csv", buffer: Buffer.from(EXPORT) });
      await owner.getByRole("status").filter({ hasText: "Pick at least one identifier column" }).waitFor();
      for (const path of ["/console/lists", `/console/enrichments/${jobId}`]) {
        if (path !== "/console/lists") await owner.goto(`${stack.base}${path}`);
        expect(await axeViolations(owner), `${path} at ${width} px`).toEqual([]);
        const overflow = await owner.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect(overflow, `${path} at ${width} px scrolls sideways`).toBeLessThanOrEqual(0);
      }
    }
  });

  it("runs the enrich flow with the keyboard alone, at 360 px", async () => {
    await owner.setViewportSize({ width: 360, height: 800 });
    await owner.goto(`${stack.base}/console/lists`);
    const tabTo = async (name: RegExp) => {
      for (let i = 0; i < 80; i++) {
        await owner.keyboard.press("Tab");
        const label = await owner.evaluate(() => {
          const el = document.activeElement as HTMLElement | null;
          return `${el?.getAttribute("aria-label") ?? ""} ${el?.id ?? ""} ${el?.textContent ?? ""}`;
        });
        if (name.test(label)) return;
      }
      throw new Error(`Tab never reached ${name}`);
    };
    await tabTo(/enrich-file/);
    const chooser = owner.waitForEvent("filechooser");
    await owner.keyboard.press("Space");
    await (await chooser).setFiles({ name: "few.csv", mimeType: "text/csv", buffer: Buffer.from("name,profnet_id\nAda,1001\nGrace,1002\n") });
    await owner.getByRole("status").filter({ hasText: "Ready: 2 lines, at most 2 credits." }).waitFor();
    if (shots) await owner.screenshot({ path: join(shots, "lists-enrich-preview-360.png"), fullPage: true });
    await tabTo(/Start enriching 2 lines/);
    await owner.keyboard.press("Enter");
    await owner.waitForURL(/\/console\/enrichments\/lkj_/);
    await owner.getByText("2 of 2 looked up · completed").waitFor({ timeout: 60_000 });
  });
});
