import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL("../..", import.meta.url));

// The probe's container image, built by scripts/container-check.sh (podman, as root) and run here against a fixture
// mail server on loopback. Not part of `npm test`: it needs the image, podman and runc (.ci/run provides them).
export default defineConfig({
  test: {
    name: "container",
    root,
    include: ["test/container/**/*.test.ts"],
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
