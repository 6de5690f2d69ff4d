/**
 * The name and work history of one import line (docs/operations.md "Import format"), validated: `name` and
 * `employment`, and the flat conveniences (`full_name`, `first_name`, `middle_name`, `last_name`, `company`,
 * `company_domain`, `title`, `employment_start`, `employment_end`, `employment_current`) folded into them. Text is
 * NFC-normalised and trimmed; control characters and bidi or invisible formatting characters (FORBIDDEN_TEXT) refuse
 * the line, naming the field. Pure, like people-record.ts, which composes these schemas into the line's.
 *
 * The keys the import stores (name_key, folded, employer_key, entry_key) are computed from what this returns with
 * shared/people/names.ts, the functions a lookup keys its inputs with (people-upsert.ts).
 */
import { z } from "zod";
import { employerKey, foldName, FORBIDDEN_TEXT, normaliseDomain, splitFullName } from "../../shared/people/names.ts";

export const MAX_NAME_PART_LENGTH = 128;
export const MAX_FULL_NAME_LENGTH = 256;
export const MAX_EMPLOYER_LENGTH = 256;
export const MAX_TITLE_LENGTH = 256;
export const MAX_EMPLOYMENT_ENTRIES = 20;
export const MAX_DOMAINS_PER_ENTRY = 10;

/** A name as stored: the full name as given (or given middle family joined) and the parts, given or split from it. */
export type NameRecord = { full: string; given?: string; middle?: string; family?: string };
/** One employment entry as stored: an entry with only a domain has that domain as its employer. */
export type EmploymentRecord = { employer: string; domains: string[]; title?: string; start?: string; end?: string; current?: boolean };

/** The flat columns a line (and a CSV header) may use instead of `name` and `employment`. */
export const FLAT_NAME_FIELDS = ["full_name", "first_name", "middle_name", "last_name"] as const;
export const FLAT_EMPLOYMENT_FIELDS = ["company", "company_domain", "title", "employment_start", "employment_end", "employment_current"] as const;
export const FLAT_PROFILE_FIELDS = [...FLAT_NAME_FIELDS, ...FLAT_EMPLOYMENT_FIELDS] as const;

const FORBIDDEN_MESSAGE = "must not contain control characters or bidirectional or invisible formatting characters";
const length = (text: string) => [...text].length;

/** NFC, trimmed, bounded text without FORBIDDEN_TEXT; empty, null and absent all mean "not given". */
const ProfileText = (max: number) =>
  z
    .union([z.string(), z.null()], { error: "must be a string" })
    .optional()
    .transform((value, ctx) => {
      const text = value?.normalize("NFC").trim();
      if (!text) return undefined;
      if (FORBIDDEN_TEXT.test(text)) {
        ctx.addIssue({ code: "custom", message: FORBIDDEN_MESSAGE });
        return z.NEVER;
      }
      if (length(text) > max) {
        ctx.addIssue({ code: "custom", message: `must be at most ${max} characters` });
        return z.NEVER;
      }
      return text;
    });

/** A date as given: YYYY, YYYY-MM or YYYY-MM-DD, a real one. */
export function isPartialDate(text: string): boolean {
  const match = /^([0-9]{4})(?:-(0[1-9]|1[0-2])(?:-(0[1-9]|[12][0-9]|3[01]))?)?$/.exec(text);
  if (!match) return false;
  if (match[3] === undefined) return true;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day;
}

/** `end` before `start`, compared to the precision both have ("2020" is not before "2020-05"). */
export function endsBeforeStart(start: string, end: string): boolean {
  const n = Math.min(start.length, end.length);
  return end.slice(0, n) < start.slice(0, n);
}

const PartialDate = z
  .union([z.string(), z.null()], { error: "must be a date string (YYYY, YYYY-MM or YYYY-MM-DD)" })
  .optional()
  .transform((value, ctx) => {
    const text = value?.trim();
    if (!text) return undefined;
    if (!isPartialDate(text)) {
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(text.slice(0, 40))} is not a date (YYYY, YYYY-MM or YYYY-MM-DD)` });
      return z.NEVER;
    }
    return text;
  });

/** true or false; in a CSV cell (or JSON) also "true" and "false"; empty means "not said". */
const Current = z
  .union([z.boolean(), z.string(), z.null()], { error: "must be true or false" })
  .optional()
  .transform((value, ctx) => {
    if (value === null || value === undefined || typeof value === "boolean") return value ?? undefined;
    const text = value.trim().toLowerCase();
    if (text === "") return undefined;
    if (text === "true" || text === "false") return text === "true";
    ctx.addIssue({ code: "custom", message: "must be true or false" });
    return z.NEVER;
  });

/** Domains as normaliseDomain stores them (the key a lookup by a company's domain matches on); empty items skipped. */
function toDomains(items: string[], ctx: z.RefinementCtx, indexed: boolean): string[] | typeof z.NEVER {
  const domains: string[] = [];
  for (const [i, item] of items.entries()) {
    const text = item.normalize("NFC").trim();
    if (text === "") continue;
    const domain = FORBIDDEN_TEXT.test(text) ? null : normaliseDomain(text);
    if (domain === null) {
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(text.slice(0, 60))} is not a domain name`, ...(indexed ? { path: [i] } : {}) });
      return z.NEVER;
    }
    if (!domains.includes(domain)) domains.push(domain);
  }
  return domains;
}

