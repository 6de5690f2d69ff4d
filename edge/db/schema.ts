/**
 * The database, in Drizzle. Migrations are generated from this file by drizzle-kit
 * (`npm run db:generate`) into `edge/db/migrations`, plus hand-written migrations for the triggers
 * that drizzle-kit cannot express (`drizzle-kit generate --custom`).
 * Longer than 400 lines on purpose: every table in one file, so a migration's whole diff is read in one place.
 */
import { sql } from "drizzle-orm";
import { ROLES } from "../../shared/roles.ts";
import { SCOPES_BEFORE_1_10_STORED } from "../../shared/scopes.ts";
import { check, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const now = sql`(unixepoch('subsec') * 1000)`;
/** The role list as SQL, for the checks on members and invites: shared/roles.ts states it once. */
const knownRoles = sql.raw(ROLES.map((r) => `'${r}'`).join(", "));

export const accounts = sqliteTable(
  "accounts",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    /** Maintained by the credit_ledger trigger; never written directly (see 0001 migration). */
    creditBalance: integer("credit_balance").notNull().default(0),
    status: text("status", { enum: ["active", "disabled"] }).notNull().default("active"),
    /** "whsec_" + base64: signs job callbacks and people events (Standard Webhooks). Made on first use; shown by the admin CLI. */
    webhookSecret: text("webhook_secret"),
    /** Where people events go (docs/api.md "People events"); null: not subscribed. */
    peopleEventsUrl: text("people_events_url"),
    createdAt: integer("created_at").notNull().default(now),
  },
  (t) => [
    check("accounts_balance_non_negative", sql`${t.creditBalance} >= 0`),
    check("accounts_status_known", sql`${t.status} in ('active', 'disabled')`),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    /** Hex SHA-256 of the whole token; the token itself is never stored. */
    tokenHash: text("token_hash").notNull(),
    /** The first characters of the token, enough for a person to tell keys apart. */
    prefix: text("prefix").notNull(),
    /** What a person calls the key; keys made before names existed have "". */
    name: text("name").notNull().default(""),
    /** A JSON array of scope names (shared/scopes.ts); keys made before scopes existed hold every scope of 1.7.0. */
    scopes: text("scopes").notNull().default(SCOPES_BEFORE_1_10_STORED),
    /** Who made it: "operator" (the admin CLI) or the id of the key that made it. */
    createdBy: text("created_by").notNull().default("operator"),
    createdAt: integer("created_at").notNull().default(now),
    /** Written at most once per LAST_USED_WRITE_INTERVAL_MS per key, inside a batch the request makes anyway. */
    lastUsedAt: integer("last_used_at"),
    /** From then on the key is refused (401, "expired"). A roll sets it on the old key. */
    expiresAt: integer("expires_at"),
    revokedAt: integer("revoked_at"),
    /** Credits the key may spend per UTC day; null: only the balance limits it. */
    dailyCreditCap: integer("daily_credit_cap"),
    /**
     * The daily caps this key's charges count against (edge/credits.ts), a JSON array of {"budget", "cap"}: its own
     * cap's budget, shared with every key rolled from it (a roll carries the day's spend), and the budgets of the
     * capped keys that made it (a child spends its parent's cap too). "[]" for a key nothing caps.
     */
    creditCaps: text("credit_caps").notNull().default("[]"),
    /** The key a roll made in its place: a rolled key cannot be rolled again. */
    replacedBy: text("replaced_by"),
    /** When the cron wrote the key's "key.expired" audit event. */
    expiryRecordedAt: integer("expiry_recorded_at"),
  },
  (t) => [
    uniqueIndex("api_keys_token_hash_unique").on(t.tokenHash),
    index("api_keys_account_idx").on(t.accountId),
    // The cron finds keys that expired and were not yet recorded.
    index("api_keys_expiry_idx").on(t.expiresAt).where(sql`${t.expiryRecordedAt} is null and ${t.expiresAt} is not null`),
  ],
);

export const creditLedger = sqliteTable(
  "credit_ledger",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    /** Negative for a charge, positive for a grant. */
    delta: integer("delta").notNull(),
    balanceAfter: integer("balance_after").notNull(),
    reason: text("reason", { enum: ["lookup", "grant"] }).notNull(),
    requestId: text("request_id"),
    /** The key a lookup was charged to (null for grants and for charges made before 1.7.0): usage by key. */
    keyId: text("key_id"),
    createdAt: integer("created_at").notNull().default(now),
  },
  (t) => [
    index("credit_ledger_account_idx").on(t.accountId, t.id),
    // GET /v1/account sums an account's lookups since the start of the day and of the month.
    index("credit_ledger_account_reason_created_idx").on(t.accountId, t.reason, t.createdAt),
  ],
);

export const people = sqliteTable(
  "people",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    profnetId: integer("profnet_id"),
    profnetPublicIdentifier: text("profnet_public_identifier"),
    codehostId: integer("codehost_id"),
    codehostLogin: text("codehost_login"),
    codehostUsername: text("codehost_username"),
    socialnetUsername: text("socialnet_username"),
    microblogUsername: text("microblog_username"),
    createdAt: integer("created_at").notNull().default(now),
    updatedAt: integer("updated_at").notNull().default(now),
  },
  (t) => [
    uniqueIndex("people_profnet_id_unique").on(t.profnetId),
    // Public identifiers and logins match case-insensitively (docs/api.md "GET /v1/people"): the unique index is on
    // lower(), and lookups compare lower(column) = lower(?), so they use it.
    uniqueIndex("people_profnet_public_identifier_unique").on(sql`lower(${t.profnetPublicIdentifier})`),
    uniqueIndex("people_codehost_id_unique").on(t.codehostId),
    uniqueIndex("people_codehost_login_unique").on(sql`lower(${t.codehostLogin})`),
  ],
);

