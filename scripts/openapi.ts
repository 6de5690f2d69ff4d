/**
 * Writes the OpenAPI document the Worker serves at /v1/openapi.json, from the same app in Node, to a
 * file (or stdout): what `.ci/run` lints with @redocly/cli and what client/ is generated from.
 *
 *   node --import tsx scripts/openapi.ts [--out client/openapi.json]
 */
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { createApp } from "../edge/app.ts";

const { values } = parseArgs({ options: { out: { type: "string" } } });
// The app's access log goes to the console: keep it off the document's way.
console.info = () => {};
const res = await createApp().request("/v1/openapi.json");
if (res.status !== 200) throw new Error(`/v1/openapi.json answered ${res.status}`);
const text = `${JSON.stringify(await res.json(), null, 2)}\n`;
if (values.out) await writeFile(values.out, text);
else process.stdout.write(text);
