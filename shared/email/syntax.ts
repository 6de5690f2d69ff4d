/**
 * Email address syntax (docs/api.md "The checks, in order", step 1): what counts as an address mail can be delivered to.
 * Pure and I/O-free; the Worker (workerd) and Node both import it. IDN conversion uses tr46, a UTS 46
 * library bundled with the code, never the runtime's URL parser: its answer depends on the ICU and
 * URL library the runtime ships (Node 20 and 24 disagree on "xn--zz.com"), and a verdict must not
 * change when Cloudflare updates workerd.
 */
import { toASCII } from "tr46";

/** Error sentences users' code matches on: never reword one, add a new one instead. */
export const SYNTAX_ERRORS = {
  tooLong: "The email address is longer than 254 octets.",
  empty: "The email address is empty.",
  controlCharacter: "The email address contains a control character.",
  displayName: "Display names are not accepted; give the bare address.",
  comment: "Comments in parentheses are not accepted.",
  missingAt: "The email address has no @ sign.",
  multipleAt: "The email address has more than one @ sign outside quotes.",
  emptyLocal: "The local part is empty.",
  localTooLong: "The local part is longer than 64 octets.",
  localDots: "The local part starts or ends with a dot or has two dots in a row.",
  localCharacter: "The local part contains a character that is not allowed.",
  localCombiningMark: "The local part, or a part of it between dots, starts with a combining mark.",
  mixedQuoting: "The local part mixes quoted and unquoted text.",
  quotedUnterminated: "The quoted local part has no closing quote.",
  quotedCharacter: "The quoted local part contains a character that is not allowed.",
  emptyDomain: "The domain is empty.",
  addressLiteral: "Address literals such as [192.0.2.1] are not accepted.",
  domainTrailingDot: "The domain ends with a dot.",
  domainCharacter: "The domain contains a character that is not allowed.",
  domainInvisible: "The domain contains an invisible character (such as a soft hyphen or a zero-width space).",
  invalidIdn: "The domain is not a valid internationalized domain name.",
  invalidDomain: "The domain is not a valid host name.",
  domainTooLong: "The domain is longer than 253 octets.",
  emptyLabel: "The domain has an empty label.",
  labelTooLong: "A domain label is longer than 63 octets.",
  labelHyphen: "A domain label starts or ends with a hyphen.",
  singleLabel: "The domain needs at least two labels.",
  numericTld: "The top-level domain is all digits.",
} as const;
export type SyntaxErrorMessage = (typeof SYNTAX_ERRORS)[keyof typeof SYNTAX_ERRORS];

export type ParsedEmailAddress = {
  ok: true;
  /** The input with surrounding ASCII whitespace trimmed (`email` in the result). */
  email: string;
  /** The local part as written, quotes and backslashes included when quoted. */
  local: string;
  /** The domain in lower-case A-label form: what DNS, the lists and the typo check use. */
  domain: string;
  /** The domain as written (may hold U-labels, mixed case, ideographic full stops). */
  domainAsWritten: string;
  quotedLocal: boolean;
  nonAsciiLocal: boolean;
};
export type EmailSyntaxFailure = { ok: false; email: string; error: SyntaxErrorMessage };
export type EmailSyntaxResult = ParsedEmailAddress | EmailSyntaxFailure;

export const MAX_LOCAL_OCTETS = 64;
export const MAX_DOMAIN_OCTETS = 253;
export const MAX_LABEL_OCTETS = 63;
/**
 * RFC 5321 §4.5.3.1.3 allows a 256-octet path, angle brackets included. We count it as
 * UTF-8 octets of the local part + "@" + the A-label domain, because that is the form we send in
 * RCPT TO and look up in DNS: a domain's U-label spelling is longer on the wire than the name the
 * mail system actually routes on, so counting it would reject addresses that work.
 */
export const MAX_ADDRESS_OCTETS = 254;
/**
 * Inputs longer than this (UTF-16 code units, after trimming) are rejected before any parsing. Every
 * code unit is at least one UTF-8 octet, so such an input is over 254 octets as written; the bound
 * keeps regex and IDNA work small for hostile input.
 */
export const MAX_INPUT_LENGTH = 1024;

/** Infra "ASCII whitespace" (TAB, LF, FF, CR, SPACE): the only characters the syntax check trims. */
function isAsciiWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d;
}

