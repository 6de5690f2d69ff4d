-- Bounce feedback (docs/api.md "POST /v1/email_feedback"): customers' reports of what their mail to an address did,
-- each naming the address by its keyed hash only; stored addresses get the same name (address_hash), which the cron
-- fills in for the rows stored before this migration.
CREATE TABLE `email_feedback` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` text NOT NULL,
	`address_hash` text NOT NULL,
	`outcome` text NOT NULL,
	`occurred_at` integer NOT NULL,
	`received_at` integer NOT NULL,
	`smtp_reply` text,
	`reverify` integer DEFAULT 0 NOT NULL,
	CONSTRAINT "email_feedback_outcome_known" CHECK("email_feedback"."outcome" in ('hard_bounce', 'soft_bounce', 'delivered', 'replied', 'complaint'))
);
--> statement-breakpoint
CREATE INDEX `email_feedback_address_idx` ON `email_feedback` (`address_hash`,`occurred_at`);--> statement-breakpoint
CREATE INDEX `email_feedback_reverify_idx` ON `email_feedback` (`account_id`,`received_at`) WHERE "email_feedback"."reverify" = 1;--> statement-breakpoint
CREATE INDEX `email_feedback_occurred_idx` ON `email_feedback` (`occurred_at`);--> statement-breakpoint
ALTER TABLE `person_emails` ADD `address_hash` text;--> statement-breakpoint
CREATE INDEX `person_emails_address_hash_idx` ON `person_emails` (`address_hash`);