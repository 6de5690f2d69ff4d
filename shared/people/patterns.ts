/**
 * A domain's address patterns (docs/api.md "GET /v1/email_finder"): how the local part of a work address is made from
 * a person's name ("{first}.{last}" makes ana.lopez from Ana López), learned from the name and address pairs we hold at
 * the domain and applied to a name to find. Pure and I/O-free: the Worker's finder and domain search, the console and
 * the benches import it.
 *
 * Names are folded as the lookups fold them (shared/people/names.ts foldName: accents dropped from Latin letters, ß ss,
 * lower case), so "José Núñez" is jose and nunez here. A family name of several words counts every way: "van der Berg"
 * is vanderberg (joined), van.der.berg or van_der_berg (kept with the pattern's separator), van-der-berg (hyphenated)
 * or berg (particles dropped), Smith-Jones smithjones or smith-jones; a hyphenated given name is jeanluc, jean-luc or
 * jean. Learning recognises every form, also through an initial ({first}.{l} makes andrew.r of Andrew Le Roux with the
 * particles dropped); applying uses the forms the domain's own addresses use most (joined when none of them says).
 * Nothing is transliterated between scripts: a name in another script makes no candidates.
 */
import { foldName, NAME_PARTICLES, splitFullName, type NameParts } from "./names.ts";

/** The patterns we know, most common first in the world at large (PRIOR_SHARES). */
export const PATTERNS = [
  "{first}.{last}",
  "{f}{last}",
  "{first}",
  "{first}{last}",
  "{first}_{last}",
  "{f}.{last}",
  "{last}.{first}",
  "{first}.{l}",
  "{first}{l}",
  "{last}{f}",
  "{last}",
  "{first}-{last}",
  "{last}{first}",
  "{last}_{first}",
  "{f}{l}",
] as const;
export type Pattern = (typeof PATTERNS)[number];

/**
 * What a pattern is worth before any evidence at the domain: roughly the shares published for business domains
 * (first.last about half; flast, first and firstlast next). Used only to order candidates at a domain we know no
 * address at; an answer made from the prior alone is never graded above "low" without the receiver's word.
 */
export const PRIOR_SHARES: Readonly<Record<Pattern, number>> = {
  "{first}.{last}": 0.45,
  "{f}{last}": 0.15,
  "{first}": 0.1,
  "{first}{last}": 0.08,
  "{first}_{last}": 0.04,
  "{f}.{last}": 0.04,
  "{last}.{first}": 0.03,
  "{first}.{l}": 0.02,
  "{first}{l}": 0.02,
  "{last}{f}": 0.02,
  "{last}": 0.01,
  "{first}-{last}": 0.01,
  "{last}{first}": 0.01,
  "{last}_{first}": 0.01,
  "{f}{l}": 0.01,
};

/**
 * How a name of several words appears in the local part. A family name: its words joined (vanderberg, smithjones), kept
 * with the pattern's separator (van.der.berg), hyphenated (van-der-berg, smith-jones), or its particles dropped (berg).
 * A given name of several words (a hyphenated one): joined (jeanluc), hyphenated (jean-luc), or its first word (jean).
 */
export const PARTICLE_STYLES = ["joined", "separated", "hyphenated", "dropped"] as const;
export type ParticleStyle = (typeof PARTICLE_STYLES)[number];
export const GIVEN_STYLES = ["joined", "hyphenated", "first"] as const;
export type GivenStyle = (typeof GIVEN_STYLES)[number];

/** The folded words of a name's given and family parts; null when either is missing or has letters outside a-z0-9. */
export type NameTokens = { given: string[]; family: string[] };

const ASCII_WORD = /^[a-z0-9]+$/;

/** A name's tokens for patterns: the given name's words and the family name's words (particles included), folded; null when unusable. */
export function nameTokens(parts: NameParts): NameTokens | null {
  const given = (parts.given === undefined ? [] : foldName(parts.given.replace(/[-\u2010\u2011]/g, " ")).split(" ")).filter((w) => w !== "");
  const family = (parts.family === undefined ? [] : foldName(parts.family).split(" ")).filter((w) => w !== "");
  if (given.length === 0 || family.length === 0) return null;
  if (![...given, ...family].every((w) => ASCII_WORD.test(w))) return null;
  if (given.join("").length < 2) return null;
  return { given, family };
}

/** The tokens of a full name (splitFullName as the lookups split it). */
export const fullNameTokens = (full: string): NameTokens | null => nameTokens(splitFullName(full));