export const personEmails = sqliteTable(
  "person_emails",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    personId: integer("person_id")
      .notNull()
      .references(() => people.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    /** When any source first and last reported the address (the earliest and latest of person_email_sources): the lookup reads these. */
    firstSeenAt: integer("first_seen_at").notNull().default(now),
    lastSeenAt: integer("last_seen_at").notNull().default(now),
    /**
     * The last re-verification by our own engine (docs/operations.md "Personal data"): its classification, its
     * details.smtp_outcome and reason, and when (ms). Null until the first check.
     */
    classification: text("classification", { enum: ["valid", "risky", "invalid"] }),
    smtpOutcome: text("smtp_outcome"),
    reason: text("reason"),
    checkedAt: integer("checked_at"),
    /** When a check first said mailbox_not_found, in the current run of such answers (null once one says otherwise). */
    notFoundAt: integer("not_found_at"),
    /** Set when a second mailbox_not_found at least EMAIL_RECHECK_SECONDS after the first made the address undeliverable: no lookup returns it from then on; cleared only by a check that finds the mailbox. */
    undeliverableAt: integer("undeliverable_at"),
    /** When the address is next due for a check (ms): 0 for a new one (soon after import), below 0 for a reported hard bounce; the cron takes the lowest first. */
    nextCheckAt: integer("next_check_at").notNull().default(0),
    /** The address's name in bounce feedback (shared/people/address-hash.ts), under which its reports are found; null until the cron or a report names it. */
    addressHash: text("address_hash"),
    /**
     * The address's one key (shared/email/canonical-address.ts), by which a lookup by email finds it: set by the import;
     * rows stored before it had one are keyed by the 0028 migration (ASCII addresses) and the personal-data cron (the rest).
     */
    addressKey: text("address_key"),
  },
  (t) => [
    index("person_emails_address_key_idx").on(t.addressKey),
    uniqueIndex("person_emails_person_email_unique").on(t.personId, sql`lower(${t.email})`),
    // The cron's re-verification takes the addresses due, oldest first.
    index("person_emails_next_check_idx").on(t.nextCheckAt),
    // An address's checks are written to every person that has it, and an erasure by address finds them all.
    index("person_emails_email_idx").on(sql`lower(${t.email})`),
    // The cron names the rows without a name; a report finds the rows it is about.
    index("person_emails_address_hash_idx").on(t.addressHash),
    // The finder and the domain search read a domain's addresses (edge/people/finder-store.ts addressDomain, the same expression).
    index("person_emails_domain_idx").on(sql`substr(${t.addressKey}, instr(${t.addressKey}, '@') + 1)`),
  ],
);

export const personPhones = sqliteTable(
  "person_phones",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    personId: integer("person_id")
      .notNull()
      .references(() => people.id, { onDelete: "cascade" }),
    /** E.164, normalised at import. */
    phone: text("phone").notNull(),
    /** When any source first and last reported the number (the earliest and latest of person_phone_sources). */
    firstSeenAt: integer("first_seen_at").notNull().default(now),
    lastSeenAt: integer("last_seen_at").notNull().default(now),
  },
  (t) => [
    uniqueIndex("person_phones_person_phone_unique").on(t.personId, t.phone),
    // A lookup by phone finds the people who hold the number.
    index("person_phones_phone_idx").on(t.phone),
  ],
);

/**
 * A person's names (docs/operations.md "Import format"): as the sources wrote them (NFC), one row per spelling that
 * folds differently, with the key a lookup by name compares (shared/people/names.ts nameKey; null when the name has no
 * given and family name to key). Erased with the person.
 */
export const personNames = sqliteTable(
  "person_names",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    personId: integer("person_id")
      .notNull()
      .references(() => people.id, { onDelete: "cascade" }),
    full: text("full").notNull(),
    given: text("given"),
    family: text("family"),
    middle: text("middle"),
    /** foldName(full): the normalised ASCII form (accents dropped, lower case) one spelling is told from another by. */
    folded: text("folded").notNull(),
    nameKey: text("name_key"),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [uniqueIndex("person_names_person_folded_unique").on(t.personId, t.folded), index("person_names_key_idx").on(t.nameKey, t.personId)],
);

/** Every source that reported a name, as person_email_sources does for addresses. */
export const personNameSources = sqliteTable(
  "person_name_sources",
  {
    nameId: integer("name_id")
      .notNull()
      .references(() => personNames.id, { onDelete: "cascade" }),
    source: text("source").notNull(),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.nameId, t.source] })],
);

/**
 * A person's work history: one row per (employer, title, start) as its key folds (shared/people/names.ts employerKey),
 * with the employer as written, dates as the import gives them (YYYY, YYYY-MM or YYYY-MM-DD) and whether it is current
 * (1, 0, or null: the sources did not say). Erased with the person.
 */
export const personEmployment = sqliteTable(
  "person_employment",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    personId: integer("person_id")
      .notNull()
      .references(() => people.id, { onDelete: "cascade" }),
    employer: text("employer").notNull(),
    employerKey: text("employer_key").notNull(),
    title: text("title"),
    startDate: text("start_date"),
    endDate: text("end_date"),
    current: integer("current"),
    /** The row's identity within the person: employer_key, folded title and start, joined (the import's plan keys by it). */
    entryKey: text("entry_key").notNull(),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [uniqueIndex("person_employment_entry_unique").on(t.personId, t.entryKey), index("person_employment_employer_idx").on(t.employerKey)],
);

/**
 * The domains of an employment (shared/people/names.ts normaliseDomain), with the person's id beside them: a lookup by
 * name at a company's domain checks (person, domain) by one index; a company's name finds its domains by the employer.
 */
export const personEmploymentDomains = sqliteTable(
  "person_employment_domains",
  {
    employmentId: integer("employment_id")
      .notNull()
      .references(() => personEmployment.id, { onDelete: "cascade" }),
    personId: integer("person_id")
      .notNull()
      .references(() => people.id, { onDelete: "cascade" }),
    domain: text("domain").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.employmentId, t.domain] }),
    index("person_employment_domains_person_idx").on(t.personId, t.domain),
    index("person_employment_domains_domain_idx").on(t.domain),
  ],
);

/** Every source that reported an employment, as person_email_sources does for addresses. */
export const personEmploymentSources = sqliteTable(
  "person_employment_sources",
  {
    employmentId: integer("employment_id")
      .notNull()
      .references(() => personEmployment.id, { onDelete: "cascade" }),
    source: text("source").notNull(),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.employmentId, t.source] })],
);

/**
 * Every source that reported an address, with when that source first and last did (docs/operations.md "Import
 * format"): a source is the supplier the import names (`--source`, or a line's `source`). Re-importing a source moves
 * its last_seen_at. Lookups say how many sources back an address, never which (suppliers are ours).
 */
export const personEmailSources = sqliteTable(
  "person_email_sources",
  {
    emailId: integer("email_id")
      .notNull()
      .references(() => personEmails.id, { onDelete: "cascade" }),
    source: text("source").notNull(),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.emailId, t.source] })],
);

