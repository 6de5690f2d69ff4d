/**
 * Builds the console's browser scripts (edge/console/browser/*.ts) into public/console/assets/, which
 * Workers static assets serve ([assets] in wrangler.toml). The output is committed, so `wrangler dev`,
 * deploys and the tests serve it without a build step; test/node/console-assets.test.ts fails when it
 * is stale. `npm run build:console` rebuilds it; `--check` only compares.
 */
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
export const CONSOLE_ENTRIES = ["console", "lists", "list-worker", "passkeys", "enrich", "enrich-worker"] as const;
export const ASSETS_DIR = join(root, "public/console/assets");

/** The bundles as they should be: name -> text. */
export async function buildConsoleScripts(write: boolean): Promise<Map<string, string>> {
  const result = await build({
    entryPoints: CONSOLE_ENTRIES.map((name) => join(root, `edge/console/browser/${name}.ts`)),
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: ["chrome120", "firefox120", "safari17"],
    outdir: ASSETS_DIR,
    // The API's syntax check uses tr46 for IDNA; the browser's URL parser does the same processing.
    // The lookup inputs' phone check uses libphonenumber-js; the preview's counts need only its bounds (phone-browser.ts).
    alias: { tr46: join(root, "edge/console/browser/tr46-browser.ts"), "libphonenumber-js/min": join(root, "edge/console/browser/phone-browser.ts") },
    legalComments: "none",
    write,
    logLevel: "warning",
  });
  return new Map(result.outputFiles?.map((f) => [f.path.slice(ASSETS_DIR.length + 1), f.text]) ?? CONSOLE_ENTRIES.map((n) => [`${n}.js`, readFileSync(join(ASSETS_DIR, `${n}.js`), "utf8")]));
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  const check = process.argv.includes("--check");
  const built = await buildConsoleScripts(!check);
  if (check) {
    const stale = [...built].filter(([name, text]) => {
      try {
        return readFileSync(join(ASSETS_DIR, name), "utf8") !== text;
      } catch {
        return true;
      }
    });
    if (stale.length > 0) {
      console.error(`stale: ${stale.map(([n]) => n).join(", ")}; run npm run build:console`);
      process.exit(1);
    }
  }
  for (const [name, text] of built) console.log(`${name}: ${text.length} bytes`);
}
