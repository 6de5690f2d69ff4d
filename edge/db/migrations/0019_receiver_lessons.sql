-- What receivers taught the probes by blocking or throttling them (issue 36 item 2; docs/probe.md "What is learned"):
-- one row per budget key, recorded from any probe's batch answer and handed to every probe with each batch.
CREATE TABLE `receiver_lessons` (
	`key` text PRIMARY KEY NOT NULL,
	`harvest` integer NOT NULL,
	`rate_factor` real NOT NULL,
	`blocks` integer NOT NULL,
	`throttles` integer NOT NULL,
	`learned_at` integer NOT NULL
);