/** Every source that reported a phone number, as person_email_sources does for addresses. */
export const personPhoneSources = sqliteTable(
  "person_phone_sources",
  {
    phoneId: integer("phone_id")
      .notNull()
      .references(() => personPhones.id, { onDelete: "cascade" }),
    source: text("source").notNull(),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.phoneId, t.source] })],
);

/**
 * Every source that reported a handle (codehost_username, socialnet_username, microblog_username) with each value it
 * gave: the person's row holds the latest value; this keeps who said what, and when.
 */
export const personHandleSources = sqliteTable(
  "person_handle_sources",
  {
    personId: integer("person_id")
      .notNull()
      .references(() => people.id, { onDelete: "cascade" }),
    field: text("field", { enum: ["codehost_username", "socialnet_username", "microblog_username"] }).notNull(),
    value: text("value").notNull(),
    source: text("source").notNull(),
    firstSeenAt: integer("first_seen_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.personId, t.field, t.value, t.source] })],
);

/**
 * Bulk verification jobs. Counters are kept by triggers on the items (see the 0003 migration), so a
 * line counts once, when it becomes done, whatever retries or redelivered messages happen.
 */
export const verificationJobs = sqliteTable(
  "verification_jobs",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    status: text("status", { enum: ["queued", "running", "completed", "cancelled"] }).notNull().default("queued"),
    total: integer("total").notNull(),
    processed: integer("processed").notNull().default(0),
    validCount: integer("valid_count").notNull().default(0),
    riskyCount: integer("risky_count").notNull().default(0),
    invalidCount: integer("invalid_count").notNull().default(0),
    /** Answered lines by reason, a JSON object kept by the same triggers as the counts (0009 migration). */
    reasonCounts: text("reason_counts").notNull().default("{}"),
    smtpTimeout: integer("smtp_timeout").notNull(),
    callbackUrl: text("callback_url"),
    /** none: no callback_url; pending: to be delivered (next attempt at callback_next_at); delivered; failed: gave up. */
    callbackState: text("callback_state", { enum: ["none", "pending", "delivered", "failed"] }).notNull().default("none"),
    callbackAttempts: integer("callback_attempts").notNull().default(0),
    callbackNextAt: integer("callback_next_at"),
    callbackLastError: text("callback_last_error"),
    idempotencyKey: text("idempotency_key"),
    /** SHA-256 of what the job was asked to do, so a reused Idempotency-Key with another request is told apart. */
    requestHash: text("request_hash").notNull(),
    createdAt: integer("created_at").notNull().default(now),
    startedAt: integer("started_at"),
    completedAt: integer("completed_at"),
    /** When a consumer last claimed lines of this job: whose turn it is among an account's jobs, and among accounts (docs/jobs.md "Scheduling"). */
    lastClaimAt: integer("last_claim_at"),
    /** Last progress (or last requeue by the cron): what stalled-work detection looks at. */
    updatedAt: integer("updated_at").notNull().default(now),
    /**
     * 1 while its lines are still being written, a few thousand per transaction (so a large create
     * never holds the write lock in one piece): no read, claim or cron sees the job until it is 0.
     * A create that died half way leaves it 1; the cron deletes such a job.
     */
    creating: integer("creating").notNull().default(0),
    /** What the job asked for at creation (retention_seconds); null: JOB_RETENTION_SECONDS. */
    retentionSeconds: integer("retention_seconds"),
    /** 0 results held; 1 expired, lines being deleted by the cron; 2 every line deleted (retention ran out, or DELETE ?purge=true). The API says results_expired: state > 0, and its results endpoints answer 410. */
    resultsState: integer("results_state").notNull().default(0),
    /** What the job is called (the name given at creation; the console gives the file's name); null: none given, the API says its id. */
    name: text("name"),
    /** The kept columns' names of a job made from a CSV file, a JSON array in the file's order (edge/jobs/kept-columns.ts); null: none kept. */
    columns: text("columns"),
    /** Which of `columns` held the addresses (0-based); null when none are kept. */
    emailColumn: integer("email_column"),
    /**
     * The lookup job whose verify_emails phase this job is (docs/lookup-jobs.md "Verified addresses"); null for a job a
     * customer made. Set only by our own engine, never from a request: how the phase finds its job (not by an
     * Idempotency-Key, which is the customer's), and why the verification job routes neither list it nor show its
     * addresses to a caller without people:read.
     */
    parentJobId: text("parent_job_id"),
    /** Who made it: the key's id, or the member's for a session; null for the service's own jobs and jobs made before 1.11. Its jobs stop when it is revoked, expires or is removed. */
    actor: text("actor"),
    /** Once cancelled: requested (DELETE), key_revoked, key_expired, member_removed or lookup_job_cancelled (a verify_emails phase); null for jobs cancelled before 1.11. */
    cancelReason: text("cancel_reason"),
  },
  (t) => [
    uniqueIndex("verification_jobs_idempotency_unique").on(t.accountId, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
    uniqueIndex("verification_jobs_parent_unique").on(t.parentJobId).where(sql`${t.parentJobId} is not null`),
    // The daily line quota sums an account's jobs created in the last 24 hours.
    index("verification_jobs_account_created_idx").on(t.accountId, t.createdAt),
    index("verification_jobs_account_status_idx").on(t.accountId, t.status),
    index("verification_jobs_status_updated_idx").on(t.status, t.updatedAt),
    // The cron's retention finds finished jobs whose results are still held, by when they ended.
    index("verification_jobs_retention_idx").on(t.resultsState, t.completedAt),
    check("verification_jobs_status_known", sql`${t.status} in ('queued', 'running', 'completed', 'cancelled')`),
  ],
);

/** One row per job line, in input order (`position`); the code calls a row a "line" (the table keeps its first name). */
export const verificationJobItems = sqliteTable(
  "verification_job_items",
  {
    jobId: text("job_id")
      .notNull()
      .references(() => verificationJobs.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    /** The line as given. */
    email: text("email").notNull(),
    /**
     * The line's place in the work order: lines sorted by domain at creation, so the lines claimed
     * together (LINES_PER_TURN in this order) are whole domains or long slices of one, and each reaches
     * its probe in one batch (docs/jobs.md "Scheduling"). Results keep `position`, the input order.
     */
    seq: integer("seq").notNull().default(0),
    /** The first line with the same address: this one is answered with it, never checked on its own. */
    duplicateOf: integer("duplicate_of"),
    /**
     * pending; claimed (a consumer is on it until lease_until); recheck (its first answer was temporary:
     * asked once more at recheck_at); waiting (parked on a receiver's budget until wait_until); done.
     */
    state: text("state", { enum: ["pending", "claimed", "recheck", "waiting", "done"] }).notNull(),
    /** Times the line was claimed, whatever became of the claim (a consumer that died, a database error). */
    claims: integer("claims").notNull().default(0),
    /** Claims whose probe could not be asked (unreachable, an error status): what moves the line to the next probe. */
    probeFailures: integer("probe_failures").notNull().default(0),
    /** The claim's owner: a random token per consumer run, checked by its renewals and by every write of its answers. */
    leaseToken: text("lease_token"),
    leaseUntil: integer("lease_until"),
    recheckAt: integer("recheck_at"),
    /** While waiting: when the receiver's budget has room again (the probe's retry_after_ms), the line's next claim. */
    waitUntil: integer("wait_until"),
    /** The receiver family it waits on (the probe's waiting_on), shown on the job. */
    waitingOn: text("waiting_on"),
    /** When a receiver's budget first parked it: a line that waited JOB_RECEIVER_WAIT_MAX_SECONDS is answered. */
    waitingSince: integer("waiting_since"),
    classification: text("classification", { enum: ["valid", "risky", "invalid"] }),
    /** The result's `reason` once done (the vocabulary of summaries and filters). */
    reason: text("reason"),
    /** When the answer was written (ms): the result row's `checked_at`. */
    checkedAt: integer("checked_at"),
    /** The EmailVerificationResult as JSON, once done (or the first answer, while a recheck waits). */
    result: text("result"),
    /** The line's cells in the job's kept columns, as one canonical CSV record (edge/jobs/kept-columns.ts); null when the job keeps none. */
    fields: text("fields"),
  },
  (t) => [
    primaryKey({ columns: [t.jobId, t.position] }),
    // Claims take a job's due lines in work order, state by state, without reading its done lines.
    index("verification_job_items_work_idx").on(t.jobId, t.state, t.seq).where(sql`${t.duplicateOf} is null`),
    index("verification_job_items_state_idx").on(t.jobId, t.state),
    // An answer is copied to the line's duplicates: found by this index, not by reading the whole job.
    index("verification_job_items_duplicate_idx").on(t.jobId, t.duplicateOf).where(sql`${t.duplicateOf} is not null`),
    // A finished job's results page reads its answered lines by position, whatever lies between them.
    index("verification_job_items_done_idx").on(t.jobId, t.position).where(sql`${t.state} = 'done'`),
  ],
);

/**
 * Import lines whose identifiers point at two different people (docs/operations.md "Merge candidates"): rejected, never
 * merged by the import (a false merge discloses one person's contacts as another's), and kept here for an operator to
 * review, apply and undo with the admin CLI. The line and the snapshot are personal data: deleted
 * ACCESS_LOG_RETENTION_SECONDS after the candidate was recorded or decided, and with either person at erasure.
 */
export const mergeCandidates = sqliteTable(
  "merge_candidates",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The two people's ids, ascending, as JSON: the first is the one that stays when applied. */
    people: text("people").notNull(),
    /** The line as the import read it (its fields, its source), JSON. */
    record: text("record").notNull(),
    reason: text("reason").notNull(),
    source: text("source").notNull(),
    line: integer("line").notNull(),
    createdAt: integer("created_at").notNull(),
    /** open; applied (merged, the line imported); dismissed; undone (applied, then taken back). */
    state: text("state", { enum: ["open", "applied", "dismissed", "undone"] }).notNull().default("open"),
    decidedAt: integer("decided_at"),
    /** When applied: both people as they were before, and the merged one as it was after, JSON: what an undo restores and checks. */
    snapshot: text("snapshot"),
  },
  (t) => [
    // The same line from the same import again is one candidate, while it is open.
    uniqueIndex("merge_candidates_open_unique").on(t.people, t.record).where(sql`${t.state} = 'open'`),
    index("merge_candidates_state_idx").on(t.state, t.id),
  ],
);

/**
 * Changes to people that someone received (docs/api.md "People events"): written in the same transaction as the change,
 * by triggers (the 0021 migration) on person_emails: an address became undeliverable, or one was added, to a person in the
 * access log. The cron turns each into events for the subscribed accounts that received the person lately, then deletes it.
 */
export const personChanges = sqliteTable("person_changes", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  personId: integer("person_id").notNull(),
  emailId: integer("email_id").notNull(),
  kind: text("kind", { enum: ["address_undeliverable", "address_added"] }).notNull(),
  createdAt: integer("created_at").notNull(),
});

/**
 * People events waiting to be delivered, signed, to an account's people_events_url, and retried as job callbacks are: the
 * body as it will be sent (identifiers as the account received them, an address), so personal data: deleted once
 * delivered, a week after it was given up, and at once when its person is erased.
 */
export const peopleEvents = sqliteTable(
  "people_events",
  {
    /** "evt_" + random: the webhook-id receivers de-duplicate by. */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    /** The person it is about; null for an erasure (the person is gone). */
    personId: integer("person_id"),
    type: text("type", { enum: ["person.address_undeliverable", "person.address_added", "person.erased"] }).notNull(),
    body: text("body").notNull(),
    createdAt: integer("created_at").notNull(),
    /** pending: to be delivered (next attempt at next_at); failed: given up. Delivered events are deleted. */
    state: text("state", { enum: ["pending", "failed"] }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAt: integer("next_at").notNull().default(0),
    lastError: text("last_error"),
  },
  (t) => [index("people_events_due_idx").on(t.state, t.nextAt), index("people_events_person_idx").on(t.personId)],
);

/**
 * Bounce feedback (docs/api.md "POST /v1/email_feedback"): what customers' mail to an address did. Personal data: the
 * address is kept only as its keyed hash, an SMTP reply without any address in it; deleted FEEDBACK_RETENTION_SECONDS
 * after it happened, and with the person at erasure. A report changes what other accounts see only when independent
 * accounts agree or our own check does (shared/people/confidence.ts).
 */
export const emailFeedback = sqliteTable(
  "email_feedback",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: text("account_id").notNull(),
    addressHash: text("address_hash").notNull(),
    outcome: text("outcome", { enum: ["hard_bounce", "soft_bounce", "delivered", "replied", "complaint"] }).notNull(),
    occurredAt: integer("occurred_at").notNull(),
    receivedAt: integer("received_at").notNull(),
    /** The receiving server's reply as reported, with anything shaped like an address replaced by [address]. */
    smtpReply: text("smtp_reply"),
    /** 1 when this hard bounce moved its address to the front of re-verification: the account's hourly bound counts these. */
    reverify: integer("reverify").notNull().default(0),
  },
  (t) => [
    index("email_feedback_address_idx").on(t.addressHash, t.occurredAt),
    index("email_feedback_reverify_idx").on(t.accountId, t.receivedAt).where(sql`${t.reverify} = 1`),
    index("email_feedback_occurred_idx").on(t.occurredAt),
    check("email_feedback_outcome_known", sql`${t.outcome} in ('hard_bounce', 'soft_bounce', 'delivered', 'replied', 'complaint')`),
  ],
);

/**
 * Identifiers, handles, phones and addresses of people erased (docs/operations.md "Personal data"), as keyed hashes:
 * HMAC-SHA256 under SUPPRESSION_KEY of "<kind>:<value>" (text lower-cased; each address also in its canonical form),
 * never the value itself. An import line that carries one is refused, so an erased person never comes back.
 */
export const suppressions = sqliteTable("suppressions", {
  hash: text("hash").primaryKey(),
  /** key_check: the one row (hash "suppression-key-check") whose reason holds the check value of SUPPRESSION_KEY. */
  kind: text("kind", {
    enum: ["profnet_id", "profnet_public_identifier", "codehost_id", "codehost_login", "codehost_username", "socialnet_username", "microblog_username", "phone", "email", "key_check"],
  }).notNull(),
  reason: text("reason"),
  createdAt: integer("created_at").notNull().default(now),
});

/**
 * Every disclosure of a person: one row per 200 lookup, written in the same batch as its charge, with the four
 * identifiers that lookup returned (the person may gain or lose one later). Kept ACCESS_LOG_RETENTION_SECONDS; an
 * erasure deletes the person's rows and keeps, per account and per set of identifiers it received, an erasure notice.
 */
export const personAccessLog = sqliteTable(
  "person_access_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    personId: integer("person_id").notNull(),
    accountId: text("account_id").notNull(),
    keyId: text("key_id").notNull(),
    createdAt: integer("created_at").notNull().default(now),
    profnetId: integer("profnet_id"),
    profnetPublicIdentifier: text("profnet_public_identifier"),
    codehostId: integer("codehost_id"),
    codehostLogin: text("codehost_login"),
    /** What found the person (docs/api.md "GET /v1/people"): an identifier's name, email, phone or name; null for rows before 0028. */
    matchedBy: text("matched_by"),
  },
  (t) => [index("person_access_log_person_idx").on(t.personId, t.accountId), index("person_access_log_created_idx").on(t.createdAt)],
);

