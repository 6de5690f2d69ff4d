/**
 * The rules for a lookup's identifiers (docs/api.md "GET /v1/people"), pure and without zod, in one place: the single
 * call's query (edge/people/lookup.ts parsePeopleQuery), each item of a batch, each line of a lookup job, and the
 * console's preview of a list in the browser (edge/console/browser/enrich-worker.ts) all read them here, so a line the
 * preview calls well-formed is one the API looks up, with the same message when it is not.
 */

import { parsePhoneNumberFromString, type CountryCode } from "libphonenumber-js/min";
import { canonicalAddress } from "./email/canonical-address.ts";
import { employerKey, fullNameKey, nameKey, normaliseDomain, FORBIDDEN_TEXT } from "./people/names.ts";

/** The four identifiers a lookup takes, in precedence order: the first that matches a person wins. */
export const IDENTIFIER_NAMES = ["profnet_id", "profnet_public_identifier", "codehost_id", "codehost_login"] as const;
export type IdentifierName = (typeof IDENTIFIER_NAMES)[number];

/**
 * Everything a lookup reads (docs/api.md "GET /v1/people"): the four identifiers, then what customers hold: an email, a
 * phone (with `country` for a national form), a name (`full_name`, or `first_name` and `last_name`) at a company
 * (`company_domain`, or `company`). A list's columns are guessed for each of these.
 */
export const LOOKUP_FIELDS = [
  ...IDENTIFIER_NAMES,
  "email",
  "phone",
  "country",
  "full_name",
  "first_name",
  "last_name",
  "company_domain",
  "company",
] as const;
export type LookupField = (typeof LOOKUP_FIELDS)[number];

/** The inputs that find a person, in precedence order, as the access log names what found them (`matched_by`). */
export const MATCHED_BY = [...IDENTIFIER_NAMES, "email", "phone", "name"] as const;
export type MatchedBy = (typeof MATCHED_BY)[number];

export const MAX_IDENTIFIER_LENGTH = 256;

export const IDENTIFIER_REQUIRED = "One of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required";

/**
 * The keys of a lookup's other inputs, as the database compares them: `email` an address key
 * (shared/email/canonical-address.ts), `phone` E.164, `name` a name key (shared/people/names.ts) with either `domain` (a
 * company's domain) or `company` (an employer key). Absent when not given.
 */
export type LookupKeys = { email?: string; phone?: string; name?: string; domain?: string; company?: string };

/** A lookup's identifiers as read: ids as numbers, the text ones trimmed; absent when not given (or blank). `keys`: the other inputs, when any. */
export type Identifiers = { profnetId?: number; profnetPublicIdentifier?: string; codehostId?: number; codehostLogin?: string; keys?: LookupKeys };

export type IdentifierCheck = { ok: true; ids: Identifiers } | { ok: false; error: string };

class IdentifierProblem extends Error {}

/**
 * One value as text: a query value is text already; a JSON value (a batch item, a JSON Lines line) may also be a
 * number. Null and absent are not given. Anything else is the parameter's own problem.
 */
function asText(name: LookupField, raw: unknown, integer: boolean): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "string") return raw;
  if (typeof raw === "number") return String(raw);
  throw new IdentifierProblem(integer ? `${name} must be a positive integer` : `${name} must be a string`);
}

/** A decimal positive integer up to 2^53-1, with nothing else around it but trimmed whitespace. */
function positiveId(name: IdentifierName, raw: unknown): number | undefined {
  const text = asText(name, raw, true);
  if (text === undefined) return undefined;
  const value = text.trim();
  if (value === "") return undefined;
  if (!/^[0-9]{1,16}$/.test(value)) throw new IdentifierProblem(`${name} must be a positive integer`);
  const n = Number(value);
  if (n < 1 || !Number.isSafeInteger(n)) throw new IdentifierProblem(`${name} must be a positive integer`);
  return n;
}

function text(name: LookupField, raw: unknown): string | undefined {
  const given = asText(name, raw, false);
  if (given === undefined) return undefined;
  const value = given.trim();
  if (value === "") return undefined;
  if (value.length > MAX_IDENTIFIER_LENGTH) throw new IdentifierProblem(`${name} must be at most ${MAX_IDENTIFIER_LENGTH} characters`);
  if (FORBIDDEN_TEXT.test(value)) throw new IdentifierProblem(`${name} must not contain control or bidi characters`);
  return value;
}

