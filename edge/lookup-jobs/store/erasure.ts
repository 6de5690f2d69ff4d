/**
 * What an erasure (scripts/admin/people-erase.ts) does to what the bulk lookups keep, as statements for its one write
 * batch: the kept first answers of batch calls stop disclosing the people (410), every lookup job line that answered
 * them says erased and keeps nothing of them (the job's counts move by the triggers: found to erased), a line refused
 * for credits on them waits again (it will find nobody), and the verdicts of their addresses go.
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
