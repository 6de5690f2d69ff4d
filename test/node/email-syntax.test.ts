/**
 * Longer than 400 lines on purpose: a table of addresses, one case each.
 * Email syntax (docs/api.md "The checks, in order", step 1): a table of hand-written cases, the shared IDN cases, and properties.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  addressKey,
  domainOf,
  MAX_ADDRESS_OCTETS,
  MAX_DOMAIN_OCTETS,
  MAX_INPUT_LENGTH,
  MAX_LABEL_OCTETS,
  MAX_LOCAL_OCTETS,
  parseEmailAddress,
  SYNTAX_ERRORS as E,
  toAsciiDomain,
  trimAsciiWhitespace as trimmed,
  type SyntaxErrorMessage,
} from "../../shared/email/syntax.ts";
import { idnCases } from "../fixtures/idn-cases.ts";

const octets = (text: string) => Buffer.byteLength(text, "utf8");
const repeat = (text: string, times: number) => text.repeat(times);

/** Three labels of 63, 63 and 61 octets: a 189-octet domain, so a 64-octet local part makes 254. */
const DOMAIN_189 = `${repeat("a", 63)}.${repeat("b", 63)}.${repeat("c", 61)}`;
/** The same 189 octets after conversion, with the first label written as 57 ü (114 octets as written). */
const IDN_DOMAIN_189 = `${repeat("ü", 57)}.${repeat("b", 63)}.${repeat("c", 61)}`;
const DOMAIN_253 = `${repeat("a", 63)}.${repeat("b", 63)}.${repeat("c", 63)}.${repeat("d", 61)}`;

type Accepted = { domain: string; quoted?: boolean; nonAscii?: boolean };

