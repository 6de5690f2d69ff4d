-- The ledger is the source of truth for credits: every charge or grant is one INSERT into
-- credit_ledger, and this trigger applies it to the account in the same statement. Together with
-- the CHECK (credit_balance >= 0) on accounts, a charge that would overdraw fails as a whole, so the
-- balance can never go negative and never moves without a ledger row, whatever the concurrency.
CREATE TRIGGER `credit_ledger_apply` AFTER INSERT ON `credit_ledger`
BEGIN
  UPDATE `accounts` SET `credit_balance` = `credit_balance` + NEW.`delta` WHERE `id` = NEW.`account_id`;
END;
