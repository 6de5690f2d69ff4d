/**
 * Typo suggestions (docs/api.md "The checks, in order", step 3): `ana@gmial.com` -> `ana@gmail.com`. Pure, no DNS.
 *
 * A wrong suggestion is worse than none, so the rules are deliberately narrow:
 * - Only corrections *to* a curated popular provider domain are made (plus a few top-level domains
 *   that cannot exist, such as `.con`).
 * - A domain that is itself a real provider is never corrected: the curated list, and every domain of
 *   the free-provider list that is not also on the disposable list, except the known misspellings that list
 *   carries (known-misspellings.ts: yaho.com, hitmail.com, ...), which are corrected to the domain each
 *   misspells. They are data, not a rule: a rule would also "correct" real ones such as earthling.net and
 *   y7mail.com.
 * - At most one edit in the name and two in all: one typing slip in the name, one in the suffix.
 * - The first letter must match (or the first two be swapped): icloud.com must not swallow
 *   cloud.com, nor gmail.com swallow email.com or ymail.com.
 * - Names shorter than five letters (aol, msn, gmx, qq) and names that are ordinary words (orange,
 *   alice, charter) are only corrected in the suffix: one edit in them already reaches real
 *   companies (aon.com, gol.com, charted.net).
 * - A two-letter top-level domain other than the provider's own is taken as another country's
 *   domain, not a typo (hotmail.ch and outlook.cl are real), except after a provider that has a
 *   single worldwide domain (gmail.co -> gmail.com).
 * - When two corrections are equally close, none is made.
 */
import { KNOWN_MISSPELLINGS } from "./known-misspellings.ts";
import { isDisposableDomain, isFreeProviderDomain } from "./lists.ts";

type ProviderFamily = {
  /** The registrable label, e.g. "yahoo". */
  name: string;
  /** Its mail domains' suffixes, most used first, e.g. ["com", "co.uk", "fr"]. */
  suffixes: readonly string[];
  /** One worldwide domain: a country code typed after the name is a typo, not a local variant. */
  worldwide?: boolean;
  /** An ordinary word, so a one-letter change is likely another real name: only the suffix is corrected. */
  wordName?: boolean;
};

