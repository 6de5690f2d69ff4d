/**
 * What keys did, written without costing a request a round trip (docs/api.md "Hot path"): when each
 * key was last used (`last_used_at`) and how many single verifications it made (usage's
 * `verifications`). Each isolate notes them in memory; a key's `last_used_at` is written at most once
 * per LAST_USED_WRITE_INTERVAL_MS, and its verification counts at most VERIFICATIONS_FLUSH_MS (30 s) late.
 * They go to the database either inside a batch the request makes anyway (a lookup's) or, for a
 * request that makes none, after its answer is sent (waitUntil). An isolate that ends before writing
 * loses at most that much: last_used_at a few minutes stale, half a minute of verification counts.
 */
import { countVerificationsStatement } from "../money/usage.ts";
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { utcDay } from "../db/rows.ts";
import { lastUsedStatement } from "./store/keys.ts";
import { describeError, writeLog } from "../log.ts";

export const LAST_USED_WRITE_INTERVAL_MS = 300_000;
export const VERIFICATIONS_FLUSH_MS = 30_000;
/** Keys written per flush, so one flush stays one small batch. */
const MAX_KEYS_PER_FLUSH = 50;
/** Keys an isolate remembers; past it, the oldest is flushed first and then forgotten. */
const MAX_KEYS = 10_000;

type Activity = {
  accountId: string;
  /** The last use not yet written, or null. */
  usedAt: number | null;
  /** When this isolate last wrote the key's last_used_at (0: never). */
  writtenAt: number;
  /** Verifications not yet written, per UTC day (YYYY-MM-DD). */
  verifications: Map<string, number>;
  /** When the oldest unwritten verification happened. */
  verificationsSince: number | null;
};

const activity = new Map<string, Activity>();

function entry(keyId: string, accountId: string): Activity {
  let a = activity.get(keyId);
  if (!a) {
    if (activity.size >= MAX_KEYS) activity.delete(activity.keys().next().value as string);
    a = { accountId, usedAt: null, writtenAt: 0, verifications: new Map(), verificationsSince: null };
    activity.set(keyId, a);
  }
  return a;
}

export function noteKeyUse(keyId: string, accountId: string, now: number): void {
  entry(keyId, accountId).usedAt = now;
}

export function noteVerification(keyId: string, accountId: string, now: number): void {
  const a = entry(keyId, accountId);
  const day = utcDay(now);
  a.verifications.set(day, (a.verifications.get(day) ?? 0) + 1);
  a.verificationsSince ??= now;
}

function isDue(a: Activity, now: number): boolean {
  const lastUsedDue = a.usedAt !== null && now - a.writtenAt >= LAST_USED_WRITE_INTERVAL_MS;
  const verificationsDue = a.verificationsSince !== null && now - a.verificationsSince >= VERIFICATIONS_FLUSH_MS;
  return lastUsedDue || verificationsDue;
}

export function activityDue(now: number): boolean {
  for (const a of activity.values()) if (isDue(a, now)) return true;
  return false;
}

/**
 * The statements that write what is due (and, for a key that is due, everything it holds), taken out of
 * memory. `restore` puts them back when the write failed.
 */
export function takeDueActivity(now: number): { statements: SQL[]; restore: () => void } {
  const statements: SQL[] = [];
  const taken: [string, Activity][] = [];
  for (const [keyId, a] of activity) {
    if (taken.length >= MAX_KEYS_PER_FLUSH) break;
    if (!isDue(a, now)) continue;
    taken.push([keyId, { ...a, verifications: new Map(a.verifications) }]);
    if (a.usedAt !== null) {
      // Never moves backwards, whichever isolate writes last.
      statements.push(lastUsedStatement(keyId, a.usedAt));
      a.writtenAt = now;
      a.usedAt = null;
    }
    for (const [day, n] of a.verifications) {
      statements.push(countVerificationsStatement(a.accountId, keyId, day, n));
    }
    a.verifications.clear();
    a.verificationsSince = null;
  }
  const restore = () => {
    for (const [keyId, old] of taken) {
      const a = entry(keyId, old.accountId);
      if (old.usedAt !== null && (a.usedAt === null || a.usedAt < old.usedAt)) a.usedAt = old.usedAt;
      a.writtenAt = 0;
      for (const [day, n] of old.verifications) a.verifications.set(day, (a.verifications.get(day) ?? 0) + n);
      if (old.verifications.size > 0) a.verificationsSince = Math.min(a.verificationsSince ?? Infinity, old.verificationsSince ?? now);
    }
  };
  return { statements, restore };
}

/** Writes what is due in one batch; a failure is logged and the activity kept for the next try. */
export async function flushDueActivity(db: Database, now: number): Promise<void> {
  const { statements, restore } = takeDueActivity(now);
  if (statements.length === 0) return;
  try {
    const [first, ...rest] = statements.map((s) => db.run(s));
    await db.batch([first!, ...rest]);
  } catch (error) {
    restore();
    writeLog("warn", { event: "key_activity_write_failed", error: describeError(error) });
  }
}