/**
 * The erasures feed (GET /v1/people/erasures): for each account that received an erased person, the identifiers
 * its lookups returned (as the access log recorded them: one notice per distinct set) and when the erasure
 * happened. Nothing else of the person is kept.
 */
export const erasureNotices = sqliteTable(
  "erasure_notices",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: text("account_id").notNull(),
    profnetId: integer("profnet_id"),
    profnetPublicIdentifier: text("profnet_public_identifier"),
    codehostId: integer("codehost_id"),
    codehostLogin: text("codehost_login"),
    erasedAt: integer("erased_at").notNull(),
  },
  (t) => [index("erasure_notices_account_idx").on(t.accountId, t.erasedAt, t.id)],
);

/**
 * Usage per account, key and UTC day (GET /v1/usage): a roll-up kept as things happen, never by
 * reading the ledger per request. lookups_charged and credits_spent are kept by a trigger on the
 * ledger (0012 migration), in the same statement as the charge; the lookup's batch counts misses and
 * refusals; job creation counts job lines; single verifications are counted in the isolate and
 * written with its key activity (edge/identity/key-activity.ts).
 */
export const usageDaily = sqliteTable(
  "usage_daily",
  {
    accountId: text("account_id").notNull(),
    keyId: text("key_id").notNull(),
    /** YYYY-MM-DD, UTC. */
    day: text("day").notNull(),
    lookupsCharged: integer("lookups_charged").notNull().default(0),
    lookupsNotFound: integer("lookups_not_found").notNull().default(0),
    lookupsRefusedCredits: integer("lookups_refused_credits").notNull().default(0),
    verifications: integer("verifications").notNull().default(0),
    jobLines: integer("job_lines").notNull().default(0),
    creditsSpent: integer("credits_spent").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.day, t.keyId] })],
);