/** Popular consumer mail providers worldwide, roughly by user count. Every domain here is real. */
const PROVIDER_FAMILIES: readonly ProviderFamily[] = [
  { name: "gmail", suffixes: ["com"], worldwide: true },
  { name: "yahoo", suffixes: ["com", "co.uk", "fr", "de", "it", "es", "ca", "com.br", "co.in", "co.jp", "com.au", "com.mx", "com.ar", "in"] },
  { name: "hotmail", suffixes: ["com", "co.uk", "fr", "de", "it", "es", "ca", "com.br", "com.ar", "nl", "be"] },
  { name: "outlook", suffixes: ["com", "fr", "de", "es", "it", "jp", "com.br"] },
  { name: "icloud", suffixes: ["com"], worldwide: true },
  { name: "live", suffixes: ["com", "co.uk", "fr", "de", "it", "nl", "ca", "com.au"] },
  { name: "aol", suffixes: ["com", "co.uk", "fr", "de"] },
  { name: "msn", suffixes: ["com"] },
  { name: "googlemail", suffixes: ["com"], worldwide: true },
  { name: "protonmail", suffixes: ["com", "ch"] },
  { name: "proton", suffixes: ["me"], wordName: true },
  { name: "pm", suffixes: ["me"] },
  { name: "me", suffixes: ["com"] },
  { name: "mac", suffixes: ["com"] },
  { name: "ymail", suffixes: ["com"], worldwide: true },
  { name: "rocketmail", suffixes: ["com"], worldwide: true },
  { name: "aim", suffixes: ["com"] },
  { name: "mail", suffixes: ["com", "ru"] },
  { name: "email", suffixes: ["com"], wordName: true },
  { name: "gmx", suffixes: ["com", "de", "net", "at", "ch", "fr"] },
  { name: "web", suffixes: ["de"] },
  { name: "t-online", suffixes: ["de"] },
  { name: "freenet", suffixes: ["de"] },
  { name: "arcor", suffixes: ["de"] },
  { name: "posteo", suffixes: ["de"] },
  { name: "mailbox", suffixes: ["org"], wordName: true },
  { name: "yandex", suffixes: ["ru", "com"] },
  { name: "ya", suffixes: ["ru"] },
  { name: "bk", suffixes: ["ru"] },
  { name: "inbox", suffixes: ["ru"], wordName: true },
  { name: "list", suffixes: ["ru"] },
  { name: "rambler", suffixes: ["ru"], wordName: true },
  { name: "zoho", suffixes: ["com"] },
  { name: "zohomail", suffixes: ["com"] },
  { name: "fastmail", suffixes: ["com"], worldwide: true },
  { name: "tutanota", suffixes: ["com", "de"] },
  { name: "tuta", suffixes: ["io"] },
  { name: "hey", suffixes: ["com"] },
  { name: "qq", suffixes: ["com"] },
  { name: "163", suffixes: ["com"] },
  { name: "126", suffixes: ["com"] },
  { name: "sina", suffixes: ["com"] },
  { name: "sohu", suffixes: ["com"] },
  { name: "yeah", suffixes: ["net"] },
  { name: "aliyun", suffixes: ["com"] },
  { name: "naver", suffixes: ["com"] },
  { name: "daum", suffixes: ["net"] },
  { name: "hanmail", suffixes: ["net"] },
  { name: "orange", suffixes: ["fr"], wordName: true },
  { name: "wanadoo", suffixes: ["fr"] },
  { name: "free", suffixes: ["fr"] },
  { name: "sfr", suffixes: ["fr"] },
  { name: "laposte", suffixes: ["net"], wordName: true },
  { name: "neuf", suffixes: ["fr"] },
  { name: "libero", suffixes: ["it"], wordName: true },
  { name: "virgilio", suffixes: ["it"] },
  { name: "tiscali", suffixes: ["it"] },
  { name: "alice", suffixes: ["it"], wordName: true },
  { name: "btinternet", suffixes: ["com"] },
  { name: "sky", suffixes: ["com"] },
  { name: "virginmedia", suffixes: ["com"] },
  { name: "talktalk", suffixes: ["net"] },
  { name: "ntlworld", suffixes: ["com"] },
  { name: "comcast", suffixes: ["net"] },
  { name: "verizon", suffixes: ["net"] },
  { name: "att", suffixes: ["net"] },
  { name: "sbcglobal", suffixes: ["net"] },
  { name: "bellsouth", suffixes: ["net"] },
  { name: "cox", suffixes: ["net"] },
  { name: "charter", suffixes: ["net"], wordName: true },
  { name: "earthlink", suffixes: ["net"] },
  { name: "optonline", suffixes: ["net"] },
  { name: "frontier", suffixes: ["com"], wordName: true },
  { name: "juno", suffixes: ["com"] },
  { name: "netzero", suffixes: ["net"] },
  { name: "shaw", suffixes: ["ca"] },
  { name: "rogers", suffixes: ["com"], wordName: true },
  { name: "sympatico", suffixes: ["ca"] },
  { name: "telus", suffixes: ["net"] },
  { name: "videotron", suffixes: ["ca"] },
  { name: "bigpond", suffixes: ["com"] },
  { name: "optusnet", suffixes: ["com.au"] },
  { name: "xtra", suffixes: ["co.nz"] },
  { name: "uol", suffixes: ["com.br"] },
  { name: "bol", suffixes: ["com.br"] },
  { name: "terra", suffixes: ["com.br"], wordName: true },
  { name: "wp", suffixes: ["pl"] },
  { name: "o2", suffixes: ["pl"] },
  { name: "onet", suffixes: ["pl"] },
  { name: "interia", suffixes: ["pl"] },
  { name: "seznam", suffixes: ["cz"], wordName: true },
  { name: "rediffmail", suffixes: ["com"], worldwide: true },
];

/** Every curated provider domain (gmail.com, yahoo.co.uk, ...), for tests and the real-domain guard. */
export const POPULAR_PROVIDER_DOMAINS: readonly string[] = PROVIDER_FAMILIES.flatMap((family) =>
  family.suffixes.map((suffix) => `${family.name}.${suffix}`),
);

/** Top-level domains that do not exist and are one slip from .com, .net or .org. */
const IMPOSSIBLE_TLD_FIXES: ReadonlyMap<string, string> = new Map([
  ...["con", "cmo", "ocm", "comm", "coom", "cpm", "copm", "vom", "xom", "clm", "cim", "cok"].map((tld) => [tld, "com"] as const),
  ...["nte", "ent", "nett", "ney", "nwt"].map((tld) => [tld, "net"] as const),
  ...["ogr", "orgg", "prg", "rog"].map((tld) => [tld, "org"] as const),
]);

const curatedDomains = new Set(POPULAR_PROVIDER_DOMAINS);

const knownMisspellings: ReadonlyMap<string, string> = new Map(KNOWN_MISSPELLINGS.map((m) => [m.domain, m.intended]));