/**
 * The text without the ASCII whitespace around it: how an address is trimmed everywhere, from a query parameter to a
 * job's CSV cell (a vertical tab is not whitespace here). An index loop rather than a regex: /\s+$/ can go quadratic
 * on long inner runs of whitespace.
 */
export function trimAsciiWhitespace(input: string): string {
  let start = 0;
  let end = input.length;
  while (start < end && isAsciiWhitespace(input.charCodeAt(start))) start++;
  while (end > start && isAsciiWhitespace(input.charCodeAt(end - 1))) end--;
  return input.slice(start, end);
}

/** UTF-8 length without allocating; a lone surrogate counts as U+FFFD (3 octets), as an encoder would write it. */
function utf8Length(text: string): number {
  let octets = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) octets += 1;
    else if (code < 0x800) octets += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        octets += 4;
        i++;
      } else octets += 3;
    } else octets += 3;
  }
  return octets;
}

const CONTROL_CHARACTER = /\p{Cc}/u;
const NON_ASCII = /[^\x00-\x7f]/;
/** RFC 5321 atext plus non-ASCII letters, marks and digits (RFC 6531 UTF8-non-ascii, narrowed to letters, marks and digits). */
const DOT_ATOM_TEXT = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~.\p{L}\p{M}\p{N}]+$/u;
/** A combining mark with nothing to combine with: at the start of the local part or of one of its dot-separated atoms. */
const LEADING_MARK = /(^|\.)\p{M}/u;
/**
 * Characters UTS 46 maps to nothing (soft hyphen, zero-width space, word joiner, variation selectors,
 * the byte-order mark): "exa\u200Bmple.com" would be checked as example.com while the result echoes
 * what was sent, so such a domain is refused instead. ZWNJ and ZWJ are kept: IDNA2008 allows them in
 * context (CheckJoiners), and they are not mapped away.
 */
const INVISIBLE = /(?![\u200c\u200d])\p{Default_Ignorable_Code_Point}/u;
/** Every ASCII character but letters, digits, hyphen and dot: none of them can be in a host name. */
const NON_LDH_ASCII = /[\x00-\x2c\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]/;
const LDH_LABEL = /^[a-z0-9-]+$/;
const ALL_DIGITS = /^[0-9]+$/;
/** Full stop and the dots UTS 46 maps to it (ideographic, fullwidth, halfwidth ideographic). */
const LABEL_SEPARATORS = /[.\u3002\uff0e\uff61]/;

type Checked<T> = { ok: true; value: T } | { ok: false; error: SyntaxErrorMessage };