const objectError = (message: string) => ({ error: (issue: { code?: string }) => (issue.code === "invalid_type" ? message : undefined) });

const Domain = z
  .string(objectError("must be a string"))
  .nullable()
  .optional()
  .transform((value, ctx) => (value === null || value === undefined ? [] : toDomains([value], ctx, false)));

const DomainList = z
  .array(z.string(), objectError("must be an array of strings"))
  .nullable()
  .optional()
  .transform((items, ctx) => toDomains(items ?? [], ctx, true));

/** company_domain: one domain, or several (a CSV cell's `;`-separated items arrive as an array). */
const DomainOrList = z
  .union([z.string(), z.array(z.string()), z.null()], { error: "must be a string or an array of strings" })
  .optional()
  .transform((value, ctx) => (value === null || value === undefined ? [] : Array.isArray(value) ? toDomains(value, ctx, value.length > 1) : toDomains([value], ctx, false)));

export const NameInput = z
  .strictObject(
    {
      full: ProfileText(MAX_FULL_NAME_LENGTH),
      given: ProfileText(MAX_NAME_PART_LENGTH),
      middle: ProfileText(MAX_NAME_PART_LENGTH),
      family: ProfileText(MAX_NAME_PART_LENGTH),
    },
    objectError("must be an object with full, given, middle or family"),
  )
  .nullable()
  .optional();

const EmploymentEntryInput = z.strictObject(
  {
    employer: ProfileText(MAX_EMPLOYER_LENGTH),
    domain: Domain,
    domains: DomainList,
    title: ProfileText(MAX_TITLE_LENGTH),
    start: PartialDate,
    end: PartialDate,
    current: Current,
  },
  objectError("must be an object"),
);

export const EmploymentInput = z
  .array(EmploymentEntryInput, objectError("must be an array of objects"))
  .nullable()
  .optional()
  .transform((items) => items ?? []);

/** The flat columns' schemas, for people-record.ts's line schema. */
export const FLAT_PROFILE_SCHEMA = {
  full_name: ProfileText(MAX_FULL_NAME_LENGTH),
  first_name: ProfileText(MAX_NAME_PART_LENGTH),
  middle_name: ProfileText(MAX_NAME_PART_LENGTH),
  last_name: ProfileText(MAX_NAME_PART_LENGTH),
  company: ProfileText(MAX_EMPLOYER_LENGTH),
  company_domain: DomainOrList,
  title: ProfileText(MAX_TITLE_LENGTH),
  employment_start: PartialDate,
  employment_end: PartialDate,
  employment_current: Current,
};

type ParsedName = z.output<typeof NameInput>;
type ParsedEntry = z.output<typeof EmploymentEntryInput>;
type FlatProfile = { [K in keyof typeof FLAT_PROFILE_SCHEMA]: z.output<(typeof FLAT_PROFILE_SCHEMA)[K]> };
type Issue = { message: string; path: (string | number)[] };

