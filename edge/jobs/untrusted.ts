/**
 * A probe's notice that a receiver's answers are not trusted (probe/untrusted.ts; issue 26 item 5): a
 * gateway that refused a random address and now accepts one, or that said "too many invalid recipients",
 * may have accepted unknown users silently since its last refusal. The `valid` lines of unfinished jobs
 * at the domains it names, answered in that span, go back to be checked again after the hour (a line
 * becomes a recheck: its second answer is final, as for a temporary first answer); a duplicate line
 * waits for its original again. The job's counts follow (migration 0016's trigger): the job is running
 * again until they are answered. The probe answers such a recheck catch-all while the receiver is
 * distrusted, so it is never `valid` on that answer alone.
 *
 * Left alone: jobs that completed before the notice (their results were delivered; reopening them would
 * change what a customer already read) and single verifications (answered, not stored).
 */
import { sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import type { UntrustedNotice } from "./check-lines.ts";

/** How long an untrusted `valid` waits for its recheck: the receiver is stopped for an hour (docs/probe.md). */
export const UNTRUSTED_RECHECK_DELAY_MS = 3_600_000;

/** Sends the lines back; returns, per job, how many original lines will be checked again (for their queue turns). */
export async function untrustValids(db: Database, notice: UntrustedNotice, now = Date.now()): Promise<Map<string, number>> {
  const domains = [...new Set(notice.domains.map((d) => d.toLowerCase()))];
  const which = sql`state = 'done' and classification = 'valid' and checked_at >= ${notice.since_ms} and checked_at <= ${notice.until_ms}
    and job_id in (select id from verification_jobs where status in ('queued', 'running'))
    and lower(substr(email, instr(email, '@') + 1)) in (${sql.join(
      domains.map((d) => sql`${d}`),
      sql`, `,
    )})`;
  const [originals] = await db.batch([
    db.all<{ job_id: string }>(sql`update verification_job_items
      set state = 'recheck', recheck_at = ${now + UNTRUSTED_RECHECK_DELAY_MS}, classification = null, reason = null, lease_token = null, lease_until = null
      where duplicate_of is null and ${which} returning job_id`),
    db.run(sql`update verification_job_items set state = 'pending', classification = null, reason = null, lease_token = null, lease_until = null
      where duplicate_of is not null and ${which}`),
  ]);
  const byJob = new Map<string, number>();
  for (const r of originals) byJob.set(String(r.job_id), (byJob.get(String(r.job_id)) ?? 0) + 1);
  return byJob;
}
