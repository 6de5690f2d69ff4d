/**
 * What every statement's caller shares: the database handle's type, rows as raw SQL returns them (typed from the
 * schema), stored times as the API writes them, and counting and bounding what a write statement did (libSQL reports
 * the rows a statement changed as `rowsAffected`; drizzle's `run` and `batch` pass its result through untyped).
 */
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import type * as schema from "./schema.ts";

/**
 * The database as Drizzle sees it, whichever client carries it: the Worker's (edge/db/client.ts `Database`, over
 * HTTP) or Node's (scripts/lib/database.ts, a file). Code that both run takes this.
 */
export type Db = LibSQLDatabase<typeof schema>;

/** A column name as SQL spells it: Drizzle's camelCase keys map to the snake_case columns raw queries return. */
type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}` ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}` : S;

/** A table's row as a raw statement (`db.all(sql\`select ...\`)`) returns it: the schema's row (`$inferSelect`), in SQL's names. */
export type RawRow<T> = { [K in keyof T as SnakeCase<K & string>]: T[K] };

/** A stored time (milliseconds since the epoch, as SQL returns it) in RFC 3339, UTC, as the API and the CLI write times; null stays null. */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString();
}

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