const accepted: [input: string, expected: Accepted][] = [
  // Plain ASCII dot-atoms.
  ["ana@example.com", { domain: "example.com" }],
  ["Ana.Lovelace@Example.COM", { domain: "example.com" }],
  ["a@b.co", { domain: "b.co" }],
  ["user+tag@example.com", { domain: "example.com" }],
  ["first.last@sub.example.co.uk", { domain: "sub.example.co.uk" }],
  ["!#$%&'*+-/=?^_`{|}~@example.com", { domain: "example.com" }],
  ["1234567890@example.com", { domain: "example.com" }],
  ["a.b.c.d@example.com", { domain: "example.com" }],
  ["_@example.com", { domain: "example.com" }],
  ["-@example.com", { domain: "example.com" }],
  ["o'brien@example.ie", { domain: "example.ie" }],
  ["x@123.example.com", { domain: "123.example.com" }],
  ["x@example.c0m", { domain: "example.c0m" }],
  ["x@a-b.example.com", { domain: "a-b.example.com" }],
  // A top-level label that is not all digits is a name, even one the URL standard would read as a number.
  ["x@example.0x", { domain: "example.0x" }],
  ["x@a.b.c.d.e.f.g.h", { domain: "a.b.c.d.e.f.g.h" }],
  ["x@EXAMPLE.MUSEUM", { domain: "example.museum" }],
  ["x@example.xn--p1ai", { domain: "example.xn--p1ai" }],
  // Surrounding ASCII whitespace is trimmed.
  ["  ana@example.com", { domain: "example.com" }],
  ["ana@example.com \t\r\n", { domain: "example.com" }],
  ["\f ana@example.com\n", { domain: "example.com" }],
  // Quoted local parts (RFC 5321): valid, with a warning downstream.
  ['"john doe"@example.com', { domain: "example.com", quoted: true }],
  ['"john.doe"@example.com', { domain: "example.com", quoted: true }],
  ['"a@b"@example.com', { domain: "example.com", quoted: true }],
  ['"a\\"b"@example.com', { domain: "example.com", quoted: true }],
  ['"a\\\\b"@example.com', { domain: "example.com", quoted: true }],
  ['"\\ "@example.com', { domain: "example.com", quoted: true }],
  ['""@example.com', { domain: "example.com", quoted: true }],
  ['" "@example.com', { domain: "example.com", quoted: true }],
  ['"(not a comment)"@example.com', { domain: "example.com", quoted: true }],
  ['"<ana>"@example.com', { domain: "example.com", quoted: true }],
  ['"a..b"@example.com', { domain: "example.com", quoted: true }],
  ['".a."@example.com', { domain: "example.com", quoted: true }],
  ['"[]:;,"@example.com', { domain: "example.com", quoted: true }],
  // Non-ASCII local parts (RFC 6531): letters, marks and digits of any script.
  ["josé@example.com", { domain: "example.com", nonAscii: true }],
  ["müller@example.de", { domain: "example.de", nonAscii: true }],
  ["ÅSA@example.se", { domain: "example.se", nonAscii: true }],
  ["χρήστης@example.gr", { domain: "example.gr", nonAscii: true }],
  ["коля@пример.рф", { domain: "xn--e1afmkfd.xn--p1ai", nonAscii: true }],
  ["δοκιμή@παράδειγμα.δοκιμή", { domain: "xn--hxajbheg2az3al.xn--jxalpdlp", nonAscii: true }],
  ["用户@例子.广告", { domain: "xn--fsqu00a.xn--4rr70v", nonAscii: true }],
  ["ユーザー@例え.jp", { domain: "xn--r8jz45g.jp", nonAscii: true }],
  // RFC 6531 extends qtextSMTP with UTF-8: a quoted local part may hold any non-ASCII character.
  ['"quoted.with.unicode.λ"@example.com', { domain: "example.com", quoted: true, nonAscii: true }],
  ['"math.𝒜"@example.com', { domain: "example.com", quoted: true, nonAscii: true }],
  ['"ané x"@example.com', { domain: "example.com", quoted: true, nonAscii: true }],
  // A combining mark after a base character is part of the letter.
  ["e\u0301@example.com", { domain: "example.com", nonAscii: true }],
  ["मिश्र@example.in", { domain: "example.in", nonAscii: true }],
  ["מישהו@example.com", { domain: "example.com", nonAscii: true }],
  ["مستخدم@example.com", { domain: "example.com", nonAscii: true }],
  ["١٢٣@example.com", { domain: "example.com", nonAscii: true }],
  ["e\u0301@example.com", { domain: "example.com", nonAscii: true }],
  ["Dörte.Sörensen@example.com", { domain: "example.com", nonAscii: true }],
  ["𝒜𝒷@example.com", { domain: "example.com", nonAscii: true }],
  // ASCII local part on an IDN domain.
  ["ana@bücher.de", { domain: "xn--bcher-kva.de" }],
  ["ana@BÜCHER.DE", { domain: "xn--bcher-kva.de" }],
  ["ana@bücher。de", { domain: "xn--bcher-kva.de" }],
  ["ana@ｅｘａｍｐｌｅ．com", { domain: "example.com" }],
  // Length boundaries, at the limit (counted in UTF-8 octets; domains after A-label conversion).
  [`${repeat("a", 64)}@example.com`, { domain: "example.com" }],
  [`${repeat("é", 32)}@example.com`, { domain: "example.com", nonAscii: true }],
  [`a${repeat("é", 31)}a@example.com`, { domain: "example.com", nonAscii: true }],
  [`${repeat("中", 21)}a@example.com`, { domain: "example.com", nonAscii: true }],
  [`${repeat("𝒜", 16)}@example.com`, { domain: "example.com", nonAscii: true }],
  [`"${repeat("a", 62)}"@example.com`, { domain: "example.com", quoted: true }],
  [`x@${repeat("a", 63)}.com`, { domain: `${repeat("a", 63)}.com` }],
  [`x@${repeat("ü", 57)}.de`, { domain: `xn--tda${repeat("a", 56)}.de` }],
  [`${repeat("a", 64)}@${DOMAIN_189}`, { domain: DOMAIN_189 }],
  [`${repeat("é", 32)}@${DOMAIN_189}`, { domain: DOMAIN_189, nonAscii: true }],
  [`${repeat("a", 64)}@${IDN_DOMAIN_189}`, { domain: `xn--tda${repeat("a", 56)}.${repeat("b", 63)}.${repeat("c", 61)}` }],
  // 572 octets as written, 195 once the fullwidth letters are mapped: the A-label form is what counts.
  [`x@${repeat("ａ", 63)}.${repeat("ｂ", 63)}.${repeat("ｃ", 63)}.com`, { domain: `${repeat("a", 63)}.${repeat("b", 63)}.${repeat("c", 63)}.com` }],
];

