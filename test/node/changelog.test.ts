import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { API_VERSION } from "../../shared/api.ts";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFile(new URL(path, root), "utf8");

describe("CHANGELOG.md", () => {
  it("its latest release is the OpenAPI document's info.version (API_VERSION), and every release says what breaks", async () => {
    const changelog = await read("CHANGELOG.md");
    const releases = [...changelog.matchAll(/^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$/gm)].map((m) => m[1]!);
    expect(releases[0]).toBe(API_VERSION);
    expect(releases.at(-1)).toBe("1.0.0");
    // Newest first, each version higher than the one below it.
    const key = (v: string) => v.split(".").map(Number).reduce((n, part) => n * 1000 + part, 0);
    for (let i = 1; i < releases.length; i++) expect(key(releases[i - 1]!)).toBeGreaterThan(key(releases[i]!));
    const sections = changelog.split(/^## \[/m).slice(1);
    for (const section of sections) expect(section, section.slice(0, 20)).toMatch(/Breaking: /);
    const doc = JSON.parse(await read("client/openapi.json")) as { info: { version: string } };
    expect(doc.info.version).toBe(API_VERSION);
  });

  it("names every operation and webhook of the OpenAPI document", async () => {
    const changelog = await read("CHANGELOG.md");
    const doc = JSON.parse(await read("client/openapi.json")) as { paths: Record<string, Record<string, { operationId: string }>>; webhooks: Record<string, unknown> };
    const names = [...Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId)), ...Object.keys(doc.webhooks)];
    for (const name of names) expect(changelog, name).toContain(`\`${name}\``);
    // The contract's history: GET /people and its codehost parameters and properties.
    expect(changelog).toMatch(/`codehost_id` and `codehost_login` query parameters on `GET \/v1\/people`/);
  });
});
