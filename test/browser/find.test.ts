/**
 * "Find an address" as a person uses it, in Debian's Chromium (docs/console.md "Find an address"): a name and a
 * website, the answer with what it cost and the domain's panel, a refusal in the API's words, the page free of WCAG
 * 2.1 AA violations at 1280 and 360 px with nothing scrolling sideways; and a file of names beside companies previewed
 * by "Enrich a list" with its columns guessed. With CONSOLE_SCREENSHOTS=dir it saves a screenshot there.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeViolations, launchBrowser, pageWithAuthenticator } from "./browser.ts";
import { FINDER_DOMAIN, startConsoleStack, type ConsoleStack } from "./stack.ts";

let stack: ConsoleStack;
let browser: Browser;
let owner: Page;
const shots = process.env.CONSOLE_SCREENSHOTS;

beforeAll(async () => {
  stack = await startConsoleStack();
  browser = await launchBrowser();
  if (shots) mkdirSync(shots, { recursive: true });
  owner = await pageWithAuthenticator(await browser.newContext());
  await owner.goto(stack.ownerLink);
  await owner.getByLabel("Your name").fill("Fay Finder");
  await owner.getByRole("button", { name: "Make a passkey and join" }).click();
  await owner.waitForURL(`${stack.base}/console`);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const balance = async () =>
  ((await (await fetch(`${stack.base}/v1/account`, { headers: { authorization: `Bearer ${stack.demoKey}` } })).json()) as { credit_balance: number }).credit_balance;

describe("Find an address, in a real browser", () => {
  it("finds a person we hold from a name and a website, says what it cost, shows the domain's panel, and a refusal in the API's words", async () => {
    await owner.getByRole("link", { name: "Find an address" }).click();
    await owner.getByRole("heading", { name: "Find an address", level: 1 }).waitFor();
    const before = await balance();
    await owner.getByLabel("Full name").fill("Ada Lovelace");
    await owner.getByLabel("Company, or its website").fill(`https://www.${FINDER_DOMAIN}/`);
    await owner.getByRole("button", { name: "Find", exact: true }).click();
    await owner.getByRole("heading", { name: `ada@${FINDER_DOMAIN}` }).waitFor();
    const answer = owner.getByRole("table", { name: "How it was found" });
    expect(await answer.getByRole("row", { name: /^How/ }).getByRole("cell").innerText()).toBe("Known to us: an address we hold for this person at the domain");
    expect(await answer.getByRole("row", { name: /^Cost/ }).getByRole("cell").innerText()).toBe("charged 1 credit");
    expect(await balance()).toBe(before - 1);
    await owner.getByRole("heading", { name: `What ${FINDER_DOMAIN} looks like` }).waitFor();
    expect(await owner.locator("#find-result").getAttribute("aria-live")).toBe("polite");
    // The form keeps what was asked, so the same find is one click away.
    expect(await owner.getByLabel("Full name").inputValue()).toBe("Ada Lovelace");
    if (shots) await owner.screenshot({ path: join(shots, "find-1280.png"), fullPage: true });

    for (const width of [1280, 360]) {
      await owner.setViewportSize({ width, height: 900 });
      expect(await axeViolations(owner), `the answer at ${width} px`).toEqual([]);
      const overflow = await owner.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, `the answer at ${width} px scrolls sideways`).toBeLessThanOrEqual(0);
    }
    await owner.setViewportSize({ width: 1280, height: 900 });

    await owner.getByLabel("Company, or its website").fill("gmail.com");
    await owner.getByRole("button", { name: "Find", exact: true }).click();
    await owner.getByRole("alert").filter({ hasText: "The domain is a webmail provider's" }).waitFor();
    expect(await owner.getByRole("heading", { name: `ada@${FINDER_DOMAIN}` }).count()).toBe(0);
    expect(await axeViolations(owner), "a refusal").toEqual([]);
    expect(await balance()).toBe(before - 1);
  });

  it("previews a file of names beside companies in Enrich a list, with the name and company columns guessed", async () => {
    await owner.goto(`${stack.base}/console/lists`);
    const picked = async (field: string) => owner.getByLabel(field, { exact: true }).evaluate((s: HTMLSelectElement) => s.selectedOptions[0]?.textContent ?? "");
    for (const [file, expected] of [
      ["Full name,Company\nGrace Hopper,US Navy\nAda Lovelace,Analytical Engine Ltd\n", { full_name: "Full name", company: "Company", company_domain: "(not read)" }],
      ["First name,Last name,Website\nGrace,Hopper,navy.example\nAda,Lovelace,analytical-engine.example\n", { first_name: "First name", last_name: "Last name", company_domain: "Website", full_name: "(not read)" }],
    ] as const) {
      await owner.getByLabel(/CSV or JSON Lines file of people/).setInputFiles({ name: "names.csv", mimeType: "text/csv", buffer: Buffer.from(file) });
      await owner.getByRole("status").filter({ hasText: "Ready: 2 lines" }).waitFor();
      const guessed: Record<string, string> = {};
      for (const field of Object.keys(expected)) guessed[field] = await picked(field);
      expect(guessed).toEqual(expected);
      expect(await owner.getByRole("button", { name: /Start enriching 2 lines/ }).isDisabled()).toBe(false);
    }
  });
});
