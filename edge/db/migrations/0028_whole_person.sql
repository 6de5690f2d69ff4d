CREATE TABLE `person_employment` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`employer` text NOT NULL,
	`employer_key` text NOT NULL,
	`title` text,
	`start_date` text,
	`end_date` text,
	`current` integer,
	`entry_key` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `person_employment_entry_unique` ON `person_employment` (`person_id`,`entry_key`);--> statement-breakpoint
CREATE INDEX `person_employment_employer_idx` ON `person_employment` (`employer_key`);--> statement-breakpoint
CREATE TABLE `person_employment_domains` (
	`employment_id` integer NOT NULL,
	`person_id` integer NOT NULL,
	`domain` text NOT NULL,
	PRIMARY KEY(`employment_id`, `domain`),
	FOREIGN KEY (`employment_id`) REFERENCES `person_employment`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `person_employment_domains_person_idx` ON `person_employment_domains` (`person_id`,`domain`);--> statement-breakpoint
CREATE INDEX `person_employment_domains_domain_idx` ON `person_employment_domains` (`domain`);--> statement-breakpoint
CREATE TABLE `person_employment_sources` (
	`employment_id` integer NOT NULL,
	`source` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`employment_id`, `source`),
	FOREIGN KEY (`employment_id`) REFERENCES `person_employment`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `person_name_sources` (
	`name_id` integer NOT NULL,
	`source` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`name_id`, `source`),
	FOREIGN KEY (`name_id`) REFERENCES `person_names`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `person_names` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`full` text NOT NULL,
	`given` text,
	`family` text,
	`middle` text,
	`folded` text NOT NULL,
	`name_key` text,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `person_names_person_folded_unique` ON `person_names` (`person_id`,`folded`);--> statement-breakpoint
CREATE INDEX `person_names_key_idx` ON `person_names` (`name_key`,`person_id`);--> statement-breakpoint
ALTER TABLE `lookup_job_lines` ADD `lookup_keys` text;--> statement-breakpoint
ALTER TABLE `lookup_job_lines` ADD `matched_by` text;--> statement-breakpoint
ALTER TABLE `lookup_jobs` ADD `profile` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `person_access_log` ADD `matched_by` text;--> statement-breakpoint
ALTER TABLE `person_emails` ADD `address_key` text;--> statement-breakpoint
CREATE INDEX `person_emails_address_key_idx` ON `person_emails` (`address_key`);--> statement-breakpoint
CREATE INDEX `person_phones_phone_idx` ON `person_phones` (`phone`);--> statement-breakpoint
-- Hand-written: the addresses stored before 0028 get their one key (shared/email/canonical-address.ts) where SQL can
-- compute it: printable ASCII with one "@" is lower-cased, and at gmail.com and googlemail.com a plain dot-atom local
-- part loses its dots and everything from a "+". The rest (IDN domains, non-ASCII or quoted local parts) are keyed by
-- the personal-data cron (edge/people/feedback-store.ts keyStoredAddresses).
UPDATE `person_emails` SET `address_key` = lower(`email`)
  WHERE `address_key` IS NULL AND `email` NOT GLOB '*[^!#-~]*' AND instr(`email`, '@') > 1
    AND instr(substr(`email`, instr(`email`, '@') + 1), '@') = 0
    AND lower(substr(`email`, instr(`email`, '@') + 1)) NOT IN ('gmail.com', 'googlemail.com');--> statement-breakpoint
UPDATE `person_emails` SET `address_key` = replace(CASE WHEN instr(lower(substr(`email`, 1, instr(`email`, '@') - 1)), '+') > 0
      THEN substr(lower(`email`), 1, instr(lower(`email`), '+') - 1) ELSE lower(substr(`email`, 1, instr(`email`, '@') - 1)) END, '.', '') || '@gmail.com'
  WHERE `address_key` IS NULL AND instr(`email`, '@') > 1 AND instr(`email`, '@') <= 65
    AND lower(substr(`email`, instr(`email`, '@') + 1)) IN ('gmail.com', 'googlemail.com')
    AND lower(substr(`email`, 1, instr(`email`, '@') - 1)) NOT GLOB '*[^a-z0-9.+_-]*'
    AND substr(`email`, 1, 1) <> '.' AND substr(`email`, instr(`email`, '@') - 1, 1) <> '.' AND instr(`email`, '..') = 0;