export const MAX_EMAIL_INPUT_LENGTH = 254;

/** An address as a lookup takes it: one "@", both sides non-empty, a dot in the domain, no spaces; its key. */
function emailKey(raw: unknown): string | undefined {
  const value = text("email", raw);
  if (value === undefined) return undefined;
  const at = value.lastIndexOf("@");
  const domain = value.slice(at + 1);
  if (value.length > MAX_EMAIL_INPUT_LENGTH || at < 1 || /\s/.test(value) || !/^[^.].*\.[^.]+$/.test(domain)) {
    throw new IdentifierProblem("email must be an email address such as ada@example.com");
  }
  return canonicalAddress(value);
}

/** A phone in E.164, or in a national form with `country` (ISO 3166-1 alpha-2). */
function phoneKey(raw: unknown, rawCountry: unknown): string | undefined {
  const value = text("phone", raw);
  const country = text("country", rawCountry)?.toUpperCase();
  if (value === undefined) return undefined;
  if (country !== undefined && !/^[A-Z]{2}$/.test(country)) throw new IdentifierProblem("country must be a two-letter ISO 3166-1 country code such as GB");
  if (value.length > 64) throw new IdentifierProblem("phone must be at most 64 characters");
  const parsed = parsePhoneNumberFromString(value, country === undefined ? undefined : { defaultCountry: country as CountryCode });
  if (parsed === undefined || !parsed.isPossible()) {
    throw new IdentifierProblem(
      country === undefined && !value.startsWith("+")
        ? "phone must be in E.164 (+ and the country code, such as +442071838750), or give country for a national number"
        : "phone is not a possible phone number",
    );
  }
  return parsed.number;
}

/** A name at a company, as keys (shared/people/names.ts); the 400 when half of it is given or it cannot be keyed. */
function nameKeys(values: Readonly<Record<string, unknown>>): Pick<LookupKeys, "name" | "domain" | "company"> {
  const full = text("full_name", values.full_name);
  const first = text("first_name", values.first_name);
  const last = text("last_name", values.last_name);
  const domainText = text("company_domain", values.company_domain);
  const companyText = text("company", values.company);
  const named = full !== undefined || first !== undefined || last !== undefined;
  if (!named) {
    if (domainText !== undefined || companyText !== undefined) {
      throw new IdentifierProblem(`${domainText !== undefined ? "company_domain" : "company"} needs a name: give full_name, or first_name and last_name`);
    }
    return {};
  }
  if (full === undefined && (first === undefined || last === undefined)) {
    throw new IdentifierProblem(`${first === undefined ? "first_name" : "last_name"} is required with ${first === undefined ? "last_name" : "first_name"} (or give full_name)`);
  }
  const key = full !== undefined ? fullNameKey(full) : nameKey({ given: first, family: last });
  if (key === null) {
    throw new IdentifierProblem(
      full !== undefined
        ? "full_name must hold a given name and a family name (an initial is not a given name)"
        : "first_name must be a given name, not an initial",
    );
  }
  if (domainText !== undefined) {
    const domain = normaliseDomain(domainText);
    if (domain === null) throw new IdentifierProblem("company_domain must be a domain name such as acme.com");
    return { name: key, domain };
  }
  if (companyText !== undefined) {
    const company = employerKey(companyText);
    if (company === null) throw new IdentifierProblem("company must name an employer");
    return { name: key, company };
  }
  throw new IdentifierProblem("A name lookup needs company_domain or company: a name alone never identifies a person");
}

/**
 * The identifiers of one lookup from its values by name, or the message of the 400 that says what is wrong (the first
 * problem in precedence order, then "one is required" when none is given). Names other than the four are ignored.
 */
