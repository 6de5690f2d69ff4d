-- Job lines (docs/jobs.md "How a job runs"): claims counts every claim of a line; probe_failures only the claims whose
-- probe could not be asked, which move the line to the next probe and end in "no SMTP check"; lease_token is the
-- owner of a claim, checked by its renewals and writes. A temporary answer's second try is a "recheck" (it was
-- "retry", a word the queue already uses for redelivering a message). The ledger index serves GET /v1/account,
-- which sums an account's lookups since the start of the day and of the month.
ALTER TABLE `verification_job_items` RENAME COLUMN "attempts" TO "claims";--> statement-breakpoint
ALTER TABLE `verification_job_items` RENAME COLUMN "retry_at" TO "recheck_at";--> statement-breakpoint
ALTER TABLE `verification_job_items` ADD `probe_failures` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `verification_job_items` ADD `lease_token` text;--> statement-breakpoint
CREATE INDEX `credit_ledger_account_reason_created_idx` ON `credit_ledger` (`account_id`,`reason`,`created_at`);--> statement-breakpoint
UPDATE `verification_job_items` SET `state` = 'recheck' WHERE `state` = 'retry';