const refused: [input: string, error: SyntaxErrorMessage][] = [
  // Empty and structure.
  ["", E.empty],
  ["   ", E.empty],
  ["\t\r\n", E.empty],
  ["ana", E.missingAt],
  ["ana.example.com", E.missingAt],
  ['"ana"', E.missingAt],
  ["@", E.emptyLocal],
  ["@example.com", E.emptyLocal],
  ["ana@", E.emptyDomain],
  ["a@b@example.com", E.multipleAt],
  ["a@@example.com", E.multipleAt],
  ['"a"@b@example.com', E.multipleAt],
  // Dots in the local part.
  [".ana@example.com", E.localDots],
  ["ana.@example.com", E.localDots],
  ["a..na@example.com", E.localDots],
  [".@example.com", E.localDots],
  // Characters outside atext and outside the allowed non-ASCII classes.
  ["ana lovelace@example.com", E.localCharacter],
  ["ana,b@example.com", E.localCharacter],
  ["ana;b@example.com", E.localCharacter],
  ["ana:b@example.com", E.localCharacter],
  ["ana[b]@example.com", E.localCharacter],
  ["ana\\b@example.com", E.localCharacter],
  ["a<b@example.com", E.localCharacter],
  ["ana\u00a0@example.com", E.localCharacter],
  ["ana\u3000@example.com", E.localCharacter],
  ["ana\u200b@example.com", E.localCharacter],
  ["ana\u202e@example.com", E.localCharacter],
  ["ana☺@example.com", E.localCharacter],
  ["ana😀@example.com", E.localCharacter],
  ["ana€@example.com", E.localCharacter],
  // Quoted strings: no mixing, closed, printable ASCII only.
  ['"ana"lovelace@example.com', E.mixedQuoting],
  ['ana"lovelace"@example.com', E.mixedQuoting],
  ['"a".b@example.com', E.mixedQuoting],
  ['a."b"@example.com', E.mixedQuoting],
  ['"a" @example.com', E.mixedQuoting],
  ['"ana@example.com', E.quotedUnterminated],
  ['"ana\\"@example.com', E.quotedUnterminated],
  ['"ana\\', E.quotedUnterminated],
  // A backslash still escapes printable ASCII only (RFC 6531 leaves quoted-pairSMTP as it was).
  ['"a\\é"@example.com', E.quotedCharacter],
  // A lone surrogate is no character at all (UTF-8 cannot carry it); a pair is one (𝒜 is U+1D49C).
  ['"\ud800"@example.com', E.quotedCharacter],
  ['"a\udc00b"@example.com', E.quotedCharacter],
  ['"a\ud835"@example.com', E.quotedCharacter],
  ['"a\u007fb"@example.com', E.controlCharacter],
  // A combining mark with nothing before it to combine with.
  ["\u0300@example.com", E.localCombiningMark],
  ["\u0301ana@example.com", E.localCombiningMark],
  ["ana.\u0301b@example.com", E.localCombiningMark],
  // Characters UTS 46 would map away: refused, not checked as another domain than the one echoed.
  ["test@exa\u200bmple.com", E.domainInvisible],
  ["test@exa\u00admple.com", E.domainInvisible],
  ["test@example.com\ufeff", E.domainInvisible],
  ["test@exa\u2060mple.com", E.domainInvisible],
  ['"a"b"@example.com', E.mixedQuoting],
  // Comments and display names.
  ["ana(work)@example.com", E.comment],
  ["(work)ana@example.com", E.comment],
  ["ana@(work)example.com", E.comment],
  ["ana@example.com(work)", E.comment],
  ["ana@example.com (work)", E.comment],
  ["Ana <ana@example.com>", E.displayName],
  ["<ana@example.com>", E.displayName],
  ['"Ana Lovelace" <ana@example.com>', E.displayName],
  ["Ana<ana@example.com>", E.displayName],
  // Control characters anywhere, including inside quotes; VT is not ASCII whitespace, so not trimmed.
  ["ana\u0000@example.com", E.controlCharacter],
  ["ana\t@example.com", E.controlCharacter],
  ["ana@exam\nple.com", E.controlCharacter],
  ["ana\u007f@example.com", E.controlCharacter],
  ["ana\u0085@example.com", E.controlCharacter],
  ['"a\u0001"@example.com', E.controlCharacter],
  ["\u000bana@example.com", E.controlCharacter],
  ["ana@example.com\u0000", E.controlCharacter],
  // Address literals.
  ["ana@[192.0.2.1]", E.addressLiteral],
  ["ana@[IPv6:2001:db8::1]", E.addressLiteral],
  ["ana@[example.com]", E.addressLiteral],
  // Host names.
  ["ana@example", E.singleLabel],
  ["ana@localhost", E.singleLabel],
  ["ana@example.com.", E.domainTrailingDot],
  ["ana@example.com。", E.domainTrailingDot],
  ["ana@example..com", E.emptyLabel],
  ["ana@.example.com", E.emptyLabel],
  ["ana@-example.com", E.labelHyphen],
  ["ana@example-.com", E.labelHyphen],
  ["ana@example.-com", E.labelHyphen],
  ["ana@exa_mple.com", E.domainCharacter],
  ["ana@exa mple.com", E.domainCharacter],
  ["ana@example.com:25", E.domainCharacter],
  ["ana@example.com/path", E.domainCharacter],
  ["ana@example.com?x", E.domainCharacter],
  ["ana@example.com#x", E.domainCharacter],
  ["ana@ex%61mple.com", E.domainCharacter],
  ["ana@example.com\\", E.domainCharacter],
  // Fullwidth low line maps to "_", which IDNA2008 (STD3 rules) does not allow in a host name.
  ["ana@＿.com", E.invalidIdn],
  ["ana@example.123", E.numericTld],
  ["ana@192.168.0.1", E.numericTld],
  ["ana@0x7f.1", E.numericTld],
  // "--" in the third and fourth positions is reserved for A-labels (RFC 5891 §4.2.3.1, UTS 46 CheckHyphens).
  ["x@ab--cd.example", E.invalidDomain],
  ["ana@xn--zz.com", E.invalidIdn],
  ["ana@a\u200db.com", E.invalidIdn],
  ["ana@exa\u00a0mple.com", E.invalidIdn],
  ["ana@xn--abc-.com", E.labelHyphen],
  ["ana@xn--a.com", E.invalidIdn],
  ["ana@xn--x-dcp.com", E.invalidIdn],
  // Length boundaries, one octet over.
  [`${repeat("a", 65)}@example.com`, E.localTooLong],
  [`${repeat("é", 32)}a@example.com`, E.localTooLong],
  [`a${repeat("é", 32)}@example.com`, E.localTooLong],
  [`${repeat("中", 21)}ab@example.com`, E.localTooLong],
  [`${repeat("中", 22)}@example.com`, E.localTooLong],
  [`${repeat("𝒜", 16)}a@example.com`, E.localTooLong],
  [`"${repeat("a", 63)}"@example.com`, E.localTooLong],
  [`x@${repeat("a", 64)}.com`, E.labelTooLong],
  [`x@${repeat("ü", 58)}.de`, E.labelTooLong],
  [`x@${DOMAIN_253}d`, E.domainTooLong],
  // A 253-octet domain is legal on its own but leaves no room for a local part within 254.
  [`x@${DOMAIN_253}`, E.tooLong],
  [`${repeat("a", 64)}@${DOMAIN_189}d`, E.tooLong],
  [`${repeat("é", 32)}@${DOMAIN_189}d`, E.tooLong],
  [`${repeat("a", 64)}@${IDN_DOMAIN_189}c`, E.tooLong],
  [`${repeat("a", MAX_INPUT_LENGTH)}@example.com`, E.tooLong],
];

