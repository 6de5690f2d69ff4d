import { readFile } from "node:fs/promises";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);

describe("the typed client (client/)", () => {
  // client/openapi.json is checked against what the Worker serves in test/workers/client.test.ts.
  it("its committed types are what openapi-typescript generates from the committed document (npm run client:generate)", async () => {
    const doc = JSON.parse(await readFile(new URL("client/openapi.json", root), "utf8"));
    const generated = COMMENT_HEADER + astToString(await openapiTS(doc));
    expect(await readFile(new URL("client/schema.d.ts", root), "utf8")).toBe(generated);
  });
});