/** The line's name: `name`, or the flat columns; at most one of the two ways. */
function resolveName(name: ParsedName, flat: FlatProfile, issues: Issue[]): NameRecord | undefined {
  const flatGiven = FLAT_NAME_FIELDS.filter((field) => flat[field] !== undefined);
  if (name && flatGiven.length > 0) {
    issues.push({ path: ["name"], message: `give either name or ${flatGiven.join(", ")}, not both` });
    return undefined;
  }
  const parts = name ?? { full: flat.full_name, given: flat.first_name, middle: flat.middle_name, family: flat.last_name };
  const at = (field: "full" | "given" | "middle" | "family"): (string | number)[] =>
    name ? ["name", field] : [{ full: "full_name", given: "first_name", middle: "middle_name", family: "last_name" }[field]];
  if (parts.full === undefined && parts.given === undefined && parts.family === undefined) {
    if (parts.middle !== undefined) issues.push({ path: at("middle"), message: "a middle name needs a full, given or family name beside it" });
    return undefined;
  }
  const full = parts.full ?? [parts.given, parts.middle, parts.family].filter((p) => p !== undefined).join(" ");
  if (length(full) > MAX_FULL_NAME_LENGTH) {
    issues.push({ path: at("full"), message: `the full name (given middle family) must be at most ${MAX_FULL_NAME_LENGTH} characters` });
    return undefined;
  }
  if (foldName(full) === "") {
    issues.push({ path: at(parts.full !== undefined ? "full" : parts.given !== undefined ? "given" : "family"), message: "has no letters or digits" });
    return undefined;
  }
  // Parts given are kept as given; a full name alone is split as people write it (shared/people/names.ts).
  const split = parts.given !== undefined || parts.family !== undefined ? { given: parts.given, middle: parts.middle, family: parts.family } : splitFullName(full);
  return {
    full,
    ...(split.given !== undefined ? { given: split.given } : {}),
    ...(split.middle !== undefined ? { middle: split.middle } : {}),
    ...(split.family !== undefined ? { family: split.family } : {}),
  };
}

type EntryFields = { employer: string; domain: string; domains: string; start: string; end: string; title: string };

/** One entry checked as a whole: an employer or a domain, an employer with letters, end not before start, few domains. */
function resolveEntry(entry: ParsedEntry, at: (field: keyof EntryFields | null) => (string | number)[], issues: Issue[]): EmploymentRecord | undefined {
  const domains = [...new Set([...entry.domain, ...entry.domains])];
  const before = issues.length;
  if (entry.employer === undefined && domains.length === 0) issues.push({ path: at(null), message: "needs an employer or a domain" });
  if (entry.employer !== undefined && employerKey(entry.employer) === null) issues.push({ path: at("employer"), message: "has no letters or digits" });
  if (domains.length > MAX_DOMAINS_PER_ENTRY) issues.push({ path: at("domains"), message: `must have at most ${MAX_DOMAINS_PER_ENTRY} domains` });
  if (entry.start !== undefined && entry.end !== undefined && endsBeforeStart(entry.start, entry.end)) {
    issues.push({ path: at("end"), message: `${entry.end} is before the start, ${entry.start}` });
  }
  if (issues.length > before) return undefined;
  return {
    employer: entry.employer ?? domains[0]!,
    domains,
    ...(entry.title !== undefined ? { title: entry.title } : {}),
    ...(entry.start !== undefined ? { start: entry.start } : {}),
    ...(entry.end !== undefined ? { end: entry.end } : {}),
    ...(entry.current !== undefined ? { current: entry.current } : {}),
  };
}

/**
 * The line's name and employment from `name`, `employment` and the flat columns; the flat employment columns make one
 * more entry, current unless `employment_end` is given (then not said) or `employment_current` says otherwise.
 */
export function resolveProfile(
  name: ParsedName,
  employment: ParsedEntry[],
  flat: FlatProfile,
): { ok: true; name: NameRecord | undefined; employment: EmploymentRecord[] } | { ok: false; issues: Issue[] } {
  const issues: Issue[] = [];
  const resolvedName = resolveName(name, flat, issues);
  const entries: EmploymentRecord[] = [];
  employment.forEach((entry, i) => {
    const resolved = resolveEntry(entry, (field) => (field === null ? ["employment", i] : ["employment", i, field]), issues);
    if (resolved) entries.push(resolved);
  });
  const flatEntry = FLAT_EMPLOYMENT_FIELDS.some((field) => (field === "company_domain" ? flat.company_domain.length > 0 : flat[field] !== undefined));
  if (employment.length + (flatEntry ? 1 : 0) > MAX_EMPLOYMENT_ENTRIES) {
    return { ok: false, issues: [{ path: ["employment"], message: `must have at most ${MAX_EMPLOYMENT_ENTRIES} entries (the company columns count as one)` }] };
  }
  if (flatEntry) {
    const flatNames: Record<keyof EntryFields, string> = {
      employer: "company", domain: "company_domain", domains: "company_domain", start: "employment_start", end: "employment_end", title: "title",
    };
    const entry: ParsedEntry = {
      employer: flat.company,
      domain: [],
      domains: flat.company_domain,
      title: flat.title,
      start: flat.employment_start,
      end: flat.employment_end,
      current: flat.employment_current ?? (flat.employment_end === undefined ? true : undefined),
    };
    const resolved = resolveEntry(entry, (field) => [field === null ? "company" : flatNames[field]], issues);
    if (resolved) entries.push(resolved);
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, name: resolvedName, employment: entries };
}
