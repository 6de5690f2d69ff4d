ALTER TABLE `lookup_job_lines` ADD `find` text;--> statement-breakpoint
CREATE INDEX `lookup_job_lines_find_due_idx` ON `lookup_job_lines` (`job_id`,`position`) WHERE "lookup_job_lines"."find" = 'due';--> statement-breakpoint
ALTER TABLE `lookup_jobs` ADD `find_emails` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `lookup_jobs` ADD `find_state` text;