/**
 * One line of a people import, validated: the ContactInfo field names (docs/operations.md "Import format"), ids as
 * positive safe integers, strings trimmed, emails deduplicated by their canonical form and phones in E.164
 * (docs/api.md "GET /v1/people"). Pure: no I/O, so it is tested table-driven and runs before any database write.
 */
import { parsePhoneNumberWithError, ParseError } from "libphonenumber-js/max";
import { z } from "zod";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { EmploymentInput, FLAT_PROFILE_FIELDS, FLAT_PROFILE_SCHEMA, NameInput, resolveProfile, type EmploymentRecord, type NameRecord } from "./people-record-profile.ts";

/** The person columns an import row may set; the names are the ContactInfo fields and the SQL columns. */
export const IDENTIFIER_FIELDS = ["profnet_id", "profnet_public_identifier", "codehost_id", "codehost_login"] as const;
export const HANDLE_FIELDS = ["codehost_username", "socialnet_username", "microblog_username"] as const;
export const PERSON_FIELDS = [...IDENTIFIER_FIELDS, ...HANDLE_FIELDS] as const;
export const LIST_FIELDS = ["email_addresses", "phone_numbers"] as const;
/**
 * `source`: the supplier this line came from, when it is not the file's (docs/operations.md "Import format"); `name` and
 * `employment`, and the flat columns that stand for one name and one employment entry (people-record-profile.ts).
 */
export const IMPORT_FIELDS = [...PERSON_FIELDS, ...LIST_FIELDS, "source", "name", "employment", ...FLAT_PROFILE_FIELDS] as const;
/** A CSV header's names: a cell cannot hold an object or an array of them, so `name` and `employment` are JSON Lines only. */
export const CSV_FIELDS = [...PERSON_FIELDS, ...LIST_FIELDS, "source", ...FLAT_PROFILE_FIELDS] as const;
/** CSV cells split on `;` into a list. */
export const CSV_LIST_FIELDS = [...LIST_FIELDS, "company_domain"] as const;

export type IdentifierField = (typeof IDENTIFIER_FIELDS)[number];
export type HandleField = (typeof HANDLE_FIELDS)[number];
export type PersonField = (typeof PERSON_FIELDS)[number];

/**
 * A valid row: the person fields it gives (undefined ones stay untouched on update) plus its lists, its name and its
 * employment entries (the flat columns folded into them). A merge candidate recorded before names were imported has
 * neither `name` nor `employment`, and a line without them has none either: readers treat them as absent.
 */
export type PersonRecord = z.output<typeof PersonRecordSchema>;
export type { EmploymentRecord, NameRecord };

export type RecordParseResult = { ok: true; record: PersonRecord } | { ok: false; reason: string };

/** The same bound as the lookup's query parameters, so anything imported can be looked up. */
const MAX_TEXT_LENGTH = 256;
/** A source names a supplier: a short label, never a path or a sentence. */
export const MAX_SOURCE_LENGTH = 100;
const MAX_EMAIL_LENGTH = 254;
/** libphonenumber-js ignores input past 250 characters; a real number with formatting is far shorter. */
const MAX_PHONE_INPUT_LENGTH = 64;
const MAX_LIST_ITEMS = 100;

const REQUIRED_IDENTIFIER_MESSAGE =
  "one of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required";

/** Trimmed text; empty, null and absent all mean "not given". */
const OptionalText = z
  .union([z.string(), z.null()], { error: "must be a string" })
  .optional()
  .transform((value, ctx) => {
    const text = value?.trim();
    if (!text) return undefined;
    if (text.length > MAX_TEXT_LENGTH) {
      ctx.addIssue({ code: "custom", message: `must be at most ${MAX_TEXT_LENGTH} characters` });
      return z.NEVER;
    }
    return text;
  });

/** A positive integer up to 2^53-1, as a JSON number or a decimal string (CSV cells are strings). */
const OptionalPositiveId = z
  .union([z.number(), z.string(), z.null()], { error: "must be a positive integer" })
  .optional()
  .transform((value, ctx) => {
    if (value === null || value === undefined) return undefined;
    const text = typeof value === "string" ? value.trim() : undefined;
    if (text === "") return undefined;
    const id = text === undefined ? value : /^[0-9]{1,16}$/.test(text) ? Number(text) : Number.NaN;
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1) {
      ctx.addIssue({ code: "custom", message: "must be a positive integer up to 2^53-1" });
      return z.NEVER;
    }
    return id;
  });

/** Trimmed, non-empty items; empty items (a trailing `;` in a CSV cell) are skipped. */
const TextList = z
  .union([z.array(z.string(), { error: "must be an array of strings" }), z.null()], {
    error: "must be an array of strings",
  })
  .optional()
  .transform((items) => (items ?? []).map((item) => item.trim()).filter((item) => item !== ""))
  .refine((items) => items.length <= MAX_LIST_ITEMS, { message: `must have at most ${MAX_LIST_ITEMS} items` });

/**
 * The minimal syntax check the import needs: exactly one `@`, non-empty sides, a dot inside the
 * domain, no whitespace, a bounded length. The full RFC check runs at verification.
 */
