/**
 * How a person's name and employer are compared (docs/api.md "Looking up by name"): the import keys the names and
 * employers it stores with these functions and a lookup keys what the caller gives with the same ones, so the two agree
 * by construction. Pure and I/O-free: the Worker, the admin CLI and the console's list preview import it.
 *
 * - Case, accents and punctuation do not count: NFKD, combining marks on Latin letters dropped, the few Latin letters that do not
 *   decompose spelled out (ß ss, æ ae, œ oe, ø o, ł l, đ d, ð d, þ th, ı i), lower-cased, anything that is not a letter or
 *   a digit a space. "José Núñez-Ortiz" and "jose nunez ortiz" compare equal. Other scripts (Cyrillic, Greek, CJK)
 *   compare lower-cased as written, their marks kept (й is not и); nothing is transliterated between scripts.
 * - A name is compared by its given name's first word and its family name's last word, particles and middle names
 *   ignored: "Ludwig van Beethoven", "Ludwig Beethoven" and (first_name "Ludwig", last_name "van Beethoven") share one key,
 *   and so do "Gabriel García Márquez" and (given "Gabriel", family "García Márquez"). A full name is split as people
 *   write it: "Family, Given Middle" with a comma, else the first word is the given name and the last word, with the
 *   particles before it, the family name.
 * - An initial is not a name: a given name of one letter ("J." Smith) keys nothing, so it never matches anyone.
 * - An employer is compared by its folded name without a trailing legal form ("Acme, Inc." is "acme").
 */
import { toASCII } from "tr46";

/** Lower-case particles that belong to a family name ("van der Berg", "de la Cruz", "bin Salman"). */
export const NAME_PARTICLES: ReadonlySet<string> = new Set([
  "van", "der", "den", "de", "del", "della", "dela", "di", "da", "das", "dos", "do", "du", "la", "le", "lo",
  "von", "zu", "ten", "ter", "te", "het", "op", "af", "al", "el", "bin", "ibn", "bint", "ben", "mac", "st", "y",
]);

/** Legal forms dropped from the end of an employer's name before comparing. */
const LEGAL_FORMS: ReadonlySet<string> = new Set([
  "inc", "incorporated", "llc", "llp", "lp", "ltd", "limited", "plc", "corp", "corporation", "co", "company",
  "gmbh", "ag", "kg", "se", "sa", "sas", "sarl", "srl", "spa", "bv", "nv", "oy", "ab", "as", "aps", "pty", "kk", "sl",
]);

const SPELLED_OUT: Readonly<Record<string, string>> = {
  ß: "ss", æ: "ae", œ: "oe", ø: "o", ł: "l", đ: "d", ð: "d", þ: "th", ı: "i", ŀ: "l", ħ: "h",
};

/** Text as names are compared: see the module's comment. */
export function foldName(text: string): string {
  return text
    .normalize("NFKD")
    // Accents go from Latin letters only: in Cyrillic, Greek and the rest a mark can make another letter (й is not и).
    .replace(/(\p{Script=Latin})\p{M}+/gu, "$1")
    .normalize("NFC")
    .toLowerCase()
    .replace(/[ßæœøłđðþıŀħ]/g, (c) => SPELLED_OUT[c] ?? c)
    .replace(/['’ʼ`]/g, "")
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

/** The words of a folded text. */
const words = (text: string | undefined): string[] => (text === undefined ? [] : foldName(text).split(" ").filter((w) => w !== ""));

export type NameParts = { given?: string; middle?: string; family?: string };

/**
 * A full name split into given, middle and family as people write it: "Family, Given Middle" with one comma; else the
 * first word is the given name, the last word with the particles right before it the family name, and what is between
 * the middle. One word is a given name alone.
 */
export function splitFullName(full: string): NameParts {
  const text = full.trim().replace(/\s+/g, " ");
  const comma = text.indexOf(",");
  if (comma > 0 && text.indexOf(",", comma + 1) < 0) {
    const family = text.slice(0, comma).trim();
    const [given, ...middle] = text.slice(comma + 1).trim().split(" ").filter((w) => w !== "");
    return { ...(given ? { given } : {}), ...(middle.length ? { middle: middle.join(" ") } : {}), ...(family ? { family } : {}) };
  }
  const parts = text.split(" ").filter((w) => w !== "");
  if (parts.length === 0) return {};
  if (parts.length === 1) return { given: parts[0]! };
  let start = parts.length - 1;
  while (start > 1 && NAME_PARTICLES.has(foldName(parts[start - 1]!))) start--;
  const middle = parts.slice(1, start);
  return { given: parts[0]!, ...(middle.length ? { middle: middle.join(" ") } : {}), family: parts.slice(start).join(" ") };
}

/**
 * The key a name is matched by: the given name's first word and the family name's last word that is not a particle,
 * folded; null when either is missing or the given name is an initial (one letter).
 */
export function nameKey(parts: NameParts): string | null {
  // A hyphenated given name is one name ("Jean-Pierre" is not "Jean"); a hyphenated family name's last part counts.
  const given = words(parts.given?.replace(/[-\u2010\u2011]/g, ""))[0];
  const family = words(parts.family).filter((w) => !NAME_PARTICLES.has(w));
  const last = family[family.length - 1] ?? words(parts.family).at(-1);
  if (given === undefined || last === undefined || [...given].length < 2) return null;
  return `${given} ${last}`;
}

/** The key of a full name (splitFullName, then nameKey). */
export const fullNameKey = (full: string): string | null => nameKey(splitFullName(full));

/** The key an employer is compared by: folded, without trailing legal forms; null when nothing is left. */
export function employerKey(name: string): string | null {
  const parts = words(name);
  while (parts.length > 1 && LEGAL_FORMS.has(parts[parts.length - 1]!)) parts.pop();
  const key = parts.join(" ");
  return key === "" ? null : key;
}

export const MAX_DOMAIN_LENGTH = 253;

/**
 * A company's domain as stored and compared: lower-case A-labels, without a scheme, path, port, "www." or trailing dot
 * ("https://www.Acme.com/about" is acme.com, "bücher.de" is xn--bcher-kva.de); null when it is not a host name with a
 * dot (an IP address is not a company's domain).
 */
export function normaliseDomain(input: string): string | null {
  let text = input.trim();
  if (text === "" || text.length > 2 * MAX_DOMAIN_LENGTH) return null;
  text = text.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "").replace(/[/?#].*$/s, "").replace(/:[0-9]*$/, "").replace(/\.$/, "");
  if (text.includes("@")) return null;
  const ascii = toASCII(text, { checkHyphens: true, checkBidi: true, checkJoiners: true, useSTD3ASCIIRules: true, verifyDNSLength: true, transitionalProcessing: false });
  if (ascii === null) return null;
  const domain = ascii.toLowerCase().replace(/^www\./, "");
  if (domain.length > MAX_DOMAIN_LENGTH || !domain.includes(".") || /^[0-9.]+$/.test(domain)) return null;
  if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(domain)) return null;
  return domain;
}

/** Control characters, bidi overrides and isolates, and other invisible format characters: refused in names and titles. */
// eslint-disable-next-line no-control-regex
export const FORBIDDEN_TEXT = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u;

/**
 * An employment row's identity within its person (person_employment.entry_key): the employer's key, the folded title
 * and the start as given, joined by NUL; the import keys the rows it stores by it and a merge finds twins by it.
 */
export function employmentEntryKey(job: { employer: string; title?: string | null; start?: string | null }): string {
  return `${employerKey(job.employer) ?? ""}\u0000${foldName(job.title ?? "")}\u0000${job.start ?? ""}`;
}
