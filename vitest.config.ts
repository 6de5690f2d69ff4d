import { defineConfig } from "vitest/config";

// Two projects: Node-side code (libSQL server, probe, CLI, pure functions) and the Worker, which
// runs inside workerd through @cloudflare/vitest-pool-workers (test/workers/vitest.config.ts).
//
// Two test files at a time, on any machine: Vitest's default on a 2-core CI runner is one. The Worker's files still
// run one at a time among themselves (fileParallelism: false there); the Node side's, mostly waiting on child processes
// (the admin CLI) and loopback servers, run two by two. Tests that start child processes give them a budget that
// does not depend on the machine's load (CLI_TEST_TIMEOUT).
export default defineConfig({
  test: {
    maxWorkers: 2,
    // A run that stops making progress fails within TEST_STALL_SECONDS, naming the file (test/stall-guard.ts).
    reporters: ["default", "./test/stall-guard.ts"],
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
