/**
 * The stall guard (test/stall-guard.ts): a run whose file stops making progress fails within TEST_STALL_SECONDS,
 * naming the file, instead of holding CI until its limit. Runs the real Vitest CLI on a fixture that hangs.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

it("ends a run that stopped making progress with exit code 1, naming the file still running", async () => {
  const started = Date.now();
  const child = spawn(process.execPath, [`${root}/node_modules/vitest/vitest.mjs`, "run", "--config", `${root}/test/fixtures/stall/vitest.config.ts`], {
    cwd: root,
    env: { ...process.env, TEST_STALL_SECONDS: "4", CI: "true" },
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  expect(code, output).toBe(1);
  expect(output).toMatch(/Stalled: no test finished .* for \d+ s \(TEST_STALL_SECONDS=4\); still running: .*hangs\.fixture\.ts/);
  // Well before the hanging test's own hour-long timeout.
  expect(Date.now() - started).toBeLessThan(60_000);
}, 90_000);
