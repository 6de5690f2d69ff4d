import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL("../..", import.meta.url));

// The interop suite runs real Debian daemons (Postfix on 127.0.0.x:25, unbound + dnsdist), so it
// is not part of `npm test`: run it with `npm run test:interop` as root (see .ci/run). Files run
// one after another because Postfix instances take fixed loopback addresses on port 25.
export default defineConfig({
  test: {
    name: "interop",
    root,
    include: ["test/interop/**/*.test.ts"],
    environment: "node",
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
