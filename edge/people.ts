/**
 * Contact lookup: identifier parsing and precedence and the ContactInfo shape (docs/api.md
 * "GET /v1/people"). Precedence and the emails/phones aggregation happen in SQL, so that the match,
 * the charge and the read go to the database together (see routes/people.ts).
 */
import { sql, type SQL } from "drizzle-orm";
import { ERROR_MESSAGES, PEOPLE_INCLUDES, type ContactInfo, type EmailDetail } from "../shared/api.ts";
import { canonicalAddress } from "../shared/email/canonical-address.ts";
import { domainOf } from "../shared/email/syntax.ts";
import { isDisposableDomain, isFreeProviderDomain } from "../shared/email/lists.ts";
import type { Database } from "./db/client.ts";
import { iso, type RawRow } from "./db/rows.ts";
import type { people } from "./db/schema.ts";
import { ApiError } from "./lib/errors.ts";

export type PeopleIdentifiers = {
  profnetId?: number;
  profnetPublicIdentifier?: string;
  codehostId?: number;
  codehostLogin?: string;
};

const MAX_IDENTIFIER_LENGTH = 256;

/** A decimal positive integer up to 2^53-1, with nothing else around it but trimmed whitespace. */
function parsePositiveId(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = raw.trim();
  if (value === "") return undefined;
  if (!/^[0-9]{1,16}$/.test(value)) {
    throw new ApiError(400, `${name} must be a positive integer`);
  }
  const n = Number(value);
  if (n < 1 || !Number.isSafeInteger(n)) throw new ApiError(400, `${name} must be a positive integer`);
  return n;
}

function parseText(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const value = raw.trim();
  if (value === "") return undefined;
  if (value.length > MAX_IDENTIFIER_LENGTH) {
    throw new ApiError(400, `${name} must be at most ${MAX_IDENTIFIER_LENGTH} characters`);
  }
  return value;
}

export function parsePeopleQuery(query: Record<string, string | undefined>): PeopleIdentifiers {
  const ids: PeopleIdentifiers = {
    profnetId: parsePositiveId("profnet_id", query.profnet_id),
    profnetPublicIdentifier: parseText("profnet_public_identifier", query.profnet_public_identifier),
    codehostId: parsePositiveId("codehost_id", query.codehost_id),
    codehostLogin: parseText("codehost_login", query.codehost_login),
  };
  if (
    ids.profnetId === undefined &&
    ids.profnetPublicIdentifier === undefined &&
    ids.codehostId === undefined &&
    ids.codehostLogin === undefined
  ) {
    throw new ApiError(400, ERROR_MESSAGES.peopleParamRequired);
  }
  return ids;
}

export type PeopleInclude = (typeof PEOPLE_INCLUDES)[number];

/** `include`: comma-separated names of PEOPLE_INCLUDES; anything else is 400 naming it. */
export function parseIncludes(raw: string | undefined): Set<PeopleInclude> {
  const out = new Set<PeopleInclude>();
  if (raw === undefined || raw.trim() === "") return out;
  for (const part of raw.split(",")) {
    const value = part.trim();
    if (!(PEOPLE_INCLUDES as readonly string[]).includes(value)) {
      throw new ApiError(400, `Unknown include "${value.slice(0, 40)}": expected ${PEOPLE_INCLUDES.join(", ")}`);
    }
    out.add(value as PeopleInclude);
  }
  return out;
}

type PersonRow = Omit<RawRow<typeof people.$inferSelect>, "id" | "created_at" | "updated_at"> & {
  /** JSON: [email, first_seen_at, last_seen_at, classification, smtp_outcome, checked_at] per deliverable address. */
  emails: string;
  /** JSON: the phones, oldest first. */
  phones: string;
};

/** The id of the first person that matches, in precedence order (docs/api.md "GET /v1/people"), or null: an SQL expression. */
export function matchingPersonId(ids: PeopleIdentifiers): SQL {
  // The lowest rank that matches wins.
  const candidates: SQL[] = [];
  if (ids.profnetId !== undefined) candidates.push(sql`select id, 1 as rank from people where profnet_id = ${ids.profnetId}`);
  if (ids.profnetPublicIdentifier !== undefined)
    candidates.push(
      sql`select id, 2 as rank from people where lower(profnet_public_identifier) = lower(${ids.profnetPublicIdentifier})`,
    );
  if (ids.codehostId !== undefined) candidates.push(sql`select id, 3 as rank from people where codehost_id = ${ids.codehostId}`);
  if (ids.codehostLogin !== undefined)
    candidates.push(sql`select id, 4 as rank from people where lower(codehost_login) = lower(${ids.codehostLogin})`);
  return sql`(select id from (${sql.join(candidates, sql` union all `)}) order by rank limit 1)`;
}

