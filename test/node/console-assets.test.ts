/**
 * The console's committed browser bundles (public/console/assets/*.js) are what scripts/build-console.ts
 * makes from edge/console/browser/: a change to a script, or to the shared syntax check it bundles,
 * without `npm run build:console` fails here. Their size with the stylesheet stays within the issue's
 * 50 KB gzipped (bench/console.ts reports the figure).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { ASSETS_DIR, buildConsoleScripts } from "../../scripts/build-console.ts";

describe("the console's static assets", () => {
  it("are the build of the browser sources as they are now", async () => {
    const built = await buildConsoleScripts(false);
    expect(built.size).toBeGreaterThan(0);
    const stale = [...built].filter(([name, text]) => readFileSync(join(ASSETS_DIR, name), "utf8") !== text).map(([name]) => name);
    expect(stale, "stale bundles: run npm run build:console").toEqual([]);
  });

  it("weigh at most 50 KB gzipped, scripts and stylesheet together", async () => {
    const names = [...(await buildConsoleScripts(false)).keys(), "console.css"];
    const gzipped = names.reduce((sum, name) => sum + gzipSync(readFileSync(join(ASSETS_DIR, name))).byteLength, 0);
    expect(gzipped).toBeLessThanOrEqual(50 * 1024);
  });
});
