/**
 * Jobs stop with whoever made them (docs/api.md "Keys and scopes"): every unfinished job, of both kinds, whose maker
 * can no longer act (a key revoked, or expired and not rolled; a member removed: identity's actorLive) is cancelled,
 * saying why, with the verify_emails phases of the lookup jobs so cancelled. For the batch that revokes a key or removes
 * a member, after its own statements, and for the cron, which catches keys that expired. A key's work goes on after a
 * roll, under the key that replaced it.
 */
import type { SQL } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { rowsAffected } from "../db/rows.ts";
import { cancelPhasesOf, stopVerificationJobsOfGoneMakers } from "./store/job-rows.ts";
import { batch, stopLookupJobsOfGoneMakers } from "./store/lookup-rows.ts";

/** The statements, for the account's jobs (null: every account's). */
export const stopJobsOfGoneMakers = (accountId: string | null, now: number): SQL[] => [
  ...stopVerificationJobsOfGoneMakers(accountId, now),
  ...stopLookupJobsOfGoneMakers(accountId, now, (parentIds) => cancelPhasesOf(parentIds, now)),
];

/** For the cron: every account's jobs whose maker is gone (expired keys, mostly), stopped; how many. */
export async function stopJobsOfGoneMakersNow(db: Database, now: number): Promise<number> {
  const results = await batch(db, stopJobsOfGoneMakers(null, now).map((statement) => db.run(statement)));
  return results.reduce<number>((n, r) => n + rowsAffected(r), 0);
}
