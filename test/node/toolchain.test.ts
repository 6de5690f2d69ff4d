/**
 * The type checks run on TypeScript 7, the native compiler (the `typescript-7` alias); TypeScript 5.9 stays installed
 * only as the library openapi-typescript (npm run client:generate) and madge's parser call, which need its JavaScript
 * API (TypeScript 7 has none yet: openapi-typescript's peer range is ^5.x, typescript-estree's <6.1.0).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const scripts = (JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { scripts: Record<string, string> }).scripts;

describe("npm run typecheck", () => {
  // Every npm script runs under a supported Node through scripts/node.sh; a chain of commands inside one `sh -c '…'`.
  const launched = /^bash scripts\/node\.sh sh -c '(.*)'$/.exec(scripts.typecheck!);
  const commands = (launched?.[1] ?? scripts.typecheck!).split("&&").map((c) => c.trim());

  it("runs through scripts/node.sh, so a machine's older Node is no obstacle", () => {
    expect(launched).not.toBeNull();
  });

  it("checks every program: the Node side, the Worker side, the console's browser scripts and its browser tests", () => {
    expect(commands.map((c) => c.split(" -p ")[1])).toEqual(["tsconfig.json", "edge/tsconfig.json", "edge/console/browser/tsconfig.json", "test/browser/tsconfig.json"]);
  });

  it.each(commands)("%s runs TypeScript 7", async (command) => {
    const [runner, compiler] = command.split(" ");
    expect(runner).toBe("node");
    const { stdout } = await promisify(execFile)(process.execPath, [compiler!, "--version"], { cwd: root });
    expect(stdout.trim()).toMatch(/^Version 7\./);
  });
});
