-- Lists that stay the customer's (issue 37): a job made from a CSV file keeps each line's cells (`fields`, one
-- canonical CSV record, never longer than the line was in the file), the columns' names and which held the addresses;
-- a job has a `name`. Jobs made before keep none and are named by their id. The audit trail is read by who acted
-- (`actor=`) and a removed member's name is found by their own events (`target`).
ALTER TABLE `verification_job_items` ADD `fields` text;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `name` text;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `columns` text;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `email_column` integer;--> statement-breakpoint
CREATE INDEX `audit_events_actor_idx` ON `audit_events` (`account_id`,`actor`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_target_idx` ON `audit_events` (`account_id`,`target`,`id`);