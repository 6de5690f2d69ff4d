-- Job summaries and filtered results (docs/jobs.md "The job object", "GET /v1/email_verification_jobs/{id}/results"): each
-- answered line keeps its result's `reason` and when it was answered (`checked_at`); the job keeps its answered lines
-- by reason in `reason_counts`, a JSON object moved by the same triggers as processed and the counts, in the same
-- write as the answer. Lines answered before this migration get their reason from their stored result, by the rules
-- of verificationReason (shared/email/verdict.ts) spelled in SQL, and the time their job last moved.
ALTER TABLE `verification_job_items` ADD `reason` text;--> statement-breakpoint
ALTER TABLE `verification_job_items` ADD `checked_at` integer;--> statement-breakpoint
ALTER TABLE `verification_jobs` ADD `reason_counts` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
DROP TRIGGER `verification_job_items_insert_done`;--> statement-breakpoint
DROP TRIGGER `verification_job_items_update_done`;--> statement-breakpoint
CREATE TRIGGER `verification_job_items_insert_done` AFTER INSERT ON `verification_job_items`
WHEN NEW.`state` = 'done'
BEGIN
  UPDATE `verification_jobs` SET
    `processed` = `processed` + 1,
    `valid_count` = `valid_count` + (NEW.`classification` = 'valid'),
    `risky_count` = `risky_count` + (NEW.`classification` = 'risky'),
    `invalid_count` = `invalid_count` + (NEW.`classification` = 'invalid'),
    `reason_counts` = CASE WHEN NEW.`reason` IS NULL THEN `reason_counts`
      ELSE json_set(`reason_counts`, '$.' || NEW.`reason`, coalesce(json_extract(`reason_counts`, '$.' || NEW.`reason`), 0) + 1) END
  WHERE `id` = NEW.`job_id`;
END;--> statement-breakpoint
CREATE TRIGGER `verification_job_items_update_done` AFTER UPDATE OF `state` ON `verification_job_items`
WHEN NEW.`state` = 'done' AND OLD.`state` != 'done'
BEGIN
  UPDATE `verification_jobs` SET
    `processed` = `processed` + 1,
    `valid_count` = `valid_count` + (NEW.`classification` = 'valid'),
    `risky_count` = `risky_count` + (NEW.`classification` = 'risky'),
    `invalid_count` = `invalid_count` + (NEW.`classification` = 'invalid'),
    `reason_counts` = CASE WHEN NEW.`reason` IS NULL THEN `reason_counts`
      ELSE json_set(`reason_counts`, '$.' || NEW.`reason`, coalesce(json_extract(`reason_counts`, '$.' || NEW.`reason`), 0) + 1) END,
    `updated_at` = (unixepoch('subsec') * 1000)
  WHERE `id` = NEW.`job_id`;
END;--> statement-breakpoint
UPDATE `verification_job_items` SET `reason` = CASE
    WHEN json_extract(`result`, '$.checks.syntax') = 0 THEN 'syntax'
    WHEN json_extract(`result`, '$.checks.mx_record') = 0 THEN 'no_mail_domain'
    WHEN json_extract(`result`, '$.checks.smtp_deliverable') = 0 THEN 'mailbox_not_found'
    WHEN json_extract(`result`, '$.checks.disposable') = 1 THEN 'disposable'
    WHEN json_extract(`result`, '$.checks.smtp_deliverable') = 1 AND json_extract(`result`, '$.checks.accepts_any_email') = 1 THEN 'catch_all'
    WHEN json_extract(`result`, '$.details.smtp_outcome') = 'policy_block' THEN 'policy_block'
    WHEN json_extract(`result`, '$.details.smtp_outcome') IN ('temporary_failure', 'timeout') THEN 'temporary_failure'
    WHEN json_extract(`result`, '$.details.smtp_outcome') = 'mailbox_full' THEN 'mailbox_full'
    WHEN json_extract(`result`, '$.details.smtp_outcome') = 'connection_failed' THEN 'connection_failed'
    WHEN json_extract(`result`, '$.details.smtp_outcome') IN ('rejected_unclear', 'protocol_error') THEN 'smtp_inconclusive'
    WHEN json_extract(`result`, '$.score_details.dns_failed_assumption') = 1 THEN 'dns_failure'
    WHEN json_extract(`result`, '$.checks.smtp_deliverable') IS NOT 1 THEN 'no_smtp_check'
    ELSE 'deliverable'
  END
  WHERE `state` = 'done' AND `result` IS NOT NULL AND `reason` IS NULL;--> statement-breakpoint
UPDATE `verification_job_items` SET `checked_at` = (SELECT coalesce(`completed_at`, `updated_at`) FROM `verification_jobs` j WHERE j.`id` = `job_id`)
  WHERE `state` = 'done' AND `checked_at` IS NULL;--> statement-breakpoint
UPDATE `verification_jobs` SET `reason_counts` = coalesce((SELECT json_group_object(`reason`, `lines`) FROM
    (SELECT `reason`, count(*) AS `lines` FROM `verification_job_items` i WHERE i.`job_id` = `verification_jobs`.`id` AND i.`state` = 'done' AND i.`reason` IS NOT NULL GROUP BY `reason`)), '{}');
