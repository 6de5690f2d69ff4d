-- writing: a job whose lines are still being written in several transactions (docs/jobs.md "Bulk verification jobs");
-- the index serves the daily line quota (JOB_MAX_LINES_PER_DAY), summed over an account's last 24 hours of jobs.
ALTER TABLE `verification_jobs` ADD `writing` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `verification_jobs_account_created_idx` ON `verification_jobs` (`account_id`,`created_at`);