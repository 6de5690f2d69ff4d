-- Usage by day and key (GET /v1/usage) is a roll-up kept by the writes themselves. A lookup's charge is
-- one INSERT into credit_ledger; this trigger adds it to the key's row for that UTC day in the same
-- statement, so the roll-up never disagrees with the ledger and the per-key daily credit cap (checked
-- in the charge's own WHERE against this row) cannot be overrun by concurrent lookups.
CREATE TRIGGER `credit_ledger_usage` AFTER INSERT ON `credit_ledger`
WHEN NEW.`reason` = 'lookup' AND NEW.`key_id` IS NOT NULL
BEGIN
  INSERT INTO `usage_daily` (`account_id`, `key_id`, `day`, `lookups_charged`, `credits_spent`)
  VALUES (NEW.`account_id`, NEW.`key_id`, strftime('%Y-%m-%d', NEW.`created_at` / 1000, 'unixepoch'), 1, -NEW.`delta`)
  ON CONFLICT (`account_id`, `day`, `key_id`) DO UPDATE SET
    `lookups_charged` = `lookups_charged` + 1,
    `credits_spent` = `credits_spent` - NEW.`delta`;
END;
