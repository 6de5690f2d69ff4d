-- A finished job's results page reads its answered lines by position through this index (doneRowsQuery),
-- so the unchecked lines of a cancelled job cost nothing to pass over.
CREATE INDEX `verification_job_items_done_idx` ON `verification_job_items` (`job_id`,`position`) WHERE "verification_job_items"."state" = 'done';