export function isPlausibleEmail(email: string): boolean {
  if (email.length > MAX_EMAIL_LENGTH || /\s/.test(email)) return false;
  const parts = email.split("@");
  if (parts.length !== 2) return false;
  const [local = "", domain = ""] = parts;
  const dot = domain.indexOf(".");
  return local !== "" && dot > 0 && domain.lastIndexOf(".") < domain.length - 1;
}

const EmailList = TextList.transform((emails, ctx) => {
  const unique = new Map<string, string>();
  for (const email of emails) {
    if (!isPlausibleEmail(email)) {
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(email)} is not a valid email address` });
      return z.NEVER;
    }
    // The first spelling wins; spellings of one mailbox are one address (shared/email/canonical-address.ts).
    const key = canonicalAddress(email);
    if (!unique.has(key)) unique.set(key, email);
  }
  return [...unique.values()];
});

const PHONE_PARSE_ERRORS: Record<string, string> = {
  INVALID_COUNTRY: "has no +country code",
  NOT_A_NUMBER: "is not a phone number",
  TOO_SHORT: "is too short",
  TOO_LONG: "is too long",
  INVALID_LENGTH: "has an invalid length",
};

/** E.164 or the reason it cannot be: without a default country a number must start with `+`. */
export function normalisePhoneNumber(input: string): { ok: true; e164: string } | { ok: false; reason: string } {
  const quoted = JSON.stringify(input);
  if (input.length > MAX_PHONE_INPUT_LENGTH) return { ok: false, reason: `${quoted.slice(0, 24)}..." is too long` };
  try {
    const phone = parsePhoneNumberWithError(input);
    if (!phone.isValid()) return { ok: false, reason: `${quoted} is not a valid phone number` };
    return { ok: true, e164: phone.number };
  } catch (error) {
    if (!(error instanceof ParseError)) throw error;
    const why = PHONE_PARSE_ERRORS[error.message] ?? "cannot be parsed";
    return { ok: false, reason: `${quoted} ${why}` };
  }
}

const PhoneList = TextList.transform((phones, ctx) => {
  const unique = new Set<string>();
  for (const phone of phones) {
    const normalised = normalisePhoneNumber(phone);
    if (!normalised.ok) {
      ctx.addIssue({ code: "custom", message: `${normalised.reason}; numbers are stored in E.164` });
      return z.NEVER;
    }
    unique.add(normalised.e164);
  }
  return [...unique];
});

const PersonRecordSchema = z
  .strictObject({
    profnet_id: OptionalPositiveId,
    profnet_public_identifier: OptionalText,
    codehost_id: OptionalPositiveId,
    codehost_login: OptionalText,
    codehost_username: OptionalText,
    socialnet_username: OptionalText,
    microblog_username: OptionalText,
    email_addresses: EmailList,
    phone_numbers: PhoneList,
    source: OptionalText.refine((source) => source === undefined || source.length <= MAX_SOURCE_LENGTH, { message: `must be at most ${MAX_SOURCE_LENGTH} characters` }),
    name: NameInput,
    employment: EmploymentInput,
    ...FLAT_PROFILE_SCHEMA,
  })
  .refine((row) => IDENTIFIER_FIELDS.some((field) => row[field] !== undefined), {
    message: REQUIRED_IDENTIFIER_MESSAGE,
  })
  .transform((row, ctx) => {
    const { name, employment, full_name, first_name, middle_name, last_name, company, company_domain, title, employment_start, employment_end, employment_current, ...rest } = row;
    // An unknown field is an issue that does not stop the object's checks: nothing more to say of such a line.
    if (ctx.issues.length > 0) return z.NEVER;
    const flat = { full_name, first_name, middle_name, last_name, company, company_domain, title, employment_start, employment_end, employment_current };
    const profile = resolveProfile(name ?? undefined, employment, flat);
    if (!profile.ok) {
      for (const issue of profile.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
      return z.NEVER;
    }
    // Only what the line gives: a line without a name or employment records (as a merge candidate) as it did before them.
    return { ...rest, ...(profile.name ? { name: profile.name } : {}), ...(profile.employment.length > 0 ? { employment: profile.employment } : {}) };
  });

function describeUnknown(keys: string[]): string {
  return `unknown field${keys.length > 1 ? "s" : ""} ${keys.map((key) => JSON.stringify(key)).join(", ")}`;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join("");
  if (issue.code === "unrecognized_keys") return where === "" ? describeUnknown(issue.keys) : `${where}: ${describeUnknown(issue.keys)}`;
  return where === "" ? issue.message : `${where}: ${issue.message}`;
}

/** Validates one decoded row (a JSON value, or a CSV row already turned into an object). */
export function parsePersonRecord(input: unknown): RecordParseResult {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return { ok: false, reason: "expected a JSON object" };
  }
  const parsed = PersonRecordSchema.safeParse(input);
  if (!parsed.success) return { ok: false, reason: parsed.error.issues.map(describeIssue).join("; ") };
  return { ok: true, record: parsed.data };
}
