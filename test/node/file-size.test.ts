/**
 * No source file over 400 lines without a reason written at its top (issue 27): a file that long says why in its
 * first comment ("400 lines" and the reason), so growing past it is a decision, not an accident.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const DIRECTORIES = ["edge", "probe", "shared", "scripts", "bench", "test", "client"];
const SOURCE = /\.(ts|tsx|mts|mjs)$/;
const LIMIT = 400;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) return [];
    if (statSync(path).isDirectory()) return sources(path);
    return SOURCE.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

describe("long files say why", () => {
  const long = DIRECTORIES.flatMap((d) => sources(join(root, d)))
    .map((path) => ({ path: relative(root, path), lines: readFileSync(path, "utf8").split("\n") }))
    .filter((f) => f.lines.length > LIMIT);

  it("finds the long files (the scan itself works)", () => {
    expect(long.length).toBeGreaterThan(0);
  });

  it.each(long.map((f) => [f.path, f] as const))("%s gives its reason at its top", (_path, f) => {
    expect(f.lines.slice(0, 40).join("\n")).toMatch(/400 lines/i);
  });
});
