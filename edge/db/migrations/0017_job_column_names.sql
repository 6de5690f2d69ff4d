-- Names that say what the columns hold (issue 27 item 15). `writing` was 1 while a job's lines are still being
-- created (in several transactions): `creating`. `results_expired` is three states, not a yes/no (0 results held,
-- 1 expired and being deleted by the cron, 2 every line deleted; the API's boolean `results_expired` is state > 0):
-- `results_state`. SQLite renames the column in the retention index too; no trigger reads either column.
ALTER TABLE `verification_jobs` RENAME COLUMN `writing` TO `creating`;--> statement-breakpoint
ALTER TABLE `verification_jobs` RENAME COLUMN `results_expired` TO `results_state`;
