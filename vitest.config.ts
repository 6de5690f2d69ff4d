import { defineConfig } from "vitest/config";

// Two projects: Node-side code (libSQL server, probe, CLI, pure functions) and the Worker, which
// runs inside workerd through @cloudflare/vitest-pool-workers (test/workers/vitest.config.ts).
export default defineConfig({
  test: {
    // Two files at once (Vitest's default on a 2-core machine is one): the Worker's files, one at a time among
    // themselves, run beside the Node side's, most of whose time is spent waiting on servers and processes.
    maxWorkers: 2,
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
