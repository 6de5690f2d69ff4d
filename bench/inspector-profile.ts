/**
 * A CPU profile of the Worker through the DevTools inspector that `wrangler dev` opens (the Chrome
 * DevTools protocol's Profiler domain), and its top frames by self time, mapped through the bundle's
 * source map back to our files and the packages they call.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { SourceMap } from "node:module";
import { fileURLToPath } from "node:url";
import { root } from "./child.ts";

type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number; scriptId: string };
type ProfileNode = { id: number; callFrame: CallFrame; hitCount?: number; children?: number[] };
export type CpuProfile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };

/** Sampling interval by default, µs: fine enough to see a 0.1 ms function in a few thousand requests. */
export const SAMPLING_INTERVAL_US = 100;

/** Starts the profiler on the Worker, runs `work`, stops it and returns the profile. */
export async function takeProfile(inspectorPort: number, work: () => Promise<unknown>, intervalUs = SAMPLING_INTERVAL_US): Promise<CpuProfile> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as { webSocketDebuggerUrl?: string; title?: string }[];
  const target = targets.find((t) => t.webSocketDebuggerUrl);
  if (!target) throw new Error(`no inspector target on port ${inspectorPort}: ${JSON.stringify(targets)}`);
  // The inspector admits a client that names a local Origin (a browser's DevTools does).
  const socket = new WebSocket(target.webSocketDebuggerUrl!, { headers: { origin: "http://localhost" } } as unknown as string[]);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", reject, { once: true });
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const waiter = message.id === undefined ? undefined : pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id!);
    if (message.error) waiter.reject(new Error(message.error.message));
    else waiter.resolve(message.result);
  });
  const send = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: intervalUs });
    await send("Profiler.start");
    await work();
    const { profile } = (await send("Profiler.stop")) as { profile: CpuProfile };
    await send("Profiler.disable");
    return profile;
  } finally {
    socket.close();
  }
}

const maps = new Map<string, SourceMap | null>();

/**
 * The source map of a script: beside it when its URL is a path; workerd names the Worker's bundle by its
 * module name alone ("index.js"), which `wrangler dev` writes, with its map, to .wrangler/tmp/dev-* (the newest).
 */
function sourceMapFor(url: string): SourceMap | null {
  if (maps.has(url)) return maps.get(url)!;
  let map: SourceMap | null = null;
  try {
    const path = url.startsWith("file:") ? fileURLToPath(url) : url.startsWith("/") ? url : newestDevBundle(url);
    if (path && existsSync(`${path}.map`)) map = new SourceMap(JSON.parse(readFileSync(`${path}.map`, "utf8")));
  } catch {
    map = null;
  }
  maps.set(url, map);
  return map;
}

function newestDevBundle(name: string): string | undefined {
  const tmp = join(root, ".wrangler/tmp");
  if (!existsSync(tmp)) return undefined;
  return readdirSync(tmp)
    .filter((d) => d.startsWith("dev-") && existsSync(join(tmp, d, name)))
    .map((d) => join(tmp, d, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

/** Where a frame is in our sources (path:line, node_modules trimmed to the package), or its bundle position. */
function place(frame: CallFrame): { where: string; area: string } {
  if (!frame.url) return { where: "", area: frame.functionName || "(native)" };
  const entry = sourceMapFor(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
  const source = entry?.originalSource;
  if (!source) return { where: `${frame.url.split("/").pop()}:${frame.lineNumber + 1}`, area: "(unmapped)" };
  const path = source.replace(/^file:\/\//, "");
  const nm = path.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = path.slice(nm + "node_modules/".length).split("/");
    const pkg = rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
    return { where: `${pkg}/${rest.slice(pkg.split("/").length).join("/")}:${entry.originalLine! + 1}`, area: pkg };
  }
  const ours = /(edge|shared)\/.*$/.exec(path)?.[0] ?? path.split("/").slice(-2).join("/");
  return { where: `${ours}:${entry.originalLine! + 1}`, area: ours.split("/").slice(0, -1).join("/") || ours };
}

/** Self time per frame and per package/folder, as markdown tables: µs per request and share of the samples. */
export function profileMarkdown(profile: CpuProfile, opts: { requests: number; top: number; intervalUs: number }): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time before sample i: the time from sample i to i+1 belongs to sample i.
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i + 1] ?? opts.intervalUs;
    selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + us);
  }
  const frames = new Map<string, { fn: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  let busyUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const fn = node.callFrame.functionName || "(anonymous)";
    if (fn === "(idle)") {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const { where, area } = place(node.callFrame);
    const key = `${fn} ${where}`;
    const frame = frames.get(key) ?? { fn, where, us: 0 };
    frame.us += us;
    frames.set(key, frame);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const perRequest = (us: number) => (us / opts.requests).toFixed(1);
  const share = (us: number) => `${((100 * us) / busyUs).toFixed(1)}%`;
  const lines = [
    `Sampled every ${opts.intervalUs} µs; the isolate's thread was busy ${(busyUs / 1000).toFixed(0)} ms (${perRequest(busyUs)} µs per request) and idle ${(idleUs / 1000).toFixed(0)} ms. ` +
      "(program) is time in workerd's and V8's native code that no JavaScript frame owns. Profiling slows the isolate down several times over " +
      "(compare bench/edge-cpu.ts without --profile), unevenly: read the shares for where the time goes, not the µs for what a request costs.",
    "",
    "| Self time by package or folder | µs per request, profiled | share of busy |",
    "|---|---|---|",
    ...[...areas].sort((a, b) => b[1] - a[1]).slice(0, 15).map(([area, us]) => `| ${area} | ${perRequest(us)} | ${share(us)} |`),
    "",
    "| Top frames by self time | where | µs per request, profiled | share of busy |",
    "|---|---|---|---|",
    ...[...frames.values()].sort((a, b) => b.us - a.us).slice(0, opts.top).map((f) => `| ${f.fn} | ${f.where} | ${perRequest(f.us)} | ${share(f.us)} |`),
  ];
  return lines.join("\n");
}