/**
 * Credits spent per cap budget and UTC day (api_keys.credit_caps): kept by a trigger on the ledger (0018 migration)
 * in the same statement as the charge, which checks every budget of the key against its cap, so neither rolls nor
 * child keys give a capped key a fresh day's budget.
 */
export const keyCapSpend = sqliteTable(
  "key_cap_spend",
  {
    budgetId: text("budget_id").notNull(),
    /** YYYY-MM-DD, UTC. */
    day: text("day").notNull(),
    creditsSpent: integer("credits_spent").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.budgetId, t.day] })],
);

/**
 * The audit trail (GET /v1/audit-events): what was done to an account's keys and members, and by whom.
 * Never a secret: a key appears by id and prefix, an invite, passkey or session by id. Kept AUDIT_RETENTION_SECONDS, deleted by the cron.
 */
export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: text("account_id").notNull(),
    /** shared/keys.ts AUDIT_ACTIONS: key.*, member.*, passkey.*, session.*. */
    action: text("action").notNull(),
    /** "operator" (the admin CLI), "system" (the cron), or the id of the key or member that acted. */
    actor: text("actor").notNull(),
    /** What was acted on: a key, member, invite, passkey or session id. */
    target: text("target"),
    /** A JSON object of what else an operator needs (names, scopes, overlap), never a secret. */
    details: text("details").notNull().default("{}"),
    requestId: text("request_id"),
    createdAt: integer("created_at").notNull().default(now),
  },
  (t) => [
    index("audit_events_account_idx").on(t.accountId, t.id),
    index("audit_events_created_idx").on(t.createdAt),
    // The trail filtered by who acted, and a removed member's or passkey's name found by its own events (GET /v1/audit-events).
    index("audit_events_actor_idx").on(t.accountId, t.actor, t.id),
    index("audit_events_target_idx").on(t.accountId, t.target, t.id),
  ],
);

/**
 * The people who sign in to the console (docs/api.md "Members and roles"). Removing a member deletes the row,
 * its passkeys and its sessions in one batch; the audit trail keeps the id and name.
 */
