import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

// The packages pre-bundled once by Vite's SSR dependency optimizer (esbuild, as wrangler bundles them for a deploy)
// instead of fetched into workerd module by module for every test file: half of each file's import time (6 files:
// 26.5 s of import before, 15.5 s after). Every entry of a package the Worker or its tests import is listed, found by
// reading the sources: an entry left out would load a second copy of the package's internals beside the bundle's
// (hono's route helper then misses the router's state, and every request is a 500).
// (csv-parse is not: its stream API imports "stream", which only workerd's nodejs_compat provides.)
const BUNDLED = /^(hono|@hono\/zod-openapi|zod|drizzle-orm|@simplewebauthn\/server|@libsql\/client|dns-packet|ipaddr\.js|tr46)(\/|$)/;
function bundledEntries(): string[] {
  // hono's main entry, which @hono/zod-openapi imports; JSX compiles to imports of the runtimes (tsconfig.base.json:
  // jsxImportSource hono/jsx).
  const entries = new Set(["hono", "hono/jsx/jsx-runtime", "hono/jsx/jsx-dev-runtime"]);
  for (const dir of ["edge", "shared", "test/workers", "test/fixtures"]) {
    for (const file of readdirSync(`${root}/${dir}`, { recursive: true, encoding: "utf8" })) {
      if (!/\.tsx?$/.test(file)) continue;
      // Static imports and re-exports (not `import type`: erased) and dynamic import("...").
      const source = readFileSync(`${root}/${dir}/${file}`, "utf8");
      const found = [...source.matchAll(/^\s*(?:import|export)(?!\s+type\s)[^;]*?from\s*"([^"]+)"/gm), ...source.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)];
      for (const [, entry] of found) if (BUNDLED.test(entry!)) entries.add(entry!);
    }
  }
  return [...entries].sort();
}

// Route tests run inside workerd. The global setup (Node) starts the real servers the Worker talks
// to over loopback — the libSQL HTTP server and the DoH fixture — and hands their URLs in.
export default defineProject({
  plugins: [
    cloudflareTest(({ inject }) => ({
      main: `${root}/edge/index.ts`,
      wrangler: { configPath: `${root}/wrangler.toml` },
      miniflare: {
        bindings: {
          DATABASE_URL: inject("databaseUrl"),
          DATABASE_AUTH_TOKEN: inject("databaseAuthToken"),
          DOH_URL: inject("dohUrl"),
          PROBE_URL: inject("probeUrl"),
          PROBE_SECRET: inject("probeSecret"),
          LOOKUP_COST: "1",
          // Callbacks go to the receiver on loopback; a temporary answer is asked about again after 1 s.
          CALLBACK_ALLOW_PRIVATE_TARGETS: "true",
          JOB_RETRY_DELAY_SECONDS: "1",
          WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
          FEEDBACK_HASH_KEY: TEST_FEEDBACK_HASH_KEY,
          // Every file shares one database: the cron re-verifies stored addresses only where a test asks it to
          // (test/workers/personal-data-cron.test.ts), so other files' cron runs do not start refresh jobs that take turns.
          EMAIL_REFRESH_BATCH: "0",
        },
      },
    })),
  ],
  test: {
    name: "workers",
    root,
    include: ["test/workers/**/*.test.ts"],
    globalSetup: [`${root}/test/workers/global-setup.ts`],
    // One file at a time: bulk turns go to whichever account's job is due (edge/jobs/fair-share.ts),
    // and every file shares one database, so two files' jobs would trade turns and leases.
    fileParallelism: false,
    deps: { optimizer: { ssr: { enabled: true, include: bundledEntries() } } },
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Console output goes straight to the terminal, not through Vitest's interceptor: a log line written from a queue
    // handler's I/O context while the test's own context awaits parks the interceptor's flush, and the file then hangs
    // at its end with every test passed (cloudflare/workers-sdk issues 15498 and 15719).
    disableConsoleIntercept: true,
  },
});
