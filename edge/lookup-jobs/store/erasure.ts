/**
 * What an erasure (scripts/admin/people-erase.ts) does to what the bulk lookups keep, as statements for its one write
 * batch: the kept first answers of batch calls stop disclosing the people (410), every lookup job line that answered
 * them says erased and keeps nothing of them (the job's counts move by the triggers: found to erased), a line refused
 * for credits on them waits again (it will find nobody), and the verdicts of their addresses go. And what a merge
 * (scripts/admin/people-merge.ts) does to them: what was kept of the merged person is the kept person's from then on,
 * so erasing that person reaches it; an undone merge gives exactly those rows back.
 */
import { sql, type SQL } from "drizzle-orm";
import { LOOKUP_JOB_MESSAGES } from "../../../shared/lookup-jobs.ts";
import { eraseFromBatchAnswers } from "./batches.ts";

export function eraseFromBulkLookups(personIds: readonly number[], addresses: readonly string[]): SQL[] {
  const ids = sql`select value from json_each(${JSON.stringify(personIds)})`;
  return [
    eraseFromBatchAnswers(ids),
    sql`update lookup_job_lines set outcome = 'erased', person = null, person_id = null, error = ${LOOKUP_JOB_MESSAGES.erased}
      where person_id in (${ids}) and outcome = 'found'`,
    sql`update lookup_job_lines set state = 'pending', outcome = null, error = null, person_id = null, answered_at = null where person_id in (${ids}) and state = 'refused'`,
    sql`delete from lookup_job_verdicts where email in (select lower(value) from json_each(${JSON.stringify(addresses)}))`,
  ];
}

/** Where a merge moved a kept answer: a lookup job's line or a batch's item, by its key. */
export type MovedAnswers = { lines: [string, number][]; items: [string, number][] };

/**
 * The statements a merge adds to its write batch: every lookup job line and kept batch answer of `mergedId` becomes
 * `keptId`'s; each returns the rows it moved ([job_id or batch_id, position]), for the merge's snapshot (movedAnswers).
 */
export function moveBulkLookupsStatements(keptId: number, mergedId: number): SQL[] {
  return [
    sql`update lookup_job_lines set person_id = ${keptId} where person_id = ${mergedId} returning job_id, position`,
    sql`update lookup_batch_items set person_id = ${keptId} where person_id = ${mergedId} returning batch_id, position`,
  ];
}

/** The moved rows, from the results of moveBulkLookupsStatements in the batch (in that order). */
export function movedAnswers(results: readonly { rows: readonly Record<string, unknown>[] }[]): MovedAnswers {
  const [lines, items] = results;
  return {
    lines: (lines?.rows ?? []).map((r) => [String(r.job_id), Number(r.position)]),
    items: (items?.rows ?? []).map((r) => [String(r.batch_id), Number(r.position)]),
  };
}

/** An undone merge's statements: the rows the merge moved (and still the kept person's) are the merged person's again. */
export function restoreBulkLookupsStatements(keptId: number, mergedId: number, moved: MovedAnswers): SQL[] {
  return [
    sql`update lookup_job_lines set person_id = ${mergedId} where person_id = ${keptId}
      and (job_id, position) in (select value ->> 0, value ->> 1 from json_each(${JSON.stringify(moved.lines)}))`,
    sql`update lookup_batch_items set person_id = ${mergedId} where person_id = ${keptId}
      and (batch_id, position) in (select value ->> 0, value ->> 1 from json_each(${JSON.stringify(moved.items)}))`,
  ];
}