export const members = sqliteTable(
  "members",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    name: text("name").notNull(),
    role: text("role", { enum: ROLES }).notNull(),
    /** The invite the member joined by. */
    inviteId: text("invite_id").notNull(),
    createdAt: integer("created_at").notNull().default(now),
    lastSignInAt: integer("last_sign_in_at"),
  },
  (t) => [
    index("members_account_idx").on(t.accountId),
    check("members_role_known", sql`${t.role} in (${knownRoles})`),
  ],
);

/** A member's WebAuthn credentials: the public key only (the private key never leaves the authenticator). */
export const passkeys = sqliteTable(
  "passkeys",
  {
    id: text("id").primaryKey(),
    memberId: text("member_id")
      .notNull()
      .references(() => members.id),
    accountId: text("account_id").notNull(),
    /** base64url, as the authenticator names it; what a sign-in assertion carries. */
    credentialId: text("credential_id").notNull(),
    /** base64url of the COSE public key. */
    publicKey: text("public_key").notNull(),
    /** The authenticator's signature counter (0 for most passkeys, which keep none). */
    counter: integer("counter").notNull().default(0),
    /** A JSON array of transports the browser reported ("internal", "hybrid", ...). */
    transports: text("transports").notNull().default("[]"),
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull().default(now),
    lastUsedAt: integer("last_used_at"),
  },
  (t) => [uniqueIndex("passkeys_credential_id_unique").on(t.credentialId), index("passkeys_member_idx").on(t.memberId)],
);

/** One-time enrolment links: the secret is in the link's fragment; only its hash is here. */
export const invites = sqliteTable(
  "invites",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    tokenHash: text("token_hash").notNull(),
    role: text("role", { enum: ROLES }).notNull(),
    /** "operator" (the admin CLI), or the id of the member or key that made it. */
    createdBy: text("created_by").notNull(),
    createdAt: integer("created_at").notNull().default(now),
    expiresAt: integer("expires_at").notNull(),
    /** Set once, by the accept that used it: an invite is single use. */
    usedAt: integer("used_at"),
    usedBy: text("used_by"),
    /**
     * Set when the invite can no longer be used although unused and unexpired: revoked (DELETE /v1/invites/{id}), or
     * voided with the authority of whoever made it (their removal or demotion, the key's revocation).
     */
    revokedAt: integer("revoked_at"),
    /** Who revoked it, or "system" when it was voided with its maker's authority. */
    revokedBy: text("revoked_by"),
  },
  (t) => [
    uniqueIndex("invites_token_hash_unique").on(t.tokenHash),
    index("invites_expires_idx").on(t.expiresAt),
    // A member's or a key's pending invites are voided with them.
    index("invites_pending_by_creator_idx").on(t.createdBy).where(sql`${t.usedAt} is null and ${t.revokedAt} is null`),
  ],
);

/**
 * WebAuthn challenges handed out by an options call, each good for one verification within a few minutes.
 * Found by the challenge the browser signed (it is in the response's clientDataJSON) and deleted as it is used.
 */
export const webauthnChallenges = sqliteTable(
  "webauthn_challenges",
  {
    challenge: text("challenge").primaryKey(),
    purpose: text("purpose", { enum: ["join", "sign_in", "add_passkey"] }).notNull(),
    /** For "join": the invite being accepted. */
    inviteId: text("invite_id"),
    /** For "join": the id the new member will get (the passkey's user handle); for "add_passkey": the member. */
    memberId: text("member_id"),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("webauthn_challenges_expires_idx").on(t.expiresAt)],
);

/**
 * Console sessions: the secret is in an HttpOnly cookie; only its hash is here. A session ends at expires_at
 * (the absolute lifetime), once unused for SESSION_IDLE_SECONDS, at sign-out, or with its member.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull(),
    memberId: text("member_id")
      .notNull()
      .references(() => members.id),
    accountId: text("account_id").notNull(),
    createdAt: integer("created_at").notNull().default(now),
    /** Moved forward by the lookup that authenticates a request (at most once per SESSION_CACHE_TTL_MS per isolate). */
    lastSeenAt: integer("last_seen_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /** The passkey that opened it: removing that passkey ends the session. Null only for sessions whose sign-in was not recorded. */
    passkeyId: text("passkey_id"),
    /** When the member last proved presence with a passkey in this session (sign-in or step-up): adding a passkey needs it recent. */
    verifiedAt: integer("verified_at").notNull().default(0),
  },
  (t) => [
    uniqueIndex("sessions_token_hash_unique").on(t.tokenHash),
    index("sessions_member_idx").on(t.memberId),
    index("sessions_expires_idx").on(t.expiresAt),
    index("sessions_passkey_idx").on(t.passkeyId),
  ],
);

/**
 * One-time values a console form hands to the page it redirects to (a notice, an error, a new key's secret), held with
 * the session that made them and sealed with a key derived from that session's secret, which the database never holds:
 * read once and deleted by the page (edge/identity/sessions.ts), deleted with the session and by the cron.
 */
export const sessionNotes = sqliteTable(
  "session_notes",
  {
    id: text("id").primaryKey(),
    sessionId: text("session_id").notNull(),
    /** base64url of AES-GCM(iv || ciphertext) of the note's JSON. */
    sealed: text("sealed").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("session_notes_session_idx").on(t.sessionId), index("session_notes_created_idx").on(t.createdAt)],
);

/**
 * What receivers taught the probes by blocking or throttling them (docs/probe.md "What is learned"), one row per budget
 * key (a family keyed by the probe's IP, or a family and one MX address): recorded from any probe's batch answer and
 * handed to every probe with each batch, so a rule one probe learned holds for the whole fleet. Only ever stricter.
 */
export const receiverLessons = sqliteTable("receiver_lessons", {
  key: text("key").primaryKey(),
  /** It blocked a probe: the 60 s share and a lower hourly cap there, for good. */
  harvest: integer("harvest", { mode: "boolean" }).notNull(),
  /** Its RCPT rate as a share of the receiver table's (halved per throttle). */
  rateFactor: real("rate_factor").notNull(),
  blocks: integer("blocks").notNull(),
  throttles: integer("throttles").notNull(),
  learnedAt: integer("learned_at").notNull(),
});

/**
 * Batch lookups (POST /v1/people/bulk, docs/api.md "POST /v1/people/bulk"): one row per call, written in the call's
 * own batch with its charge. `served` holds how many people the charge covered, for the statements after it in the
 * same transaction; with an Idempotency-Key it is also the first answer's record, kept IDEMPOTENCY_KEY_TTL (24 h) and
 * then deleted with its items by the cron. No personal data here: that is in lookup_batch_items.
 */
