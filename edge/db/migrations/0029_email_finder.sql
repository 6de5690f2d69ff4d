CREATE TABLE `domain_facts` (
	`domain` text PRIMARY KEY NOT NULL,
	`accept_all` integer,
	`accept_all_checked_at` integer,
	`mx_provider` text,
	`receiver_family` text,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `erased_addresses` (
	`address_hash` text PRIMARY KEY NOT NULL,
	`erased_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `finder_checks` (
	`address_hash` text PRIMARY KEY NOT NULL,
	`outcome` text,
	`reason` text,
	`classification` text,
	`catch_all` integer,
	`checked_at` integer,
	`pending_until` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `finder_checks_created_idx` ON `finder_checks` (`created_at`);--> statement-breakpoint
CREATE TABLE `finder_finds` (
	`account_id` text NOT NULL,
	`find_key` text NOT NULL,
	`charged_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `find_key`)
);
--> statement-breakpoint
CREATE INDEX `finder_finds_charged_idx` ON `finder_finds` (`charged_at`);--> statement-breakpoint
CREATE INDEX `person_emails_domain_idx` ON `person_emails` (substr("address_key", instr("address_key", '@') + 1));