/** The family name as one pattern's local part spells it, in each style. */
function familyForms(family: string[], separator: string): Record<ParticleStyle, string> {
  const core = family.filter((w, i) => i === family.length - 1 || !NAME_PARTICLES.has(w));
  return { joined: family.join(""), separated: family.join(separator || ""), hyphenated: family.join("-"), dropped: core.join("") };
}

/** The given name in each style. */
const givenForms = (given: string[]): Record<GivenStyle, string> => ({ joined: given.join(""), hyphenated: given.join("-"), first: given[0]! });

/** The separator a pattern puts between its parts ("" for none). */
const separatorOf = (pattern: Pattern): string => /\}([._-])\{/.exec(pattern)?.[1] ?? "";

function render(pattern: Pattern, first: string, last: string): string {
  return pattern.replace("{first}", first).replace("{last}", last).replace("{f}", first[0]!).replace("{l}", last[0]!);
}

/** The styles a domain's addresses spell names of several words in (null: no evidence; applying uses "joined"). */
export type NameStyles = { family: ParticleStyle | null; given: GivenStyle | null };

/** The local part `pattern` makes from these tokens, in the styles given (joined where not given). */
export function applyPattern(pattern: Pattern, tokens: NameTokens, style: ParticleStyle | NameStyles = "joined"): string {
  const styles: NameStyles = typeof style === "string" ? { family: style, given: null } : style;
  const last = familyForms(tokens.family, separatorOf(pattern))[styles.family ?? "joined"];
  return render(pattern, givenForms(tokens.given)[styles.given ?? "joined"], last);
}

/**
 * The local part of an address as patterns compare it: folded (accents dropped, lower case), a "+tag" dropped; null when
 * what is left has characters no pattern makes.
 */
export function patternLocal(local: string): string | null {
  const plain = local.replace(/\+.*$/s, "");
  const folded = plain
    .normalize("NFKD")
    .replace(/(\p{Script=Latin})\p{M}+/gu, "$1")
    .normalize("NFC")
    .toLowerCase();
  return /^[a-z0-9._-]{1,64}$/.test(folded) ? folded : null;
}

/**
 * A pattern a known address follows, with the style its family name and its given name took: null where the name has
 * one word there, or every style spells it alike in this pattern (the address says nothing of the style).
 */
export type PatternMatch = { pattern: Pattern; style: ParticleStyle | null; givenStyle: GivenStyle | null };

/**
 * The patterns a known address's local part follows for this name (every reading: "ana" under {first} and, for Ana
 * Ana, {last}). Empty when it follows none (a nickname, a role account, another person's name).
 */
export function patternsOf(tokens: NameTokens, local: string): PatternMatch[] {
  const folded = patternLocal(local);
  if (folded === null) return [];
  const out: PatternMatch[] = [];
  for (const pattern of PATTERNS) {
    const families = familyForms(tokens.family, separatorOf(pattern));
    const givens = givenForms(tokens.given);
    let match: PatternMatch | null = null;
    const familyRenders = new Set<string>();
    const givenRenders = new Set<string>();
    for (const g of GIVEN_STYLES) {
      for (const f of PARTICLE_STYLES) {
        const spelled = render(pattern, givens[g], families[f]);
        familyRenders.add(render(pattern, givens.joined, families[f]));
        givenRenders.add(render(pattern, givens[g], families.joined));
        if (spelled === folded && match === null) match = { pattern, style: f, givenStyle: g };
      }
    }
    if (match === null) continue;
    out.push({ pattern, style: familyRenders.size > 1 ? match.style : null, givenStyle: givenRenders.size > 1 ? match.givenStyle : null });
  }
  return out;
}

/** A known name and address pair at a domain, with the weight its evidence carries (0: it does not count). */
export type KnownPair = { name: NameParts; local: string; weight: number };

/** A pattern's place at a domain: its share of the pairs that follow a pattern, and how many follow it. */
export type PatternShare = { pattern: Pattern; share: number; count: number };

export type DomainPatterns = {
  /** Patterns by share, highest first; shares sum to 1 over the pairs that follow a pattern. */
  patterns: PatternShare[];
  /** Pairs read (whatever they follow) and pairs that follow a pattern. */
  known: number;
  matched: number;
  /** The styles most of the domain's names of several words take (null: no evidence; apply "joined"). */
  style: ParticleStyle | null;
  givenStyle: GivenStyle | null;
};

/**
 * The patterns of a domain from its known pairs: each pair that follows k patterns counts 1/k to each (times its weight);
 * shares are of the weighted total. Counts are whole pairs.
 */
export function learnPatterns(pairs: readonly KnownPair[]): DomainPatterns {
  const weight = new Map<Pattern, number>();
  const count = new Map<Pattern, number>();
  const styles = new Map<ParticleStyle, number>();
  const givenStyles = new Map<GivenStyle, number>();
  let total = 0;
  let matched = 0;
  for (const pair of pairs) {
    if (pair.weight <= 0) continue;
    const tokens = nameTokens(pair.name);
    if (tokens === null) continue;
    const matches = patternsOf(tokens, pair.local);
    if (matches.length === 0) continue;
    matched++;
    total += pair.weight;
    for (const m of matches) {
      weight.set(m.pattern, (weight.get(m.pattern) ?? 0) + pair.weight / matches.length);
      count.set(m.pattern, (count.get(m.pattern) ?? 0) + 1);
      if (m.style !== null) styles.set(m.style, (styles.get(m.style) ?? 0) + 1 / matches.length);
      if (m.givenStyle !== null) givenStyles.set(m.givenStyle, (givenStyles.get(m.givenStyle) ?? 0) + 1 / matches.length);
    }
  }
  const patterns = [...weight]
    .map(([pattern, w]) => ({ pattern, share: Math.round((w / total) * 1000) / 1000, count: count.get(pattern) ?? 0 }))
    .sort((a, b) => b.share - a.share || b.count - a.count || PATTERNS.indexOf(a.pattern) - PATTERNS.indexOf(b.pattern));
  const style = [...styles].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
  const givenStyle = [...givenStyles].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
  return { patterns, known: pairs.length, matched, style, givenStyle };
}

/** A candidate address's local part for a name at a domain, with the evidence behind it. */
export type Candidate = {
  local: string;
  pattern: Pattern;
  share: number;
  count: number;
  prior: boolean;
  /** The first candidate's pattern in the other way of writing a name of several words, where the domain's addresses do not say which. */
  alternative?: true;
};

/**
 * Candidates for a name in order of how likely they are: the domain's learned patterns by share, or, with none learned,
 * the prior's. Local parts are distinct (two patterns that spell the same address for this name are one candidate, with
 * their shares added).
 */
export function candidatesFor(tokens: NameTokens, learned: DomainPatterns, limit = 3): Candidate[] {
  const prior = learned.patterns.length === 0;
  const ranked: PatternShare[] = prior ? PATTERNS.map((pattern) => ({ pattern, share: PRIOR_SHARES[pattern], count: 0 })) : learned.patterns;
  const style: NameStyles = { family: learned.style, given: learned.givenStyle };
  const byLocal = new Map<string, Candidate>();
  for (const p of ranked) {
    const local = applyPattern(p.pattern, tokens, style);
    const seen = byLocal.get(local);
    if (seen) seen.share = Math.round((seen.share + p.share) * 1000) / 1000;
    else byLocal.set(local, { local, pattern: p.pattern, share: p.share, count: p.count, prior });
  }
  const ranked2 = [...byLocal.values()].sort((a, b) => b.share - a.share);
  // A hyphenated given name, or a family name of several words, where no address at the domain says how such names are
  // written: the top pattern's other spelling (hyphens kept, particles dropped) is as likely, and comes second.
  const top = ranked2[0];
  if (top) {
    const alternativeStyle: NameStyles = {
      family: learned.style ?? (tokens.family.length > 1 ? (tokens.family.slice(0, -1).some((w) => NAME_PARTICLES.has(w)) ? "dropped" : "hyphenated") : null),
      given: learned.givenStyle ?? (tokens.given.length > 1 ? "hyphenated" : null),
    };
    const local = applyPattern(top.pattern, tokens, alternativeStyle);
    if (!byLocal.has(local)) ranked2.splice(1, 0, { local, pattern: top.pattern, share: top.share, count: top.count, prior: top.prior, alternative: true });
  }
  return ranked2.slice(0, limit);
}

/**
 * Whether a second candidate may be tried by SMTP after the first is refused: only when our evidence holds two patterns
 * of similar share (the second at least SIMILAR_SHARE of the first, and learned from at least two pairs), or the second
 * is the first's pattern in the name's other spelling that nothing at the domain rules out; never from the prior
 * alone. Never a third.
 */
export const SIMILAR_SHARE = 0.6;
export function secondWorthProbing(first: Candidate, second: Candidate | undefined): second is Candidate {
  if (second === undefined || second.prior) return false;
  // The same pattern in the other spelling of the name, the domain's addresses silent on which: as likely as the first.
  if (second.alternative) return true;
  return second.count >= 2 && second.share >= first.share * SIMILAR_SHARE;
}
