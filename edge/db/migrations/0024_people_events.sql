-- People events (docs/api.md "People events"): where an account wants them (accounts.people_events_url), the changes to
-- people someone received (person_changes, written by the triggers below in the same transaction as the change), and
-- the signed events waiting to be delivered (people_events).
CREATE TABLE `people_events` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`person_id` integer,
	`type` text NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	`state` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_at` integer DEFAULT 0 NOT NULL,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `people_events_due_idx` ON `people_events` (`state`,`next_at`);--> statement-breakpoint
CREATE INDEX `people_events_person_idx` ON `people_events` (`person_id`);--> statement-breakpoint
CREATE TABLE `person_changes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`email_id` integer NOT NULL,
	`kind` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `accounts` ADD `people_events_url` text;--> statement-breakpoint
-- An address of a person someone received became undeliverable (our re-verification, edge/people/store.ts), or was added
-- (an import): recorded with the change itself, so no path that makes one can forget it. Who is told is decided later,
-- from the access log and the subscriptions (edge/people-events.ts).
CREATE TRIGGER `person_emails_undeliverable_change` AFTER UPDATE OF `undeliverable_at` ON `person_emails`
WHEN old.`undeliverable_at` IS NULL AND new.`undeliverable_at` IS NOT NULL
  AND EXISTS (SELECT 1 FROM `person_access_log` WHERE `person_id` = new.`person_id`)
BEGIN
  INSERT INTO `person_changes` (`person_id`, `email_id`, `kind`, `created_at`)
  VALUES (new.`person_id`, new.`id`, 'address_undeliverable', CAST(unixepoch('subsec') * 1000 AS integer));
END;--> statement-breakpoint
CREATE TRIGGER `person_emails_added_change` AFTER INSERT ON `person_emails`
WHEN EXISTS (SELECT 1 FROM `person_access_log` WHERE `person_id` = new.`person_id`)
BEGIN
  INSERT INTO `person_changes` (`person_id`, `email_id`, `kind`, `created_at`)
  VALUES (new.`person_id`, new.`id`, 'address_added', CAST(unixepoch('subsec') * 1000 AS integer));
END;