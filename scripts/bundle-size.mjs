// Prints the bundled Worker's raw and gzip sizes and fails when the compressed size exceeds
// Cloudflare's limit for paid plans (10 MiB) or warns above the free plan's 3 MiB.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const dir = process.argv[2] ?? ".wrangler/dry-run";
const files = readdirSync(dir).filter((f) => /\.(m?js|wasm)$/.test(f));
let raw = 0;
let gz = 0;
for (const f of files) {
  const buf = readFileSync(join(dir, f));
  raw += statSync(join(dir, f)).size;
  gz += gzipSync(buf, { level: 9 }).length;
}
const mib = (n) => (n / 1024 / 1024).toFixed(2);
console.log(`worker bundle: ${files.length} file(s), ${mib(raw)} MiB raw, ${mib(gz)} MiB gzip`);
const FREE = 3 * 1024 * 1024;
const PAID = 10 * 1024 * 1024;
if (gz > PAID) {
  console.error(`bundle exceeds Cloudflare's 10 MiB compressed limit`);
  process.exit(1);
}
if (gz > FREE) console.warn(`bundle exceeds the free plan's 3 MiB compressed limit`);
