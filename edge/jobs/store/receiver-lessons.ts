/**
 * What receivers taught the probes (receiver_lessons; docs/probe.md "What is learned"): a probe says after every batch
 * answer which budget keys blocked or throttled it (its `learned` notice), the Worker keeps the strictest lesson per key,
 * and every batch to any probe carries the lessons of the keys it will dial, so a destination that punished one probe
 * gets the stricter rule from every probe of the fleet, new ones and restarted ones included. Only ever stricter: the
 * upsert keeps the larger of each count and the lower rate.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { PROBE_MAX_LEARNED_RULES, type LearnedRuleWire, type ProbeMxHost } from "../../../shared/probe-contract.ts";
import { receiverFamily, receiverPolicy } from "../../../shared/email/receivers.ts";

type LessonRow = { key: string; harvest: number; rate_factor: number; blocks: number; throttles: number; learned_at: number };

/** Keeps what a probe learned, each key's strictest lesson (a single statement per key, in one batch). */
export async function recordLessons(db: Database, rules: readonly LearnedRuleWire[]): Promise<void> {
  if (rules.length === 0) return;
  const statements = rules.slice(0, PROBE_MAX_LEARNED_RULES).map((r) =>
    db.run(sql`insert into receiver_lessons (key, harvest, rate_factor, blocks, throttles, learned_at)
      values (${r.key}, ${r.harvest ? 1 : 0}, ${r.rate_factor}, ${r.blocks}, ${r.throttles}, ${r.at_ms})
      on conflict(key) do update set harvest = max(harvest, excluded.harvest), rate_factor = min(rate_factor, excluded.rate_factor),
        blocks = max(blocks, excluded.blocks), throttles = max(throttles, excluded.throttles), learned_at = max(learned_at, excluded.learned_at)`),
  );
  await db.batch(statements as [(typeof statements)[number], ...(typeof statements)[number][]]);
}

/** The budget keys a probe spends dialling these MX hosts (probe/policy/receivers.ts keyOf): the family, or the family and each address. */
export function lessonKeys(groups: readonly { mx: readonly ProbeMxHost[] }[]): string[] {
  const keys = new Set<string>();
  for (const { mx } of groups) {
    const family = receiverFamily(mx);
    if (receiverPolicy(family).budgetKey === "probe_ip_family") keys.add(family);
    else for (const host of mx) for (const address of host.addresses) keys.add(`${family} ${address}`);
  }
  return [...keys];
}

/** The lessons of these keys, the most recent first, as many as a request carries. */
export async function lessonsFor(db: Database, keys: readonly string[]): Promise<LearnedRuleWire[]> {
  if (keys.length === 0) return [];
  const rows = await db.all<LessonRow>(sql`select key, harvest, rate_factor, blocks, throttles, learned_at from receiver_lessons
    where key in (select value from json_each(${JSON.stringify(keys)})) order by learned_at desc limit ${PROBE_MAX_LEARNED_RULES}`);
  return rows.map((r) => ({
    key: String(r.key),
    harvest: Number(r.harvest) === 1,
    rate_factor: Number(r.rate_factor),
    blocks: Number(r.blocks),
    throttles: Number(r.throttles),
    at_ms: Number(r.learned_at),
  }));
}
