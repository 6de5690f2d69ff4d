/**
 * The probe as one self-contained ES module file (esbuild): `node probe/build.mjs OUTFILE`, used by
 * `npm run build:probe`, probe/Dockerfile and the benchmarks. The banner gives the bundle a `require`, so
 * that CommonJS dependencies which require Node's own modules (prom-client) work inside an ES module.
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

export const PROBE_BUNDLE_BANNER = 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);';

/** Bundles `entry` (probe/main.ts by default) into `outfile`. */
export async function buildProbe(outfile, { entry = fileURLToPath(new URL("./main.ts", import.meta.url)), nodePaths = [], logLevel = "info" } = {}) {
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    outfile,
    nodePaths,
    banner: { js: PROBE_BUNDLE_BANNER },
    logLevel,
  });
  return outfile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outfile = process.argv[2];
  if (!outfile) {
    console.error("usage: node probe/build.mjs OUTFILE");
    process.exit(2);
  }
  await buildProbe(outfile);
}