/** The free list also carries disposable domains, some of them typo-squats such as gmial.com, and a few misspellings. */
function isRealProvider(domain: string): boolean {
  return curatedDomains.has(domain) || (isFreeProviderDomain(domain) && !isDisposableDomain(domain) && !knownMisspellings.has(domain));
}

/** Names shorter than this are only corrected in the suffix. */
const MIN_NAME_LENGTH_FOR_NAME_EDITS = 5;
const MAX_NAME_EDITS = 1;
const MAX_TOTAL_EDITS = 2;

/** Scratch rows for typoDistance, reused across calls: the checks run synchronously, one at a time. */
const ROW_CAPACITY = 256;
let rowBeforePrevious = new Int32Array(ROW_CAPACITY);
let previousRow = new Int32Array(ROW_CAPACITY);
let currentRow = new Int32Array(ROW_CAPACITY);

/**
 * Optimal string alignment distance (Levenshtein plus adjacent transpositions, the commonest typing
 * slip), or `limit + 1` as soon as the distance is known to exceed `limit`.
 */
export function typoDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  if (b.length >= ROW_CAPACITY) return a === b ? 0 : limit + 1;
  for (let j = 0; j <= b.length; j++) previousRow[j] = j;
  for (let i = 1; i <= a.length; i++) {
    currentRow[0] = i;
    let rowMinimum = i;
    for (let j = 1; j <= b.length; j++) {
      const substitution = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let cost = Math.min(previousRow[j]! + 1, currentRow[j - 1]! + 1, previousRow[j - 1]! + substitution);
      if (i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1)) {
        cost = Math.min(cost, rowBeforePrevious[j - 2]! + 1);
      }
      currentRow[j] = cost;
      if (cost < rowMinimum) rowMinimum = cost;
    }
    if (rowMinimum > limit) return limit + 1;
    [rowBeforePrevious, previousRow, currentRow] = [previousRow, currentRow, rowBeforePrevious];
  }
  return Math.min(previousRow[b.length]!, limit + 1);
}

function topLevelLabel(domain: string): string {
  return domain.slice(domain.lastIndexOf(".") + 1);
}

function sameStart(typed: string, intended: string): boolean {
  if (typed[0] === intended[0]) return true;
  return typed[0] === intended[1] && typed[1] === intended[0];
}

/** Edits needed to turn the typed name into the family's, or null when the name rules forbid it. */
function nameEditsFor(family: ProviderFamily, typedName: string): number | null {
  if (typedName === family.name) return 0;
  if (family.wordName || family.name.length < MIN_NAME_LENGTH_FOR_NAME_EDITS) return null;
  if (!sameStart(typedName, family.name)) return null;
  const edits = typoDistance(typedName, family.name, MAX_NAME_EDITS);
  return edits > MAX_NAME_EDITS ? null : edits;
}

/** The one closest curated provider domain, or null when none is close enough or two are equally close. */
function closestProviderDomain(typedName: string, typedSuffix: string): string | null {
  const typedTld = topLevelLabel(typedSuffix);
  let best: string | null = null;
  let bestEdits = MAX_TOTAL_EDITS + 1;
  let tied = false;
  for (const family of PROVIDER_FAMILIES) {
    const nameEdits = nameEditsFor(family, typedName);
    if (nameEdits === null) continue;
    for (const suffix of family.suffixes) {
      if (typedTld.length === 2 && typedTld !== topLevelLabel(suffix) && !family.worldwide) continue;
      const edits = nameEdits + typoDistance(typedSuffix, suffix, MAX_TOTAL_EDITS - nameEdits);
      if (edits < bestEdits) {
        best = `${family.name}.${suffix}`;
        bestEdits = edits;
        tied = false;
      } else if (edits === bestEdits) {
        tied = true;
      }
    }
  }
  return tied ? null : best;
}

/**
 * The whole corrected address when `domainAscii` (lower-case A-label form, from parseEmailAddress)
 * looks like a misspelling of a popular provider domain, else null.
 */
export function suggestTypo(local: string, domainAscii: string): string | null {
  const domain = domainAscii.toLowerCase();
  const known = knownMisspellings.get(domain);
  if (known !== undefined) return `${local}@${known}`;
  if (isRealProvider(domain)) return null;
  const firstDot = domain.indexOf(".");
  if (firstDot <= 0) return null;

  const provider = closestProviderDomain(domain.slice(0, firstDot), domain.slice(firstDot + 1));
  if (provider !== null) return `${local}@${provider}`;

  const typedTld = topLevelLabel(domain);
  const fixedTld = IMPOSSIBLE_TLD_FIXES.get(typedTld);
  if (fixedTld !== undefined) return `${local}@${domain.slice(0, domain.length - typedTld.length)}${fixedTld}`;
  return null;
}