export function checkIdentifiers(values: Readonly<Record<string, unknown>>): IdentifierCheck {
  try {
    const ids: Identifiers = {
      profnetId: positiveId("profnet_id", values.profnet_id),
      profnetPublicIdentifier: text("profnet_public_identifier", values.profnet_public_identifier),
      codehostId: positiveId("codehost_id", values.codehost_id),
      codehostLogin: text("codehost_login", values.codehost_login),
    };
    const keys: LookupKeys = { email: emailKey(values.email), phone: phoneKey(values.phone, values.country), ...nameKeys(values) };
    for (const k of Object.keys(keys) as (keyof LookupKeys)[]) if (keys[k] === undefined) delete keys[k];
    if (Object.keys(keys).length > 0) ids.keys = keys;
    if (ids.profnetId === undefined && ids.profnetPublicIdentifier === undefined && ids.codehostId === undefined && ids.codehostLogin === undefined && ids.keys === undefined) {
      return { ok: false, error: IDENTIFIER_REQUIRED };
    }
    return { ok: true, ids };
  } catch (error) {
    if (error instanceof IdentifierProblem) return { ok: false, error: error.message };
    throw error;
  }
}

/**
 * The same lookup, whoever spelled it: two lines with equal keys ask for the same person (text identifiers compared
 * case-insensitively, as the database matches them; ASCII folding, as SQLite's lower()). For counting repeats in a list.
 */
export function identifiersKey(ids: Identifiers): string {
  const fold = (v: string | undefined) => (v === undefined ? "" : v.replace(/[A-Z]+/g, (m) => m.toLowerCase()));
  const k = ids.keys;
  const base = [ids.profnetId ?? null, fold(ids.profnetPublicIdentifier), ids.codehostId ?? null, fold(ids.codehostLogin)];
  return JSON.stringify(k === undefined ? base : [...base, k.email ?? "", k.phone ?? "", k.name ?? "", k.domain ?? "", k.company ?? ""]);
}

/** A header cell as a name: trimmed, lower-cased, runs of spaces, hyphens and dots as one underscore. */
export const columnName = (cell: string) => cell.trim().toLowerCase().replace(/[\s.-]+/g, "_");

/**
 * Other names a header may give an input (after columnName): what CRM exports and spreadsheets call them. A column
 * named exactly as the input always wins over an alias.
 */
const COLUMN_ALIASES: Readonly<Partial<Record<LookupField, readonly string[]>>> = {
  email: ["email_address", "e_mail", "work_email", "business_email", "email_1", "mail"],
  phone: ["phone_number", "mobile", "mobile_phone", "mobile_number", "telephone", "tel", "work_phone", "direct_phone"],
  country: ["country_code", "phone_country"],
  full_name: ["name", "fullname", "contact_name", "person_name", "contact"],
  first_name: ["firstname", "given_name", "first"],
  last_name: ["lastname", "surname", "family_name", "last"],
  company_domain: ["domain", "website", "company_website", "company_url", "email_domain", "web_domain"],
  company: ["company_name", "organization", "organisation", "employer", "account_name", "account"],
};

/**
 * Which column of a header holds each input: a column named as the input is (any case; spaces, hyphens and dots count
 * as underscores: "Profnet ID" is profnet_id), else one named by a common alias ("Email Address", "Website",
 * "Company Name"). An input no column is named after is not read.
 */
export function guessIdentifierColumns(header: readonly string[]): Partial<Record<LookupField, number>> {
  const names = header.map(columnName);
  const out: Partial<Record<LookupField, number>> = {};
  const taken = new Set<number>();
  for (const name of LOOKUP_FIELDS) {
    const at = names.indexOf(name);
    if (at >= 0) {
      out[name] = at;
      taken.add(at);
    }
  }
  for (const name of LOOKUP_FIELDS) {
    if (out[name] !== undefined) continue;
    const at = names.findIndex((n, i) => !taken.has(i) && (COLUMN_ALIASES[name] ?? []).includes(n));
    if (at >= 0) {
      out[name] = at;
      taken.add(at);
    }
  }
  // A guess reads only what can find someone: a name with a company or its domain, a country with a phone. A "Name"
  // column beside an identifier column (a CRM's own) is kept as the customer's, not read as an input.
  if (out.company === undefined && out.company_domain === undefined) {
    delete out.full_name;
    delete out.first_name;
    delete out.last_name;
  }
  // One name: first_name with last_name where both are there (more exact than a full name), else the full name.
  if (out.first_name !== undefined && out.last_name !== undefined) delete out.full_name;
  else {
    delete out.first_name;
    delete out.last_name;
  }
  if (out.phone === undefined) delete out.country;
  return out;
}