/** The statement that reads the matching person with emails and phones, for use in a batch. */
export function findPersonQuery(db: Database, ids: PeopleIdentifiers) {
  return db.all<PersonRow>(sql`
    select p.profnet_id, p.profnet_public_identifier, p.codehost_id, p.codehost_login,
           p.codehost_username, p.socialnet_username, p.microblog_username,
           (select json_group_array(json_array(email, first_seen_at, last_seen_at, classification, smtp_outcome, checked_at)) from
              (select * from person_emails where person_id = p.id and undeliverable_at is null order by first_seen_at, id)) as emails,
           (select json_group_array(phone) from
              (select phone from person_phones where person_id = p.id order by first_seen_at, id)) as phones
    from people p
    where p.id = ${matchingPersonId(ids)}`);
}

/** A personal address is on a free or disposable provider (docs/api.md "GET /v1/people"); anything else is work. */
export function isPersonalEmail(email: string): boolean {
  const domain = domainOf(email);
  return isFreeProviderDomain(domain) || isDisposableDomain(domain);
}

/**
 * The statement that records a 200 lookup's disclosure (who received whom, when, and the four identifiers the
 * answer carried: what an erasure notice will name), for the batch that charges it, right after the charge: it
 * writes only when the charge did (the charge is this connection's last insert, with this request's id). The
 * identifiers are read in the same transaction as the person the answer returns, so they are the same.
 */
export function recordAccessQuery(db: Database, personId: SQL, accountId: string, keyId: string, requestId: string) {
  return db.run(sql`
    insert into person_access_log (person_id, account_id, key_id, created_at, profnet_id, profnet_public_identifier, codehost_id, codehost_login)
    select p.id, ${accountId}, ${keyId}, ${Date.now()}, p.profnet_id, p.profnet_public_identifier, p.codehost_id, p.codehost_login
    from people p
    where p.id = ${personId} and changes() = 1 and exists (select 1 from credit_ledger where id = last_insert_rowid() and request_id = ${requestId})`);
}

type StoredEmail = [email: string, firstSeenAt: number, lastSeenAt: number, classification: "valid" | "risky" | "invalid" | null, smtpOutcome: string | null, checkedAt: number | null];

function emailDetail([email, firstSeenAt, lastSeenAt, classification, smtpOutcome, checkedAt]: StoredEmail): EmailDetail {
  return {
    email,
    type: isPersonalEmail(email) ? "personal" : "work",
    first_seen_at: iso(firstSeenAt),
    last_seen_at: iso(lastSeenAt),
    verification:
      classification === null || checkedAt === null
        ? null
        : { classification, smtp_outcome: smtpOutcome as NonNullable<EmailDetail["verification"]>["smtp_outcome"], checked_at: iso(checkedAt) },
  };
}

export function toContactInfo(row: PersonRow, include: ReadonlySet<PeopleInclude> = new Set()): ContactInfo {
  const info: ContactInfo = {
    profnet_id: row.profnet_id === null ? null : Number(row.profnet_id),
    profnet_public_identifier: row.profnet_public_identifier,
    codehost_id: row.codehost_id === null ? null : Number(row.codehost_id),
    codehost_login: row.codehost_login,
    codehost_username: row.codehost_username,
    socialnet_username: row.socialnet_username,
    microblog_username: row.microblog_username,
  };
  const seen = new Set<string>();
  // One mailbox once, in its first spelling (shared/email/canonical-address.ts, as the import de-duplicates).
  const stored = (JSON.parse(row.emails) as StoredEmail[]).filter(([e]) => {
    const key = canonicalAddress(e);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const emails = stored.map(([e]) => e);
  // Emails and phones are all present or all absent (docs/api.md "GET /v1/people"): phones only with emails.
  if (emails.length > 0) {
    info.email_addresses = emails;
    info.personal_email_addresses = emails.filter(isPersonalEmail);
    info.work_email_addresses = emails.filter((e) => !isPersonalEmail(e));
    info.phone_numbers = JSON.parse(row.phones) as string[];
  }
  if (include.has("email_details")) info.email_details = stored.map(emailDetail);
  return info;
}
