/**
 * The probe as the benchmarks run it: as it ships (the esbuild bundle, plain Node, in its own
 * process so its peak RSS is its own), optionally built from an earlier commit to compare with the
 * code as it was; signed requests to it; and its peak RSS from /proc.
 */
import { createHmac, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
// @ts-expect-error: a plain ES module without types, shared with the Dockerfile and npm run build:probe
import { buildProbe } from "../probe/build.mjs";
import { PROBE_PATH, ProbeResponse, probeOrigin, signProbeRequest, type ProbeRequest } from "../shared/probe-contract.ts";
import { freePortOn } from "../test/fixtures/smtp-servers.ts";
import { root, startChild } from "./child.ts";

/** A fresh secret per run, as `npm start` makes one. */
export const BENCH_PROBE_SECRET = randomBytes(32).toString("base64url");

/**
 * Bundles probe/main.ts into `dir`. With `revision`, the probe and shared code of that commit
 * (git archive), bundled against today's node_modules.
 */
export async function buildProbeBundle(dir: string, revision?: string): Promise<string> {
  let source = root;
  if (revision) {
    source = join(dir, `src-${revision}`);
    await mkdir(source, { recursive: true });
    execFileSync("sh", ["-c", `git -C "$1" archive "$2" probe shared edge/mx | tar -x -C "$3"`, "sh", root, revision, source]);
  }
  const outfile = join(dir, `probe-${revision ?? "current"}.mjs`);
  return buildProbe(outfile, { entry: join(source, "probe/main.ts"), nodePaths: [join(root, "node_modules")], logLevel: "silent" });
}

export async function startProbeProcess(bundle: string, smtpPort: number, extraEnv: Record<string, string> = {}) {
  const port = await freePortOn(["127.0.0.1"]);
  const { child } = await startChild(process.execPath, [bundle], {
    env: {
      PORT: String(port),
      PROBE_LISTEN_HOST: "127.0.0.1",
      PROBE_SECRET: BENCH_PROBE_SECRET,
      PROBE_HELO_NAME: "probe1.bench.example",
      PROBE_SMTP_PORT: String(smtpPort),
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      // Several bench probes may run at once: none takes the metrics port.
      PROBE_METRICS_LISTEN: "off",
      ...extraEnv,
    },
    ready: /probe listening/,
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/**
 * The signature probes before signing v2 (issue 20) checked: HMAC-SHA256 over `timestamp.body`,
 * hex, as `v1=`. Kept here only to measure such a probe built from its commit, never in the product.
 */
function legacyV1Headers(body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const mac = createHmac("sha256", BENCH_PROBE_SECRET).update(`${timestamp}.${body}`).digest("hex");
  return { "x-probe-timestamp": timestamp, "x-probe-signature": `v1=${mac}` };
}

/** How a probe build checks signatures: today's, or v1 for a build from before it. */
export type ProbeSigning = "current" | "v1";

/**
 * One signed check. `response` is the answer parsed through today's contract; `outcome` is read from
 * the raw JSON, so an earlier probe (whose answer lacks later additive fields) can be measured too.
 */
export async function probeOnce(
  url: string,
  body: ProbeRequest,
  signing: ProbeSigning = "current",
): Promise<{ status: number; response: ProbeResponse | null; outcome: string | null; ms: number }> {
  const payload = JSON.stringify(body);
  const started = performance.now();
  const signed = signing === "v1" ? legacyV1Headers(payload) : await signProbeRequest(BENCH_PROBE_SECRET, { origin: probeOrigin(url), method: "POST", path: PROBE_PATH, body: payload });
  const res = await fetch(`${url}${PROBE_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...signed },
    body: payload,
  });
  const json = (await res.json()) as { outcome?: string };
  const ms = performance.now() - started;
  const parsed = ProbeResponse.safeParse(json);
  return { status: res.status, response: res.ok && parsed.success ? parsed.data : null, outcome: res.ok ? (json.outcome ?? null) : null, ms };
}

/** Peak resident set size of a process so far (VmHWM), in MiB. */
export async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}
