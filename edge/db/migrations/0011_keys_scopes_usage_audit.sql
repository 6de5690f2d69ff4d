CREATE TABLE `audit_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` text NOT NULL,
	`action` text NOT NULL,
	`actor` text NOT NULL,
	`target` text,
	`details` text DEFAULT '{}' NOT NULL,
	`request_id` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_events_account_idx` ON `audit_events` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_created_idx` ON `audit_events` (`created_at`);--> statement-breakpoint
CREATE TABLE `usage_daily` (
	`account_id` text NOT NULL,
	`key_id` text NOT NULL,
	`day` text NOT NULL,
	`lookups_charged` integer DEFAULT 0 NOT NULL,
	`lookups_not_found` integer DEFAULT 0 NOT NULL,
	`lookups_refused_credits` integer DEFAULT 0 NOT NULL,
	`verifications` integer DEFAULT 0 NOT NULL,
	`job_lines` integer DEFAULT 0 NOT NULL,
	`credits_spent` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`account_id`, `day`, `key_id`)
);
--> statement-breakpoint
ALTER TABLE `api_keys` ADD `name` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `scopes` text DEFAULT '["people:read","verifications:write","jobs:write","jobs:read","account:read","keys:write","members:write","audit:read"]' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `created_by` text DEFAULT 'operator' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `last_used_at` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `daily_credit_cap` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `replaced_by` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expiry_recorded_at` integer;--> statement-breakpoint
CREATE INDEX `api_keys_expiry_idx` ON `api_keys` (`expires_at`) WHERE "api_keys"."expiry_recorded_at" is null and "api_keys"."expires_at" is not null;--> statement-breakpoint
ALTER TABLE `credit_ledger` ADD `key_id` text;