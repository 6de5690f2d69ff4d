CREATE TABLE `merge_candidates` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`people` text NOT NULL,
	`record` text NOT NULL,
	`reason` text NOT NULL,
	`source` text NOT NULL,
	`line` integer NOT NULL,
	`created_at` integer NOT NULL,
	`state` text DEFAULT 'open' NOT NULL,
	`decided_at` integer,
	`snapshot` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `merge_candidates_open_unique` ON `merge_candidates` (`people`,`record`) WHERE "merge_candidates"."state" = 'open';--> statement-breakpoint
CREATE INDEX `merge_candidates_state_idx` ON `merge_candidates` (`state`,`id`);