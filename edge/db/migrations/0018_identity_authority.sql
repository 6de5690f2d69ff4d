-- Authority that cannot be escalated or outlived (issue 34; docs/api.md "Keys and scopes", "Members and roles").
-- Daily credit caps count per budget, not per key: a key's own budget is shared by the keys rolled from it (a roll
-- carries the day's spend) and a child made by a capped key also counts against its maker's budget
-- (api_keys.credit_caps, key_cap_spend, and the trigger below that keeps it in the charge's own statement).
-- Invites can be revoked, and are voided with their maker's authority. Sessions record the passkey that opened them
-- (removing it ends them) and when the member last proved presence (adding a passkey needs it recent).
-- session_notes holds the console's one-time values, sealed with the session's secret.
CREATE TABLE `key_cap_spend` (
	`budget_id` text NOT NULL,
	`day` text NOT NULL,
	`credits_spent` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`budget_id`, `day`)
);
--> statement-breakpoint
CREATE TABLE `session_notes` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`sealed` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `session_notes_session_idx` ON `session_notes` (`session_id`);--> statement-breakpoint
CREATE INDEX `session_notes_created_idx` ON `session_notes` (`created_at`);--> statement-breakpoint
ALTER TABLE `api_keys` ADD `credit_caps` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `invites` ADD `revoked_at` integer;--> statement-breakpoint
ALTER TABLE `invites` ADD `revoked_by` text;--> statement-breakpoint
CREATE INDEX `invites_pending_by_creator_idx` ON `invites` (`created_by`) WHERE "invites"."used_at" is null and "invites"."revoked_at" is null;--> statement-breakpoint
ALTER TABLE `sessions` ADD `passkey_id` text;--> statement-breakpoint
ALTER TABLE `sessions` ADD `verified_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `sessions_passkey_idx` ON `sessions` (`passkey_id`);--> statement-breakpoint
-- Every capped key starts as the only key of its own budget, with today's spend carried over from the roll-up.
UPDATE `api_keys` SET `credit_caps` = json_array(json_object('budget', `id`, 'cap', `daily_credit_cap`)) WHERE `daily_credit_cap` IS NOT NULL;--> statement-breakpoint
INSERT INTO `key_cap_spend` (`budget_id`, `day`, `credits_spent`)
SELECT `key_id`, `day`, `credits_spent` FROM `usage_daily`
WHERE `day` = strftime('%Y-%m-%d', 'now') AND `key_id` IN (SELECT `id` FROM `api_keys` WHERE `daily_credit_cap` IS NOT NULL);--> statement-breakpoint
-- The sessions open now: the passkey their sign-in recorded, and their sign-in as the last proof of presence.
UPDATE `sessions` SET
  `passkey_id` = (SELECT json_extract(`details`, '$.passkey_id') FROM `audit_events` WHERE `action` = 'session.signed_in' AND `target` = `sessions`.`id`),
  `verified_at` = `created_at`;--> statement-breakpoint
-- A lookup's charge adds its credits to every budget of the charging key, in the same statement as the charge (the
-- charge's own WHERE checks each budget against its cap, edge/credits.ts), so concurrent lookups cannot overrun one.
CREATE TRIGGER `credit_ledger_caps` AFTER INSERT ON `credit_ledger`
WHEN NEW.`reason` = 'lookup' AND NEW.`key_id` IS NOT NULL
BEGIN
  INSERT INTO `key_cap_spend` (`budget_id`, `day`, `credits_spent`)
  SELECT json_extract(j.`value`, '$.budget'), strftime('%Y-%m-%d', NEW.`created_at` / 1000, 'unixepoch'), -NEW.`delta`
  FROM `api_keys` k, json_each(k.`credit_caps`) j WHERE k.`id` = NEW.`key_id`
  ON CONFLICT (`budget_id`, `day`) DO UPDATE SET `credits_spent` = `credits_spent` + excluded.`credits_spent`;
END;
