-- Every source kept (docs/operations.md "Import format"): each address, phone and handle keeps every source that
-- reported it, with that source's first and last seen. Rows stored before this migration had one source each (the
-- first): it becomes their one source row, with the row's first and last seen. Handles had no source recorded: they
-- get the source "unrecorded", seen when the person was created and last updated.
CREATE TABLE `person_email_sources` (
	`email_id` integer NOT NULL,
	`source` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`email_id`, `source`),
	FOREIGN KEY (`email_id`) REFERENCES `person_emails`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `person_handle_sources` (
	`person_id` integer NOT NULL,
	`field` text NOT NULL,
	`value` text NOT NULL,
	`source` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`person_id`, `field`, `value`, `source`),
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `person_phone_sources` (
	`phone_id` integer NOT NULL,
	`source` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`phone_id`, `source`),
	FOREIGN KEY (`phone_id`) REFERENCES `person_phones`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `person_email_sources` (`email_id`, `source`, `first_seen_at`, `last_seen_at`)
  SELECT `id`, `source`, `first_seen_at`, `last_seen_at` FROM `person_emails`;--> statement-breakpoint
INSERT INTO `person_phone_sources` (`phone_id`, `source`, `first_seen_at`, `last_seen_at`)
  SELECT `id`, `source`, `first_seen_at`, `last_seen_at` FROM `person_phones`;--> statement-breakpoint
INSERT INTO `person_handle_sources` (`person_id`, `field`, `value`, `source`, `first_seen_at`, `last_seen_at`)
  SELECT `id`, 'codehost_username', `codehost_username`, 'unrecorded', `created_at`, `updated_at` FROM `people` WHERE `codehost_username` IS NOT NULL
  UNION ALL SELECT `id`, 'socialnet_username', `socialnet_username`, 'unrecorded', `created_at`, `updated_at` FROM `people` WHERE `socialnet_username` IS NOT NULL
  UNION ALL SELECT `id`, 'microblog_username', `microblog_username`, 'unrecorded', `created_at`, `updated_at` FROM `people` WHERE `microblog_username` IS NOT NULL;--> statement-breakpoint
ALTER TABLE `person_emails` DROP COLUMN `source`;--> statement-breakpoint
ALTER TABLE `person_phones` DROP COLUMN `source`;