-- Scheduling of bulk jobs (docs/jobs.md "Scheduling"): `seq` is a line's place in the work order (lines sorted by
-- domain when the job is created; results keep `position`), claimed through the work index state by state;
-- `last_claim_at` says whose turn it is among jobs and accounts. Lines of jobs created before keep input order.
ALTER TABLE `verification_job_items` ADD `seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `verification_job_items_work_idx` ON `verification_job_items` (`job_id`,`state`,`seq`) WHERE "verification_job_items"."duplicate_of" is null;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `last_claim_at` integer;--> statement-breakpoint
UPDATE `verification_job_items` SET `seq` = `position`;
