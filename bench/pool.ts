/**
 * The loop that feeds every verifier in the comparison: `concurrency` workers each take the next
 * address as soon as their previous one is answered, and every call is timed from start to answer.
 */
export async function timedPool<T extends object>(items: string[], concurrency: number, call: (item: string) => Promise<T>): Promise<{ wallMs: number; results: (T & { ms: number })[] }> {
  const results: (T & { ms: number })[] = new Array(items.length);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        const t0 = performance.now();
        const result = await call(items[i]!);
        results[i] = { ...result, ms: performance.now() - t0 };
      }
    }),
  );
  return { wallMs: performance.now() - started, results };
}
