/**
 * Line charts as standalone SVG, drawn from numbers only (no chart library, so the file is the same
 * on every machine): panels side by side sharing a logarithmic x axis, each series a line through
 * its medians with a min-max whisker at every point.
 */

export type ChartPoint = { x: number; y: number; min: number; max: number };
export type ChartSeries = { name: string; color: string; points: ChartPoint[]; dashed?: boolean };
export type ChartPanel = { title: string; yLabel: string; series: ChartSeries[] };

const PANEL_W = 420;
const PANEL_H = 300;
const MARGIN = { top: 56, right: 24, bottom: 104, left: 70 };
/** Room inside the plot at both ends of the x axis, so the outermost points and labels are not cut. */
const X_PAD = 28;

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const fmt = (n: number) => (Math.round(n * 100) / 100).toLocaleString("en");

/** About five round ticks from 0 to at least `max`. */
function niceTicks(max: number): number[] {
  const raw = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw || 1));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  return Array.from({ length: Math.ceil(max / step) + 1 }, (_, i) => i * step);
}

export function lineChartsSvg(opts: { title: string; xLabel: string; xTicks: number[]; panels: ChartPanel[]; note?: string }): string {
  const width = opts.panels.length * (PANEL_W + MARGIN.left + MARGIN.right);
  const height = PANEL_H + MARGIN.top + MARGIN.bottom;
  const [xMin, xMax] = [Math.min(...opts.xTicks), Math.max(...opts.xTicks)];
  const xPos = (x: number) => X_PAD + ((Math.log10(x) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin))) * (PANEL_W - 2 * X_PAD);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escape(opts.title)}</text>`,
  ];
  opts.panels.forEach((panel, index) => {
    const ox = index * (PANEL_W + MARGIN.left + MARGIN.right) + MARGIN.left;
    const oy = MARGIN.top;
    const yTicks = niceTicks(Math.max(...panel.series.flatMap((s) => s.points.map((p) => p.max))));
    const yTop = yTicks.at(-1)!;
    const yPos = (y: number) => PANEL_H - (y / yTop) * PANEL_H;
    out.push(`<g transform="translate(${ox},${oy})">`);
    out.push(`<text x="${PANEL_W / 2}" y="-12" text-anchor="middle" font-size="13" font-weight="bold">${escape(panel.title)}</text>`);
    for (const t of yTicks) {
      out.push(`<line x1="0" x2="${PANEL_W}" y1="${yPos(t)}" y2="${yPos(t)}" stroke="#e4e4e4"/>`);
      out.push(`<text x="-8" y="${yPos(t) + 4}" text-anchor="end">${fmt(t)}</text>`);
    }
    for (const t of opts.xTicks) {
      out.push(`<line x1="${xPos(t)}" x2="${xPos(t)}" y1="0" y2="${PANEL_H}" stroke="#f0f0f0"/>`);
      out.push(`<text x="${xPos(t)}" y="${PANEL_H + 18}" text-anchor="middle">${fmt(t)}</text>`);
    }
    out.push(`<rect x="0" y="0" width="${PANEL_W}" height="${PANEL_H}" fill="none" stroke="#888"/>`);
    out.push(`<text x="${PANEL_W / 2}" y="${PANEL_H + 38}" text-anchor="middle">${escape(opts.xLabel)}</text>`);
    out.push(`<text transform="translate(-52,${PANEL_H / 2}) rotate(-90)" text-anchor="middle">${escape(panel.yLabel)}</text>`);
    panel.series.forEach((s, seriesIndex) => {
      const pts = [...s.points].sort((a, b) => a.x - b.x);
      // Each further series sits a little to the right, so whiskers at the same x do not hide each other.
      const dodge = seriesIndex * 10;
      if (pts.length > 1) {
        const d = pts.map((p, i) => `${i === 0 ? "M" : "L"}${(xPos(p.x) + dodge).toFixed(1)},${yPos(p.y).toFixed(1)}`).join(" ");
        out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`);
      }
      for (const p of pts) {
        const x = (xPos(p.x) + dodge).toFixed(1);
        out.push(`<line x1="${x}" x2="${x}" y1="${yPos(p.min).toFixed(1)}" y2="${yPos(p.max).toFixed(1)}" stroke="${s.color}" stroke-width="1.5"/>`);
        out.push(`<circle cx="${x}" cy="${yPos(p.y).toFixed(1)}" r="4" fill="${s.color}"><title>${escape(`${s.name}: ${fmt(p.x)} -> ${p.y.toFixed(1)} (${p.min.toFixed(1)}..${p.max.toFixed(1)})`)}</title></circle>`);
        // The first series labels its points above, the others below, so points that nearly meet keep readable labels.
        const labelY = seriesIndex === 0 ? yPos(p.max) - 8 : yPos(p.min) + 16;
        out.push(`<text x="${x}" y="${labelY.toFixed(1)}" text-anchor="middle" fill="${s.color}" font-size="11">${Math.round(p.y)}</text>`);
      }
    });
    panel.series.forEach((s, i) => {
      const ly = PANEL_H + 56 + i * 16;
      out.push(`<line x1="0" x2="24" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`);
      out.push(`<circle cx="12" cy="${ly - 4}" r="4" fill="${s.color}"/>`);
      out.push(`<text x="32" y="${ly}">${escape(s.name)}</text>`);
    });
    out.push("</g>");
  });
  if (opts.note) out.push(`<text x="${width - 8}" y="${height - 8}" text-anchor="end" fill="#666" font-size="11">${escape(opts.note)}</text>`);
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
