/**
 * The database, in Drizzle. Migrations are generated from this file by drizzle-kit
 * (`npm run db:generate`) into `edge/db/migrations`, plus one hand-written migration for the
 * ledger trigger that drizzle-kit cannot express.
 */
import { sql } from "drizzle-orm";
import { check, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const now = sql`(unixepoch('subsec') * 1000)`;

export const accounts = sqliteTable(
  "accounts",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    /** Maintained by the credit_ledger trigger; never written directly (see 0001 migration). */
    creditBalance: integer("credit_balance").notNull().default(0),
    status: text("status", { enum: ["active", "disabled"] }).notNull().default("active"),
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
    createdAt: integer("created_at").notNull().default(now),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_token_hash_unique").on(t.tokenHash), index("api_keys_account_idx").on(t.accountId)],
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
    createdAt: integer("created_at").notNull().default(now),
  },
  (t) => [index("credit_ledger_account_idx").on(t.accountId, t.id)],
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
    // Public identifiers and logins match case-insensitively (README "GET /v1/people"): the unique index is on
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
    source: text("source").notNull(),
    firstSeenAt: integer("first_seen_at").notNull().default(now),
    lastSeenAt: integer("last_seen_at").notNull().default(now),
  },
  (t) => [uniqueIndex("person_emails_person_email_unique").on(t.personId, sql`lower(${t.email})`)],
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
    source: text("source").notNull(),
    firstSeenAt: integer("first_seen_at").notNull().default(now),
    lastSeenAt: integer("last_seen_at").notNull().default(now),
  },
  (t) => [uniqueIndex("person_phones_person_phone_unique").on(t.personId, t.phone)],
);
