/**
 * Peak memory of reading a job's upload (POST /v1/email_verification_jobs) at the 10 MiB body limit,
 * through the functions the Worker runs (edge/jobs/verification/input.ts), in Node. Each body is written to a
 * file first; each case then runs in a fresh process that reads the file into one buffer, so the
 * process's peak resident set (VmHWM) read before and after the parse differs by what parsing added
 * at its peak.
 * A Worker isolate is stopped past 128 MB; the old parser built every row first (about 106 MB of
 * heap for 1 MiB of one-cell rows).
 *
 *   npx tsx bench/job-upload.ts [--impl edge/jobs/verification/input.ts]
 *
 * `--impl` measures another copy of input.ts (e.g. an older one from git, saved beside it so its
 * imports resolve), with either signature: (type, text, query) or (type, bytes, query):
 *   git show 9ac4584:edge/jobs/verification/input.ts > edge/jobs/input-before.tmp.ts
 *   npx tsx bench/job-upload.ts --impl edge/jobs/input-before.tmp.ts
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { root } from "./child.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

const MIB = 1024 * 1024;
const BODY_BYTES = 10 * MIB;

export type UploadCase = { name: string; type: string; build: () => Buffer };

/** Fills a buffer of at most 10 MiB with `row(i)` lines (after `header`) until `rows` or the next would not fit. */
function csv(header: string, row: (i: number) => string, rows = Infinity): Buffer {
  const out = Buffer.alloc(BODY_BYTES);
  let at = out.write(header);
  for (let i = 0; i < rows; i++) {
    const line = row(i);
    if (at + Buffer.byteLength(line) > BODY_BYTES) break;
    at += out.write(line, at);
  }
  return out.subarray(0, at);
}

export const UPLOAD_CASES: UploadCase[] = [
  // About 880,000 short rows: far past the row limit, so the parse must stop at row 100,001.
  { name: "CSV, one-cell rows (10 MiB, past the row limit)", type: "text/csv", build: () => csv("email\n", (i) => `u${i}@x.io\n`) },
  // 100,000 rows of 10 columns, about 100 bytes each: a full-size job that is accepted.
  {
    name: "CSV, 100,000 rows of 10 columns (10 MiB)",
    type: "text/csv",
    build: () => csv("name,company,title,city,country,phone,notes,source,owner,email\n", (i) => `${"n".repeat(8)},Acme,CEO,Paris,FR,+33100000000,${"x".repeat(14)},crm,ana,u${i}@example-company.io\n`, 100_000),
  },
  // The same 100,000 addresses, each padded to about 100 bytes, as one JSON body.
  {
    name: "JSON, 100,000 addresses of ~100 bytes (10 MiB)",
    type: "application/json",
    build: () => Buffer.from(JSON.stringify({ email_addresses: Array.from({ length: 100_000 }, (_, i) => `${"a".repeat(80)}.${i}@example.io`) })),
  },
];

/**
 * The child: plain Node running the parser bundled by esbuild, so the baseline is Node's own
 * (about 45 MB) rather than a TypeScript loader's, which would hide the parse's peak. It reads the
 * body file, settles the heap, parses once and prints one JSON line.
 */
const CHILD = `
import { readFileSync } from "node:fs";
const [impl, file, type, takesText] = process.argv.slice(2);
const { parseJobBody } = await import(impl);
const peak = () => Number(/VmHWM:\\s+(\\d+)/.exec(readFileSync("/proc/self/status", "utf8"))[1]);
const body = readFileSync(file);
globalThis.gc();
const before = peak();
const started = performance.now();
let outcome;
try {
  const input = takesText === "1" ? new TextDecoder().decode(body) : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  outcome = (await parseJobBody(type, input, {})).addresses.length + " addresses";
} catch (error) {
  outcome = (error.status ?? "error") + " " + (error.message ?? "");
}
const ms = performance.now() - started;
process.stdout.write(JSON.stringify({ bodyMiB: body.byteLength / 1048576, ms, peakAddedMiB: (peak() - before) / 1024, outcome }) + "\\n");
`;

export type UploadRow = { name: string; bodyMiB: number; ms: number; peakAddedMiB: number; outcome: string };

export async function runJobUpload(opts: { impl?: string; log?: (m: string) => void } = {}): Promise<UploadRow[]> {
  const impl = resolve(root, opts.impl ?? "edge/jobs/verification/input.ts");
  // The older parser took the body as text; the current one takes its bytes.
  const takesText = /parseJobBody\([^)]*text: string/.test(readFileSync(impl, "utf8")) ? "1" : "0";
  const dir = mkdtempSync(join(tmpdir(), "job-upload-"));
  try {
    await build({ entryPoints: [impl], bundle: true, platform: "node", format: "esm", outfile: join(dir, "input.mjs"), logLevel: "error" });
    writeFileSync(join(dir, "child.mjs"), CHILD);
    return UPLOAD_CASES.map((c, i) => {
      opts.log?.(`job upload: ${c.name}`);
      const file = join(dir, `body-${i}`);
      writeFileSync(file, c.build());
      const out = execFileSync(process.execPath, ["--expose-gc", join(dir, "child.mjs"), join(dir, "input.mjs"), file, c.type, takesText], { encoding: "utf8" });
      return { name: c.name, ...(JSON.parse(out.trim().split("\n").at(-1)!) as Omit<UploadRow, "name">) };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function jobUploadMarkdown(rows: UploadRow[]): string {
  return [
    "| Upload | Body | Parse time | Peak memory added | Answer |",
    "|---|---:|---:|---:|---|",
    ...rows.map((r) => `| ${r.name} | ${r.bodyMiB.toFixed(1)} MiB | ${r.ms.toFixed(0)} ms | ${r.peakAddedMiB.toFixed(0)} MiB | ${r.outcome} |`),
  ].join("\n");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({ options: { impl: { type: "string", default: "edge/jobs/verification/input.ts" } } });
  process.stdout.write(`${jobUploadMarkdown(await runJobUpload({ impl: values.impl, log: (m) => process.stderr.write(`${m}\n`) }))}\n`);
}
