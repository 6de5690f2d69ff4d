/**
 * The benchmarks that exist as command-line scripts (bench/edge-load.ts, bench/edge-cpu.ts, bench/import.ts,
 * bench/edge-checks.ts, bench/lookup-path.ts), run as child processes once per repetition (or once,
 * when the script repeats itself) and read back from what they print, so `npm run bench` measures
 * exactly what running them by hand measures.
 */
import { runChild } from "./child.ts";
import { median, spread } from "./stats.ts";

const tsx = (script: string, args: string[]) => runChild(process.execPath, ["--import", "tsx", script, ...args]);

// ---- Edge overhead: bench/edge-load.ts ----

export type EdgeRow = { name: string; rps: number; ratio: number; p50: number; p99: number; non2xx: number; errors: number };
export type EdgeLoad = { reps: EdgeRow[][]; duration: number; connections: number };

/** One edge-load.ts run per repetition: each starts its own `npm start`, so every ratio is within one Worker. */
export async function runEdgeLoad(opts: { reps: number; duration: number; connections: number; log: (m: string) => void }): Promise<EdgeLoad> {
  const reps: EdgeRow[][] = [];
  for (let rep = 1; rep <= opts.reps; rep++) {
    opts.log(`edge overhead: repetition ${rep}/${opts.reps}`);
    const out = await tsx("bench/edge-load.ts", ["--duration", String(opts.duration), "--connections", String(opts.connections)]);
    const rows = out
      .split("\n")
      .filter((line) => /^\| GET /.test(line))
      .map((line) => {
        const [name, rps, ratio, p50, p99, non2xx, errors] = line.split("|").slice(1, -1).map((c) => c.trim());
        return { name: name!, rps: Number(rps), ratio: Number(ratio), p50: Number(p50), p99: Number(p99), non2xx: Number(non2xx), errors: Number(errors) };
      });
    if (rows.length === 0 || rows.some((r) => Number.isNaN(r.rps))) throw new Error(`edge-load.ts printed no table:\n${out}`);
    reps.push(rows);
  }
  return { reps, duration: opts.duration, connections: opts.connections };
}

export function edgeLoadMarkdown(r: EdgeLoad): string {
  const label = r.reps.length > 1 ? " (min / median / max)" : "";
  const lines = [
    `| Request | Requests/s${label} | Ratio to /healthz in the same run${label} | p50 ms (median) | p99 ms (median) | non-2xx (all runs) | errors (all runs) |`,
    "|---|---|---|---|---|---|---|",
  ];
  for (const name of r.reps[0]!.map((row) => row.name)) {
    const rows = r.reps.map((rep) => rep.find((row) => row.name === name)!);
    lines.push(
      `| ${name} | ${spread(rows.map((x) => x.rps), 0)} | ${spread(rows.map((x) => x.ratio), 2)} | ${median(rows.map((x) => x.p50))} | ${median(rows.map((x) => x.p99))} | ${rows.reduce((n, x) => n + x.non2xx, 0)} | ${rows.reduce((n, x) => n + x.errors, 0)} |`,
    );
  }
  return lines.join("\n");
}

// ---- CPU per request in workerd: bench/edge-cpu.ts ----

export type EdgeCpuOptions = { reps: number; requests: number; inFlight: number };

export const edgeCpuArgs = (opts: EdgeCpuOptions) => ["--reps", String(opts.reps), "--requests", String(opts.requests), "--in-flight", String(opts.inFlight)];

/** One run (the script repeats itself, each repetition with its own `npm start`); its sentence and table. */
export async function runEdgeCpu(opts: EdgeCpuOptions & { log: (m: string) => void }): Promise<string> {
  opts.log(`CPU per request: ${opts.reps} repetitions of ${opts.requests} requests per row`);
  const out = await tsx("bench/edge-cpu.ts", edgeCpuArgs(opts));
  const start = out.indexOf("workerd CPU");
  if (start < 0 || !/^\| GET \/healthz/m.test(out)) throw new Error(`edge-cpu.ts printed no table:\n${out}`);
  return out.slice(start).trim();
}

// ---- Import: bench/import.ts ----

export type ImportRun = { importRowsPerSecond: number; importSeconds: number; reimportRowsPerSecond: number; reimportSeconds: number; importLine: string; reimportLine: string };

