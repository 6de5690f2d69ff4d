/**
 * Contact lookup: identifier parsing and the ContactInfo shape (docs/api.md "GET /v1/people"). Precedence and the
 * emails/phones aggregation happen in SQL (store.ts), so that the match, the charge and the read go to the database
 * together (see routes/people.ts).
 */
import { checkIdentifiers } from "../../shared/identifiers.ts";
import { ERROR_MESSAGES, PEOPLE_INCLUDES, type ContactInfo, type EmailDetail, type Employment, type PersonName, type StoredVerificationReason } from "../../shared/api.ts";
import type { VerificationReason } from "../../shared/email/reasons.ts";
import { confidenceLabel, type FeedbackVerdict } from "../../shared/people/confidence.ts";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { domainOf } from "../../shared/email/syntax.ts";
import { isDisposableDomain, isFreeProviderDomain } from "../../shared/email/lists.ts";
import { iso } from "../db/rows.ts";
import { ApiError } from "../lib/errors.ts";
import type { PeopleIdentifiers, PersonRow } from "./store.ts";

/**
 * The identifiers of one lookup, by the one set of rules and messages (shared/identifiers.ts): throws the 400 that
 * names what is wrong. The batch and the lookup jobs read each item and line with checkIdentifiers itself.
 */
export function parsePeopleQuery(query: Readonly<Record<string, unknown>>): PeopleIdentifiers {
  const checked = checkIdentifiers(query);
  if (!checked.ok) throw new ApiError(400, checked.error);
  return checked.ids;
}

/** `min_confidence`: an integer 0..100, or absent (no floor). */
export function parseMinConfidence(raw: string | undefined): number | null {
  if (raw === undefined || raw.trim() === "") return null;
  const value = raw.trim();
  if (!/^[0-9]{1,3}$/.test(value) || Number(value) > 100) throw new ApiError(400, ERROR_MESSAGES.minConfidenceRange);
  return Number(value);
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

/** A personal address is on a free or disposable provider (docs/api.md "GET /v1/people"); anything else is work. */
export function isPersonalEmail(email: string): boolean {
  const domain = domainOf(email);
  return isFreeProviderDomain(domain) || isDisposableDomain(domain);
}

type StoredEmail = [
  email: string,
  firstSeenAt: number,
  lastSeenAt: number,
  classification: "valid" | "risky" | "invalid" | null,
  smtpOutcome: string | null,
  checkedAt: number | null,
  sources: number,
  confidence: number,
  reason: VerificationReason | null,
  feedback: FeedbackVerdict,
];

/**
 * The reason our check's verdict gives (docs/api.md "Reasons"): the stored check's, except that a catch-all address
 * independent accounts recently delivered to says so (the one evidence that settles a catch-all without probing).
 */
function storedReason(reason: VerificationReason | null, feedback: FeedbackVerdict): StoredVerificationReason | null {
  return reason === "catch_all" && feedback === "delivered" ? "catch_all_delivered" : reason;
}

function emailDetail([email, firstSeenAt, lastSeenAt, classification, smtpOutcome, checkedAt, sources, confidence, reason, feedback]: StoredEmail): EmailDetail {
  return {
    email,
    type: isPersonalEmail(email) ? "personal" : "work",
    first_seen_at: iso(firstSeenAt),
    last_seen_at: iso(lastSeenAt),
    sources,
    confidence,
    confidence_label: confidenceLabel(confidence),
    verification:
      classification === null || checkedAt === null
        ? null
        : {
            classification,
            smtp_outcome: smtpOutcome as NonNullable<EmailDetail["verification"]>["smtp_outcome"],
            checked_at: iso(checkedAt),
            ...(reason === null ? {} : { reason: storedReason(reason, feedback)! }),
          },
  };
}

type Profile = { name: PersonName | null; employment: Employment[] };

export function toContactInfo(row: PersonRow, include: ReadonlySet<PeopleInclude> = new Set()): ContactInfo {
  const profile = { name: row.name ? (JSON.parse(row.name) as PersonName) : null, employment: row.employment ? (JSON.parse(row.employment) as Employment[]) : [] };
  return contactInfo(row, JSON.parse(row.emails) as StoredEmail[], JSON.parse(row.phones) as string[], include, profile);
}

/** A person as a bulk lookup stored them when answering (edge/people/store.ts personSnapshot): the same ContactInfo a lookup of them then gave. */
export function contactInfoFromSnapshot(snapshot: string, include: ReadonlySet<PeopleInclude> = new Set()): ContactInfo {
  const row = JSON.parse(snapshot) as Omit<PersonRow, "emails" | "phones" | "name" | "employment"> & {
    emails: StoredEmail[];
    phones: string[];
    name?: PersonName | null;
    employment?: Employment[] | null;
  };
  return contactInfo(row, row.emails, row.phones, include, { name: row.name ?? null, employment: row.employment ?? [] });
}

function contactInfo(
  row: Omit<PersonRow, "emails" | "phones" | "name" | "employment">,
  storedEmails: StoredEmail[],
  phones: string[],
  include: ReadonlySet<PeopleInclude>,
  profile: Profile,
): ContactInfo {
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
  const stored = storedEmails.filter(([e]) => {
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
    info.phone_numbers = phones;
  }
  if (include.has("email_details")) info.email_details = stored.map(emailDetail);
  if (include.has("profile")) {
    info.name = profile.name;
    info.employment = profile.employment;
  }
  return info;
}