/** Validates a domain and converts it to its A-label form; the error says which rule it breaks. */
function checkDomain(domain: string): Checked<string> {
  if (domain === "") return { ok: false, error: SYNTAX_ERRORS.emptyDomain };
  // Bounds the IDNA work when toAsciiDomain is called on its own.
  if (domain.length > MAX_INPUT_LENGTH) return { ok: false, error: SYNTAX_ERRORS.domainTooLong };
  if (domain.startsWith("[")) return { ok: false, error: SYNTAX_ERRORS.addressLiteral };
  if (domain.includes("(") || domain.includes(")")) return { ok: false, error: SYNTAX_ERRORS.comment };
  if (LABEL_SEPARATORS.test(domain.at(-1) ?? "")) return { ok: false, error: SYNTAX_ERRORS.domainTrailingDot };
  if (CONTROL_CHARACTER.test(domain)) return { ok: false, error: SYNTAX_ERRORS.controlCharacter };
  if (INVISIBLE.test(domain)) return { ok: false, error: SYNTAX_ERRORS.domainInvisible };
  // ASCII characters that can never be in a host name get their own message before IDNA sees them.
  if (NON_LDH_ASCII.test(domain)) return { ok: false, error: SYNTAX_ERRORS.domainCharacter };
  const rawLabels = domain.split(LABEL_SEPARATORS);
  if (ALL_DIGITS.test(rawLabels.at(-1) ?? "")) return { ok: false, error: SYNTAX_ERRORS.numericTld };
  // IDNA would refuse these too, but only with a generic error; say which rule the label breaks.
  for (const label of rawLabels) {
    if (label === "") return { ok: false, error: SYNTAX_ERRORS.emptyLabel };
    if (label.startsWith("-") || label.endsWith("-")) return { ok: false, error: SYNTAX_ERRORS.labelHyphen };
  }

  const ascii = toAsciiIdna2008(domain);
  if (ascii === null) {
    const looksInternational = NON_ASCII.test(domain) || /(^|[.])xn--/i.test(domain);
    return { ok: false, error: looksInternational ? SYNTAX_ERRORS.invalidIdn : SYNTAX_ERRORS.invalidDomain };
  }
  // After mapping ("ａ。" -> "a."), the rules below are checked on what DNS will see.
  if (ascii.endsWith(".")) return { ok: false, error: SYNTAX_ERRORS.domainTrailingDot };
  if (ascii.length > MAX_DOMAIN_OCTETS) return { ok: false, error: SYNTAX_ERRORS.domainTooLong };
  const labels = ascii.split(".");
  for (const label of labels) {
    if (label === "") return { ok: false, error: SYNTAX_ERRORS.emptyLabel };
    if (label.length > MAX_LABEL_OCTETS) return { ok: false, error: SYNTAX_ERRORS.labelTooLong };
    if (!LDH_LABEL.test(label)) return { ok: false, error: SYNTAX_ERRORS.domainCharacter };
    // Mapping can produce a hyphen ("－" is a fullwidth hyphen-minus).
    if (label.startsWith("-") || label.endsWith("-")) return { ok: false, error: SYNTAX_ERRORS.labelHyphen };
  }
  if (labels.length < 2) return { ok: false, error: SYNTAX_ERRORS.singleLabel };
  if (ALL_DIGITS.test(labels.at(-1) ?? "")) return { ok: false, error: SYNTAX_ERRORS.numericTld };
  return { ok: true, value: ascii };
}

/**
 * UTS 46 processing configured for IDNA2008 compatibility (UTS 46 §4): non-transitional (ß and ς are
 * kept, not mapped to ss and σ), CheckHyphens (no "--" in the third and fourth positions, no
 * leading or trailing hyphen), CheckBidi (RFC 5893), CheckJoiners (RFC 5892 ContextJ), STD3 ASCII
 * rules, and every "xn--" label must decode to a valid U-label (invalid punycode, an empty label or
 * one that only encodes ASCII is an error). Lengths are checked by the caller, with their own messages.
 * null when the domain is refused.
 */
function toAsciiIdna2008(domain: string): string | null {
  return toASCII(domain, {
    checkHyphens: true,
    checkBidi: true,
    checkJoiners: true,
    useSTD3ASCIIRules: true,
    transitionalProcessing: false,
    ignoreInvalidPunycode: false,
    verifyDNSLength: false,
  });
}

/** The domain's A-label form, or null when it is not a host name mail can be addressed to. */
export function toAsciiDomain(domain: string): string | null {
  const checked = checkDomain(domain);
  return checked.ok ? checked.value : null;
}

type SplitAddress = { local: string; domain: string; quoted: boolean };

/**
 * RFC 5321 Quoted-string with RFC 6531's extension: printable ASCII, space and any non-ASCII character
 * (qtextSMTP =/ UTF8-non-ascii: a lone surrogate, which no UTF-8 can carry, is refused; control characters are refused before this), a backslash escaping
 * printable ASCII or space only (RFC 6531 leaves quoted-pairSMTP as it was).
 */
function splitQuotedLocal(address: string): Checked<SplitAddress> {
  let i = 1;
  for (;;) {
    if (i >= address.length) return { ok: false, error: SYNTAX_ERRORS.quotedUnterminated };
    const code = address.charCodeAt(i);
    if (code === 0x22) break;
    if (code === 0x5c) {
      if (i + 1 >= address.length) return { ok: false, error: SYNTAX_ERRORS.quotedUnterminated };
      const escaped = address.charCodeAt(i + 1);
      if (escaped < 0x20 || escaped > 0x7e) return { ok: false, error: SYNTAX_ERRORS.quotedCharacter };
      i += 2;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      // Non-ASCII is UTF-8 on the wire: a surrogate counts only as half of a pair, never alone.
      const low = address.charCodeAt(i + 1);
      if (code > 0xdbff || !(low >= 0xdc00 && low <= 0xdfff)) return { ok: false, error: SYNTAX_ERRORS.quotedCharacter };
      i += 2;
    } else {
      if (code < 0x20 || code === 0x7f) return { ok: false, error: SYNTAX_ERRORS.quotedCharacter };
      i++;
    }
  }
  const closingQuote = i;
  if (closingQuote + 1 >= address.length) return { ok: false, error: SYNTAX_ERRORS.missingAt };
  if (address[closingQuote + 1] !== "@") return { ok: false, error: SYNTAX_ERRORS.mixedQuoting };
  const domain = address.slice(closingQuote + 2);
  if (domain.includes("@")) return { ok: false, error: SYNTAX_ERRORS.multipleAt };
  return { ok: true, value: { local: address.slice(0, closingQuote + 1), domain, quoted: true } };
}