export async function runImport(opts: { reps: number; rows: number; log: (m: string) => void }): Promise<ImportRun[]> {
  const runs: ImportRun[] = [];
  for (let rep = 1; rep <= opts.reps; rep++) {
    opts.log(`import: ${opts.rows} rows, repetition ${rep}/${opts.reps}`);
    const out = await tsx("bench/import.ts", [String(opts.rows)]);
    const parse = (label: string) => {
      const line = out.split("\n").find((l) => l.startsWith(label));
      const m = line && /in ([\d.]+) s = (\d+) rows\/s/.exec(line);
      if (!line || !m) throw new Error(`import.ts printed no "${label}" line:\n${out}`);
      return { line: line.slice(label.length).replace(/^\s*:\s*/, ""), seconds: Number(m[1]), rowsPerSecond: Number(m[2]) };
    };
    const first = parse("import ");
    const again = parse("re-import");
    runs.push({
      importRowsPerSecond: first.rowsPerSecond,
      importSeconds: first.seconds,
      reimportRowsPerSecond: again.rowsPerSecond,
      reimportSeconds: again.seconds,
      importLine: first.line,
      reimportLine: again.line,
    });
  }
  return runs;
}

export function importMarkdown(runs: ImportRun[], rows: number): string {
  const label = runs.length > 1 ? " (min / median / max)" : "";
  return [
    `| Pass over ${rows.toLocaleString("en")} rows | Rows/s${label} | Seconds${label} | Counts (first run) |`,
    "|---|---|---|---|",
    `| Import into an empty database | ${spread(runs.map((r) => r.importRowsPerSecond), 0)} | ${spread(runs.map((r) => r.importSeconds), 2)} | ${/\((.*)\)/.exec(runs[0]!.importLine)?.[1] ?? ""} |`,
    `| The same file again (every row unchanged) | ${spread(runs.map((r) => r.reimportRowsPerSecond), 0)} | ${spread(runs.map((r) => r.reimportSeconds), 2)} | ${/\((.*)\)/.exec(runs[0]!.reimportLine)?.[1] ?? ""} |`,
  ].join("\n");
}

// ---- Cheap checks: bench/edge-checks.ts ----

export type ChecksRun = { summary: string; minUs: number; medianUs: number; maxUs: number; stages: string };

export async function runEdgeChecks(opts: { addresses: number; rounds: number; log: (m: string) => void }): Promise<ChecksRun> {
  opts.log(`cheap checks: ${opts.addresses} addresses × ${opts.rounds} rounds`);
  const out = await tsx("bench/edge-checks.ts", [String(opts.addresses), String(opts.rounds)]);
  const m = /min ([\d.]+)\s+median ([\d.]+)\s+max ([\d.]+)/.exec(out);
  const stages = /by stage[^:]*: (.*)$/m.exec(out)?.[1] ?? "";
  if (!m) throw new Error(`edge-checks.ts printed no figures:\n${out}`);
  return { summary: out.split("\n")[0]!, minUs: Number(m[1]), medianUs: Number(m[2]), maxUs: Number(m[3]), stages };
}

// ---- The lookup path: bench/lookup-path.ts ----

export type LookupPathOptions = { reps: number; delayMs: number; importRows: number; connections: number };

export const lookupPathArgs = (opts: LookupPathOptions) => [
  "--reps", String(opts.reps), "--delay-ms", String(opts.delayMs), "--import-rows", String(opts.importRows), "--connections", String(opts.connections),
];

export type LookupInputsOptions = { people: number; requests: number; reps: number; importRows: number };

export const lookupInputsArgs = (opts: LookupInputsOptions) => [
  "--people", String(opts.people), "--requests", String(opts.requests), "--reps", String(opts.reps), "--import-rows", String(opts.importRows),
];

/** bench/lookup-inputs.ts: GET /v1/people by email, phone and name against by profnet id, and the import with names; its markdown. */
export async function runLookupInputs(opts: LookupInputsOptions & { log: (m: string) => void }): Promise<string> {
  opts.log(`lookup inputs: ${opts.people} people, ${opts.reps} repetitions`);
  const out = await tsx("bench/lookup-inputs.ts", lookupInputsArgs(opts));
  if (!/Looked up by/.test(out)) throw new Error(`lookup-inputs.ts printed no report:\n${out}`);
  return out.trim();
}

/** One run (the script repeats each measurement itself); its markdown, without the title line. */
/** bench/usage.ts: GET /v1/usage over 90 days of a busy account; its markdown. */
export async function runUsage(opts: { lookups: number; log: (m: string) => void }): Promise<string> {
  opts.log(`usage: ${opts.lookups} lookups over 90 days`);
  const out = await tsx("bench/usage.ts", ["--lookups", String(opts.lookups)]);
  if (!/GET \/v1\/usage, 90 days/.test(out)) throw new Error(`usage.ts printed no report:\n${out}`);
  return out.trim();
}

export async function runLookupPath(opts: LookupPathOptions & { log: (m: string) => void }): Promise<string> {
  opts.log(`lookup path: ${opts.reps} repetitions, ${opts.importRows}-line imports`);
  const out = await tsx("bench/lookup-path.ts", lookupPathArgs(opts));
  if (!/Lookups failed during imports/.test(out)) throw new Error(`lookup-path.ts printed no report:\n${out}`);
  return out.slice(out.indexOf("\n") + 1).trim();
}
