/** The few statistics the reports use, on small arrays of numbers, and the seeded generator the inputs come from. */

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

/** Nearest-rank percentile of an ascending array. */
export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

/** "min / median / max" of the values, or the value alone when there is one. */
export function spread(values: number[], digits: number): string {
  const s = [...values].sort((a, b) => a - b);
  return s.length === 1 ? s[0]!.toFixed(digits) : `${s[0]!.toFixed(digits)} / ${median(s).toFixed(digits)} / ${s.at(-1)!.toFixed(digits)}`;
}

/** mulberry32: a small seeded generator, the same on every machine, so every run measures the same mix. */
export function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
