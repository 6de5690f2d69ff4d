/**
 * Several runs of bench/probe-scale.ts's runProbeBench summed up: a table per concurrency level with
 * min / median / max over the runs, and the scale curve (checks/s and peak RSS against concurrency)
 * as an SVG drawn from those numbers.
 */
import type { ProbeBenchResult, ScaleRow } from "./probe-scale.ts";
import { median, spread } from "./stats.ts";
import { lineChartsSvg, type ChartPoint, type ChartSeries } from "./svg-chart.ts";

/** Rows of all runs grouped by (concurrency, probe config), in the order of the first run. */
function groups(runs: ProbeBenchResult[]): ScaleRow[][] {
  return runs[0]!.rows.map((row) => runs.map((r) => r.rows.find((x) => x.concurrency === row.concurrency && x.config === row.config)!));
}

export function probeScaleMarkdown(runs: ProbeBenchResult[]): string {
  const label = runs.length > 1 ? " (min / median / max)" : "";
  const lines = [
    `| Concurrency | Probe config | Checks per run | Checks/s${label} | p50 ms (median) | p99 ms (median) | Peak RSS MiB${label} | Outcomes (all runs) |`,
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const rows of groups(runs)) {
    const outcomes = new Map<string, number>();
    for (const row of rows) for (const [k, v] of Object.entries(row.outcomes)) outcomes.set(k, (outcomes.get(k) ?? 0) + v);
    lines.push(
      `| ${rows[0]!.concurrency} | ${rows[0]!.config} | ${rows[0]!.checks} | ${spread(rows.map((r) => r.checksPerSecond), 0)} | ${median(rows.map((r) => r.p50Ms)).toFixed(0)} | ${median(rows.map((r) => r.p99Ms)).toFixed(0)} | ${spread(rows.map((r) => r.peakRssMiB), 0)} | ${[...outcomes].map(([k, v]) => `${k} ${v}`).join(", ")} |`,
    );
  }
  const rt = (pick: (r: ProbeBenchResult) => number) => median(runs.map(pick));
  const trips = (mode: "pipelining" | "noPipelining") =>
    `cold ${rt((r) => r.roundTrips[mode].cold)} (${rt((r) => r.roundTrips[mode].coldMs)} ms), warm ${rt((r) => r.roundTrips[mode].warm)} (${rt((r) => r.roundTrips[mode].warmMs)} ms)`;
  lines.push(
    "",
    `Sequential round trips per check (${runs[0]!.delayMs} ms per reply, no STARTTLS offered: a server that offers it adds two to a cold check; median of ${runs.length}). ` +
      `Cold is the first check to a destination (connect, greeting, EHLO, then the transaction), warm the next one on the session kept open. ` +
      `With PIPELINING: ${trips("pipelining")}; without: ${trips("noPipelining")}.`,
    "",
    `A silent server (accepts TCP, never greets) holds a request for (median of ${runs.length}): ` +
      runs[0]!.silent.map((s, i) => `deadline ${s.deadlineMs} ms -> ${median(runs.map((r) => r.silent[i]!.heldMs))} ms`).join("; ") +
      ".",
  );
  return lines.join("\n");
}

export function probeScaleSvg(runs: ProbeBenchResult[], machine: string): string {
  const byConfig = new Map<string, ScaleRow[][]>();
  for (const rows of groups(runs)) byConfig.set(rows[0]!.config, [...(byConfig.get(rows[0]!.config) ?? []), rows]);
  const point = (rows: ScaleRow[], value: (r: ScaleRow) => number): ChartPoint => {
    const values = rows.map(value);
    return { x: rows[0]!.concurrency, y: median(values), min: Math.min(...values), max: Math.max(...values) };
  };
  const colors = ["#1f6fb2", "#d9480f", "#2b8a3e"];
  const series = (value: (r: ScaleRow) => number): ChartSeries[] =>
    [...byConfig].map(([config, groupsOfConfig], i) => ({
      name: config === "defaults" ? "probe defaults (PROBE_MAX_CONCURRENCY=500)" : config,
      color: colors[i % colors.length]!,
      dashed: config !== "defaults",
      points: groupsOfConfig.map((rows) => point(rows, value)),
    }));
  const levels = [...new Set(runs[0]!.rows.map((r) => r.concurrency))].sort((a, b) => a - b);
  return lineChartsSvg({
    title: `SMTP probe: checks/s and peak RSS by concurrency (fixture ${runs[0]!.delayMs} ms per reply; median, min-max of ${runs.length} run${runs.length > 1 ? "s" : ""})`,
    xLabel: "requests in flight (log scale)",
    xTicks: levels,
    panels: [
      { title: "Checks per second", yLabel: "checks/s", series: series((r) => r.checksPerSecond) },
      { title: "Peak RSS of the probe process", yLabel: "MiB", series: series((r) => r.peakRssMiB) },
    ],
    note: machine,
  });
}
