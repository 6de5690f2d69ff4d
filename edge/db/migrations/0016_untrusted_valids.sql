-- A line that leaves `done` (edge/jobs/untrusted.ts: a receiver's `valid` answers no longer trusted, sent
-- back for a recheck) takes its answer out of its job's counts, as verification_job_items_update_done put
-- it in: processed, the classification's count and its reason's. Nothing else moves a line out of done.
CREATE TRIGGER `verification_job_items_update_undone` AFTER UPDATE OF `state` ON `verification_job_items`
WHEN OLD.`state` = 'done' AND NEW.`state` != 'done'
BEGIN
  UPDATE `verification_jobs` SET
    `processed` = `processed` - 1,
    `valid_count` = `valid_count` - (OLD.`classification` = 'valid'),
    `risky_count` = `risky_count` - (OLD.`classification` = 'risky'),
    `invalid_count` = `invalid_count` - (OLD.`classification` = 'invalid'),
    `reason_counts` = CASE WHEN OLD.`reason` IS NULL THEN `reason_counts`
      ELSE json_set(`reason_counts`, '$.' || OLD.`reason`, coalesce(json_extract(`reason_counts`, '$.' || OLD.`reason`), 0) - 1) END,
    `updated_at` = (unixepoch('subsec') * 1000)
  WHERE `id` = OLD.`job_id`;
END;