export const lookupBatches = sqliteTable(
  "lookup_batches",
  {
    /** The call's request id (X-Request-Id): its ledger rows carry it too. */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    /** Who was charged: the key's id, or the member's for a session (as the ledger's key_id). */
    actor: text("actor").notNull(),
    idempotencyKey: text("idempotency_key"),
    /** SHA-256 of the body, so the same key with another body is told apart. */
    requestHash: text("request_hash").notNull(),
    /** pending: a call with this key is under way (its claim_token); done: answered. */
    state: text("state", { enum: ["pending", "done"] }).notNull(),
    claimToken: text("claim_token"),
    /** People charged (the first `served` found, in request order). */
    served: integer("served").notNull().default(0),
    /** Why the found items past `served` were refused: insufficient_credits or daily_credit_cap; null when none was. */
    refusal: text("refusal"),
    balanceAfter: integer("balance_after"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("lookup_batches_idempotency_unique").on(t.accountId, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
    index("lookup_batches_created_idx").on(t.createdAt),
  ],
);

/**
 * The first answer of a batch call made with an Idempotency-Key, item by item, for its replays: personal data (the
 * people disclosed), so kept only as long as the key (24 h), and an erasure blanks the erased person's items (status
 * 410) through the person_id index.
 */
export const lookupBatchItems = sqliteTable(
  "lookup_batch_items",
  {
    batchId: text("batch_id")
      .notNull()
      .references(() => lookupBatches.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    status: integer("status").notNull(),
    personId: integer("person_id"),
    /** The person as served (edge/people/store.ts personSnapshot), for a 200. */
    person: text("person"),
    error: text("error"),
    reason: text("reason"),
  },
  (t) => [primaryKey({ columns: [t.batchId, t.position] }), index("lookup_batch_items_person_idx").on(t.personId).where(sql`${t.personId} is not null`)],
);

/**
 * Lookup jobs (docs/lookup-jobs.md): a list of identifiers looked up on the lookup-jobs queue, charged line by line.
 * The counts are kept by triggers on the lines (see the lookup_jobs migration), so a line counts once, when its outcome
 * changes, whatever redeliveries happen.
 */
export const lookupJobs = sqliteTable(
  "lookup_jobs",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    /** Who is charged and counted in the usage: the creating key's id, or the member's for a session. */
    actor: text("actor").notNull(),
    /** The daily caps the charges count against (api_keys.credit_caps of the creating key, as it was). */
    creditCaps: text("credit_caps").notNull().default("[]"),
    /** LOOKUP_COST when the job was created: what each line is charged, so its quote binds. */
    cost: integer("cost").notNull(),
    /** The most the job can cost: its distinct well-formed lines times `cost` (the quote). */
    maxCredits: integer("max_credits").notNull(),
    status: text("status", { enum: ["queued", "running", "paused", "completed", "cancelled"] }).notNull().default("queued"),
    /** While paused: insufficient_credits or daily_credit_cap. */
    pauseReason: text("pause_reason"),
    /** Once cancelled: requested (DELETE), paused_too_long, key_revoked, key_expired or member_removed; null for jobs cancelled before 1.11. */
    cancelReason: text("cancel_reason"),
    pausedAt: integer("paused_at"),
    total: integer("total").notNull(),
    found: integer("found").notNull().default(0),
    notFound: integer("not_found").notNull().default(0),
    invalid: integer("invalid").notNull().default(0),
    refused: integer("refused").notNull().default(0),
    erased: integer("erased").notNull().default(0),
    creditsCharged: integer("credits_charged").notNull().default(0),
    /** The input: csv or jsonl, its header (CSV) and the identifier columns used, as JSON. */
    format: text("format", { enum: ["csv", "jsonl"] }).notNull(),
    columns: text("columns").notNull(),
    /** include=email_details (implied by verify_emails). */
    emailDetails: integer("email_details").notNull().default(0),
    /** include=profile: each found line's data carries the person's name and employment (0028). */
    profile: integer("profile").notNull().default(0),
    verifyEmails: integer("verify_emails").notNull().default(0),
    /** min_confidence (0-100): addresses below it are left out, and a line whose person is left with none finds nobody; null: none. */
    minConfidence: integer("min_confidence"),
    /** verify_emails: null until the lookups are done; verifying (verification_job_id runs); done. */
    verifyState: text("verify_state"),
    verificationJobId: text("verification_job_id"),
    /** find_emails (0030): the email finder for lines with a name at a company that the lookup gave no work address there. */
    findEmails: integer("find_emails").notNull().default(0),
    /** find_emails: null until the lookups are done; finding (its lines marked due); done. */
    findState: text("find_state"),
    callbackUrl: text("callback_url"),
    callbackState: text("callback_state", { enum: ["none", "pending", "delivered", "failed"] }).notNull().default("none"),
    callbackAttempts: integer("callback_attempts").notNull().default(0),
    callbackNextAt: integer("callback_next_at"),
    callbackLastError: text("callback_last_error"),
    idempotencyKey: text("idempotency_key"),
    requestHash: text("request_hash").notNull(),
    createdAt: integer("created_at").notNull(),
    startedAt: integer("started_at"),
    completedAt: integer("completed_at"),
    /** When a turn last answered lines of it: whose turn it is among an account's jobs, and among accounts (edge/jobs/fair-share.ts). */
    lastTurnAt: integer("last_turn_at"),
    /** Last progress, or the last time the cron or a resume check looked at it: what stalled-work detection reads. */
    updatedAt: integer("updated_at").notNull(),
    /** The charge budget of the turn being answered, for the statements of its transaction (edge/jobs/store/lookup-lines.ts). */
    turnBudget: integer("turn_budget").notNull().default(0),
    /** 1 while its lines are being written: nothing reads, claims or lists the job until then. */
    creating: integer("creating").notNull().default(1),
    retentionSeconds: integer("retention_seconds"),
    /** 0 results held; 1 expired, lines being deleted; 2 deleted. */
    resultsState: integer("results_state").notNull().default(0),
  },
  (t) => [
    uniqueIndex("lookup_jobs_idempotency_unique").on(t.accountId, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
    index("lookup_jobs_account_created_idx").on(t.accountId, t.createdAt),
    index("lookup_jobs_status_updated_idx").on(t.status, t.updatedAt),
    index("lookup_jobs_retention_idx").on(t.resultsState, t.completedAt),
    check("lookup_jobs_status_known", sql`${t.status} in ('queued', 'running', 'paused', 'completed', 'cancelled')`),
  ],
);

/** One row per line of a lookup job, in input order (`position`, from 0). */
export const lookupJobLines = sqliteTable(
  "lookup_job_lines",
  {
    jobId: text("job_id")
      .notNull()
      .references(() => lookupJobs.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    /** The line as the customer gave it: a CSV row's cells as a JSON array, or a JSON Lines line's object. */
    input: text("input").notNull(),
    profnetId: integer("profnet_id"),
    profnetPublicIdentifier: text("profnet_public_identifier"),
    codehostId: integer("codehost_id"),
    codehostLogin: text("codehost_login"),
    /**
     * The line's other inputs as keys (shared/identifiers.ts lookupKeys: email's address key, phone in E.164, name key
     * with the company's domain or employer key), as JSON; null when the line gives none of them.
     */
    lookupKeys: text("lookup_keys"),
    /** What found the line's person (shared/identifiers.ts MATCHED_BY), for the access log. */
    matchedBy: text("matched_by"),
    /**
     * pending; refused (found, not charged: waits for credits); done. A turn takes pending lines and answers them in
     * one transaction, so no line is ever half-way between.
     */
    state: text("state", { enum: ["pending", "refused", "done"] }).notNull(),
    /** found, not_found, invalid, refused, erased; null while pending. The triggers count it. */
    outcome: text("outcome"),
    /** An invalid line's 400 message. */
    error: text("error"),
    personId: integer("person_id"),
    /** 1 once this line's charge is in the ledger (a line is charged at most once; a repeat of a person charged in this job is not). */
    charged: integer("charged").notNull().default(0),
    /** The person as answered (edge/people/store.ts personSnapshot). */
    person: text("person"),
    /** The turn that last answered it (a token of the turn's own): how the turn's statements find their lines. */
    turn: text("turn"),
    answeredAt: integer("answered_at"),
    /** find_emails: 'due' while the finder has yet to look at the line, then its answer as JSON (edge/jobs/lookup/find-emails.ts); null otherwise. */
    find: text("find"),
  },
  (t) => [
    primaryKey({ columns: [t.jobId, t.position] }),
    // find_emails: the lines the finder has yet to look at, in input order.
    index("lookup_job_lines_find_due_idx").on(t.jobId, t.position).where(sql`${t.find} = 'due'`),
    // A turn takes a job's pending lines in input order.
    index("lookup_job_lines_state_idx").on(t.jobId, t.state, t.position),
    // A turn's statements find the lines it took.
    index("lookup_job_lines_turn_idx").on(t.jobId, t.turn).where(sql`${t.turn} is not null`),
    // A person is charged once per job; and an erasure finds every line that answered them.
    index("lookup_job_lines_job_person_idx").on(t.jobId, t.personId).where(sql`${t.personId} is not null`),
    index("lookup_job_lines_person_idx").on(t.personId).where(sql`${t.personId} is not null`),
    // Downloads filtered by outcome, in input order.
    index("lookup_job_lines_outcome_idx").on(t.jobId, t.outcome, t.position),
  ],
);

/** verify_emails: each address of a lookup job's answers with its verdict (a stored one fresh enough, or the job's own verification). */
export const lookupJobVerdicts = sqliteTable(
  "lookup_job_verdicts",
  {
    jobId: text("job_id")
      .notNull()
      .references(() => lookupJobs.id, { onDelete: "cascade" }),
    /** The address, lower-cased. */
    email: text("email").notNull(),
    classification: text("classification", { enum: ["valid", "risky", "invalid"] }).notNull(),
    reason: text("reason"),
    smtpOutcome: text("smtp_outcome"),
    checkedAt: integer("checked_at").notNull(),
    /** stored: a verification of ours newer than LOOKUP_VERIFY_MAX_AGE_SECONDS; verified: this job's own. */
    source: text("source", { enum: ["stored", "verified"] }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.email] })],
);

/**
 * What the finder learned about a domain's mail (docs/api.md "GET /v1/domains/{domain}"): whether its receiver accepts
 * every address (the probe's catch-all test, when it last answered one), and who runs its mail. Not personal data.
 */
export const domainFacts = sqliteTable("domain_facts", {
  domain: text("domain").primaryKey(),
  /** 1: a random address was accepted; 0: refused; null: never answered. */
  acceptAll: integer("accept_all"),
  acceptAllCheckedAt: integer("accept_all_checked_at"),
  mxProvider: text("mx_provider"),
  receiverFamily: text("receiver_family"),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * The finds an account was charged for (docs/api.md "GET /v1/email_finder"): the same find by the same account within
 * FIND_REPEAT_DAYS is free. The find is named by a keyed hash of the name's key and the domain (never the name), and
 * deleted by the cron once the window has passed.
 */
export const finderFinds = sqliteTable(
  "finder_finds",
  {
    accountId: text("account_id").notNull(),
    findKey: text("find_key").notNull(),
    chargedAt: integer("charged_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.findKey] }), index("finder_finds_charged_idx").on(t.chargedAt)],
);

/**
 * The receiver's answers to the finder's own RCPTs for addresses we do not hold (docs/api.md "GET /v1/email_finder"), by
 * the address's keyed hash (shared/people/address-hash.ts), never the address: a repeat, a 202's fetch or another
 * account's find of the same person asks the receiver nothing. `pending_until` marks a check under way. Deleted by
 * the cron after FINDER_CHECK_DAYS.
 */
export const finderChecks = sqliteTable(
  "finder_checks",
  {
    addressHash: text("address_hash").primaryKey(),
    outcome: text("outcome"),
    reason: text("reason"),
    classification: text("classification"),
    catchAll: integer("catch_all"),
    checkedAt: integer("checked_at"),
    pendingUntil: integer("pending_until"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("finder_checks_created_idx").on(t.createdAt)],
);

/**
 * The addresses of erased people, by the keyed hash the Worker names addresses by (shared/people/address-hash.ts,
 * FEEDBACK_HASH_KEY), written by the erasure (scripts/admin/people-erase.ts): the finder never probes nor returns one,
 * even when a domain's pattern makes it again. Kept for good, as suppressions are.
 */
export const erasedAddresses = sqliteTable("erased_addresses", {
  addressHash: text("address_hash").primaryKey(),
  erasedAt: integer("erased_at").notNull(),
});