describe("accepted addresses", () => {
  it.each(accepted)("%s", (input, expected) => {
    const parsed = parseEmailAddress(input);
    expect(parsed).toMatchObject({
      ok: true,
      email: trimAsciiWhitespace(input),
      domain: expected.domain,
      quotedLocal: expected.quoted ?? false,
      nonAsciiLocal: expected.nonAscii ?? false,
    });
  });
});

describe("refused addresses", () => {
  it.each(refused)("%s", (input, error) => {
    expect(parseEmailAddress(input)).toEqual({ ok: false, email: trimAsciiWhitespace(input), error });
  });
});

describe("the boundary cases are what they claim", () => {
  it("counts octets, not characters", () => {
    expect(octets(repeat("é", 32))).toBe(MAX_LOCAL_OCTETS);
    expect(octets(`${repeat("中", 21)}a`)).toBe(MAX_LOCAL_OCTETS);
    expect(repeat("中", 22).length).toBeLessThan(MAX_LOCAL_OCTETS);
    expect(octets(repeat("𝒜", 16))).toBe(MAX_LOCAL_OCTETS);
    expect(DOMAIN_189.length + 1 + MAX_LOCAL_OCTETS).toBe(MAX_ADDRESS_OCTETS);
    expect(DOMAIN_253.length).toBe(MAX_DOMAIN_OCTETS);
    expect(toAsciiDomain(`${repeat("ü", 57)}.de`)!.split(".")[0]).toHaveLength(MAX_LABEL_OCTETS);
    expect(octets(repeat("ü", 57))).toBeGreaterThan(MAX_LABEL_OCTETS);
  });

  it("a 253-octet domain is a valid host name; 254 is not", () => {
    expect(toAsciiDomain(DOMAIN_253)).toBe(DOMAIN_253);
    expect(toAsciiDomain(`${DOMAIN_253}d`)).toBeNull();
  });
});