function splitAddress(address: string): Checked<SplitAddress> {
  if (address.startsWith('"')) return splitQuotedLocal(address);
  const at = address.indexOf("@");
  if (at === -1) return { ok: false, error: SYNTAX_ERRORS.missingAt };
  const domain = address.slice(at + 1);
  if (domain.includes("@")) return { ok: false, error: SYNTAX_ERRORS.multipleAt };
  return { ok: true, value: { local: address.slice(0, at), domain, quoted: false } };
}

function checkDotAtomLocal(local: string): SyntaxErrorMessage | null {
  if (local === "") return SYNTAX_ERRORS.emptyLocal;
  if (local.includes("(") || local.includes(")")) return SYNTAX_ERRORS.comment;
  if (local.includes('"')) return SYNTAX_ERRORS.mixedQuoting;
  if (local.startsWith(".") || local.endsWith(".") || local.includes("..")) return SYNTAX_ERRORS.localDots;
  if (!DOT_ATOM_TEXT.test(local)) return SYNTAX_ERRORS.localCharacter;
  if (LEADING_MARK.test(local)) return SYNTAX_ERRORS.localCombiningMark;
  return null;
}

/** Parses and validates an address per docs/api.md "The checks, in order", step 1. Never throws. */
export function parseEmailAddress(input: string): EmailSyntaxResult {
  const email = trimAsciiWhitespace(input);
  const fail = (error: SyntaxErrorMessage): EmailSyntaxFailure => ({ ok: false, email, error });

  if (email === "") return fail(SYNTAX_ERRORS.empty);
  if (email.length > MAX_INPUT_LENGTH) return fail(SYNTAX_ERRORS.tooLong);
  if (CONTROL_CHARACTER.test(email)) return fail(SYNTAX_ERRORS.controlCharacter);
  // "Ana <ana@example.com>": a domain can never end in ">", so this is a name-addr, not an address.
  if (email.endsWith(">") && email.includes("<")) return fail(SYNTAX_ERRORS.displayName);

  const split = splitAddress(email);
  if (!split.ok) return fail(split.error);
  const { local, domain, quoted } = split.value;

  if (!quoted) {
    const localError = checkDotAtomLocal(local);
    if (localError) return fail(localError);
  }
  const localOctets = utf8Length(local);
  if (localOctets > MAX_LOCAL_OCTETS) return fail(SYNTAX_ERRORS.localTooLong);

  const domainChecked = checkDomain(domain);
  if (!domainChecked.ok) return fail(domainChecked.error);
  const domainAscii = domainChecked.value;
  if (localOctets + 1 + domainAscii.length > MAX_ADDRESS_OCTETS) return fail(SYNTAX_ERRORS.tooLong);

  return {
    ok: true,
    email,
    local,
    domain: domainAscii,
    domainAsWritten: domain,
    quotedLocal: quoted,
    // Dot-atom or quoted (RFC 6531 allows UTF-8 in both): either needs a server with SMTPUTF8.
    nonAsciiLocal: NON_ASCII.test(local),
  };
}

/**
 * The key one address has wherever it goes: its local part as written and its domain in lower-case A-label form. What
 * the probe is asked (RCPT TO), what a job's duplicate lines share, and what the console's preview counts as one.
 */
export function addressKey(parsed: Pick<ParsedEmailAddress, "local" | "domain">): string {
  return `${parsed.local}@${parsed.domain}`;
}

/** The domain of an address: what follows its last @ (a quoted local part may hold one), lower-cased. */
export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf("@") + 1).toLowerCase();
}
