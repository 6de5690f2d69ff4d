import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";
import { TEST_FEEDBACK_HASH_KEY, TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

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
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