describe("result fields", () => {
  it("keeps the local part and the domain as written beside the A-label form", () => {
    expect(parseEmailAddress(' "Ana B"@Bücher.DE ')).toEqual({
      ok: true,
      email: '"Ana B"@Bücher.DE',
      local: '"Ana B"',
      domain: "xn--bcher-kva.de",
      domainAsWritten: "Bücher.DE",
      quotedLocal: true,
      nonAsciiLocal: false,
    });
  });

  it("error sentences are distinct", () => {
    const sentences = Object.values(E);
    expect(new Set(sentences).size).toBe(sentences.length);
    for (const sentence of sentences) expect(sentence).toMatch(/^[A-Z].*\.$/);
  });
});

describe("the address helpers every part shares", () => {
  it("addressKey: the local part as written and the A-label domain; domainOf: after the last @, lower-cased", () => {
    const parsed = parseEmailAddress(' "a@b"@Bücher.DE ');
    expect(parsed.ok && addressKey(parsed)).toBe('"a@b"@xn--bcher-kva.de');
    expect(domainOf('"a@b"@Example.ORG')).toBe("example.org");
    expect(domainOf("ana@xn--bcher-kva.de")).toBe("xn--bcher-kva.de");
  });

  it("trimAsciiWhitespace trims TAB, LF, FF, CR and SPACE only, as the syntax check does", () => {
    expect(trimmed("\t\n\f\r ana@example.org \r\n")).toBe("ana@example.org");
    expect(trimmed("\vana@example.org\u00a0")).toBe("\vana@example.org\u00a0");
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(" ", "\t", "\v", "a", "@", "\u00a0") }), (text) => trimmed(text) === trimAsciiWhitespace(text)));
  });
});

describe("IDN conversion (the cases workerd runs too)", () => {
  it.each(idnCases)("%s -> %s", (address, expected) => {
    const parsed = parseEmailAddress(address);
    expect(parsed.ok ? parsed.domain : null).toBe(expected);
    expect(toAsciiDomain(address.slice(address.lastIndexOf("@") + 1))).toBe(expected);
  });
});

function trimAsciiWhitespace(text: string): string {
  return text.replace(/^[\t\n\f\r ]+/, "").replace(/[\t\n\f\r ]+$/, "");
}

