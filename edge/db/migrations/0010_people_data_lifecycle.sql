CREATE TABLE `erasure_notices` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` text NOT NULL,
	`profnet_id` integer,
	`codehost_id` integer,
	`erased_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `erasure_notices_account_idx` ON `erasure_notices` (`account_id`,`erased_at`,`id`);--> statement-breakpoint
CREATE TABLE `person_access_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`account_id` text NOT NULL,
	`key_id` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `person_access_log_person_idx` ON `person_access_log` (`person_id`,`account_id`);--> statement-breakpoint
CREATE INDEX `person_access_log_created_idx` ON `person_access_log` (`created_at`);--> statement-breakpoint
CREATE TABLE `suppressions` (
	`hash` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`reason` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
ALTER TABLE `person_emails` ADD `classification` text;--> statement-breakpoint
ALTER TABLE `person_emails` ADD `smtp_outcome` text;--> statement-breakpoint
ALTER TABLE `person_emails` ADD `reason` text;--> statement-breakpoint
ALTER TABLE `person_emails` ADD `checked_at` integer;--> statement-breakpoint
ALTER TABLE `person_emails` ADD `not_found_at` integer;--> statement-breakpoint
ALTER TABLE `person_emails` ADD `undeliverable_at` integer;--> statement-breakpoint
ALTER TABLE `person_emails` ADD `next_check_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `person_emails_next_check_idx` ON `person_emails` (`next_check_at`);--> statement-breakpoint
CREATE INDEX `person_emails_email_idx` ON `person_emails` (lower("email"));--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `retention_seconds` integer;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `results_expired` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `verification_jobs_retention_idx` ON `verification_jobs` (`results_expired`,`completed_at`);