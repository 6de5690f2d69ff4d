-- Batch lookups and lookup jobs (issue 38; docs/api.md "POST /v1/people/bulk", docs/lookup-jobs.md). lookup_batches and
-- their items hold a batch call's first answer for its Idempotency-Key (24 h); lookup_jobs, their lines and verdicts a
-- list's lookups. A job's counts follow its lines' outcome, kept by the triggers at the end: a line counts once, when
-- its outcome changes (found, not_found, invalid, refused, erased), and its charge once, when `charged` becomes 1,
-- whatever redeliveries, retries or restarts happen. Deleting lines (retention) moves no count.
CREATE TABLE `lookup_batch_items` (
	`batch_id` text NOT NULL,
	`position` integer NOT NULL,
	`status` integer NOT NULL,
	`person_id` integer,
	`person` text,
	`error` text,
	`reason` text,
	PRIMARY KEY(`batch_id`, `position`),
	FOREIGN KEY (`batch_id`) REFERENCES `lookup_batches`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `lookup_batch_items_person_idx` ON `lookup_batch_items` (`person_id`) WHERE "lookup_batch_items"."person_id" is not null;--> statement-breakpoint
CREATE TABLE `lookup_batches` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`actor` text NOT NULL,
	`idempotency_key` text,
	`request_hash` text NOT NULL,
	`state` text NOT NULL,
	`claim_token` text,
	`served` integer DEFAULT 0 NOT NULL,
	`refusal` text,
	`balance_after` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `lookup_batches_idempotency_unique` ON `lookup_batches` (`account_id`,`idempotency_key`) WHERE "lookup_batches"."idempotency_key" is not null;--> statement-breakpoint
CREATE INDEX `lookup_batches_created_idx` ON `lookup_batches` (`created_at`);--> statement-breakpoint
CREATE TABLE `lookup_job_lines` (
	`job_id` text NOT NULL,
	`position` integer NOT NULL,
	`input` text NOT NULL,
	`profnet_id` integer,
	`profnet_public_identifier` text,
	`codehost_id` integer,
	`codehost_login` text,
	`state` text NOT NULL,
	`outcome` text,
	`error` text,
	`person_id` integer,
	`charged` integer DEFAULT 0 NOT NULL,
	`person` text,
	`turn` text,
	`answered_at` integer,
	PRIMARY KEY(`job_id`, `position`),
	FOREIGN KEY (`job_id`) REFERENCES `lookup_jobs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `lookup_job_lines_state_idx` ON `lookup_job_lines` (`job_id`,`state`,`position`);--> statement-breakpoint
CREATE INDEX `lookup_job_lines_turn_idx` ON `lookup_job_lines` (`job_id`,`turn`) WHERE "lookup_job_lines"."turn" is not null;--> statement-breakpoint
CREATE INDEX `lookup_job_lines_job_person_idx` ON `lookup_job_lines` (`job_id`,`person_id`) WHERE "lookup_job_lines"."person_id" is not null;--> statement-breakpoint
CREATE INDEX `lookup_job_lines_person_idx` ON `lookup_job_lines` (`person_id`) WHERE "lookup_job_lines"."person_id" is not null;--> statement-breakpoint
CREATE INDEX `lookup_job_lines_outcome_idx` ON `lookup_job_lines` (`job_id`,`outcome`,`position`);--> statement-breakpoint
CREATE TABLE `lookup_job_verdicts` (
	`job_id` text NOT NULL,
	`email` text NOT NULL,
	`classification` text NOT NULL,
	`reason` text,
	`smtp_outcome` text,
	`checked_at` integer NOT NULL,
	`source` text NOT NULL,
	PRIMARY KEY(`job_id`, `email`),
	FOREIGN KEY (`job_id`) REFERENCES `lookup_jobs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `lookup_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`actor` text NOT NULL,
	`credit_caps` text DEFAULT '[]' NOT NULL,
	`cost` integer NOT NULL,
	`max_credits` integer NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`pause_reason` text,
	`paused_at` integer,
	`total` integer NOT NULL,
	`found` integer DEFAULT 0 NOT NULL,
	`not_found` integer DEFAULT 0 NOT NULL,
	`invalid` integer DEFAULT 0 NOT NULL,
	`refused` integer DEFAULT 0 NOT NULL,
	`erased` integer DEFAULT 0 NOT NULL,
	`credits_charged` integer DEFAULT 0 NOT NULL,
	`format` text NOT NULL,
	`columns` text NOT NULL,
	`email_details` integer DEFAULT 0 NOT NULL,
	`verify_emails` integer DEFAULT 0 NOT NULL,
	`verify_state` text,
	`verification_job_id` text,
	`callback_url` text,
	`callback_state` text DEFAULT 'none' NOT NULL,
	`callback_attempts` integer DEFAULT 0 NOT NULL,
	`callback_next_at` integer,
	`callback_last_error` text,
	`idempotency_key` text,
	`request_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`completed_at` integer,
	`last_turn_at` integer,
	`updated_at` integer NOT NULL,
	`turn_budget` integer DEFAULT 0 NOT NULL,
	`creating` integer DEFAULT 1 NOT NULL,
	`retention_seconds` integer,
	`results_state` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "lookup_jobs_status_known" CHECK("lookup_jobs"."status" in ('queued', 'running', 'paused', 'completed', 'cancelled'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX `lookup_jobs_idempotency_unique` ON `lookup_jobs` (`account_id`,`idempotency_key`) WHERE "lookup_jobs"."idempotency_key" is not null;--> statement-breakpoint
CREATE INDEX `lookup_jobs_account_created_idx` ON `lookup_jobs` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `lookup_jobs_status_updated_idx` ON `lookup_jobs` (`status`,`updated_at`);--> statement-breakpoint
CREATE INDEX `lookup_jobs_retention_idx` ON `lookup_jobs` (`results_state`,`completed_at`);--> statement-breakpoint
CREATE TRIGGER `lookup_job_lines_outcome_insert` AFTER INSERT ON `lookup_job_lines`
WHEN NEW.`outcome` IS NOT NULL
BEGIN
  UPDATE `lookup_jobs` SET
    `found` = `found` + (NEW.`outcome` IS 'found'),
    `not_found` = `not_found` + (NEW.`outcome` IS 'not_found'),
    `invalid` = `invalid` + (NEW.`outcome` IS 'invalid'),
    `refused` = `refused` + (NEW.`outcome` IS 'refused'),
    `erased` = `erased` + (NEW.`outcome` IS 'erased')
  WHERE `id` = NEW.`job_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `lookup_job_lines_outcome_update` AFTER UPDATE OF `outcome` ON `lookup_job_lines`
WHEN NEW.`outcome` IS NOT OLD.`outcome`
BEGIN
  UPDATE `lookup_jobs` SET
    `found` = `found` + (NEW.`outcome` IS 'found') - (OLD.`outcome` IS 'found'),
    `not_found` = `not_found` + (NEW.`outcome` IS 'not_found') - (OLD.`outcome` IS 'not_found'),
    `invalid` = `invalid` + (NEW.`outcome` IS 'invalid') - (OLD.`outcome` IS 'invalid'),
    `refused` = `refused` + (NEW.`outcome` IS 'refused') - (OLD.`outcome` IS 'refused'),
    `erased` = `erased` + (NEW.`outcome` IS 'erased') - (OLD.`outcome` IS 'erased'),
    `updated_at` = (unixepoch('subsec') * 1000)
  WHERE `id` = NEW.`job_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `lookup_job_lines_charged` AFTER UPDATE OF `charged` ON `lookup_job_lines`
WHEN NEW.`charged` = 1 AND OLD.`charged` = 0
BEGIN
  UPDATE `lookup_jobs` SET `credits_charged` = `credits_charged` + `cost` WHERE `id` = NEW.`job_id`;
END;
