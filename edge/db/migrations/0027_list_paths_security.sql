ALTER TABLE `lookup_jobs` ADD `cancel_reason` text;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `parent_job_id` text;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `actor` text;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `cancel_reason` text;--> statement-breakpoint
CREATE UNIQUE INDEX `verification_jobs_parent_unique` ON `verification_jobs` (`parent_job_id`) WHERE "verification_jobs"."parent_job_id" is not null;--> statement-breakpoint
-- Hand-written: the verify_emails phases made before this release are found by their lookup job, not by the
-- Idempotency-Key "lookup-job:<id>" (a key a customer could send); that key is freed.
UPDATE `verification_jobs` SET `parent_job_id` = (SELECT `id` FROM `lookup_jobs` WHERE `lookup_jobs`.`verification_job_id` = `verification_jobs`.`id`), `idempotency_key` = NULL
  WHERE `id` IN (SELECT `verification_job_id` FROM `lookup_jobs` WHERE `verification_job_id` IS NOT NULL)
    AND `idempotency_key` = 'lookup-job:' || (SELECT `id` FROM `lookup_jobs` WHERE `lookup_jobs`.`verification_job_id` = `verification_jobs`.`id`);
