-- A job's counters follow its items: a line is counted once, at the moment it becomes done (inserted
-- done, as a line that fails the syntax check is, or updated to done by the consumer). Whatever
-- retries, duplicate queue messages or restarts happen, a line cannot be counted twice, and the
-- counters never drift from the rows.
CREATE TRIGGER `verification_job_items_insert_done` AFTER INSERT ON `verification_job_items`
WHEN NEW.`state` = 'done'
BEGIN
  UPDATE `verification_jobs` SET
    `processed` = `processed` + 1,
    `valid_count` = `valid_count` + (NEW.`classification` = 'valid'),
    `risky_count` = `risky_count` + (NEW.`classification` = 'risky'),
    `invalid_count` = `invalid_count` + (NEW.`classification` = 'invalid')
  WHERE `id` = NEW.`job_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `verification_job_items_update_done` AFTER UPDATE OF `state` ON `verification_job_items`
WHEN NEW.`state` = 'done' AND OLD.`state` != 'done'
BEGIN
  UPDATE `verification_jobs` SET
    `processed` = `processed` + 1,
    `valid_count` = `valid_count` + (NEW.`classification` = 'valid'),
    `risky_count` = `risky_count` + (NEW.`classification` = 'risky'),
    `invalid_count` = `invalid_count` + (NEW.`classification` = 'invalid'),
    `updated_at` = (unixepoch('subsec') * 1000)
  WHERE `id` = NEW.`job_id`;
END;