/** Independent statement of every length and character rule, checked on whatever the parser accepts. */
function expectObeysEveryRule(input: string): void {
  const parsed = parseEmailAddress(input);
  if (!parsed.ok) return;
  const { email, local, domain, domainAsWritten } = parsed;
  expect(email).toBe(trimAsciiWhitespace(input));
  expect(email).toBe(`${local}@${domainAsWritten}`);
  expect(email).not.toMatch(/\p{Cc}/u);
  expect(octets(local)).toBeLessThanOrEqual(MAX_LOCAL_OCTETS);
  if (parsed.quotedLocal) {
    // RFC 6531: qtext also takes any non-ASCII character, well-formed (UTF-8 has no lone surrogates).
    expect(local).toMatch(/^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e]|[^\x00-\x7f])*"$/u);
    expect(local).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  } else {
    expect(local).toMatch(/^[\w!#$%&'*+\-/=?^`{|}~\p{L}\p{M}\p{N}]+(?:\.[\w!#$%&'*+\-/=?^`{|}~\p{L}\p{M}\p{N}]+)*$/u);
  }
  expect(parsed.nonAsciiLocal).toBe(/[^\x00-\x7f]/.test(local));
  expect(domain.length).toBeLessThanOrEqual(MAX_DOMAIN_OCTETS);
  const labels = domain.split(".");
  expect(labels.length).toBeGreaterThanOrEqual(2);
  for (const label of labels) expect(label).toMatch(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/);
  expect(labels.at(-1)).not.toMatch(/^[0-9]+$/);
  expect(octets(local) + 1 + domain.length).toBeLessThanOrEqual(MAX_ADDRESS_OCTETS);
  expect(toAsciiDomain(domainAsWritten)).toBe(domain);
}

/** Pieces that sit near every rule: dots, quotes, escapes, @, multi-byte letters, symbols, controls, IDN dots. */
const tricky = fc.constantFrom(
  "a", "Z", "0", ".", "..", '"', "\\", "@", "-", "_", "+", " ", "\t", "(", ")", "<", ">", "[", "]", "%", ":", "/",
  "é", "ü", "中", "𝒜", "ß", "ς", "😀", "\u0301", "\u200d", "\u00ad", "\u0000", "\u007f", "\u0085", "。", "．", "ｅ",
  "xn--", "xn--bcher-kva", "com", "1", "0x", "\ud800",
);
const trickyText = (maxLength: number) => fc.array(tricky, { maxLength }).map((parts) => parts.join(""));
const label = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,70}[a-z0-9])?$/) },
  { weight: 2, arbitrary: fc.array(fc.constantFrom("a", "ü", "中", "-", "ｅ"), { minLength: 1, maxLength: 70 }).map((parts) => parts.join("")) },
  { weight: 1, arbitrary: trickyText(6) },
);
const addressLike = fc
  .tuple(
    fc.oneof(
      { weight: 3, arbitrary: fc.stringMatching(/^[a-zA-Z0-9!#$%&'*+\-/=?^_`{|}~]{1,70}(\.[a-z0-9é中]{1,30}){0,2}$/) },
      { weight: 1, arbitrary: trickyText(12) },
    ),
    fc.array(label, { minLength: 1, maxLength: 5 }).map((labels) => labels.join(".")),
    fc.constantFrom("@", "@", "@", "@", "@", "", "@@", '"@'),
    fc.constantFrom("", "", "", " ", "\n", "\u000b"),
  )
  .map(([local, domain, at, padding]) => `${padding}${local}${at}${domain}${padding}`);

describe("properties", () => {
  it("never throws, on any string at all", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 400 }), (input) => {
        parseEmailAddress(input);
        toAsciiDomain(input);
      }),
      { numRuns: 2000 },
    );
  });

  it("never accepts an address that breaks a length or character rule", () => {
    fc.assert(fc.property(addressLike, expectObeysEveryRule), { numRuns: 3000 });
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), expectObeysEveryRule), { numRuns: 1000 });
  });

  it("the address generator really produces accepted addresses, so the property above is not vacuous", () => {
    const sample = fc.sample(addressLike, { numRuns: 2000, seed: 42 });
    const acceptedCount = sample.filter((input) => parseEmailAddress(input).ok).length;
    // About 4% of generated plain labels have "--" in the third and fourth positions (reserved), so
    // roughly one domain in eight is refused for that alone; 150 of 2000 is still far from vacuous.
    expect(acceptedCount).toBeGreaterThan(150);
  });

  it("accepts every RFC-shaped address fast-check generates, unless it is over a length limit", () => {
    // RFC 1123 host names may have "--" in a label's third and fourth positions; IDNA2008 reserves
    // those labels (CheckHyphens), so they are refused on purpose and left out here.
    const reservedLabel = /[@.][^.@]{2}--[^@]*$/;
    fc.assert(
      fc.property(fc.emailAddress().filter((address) => !reservedLabel.test(address)), (address) => {
        const parsed = parseEmailAddress(address);
        if (!parsed.ok) expect([E.tooLong, E.localTooLong, E.domainTooLong]).toContain(parsed.error);
      }),
      { numRuns: 2000 },
    );
  });

  it("rejects anything longer than the input bound before parsing it", () => {
    fc.assert(
      fc.property(fc.string({ minLength: MAX_INPUT_LENGTH + 1, maxLength: MAX_INPUT_LENGTH + 50 }), (tail) => {
        const parsed = parseEmailAddress(`a${tail}`);
        if (trimAsciiWhitespace(`a${tail}`).length > MAX_INPUT_LENGTH) expect(parsed).toMatchObject({ ok: false, error: E.tooLong });
      }),
      { numRuns: 50 },
    );
  });
});
