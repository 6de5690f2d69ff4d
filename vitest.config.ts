import { defineConfig } from "vitest/config";

// Two projects: Node-side code (libSQL server, probe, CLI, pure functions) and the Worker, which
// runs inside workerd through @cloudflare/vitest-pool-workers (test/workers/vitest.config.ts).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "node",
          include: ["test/node/**/*.test.ts"],
          environment: "node",
          testTimeout: 20_000,
          hookTimeout: 30_000,
        },
      },
      "test/workers/vitest.config.ts",
    ],
  },
});
