/**
 * Counting and bounding what a write statement did. libSQL reports the rows a statement changed as `rowsAffected`;
 * drizzle's `run` and `batch` pass its result through untyped.
 */

/** The UTC day of a moment, as the usage roll-up and the cap budgets key their rows (YYYY-MM-DD). */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The rows a statement (a `run` result, or one entry of a `batch` result) changed. */
export function rowsAffected(result: unknown): number {
  return Number((result as { rowsAffected?: number } | null)?.rowsAffected ?? 0);
}

/**
 * Deletes in statements of at most `perStatement` rows, `max` rows in all: each statement holds the database's write
 * lock briefly, so lookups get in between. `deleteUpTo(limit)` runs one DELETE of at most `limit` rows (a `limit` in its
 * subquery). Stops early when a statement deletes fewer than it was allowed: none is left (`exhausted`).
 */
export async function deleteInBatches(deleteUpTo: (limit: number) => Promise<unknown>, perStatement: number, max: number): Promise<{ deleted: number; exhausted: boolean }> {
  let deleted = 0;
  while (deleted < max) {
    const limit = Math.min(perStatement, max - deleted);
    const n = rowsAffected(await deleteUpTo(limit));
    deleted += n;
    if (n < limit) return { deleted, exhausted: true };
  }
  return { deleted, exhausted: false };
}
