-- An answer is copied to its line's duplicates (writeAnswers): found through this index instead of
-- reading every line of the job for each answer.
CREATE INDEX `verification_job_items_duplicate_idx` ON `verification_job_items` (`job_id`,`duplicate_of`) WHERE "verification_job_items"."duplicate_of" is not null;