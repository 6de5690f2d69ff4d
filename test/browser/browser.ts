/**
 * Debian's Chromium driven by playwright-core (no browser download: .ci/run installs the `chromium`
 * package). CHROMIUM_PATH overrides where the binary is; by default the package's own binary, not its
 * launcher script. A virtual WebAuthn authenticator (Chrome DevTools Protocol) stands in for a
 * person's device: it makes and uses real passkeys, verified by the API as any other.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import AxeBuilder from "@axe-core/playwright";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/lib/chromium/chromium";

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`No Chromium at ${CHROMIUM_PATH}: apt-get install chromium (or set CHROMIUM_PATH)`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** A page whose browser has a platform authenticator holding resident, user-verified passkeys. */
export async function pageWithAuthenticator(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  // File choosers are intercepted for the page's whole life. Playwright turns interception on when the first
  // "filechooser" listener is added, without waiting for it, so a waitForEvent("filechooser") made just before a key
  // press could lose the race under load: the press opened no chooser Playwright saw (CI: 30 s timeout).
  page.on("filechooser", () => {});
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return page;
}

/** WCAG 2.1 A and AA violations axe-core finds on the page as it is now, as "rule: target" lines. */
export async function axeViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return result.violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(" ")} (${v.help})`));
}
