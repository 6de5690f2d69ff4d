/**
 * What an erasure (scripts/admin/people-erase.ts) does to what the lookup jobs keep, as statements for its one write
 * batch (the batch call's kept answers are edge/people/bulk-store.ts's): every lookup job line that answered
 * them says erased and keeps nothing of them (the job's counts move by the triggers: found to erased), a line refused
 * for credits on them waits again (it will find nobody), the verdicts of their addresses go, and so does any of their
 * addresses the email finder gave a line (find_emails). And what a merge
 * (scripts/admin/people-merge.ts) does to them: the lines that found the merged person are the kept person's from then on,
 * so erasing that person reaches it; an undone merge gives exactly those rows back.
 */
import { sql, type SQL } from "drizzle-orm";
import { LOOKUP_JOB_MESSAGES } from "../../../shared/lookup-jobs.ts";

export function eraseFromLookupJobs(personIds: readonly number[], addresses: readonly string[]): SQL[] {
  const ids = sql`select value from json_each(${JSON.stringify(personIds)})`;
  return [
    sql`update lookup_job_lines set outcome = 'erased', person = null, person_id = null, error = ${LOOKUP_JOB_MESSAGES.erased}
      where person_id in (${ids}) and outcome = 'found'`,
    sql`update lookup_job_lines set state = 'pending', outcome = null, error = null, person_id = null, answered_at = null where person_id in (${ids}) and state = 'refused'`,
    sql`delete from lookup_job_verdicts where email in (select lower(value) from json_each(${JSON.stringify(addresses)}))`,
    // find_emails: an address the finder gave a line is no longer shown (CASE: a line still due holds no JSON).
    sql`update lookup_job_lines set find = ${JSON.stringify({ status: "erased", error: LOOKUP_JOB_MESSAGES.erased })}
      where (case when find is not null and find != 'due' then lower(find ->> 'email') end) in (select lower(value) from json_each(${JSON.stringify(addresses)}))`,
  ];
}

/** Where a merge moved what was kept: rows by their key ([job_id or batch_id, position]). */
export type MovedRows = [string, number][];

/**
 * The statement a merge adds to its write batch: every lookup job line of `mergedId` becomes `keptId`'s; it returns the
 * rows it moved, for the merge's snapshot (movedRows).
 */
export const moveLookupLinesStatement = (keptId: number, mergedId: number): SQL =>
  sql`update lookup_job_lines set person_id = ${keptId} where person_id = ${mergedId} returning job_id as key, position`;

/** An undone merge's statement: the lines the merge moved (and still the kept person's) are the merged person's again. */
export const restoreLookupLinesStatement = (keptId: number, mergedId: number, moved: MovedRows): SQL =>
  sql`update lookup_job_lines set person_id = ${mergedId} where person_id = ${keptId}
    and (job_id, position) in (select value ->> 0, value ->> 1 from json_each(${JSON.stringify(moved)}))`;

/** The rows a move statement returned (key, position). */
export const movedRows = (result: { rows: readonly Record<string, unknown>[] } | undefined): MovedRows =>
  (result?.rows ?? []).map((r) => [String(r.key), Number(r.position)]);
