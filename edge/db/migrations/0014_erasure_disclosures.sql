-- Erasure notices that say whom (docs/api.md "GET /v1/people/erasures"): each access-log row keeps the four
-- identifiers its lookup returned, and a notice carries exactly those. Rows logged before this migration get the
-- person's identifiers as they are now, the best record there is of what was returned.
ALTER TABLE `erasure_notices` ADD `profnet_public_identifier` text;--> statement-breakpoint
ALTER TABLE `erasure_notices` ADD `codehost_login` text;--> statement-breakpoint
ALTER TABLE `person_access_log` ADD `profnet_id` integer;--> statement-breakpoint
ALTER TABLE `person_access_log` ADD `profnet_public_identifier` text;--> statement-breakpoint
ALTER TABLE `person_access_log` ADD `codehost_id` integer;--> statement-breakpoint
ALTER TABLE `person_access_log` ADD `codehost_login` text;--> statement-breakpoint
UPDATE `person_access_log` SET
  `profnet_id` = (SELECT `profnet_id` FROM `people` WHERE `people`.`id` = `person_access_log`.`person_id`),
  `profnet_public_identifier` = (SELECT `profnet_public_identifier` FROM `people` WHERE `people`.`id` = `person_access_log`.`person_id`),
  `codehost_id` = (SELECT `codehost_id` FROM `people` WHERE `people`.`id` = `person_access_log`.`person_id`),
  `codehost_login` = (SELECT `codehost_login` FROM `people` WHERE `people`.`id` = `person_access_log`.`person_id`);
