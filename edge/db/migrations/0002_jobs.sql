CREATE TABLE `verification_job_items` (
	`job_id` text NOT NULL,
	`position` integer NOT NULL,
	`email` text NOT NULL,
	`duplicate_of` integer,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`lease_until` integer,
	`retry_at` integer,
	`classification` text,
	`result` text,
	PRIMARY KEY(`job_id`, `position`),
	FOREIGN KEY (`job_id`) REFERENCES `verification_jobs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `verification_job_items_state_idx` ON `verification_job_items` (`job_id`,`state`);--> statement-breakpoint
CREATE TABLE `verification_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`total` integer NOT NULL,
	`processed` integer DEFAULT 0 NOT NULL,
	`valid_count` integer DEFAULT 0 NOT NULL,
	`risky_count` integer DEFAULT 0 NOT NULL,
	`invalid_count` integer DEFAULT 0 NOT NULL,
	`smtp_timeout` integer NOT NULL,
	`callback_url` text,
	`callback_state` text DEFAULT 'none' NOT NULL,
	`callback_attempts` integer DEFAULT 0 NOT NULL,
	`callback_next_at` integer,
	`callback_last_error` text,
	`idempotency_key` text,
	`request_hash` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`started_at` integer,
	`completed_at` integer,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "verification_jobs_status_known" CHECK("verification_jobs"."status" in ('queued', 'running', 'completed', 'cancelled'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX `verification_jobs_idempotency_unique` ON `verification_jobs` (`account_id`,`idempotency_key`) WHERE "verification_jobs"."idempotency_key" is not null;--> statement-breakpoint
CREATE INDEX `verification_jobs_account_status_idx` ON `verification_jobs` (`account_id`,`status`);--> statement-breakpoint
CREATE INDEX `verification_jobs_status_updated_idx` ON `verification_jobs` (`status`,`updated_at`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `webhook_secret` text;