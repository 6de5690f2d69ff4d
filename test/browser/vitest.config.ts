import { defineConfig } from "vitest/config";

// The console in a real browser (`npm run test:browser`, run by .ci/run after `npm test`): one file at a
// time, each starting its own stack as `npm start` does.
export default defineConfig({
  test: {
    name: "browser",
    include: ["test/browser/**/*.test.ts"],
    environment: "node",
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
