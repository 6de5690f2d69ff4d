/**
 * The error reasons (docs/api.md "Error reasons") are one list, shared/api.ts ERROR_REASONS: the Worker's ApiError
 * takes its reason from it (the type checker holds every thrower to it), every reason on the list is one the Worker
 * gives somewhere (no dead word), and the docs' table names each.
 */
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ERROR_REASONS } from "../../shared/api.ts";

const root = new URL("../../", import.meta.url);

describe("error reasons", () => {
  it("every reason on the list is given by the Worker, as a literal in edge/", async () => {
    const files = execFileSync("git", ["ls-files", "edge"], { cwd: root, encoding: "utf8" }).split("\n").filter((f) => /\.tsx?$/.test(f));
    const text = (await Promise.all(files.map((f) => readFile(new URL(f, root), "utf8")))).join("\n");
    expect(ERROR_REASONS.filter((r) => !text.includes(`"${r}"`))).toEqual([]);
  });

  it("docs/api.md's table names each reason, and no other", async () => {
    const doc = await readFile(new URL("docs/api.md", root), "utf8");
    const section = doc.slice(doc.indexOf("### Error reasons"), doc.indexOf("### Authentication"));
    const named = [...section.matchAll(/^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \| \d{3} \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([a-z_]+)`/g)].map((n) => n[1]!));
    expect(named.sort()).toEqual([...ERROR_REASONS].sort());
  });
});
