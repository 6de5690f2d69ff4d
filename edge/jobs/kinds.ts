/**
 * The kinds of job the one engine runs (docs/jobs.md, docs/lookup-jobs.md): verification jobs (a list of addresses
 * checked by our engine) and lookup jobs (a list of people looked up, charged per person found). What every job has,
 * its envelope, is the engine's, written once over both kinds' tables (store/envelope.ts); what a kind does with its
 * lines is its own room's (verification/, lookup/). The lifecycle tests run for every kind from this list
 * (test/workers/job-lifecycle.test.ts), so a kind that skips one fails.
 */
export { JOB_KINDS, type JobKind } from "../../shared/jobs.ts";
