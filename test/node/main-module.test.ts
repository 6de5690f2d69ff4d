/**
 * A script runs when started from a path with a space in it or through a symlink (scripts/lib/main-module.ts): before,
 * `npm run verify-list` there exited 0 having done nothing.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { isMainModule } from "../../scripts/lib/main-module.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "main module "));
const run = promisify(execFile);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs node with tsx and `args`, whatever its exit status. */
async function node(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", ...args], { cwd: root });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("isMainModule", () => {
  it("is true in the script started from a path with a space, false in a module it imports", async () => {
    const helper = pathToFileURL(join(root, "scripts/lib/main-module.ts")).href;
    writeFileSync(join(dir, "lib.ts"), `import { isMainModule } from ${JSON.stringify(helper)};\nexport const libIsMain = isMainModule(import.meta.url);\n`);
    writeFileSync(join(dir, "main script.ts"), `import { isMainModule } from ${JSON.stringify(helper)};\nimport { libIsMain } from "./lib.ts";\nconsole.log(JSON.stringify([isMainModule(import.meta.url), libIsMain]));\n`);
    const { code, stdout } = await node([join(dir, "main script.ts")]);
    expect([code, JSON.parse(stdout)]).toEqual([0, [true, false]]);
  });

  it("is false with no script (a REPL, node -e)", () => {
    expect(isMainModule(import.meta.url, undefined)).toBe(false);
  });

  it("npm run verify-list reached through a path with a space still runs: no arguments is a usage error, exit 2", async () => {
    const link = join(dir, "the checkout");
    symlinkSync(root, link);
    const { code, stderr } = await node([join(link, "scripts/verify-list.ts")]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^verify-list: /);
  });
});
