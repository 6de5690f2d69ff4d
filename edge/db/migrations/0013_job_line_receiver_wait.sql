-- Job lines parked on a receiver's budget (docs/jobs.md "Waiting on a receiver"): state 'waiting' (the state column
-- has no CHECK), until `wait_until` (the probe's retry_after_ms), on the receiver family `waiting_on`, first parked at
-- `waiting_since` (a line that waited JOB_RECEIVER_WAIT_MAX_SECONDS is answered risky, receiver_budget_spent). No SQL
-- mirror of verificationReason changes: 0009's only fills results stored before reasons existed, none of which has the
-- outcomes budget_spent or not_probed. Numbered 0013: 0011 and 0012 belong to another branch (issue 28).
ALTER TABLE `verification_job_items` ADD `wait_until` integer;--> statement-breakpoint
ALTER TABLE `verification_job_items` ADD `waiting_on` text;--> statement-breakpoint
ALTER TABLE `verification_job_items` ADD `waiting_since` integer;