/**
 * One address, one key: the form under which two spellings of the same mailbox compare equal. The people
 * import de-duplicates a person's addresses by it, a lookup de-duplicates the addresses it returns by it, and an
 * erasure hashes it (beside the address as written), so that an equivalent spelling can neither bring an erased
 * address back nor show one mailbox twice (docs/operations.md "Personal data").
 *
 * - The domain goes through the same IDNA as the syntax check and comes out as its lower-case A-label form
 *   (`BÜCHER.de`, `bücher.de` and `xn--bcher-kva.de` are one domain).
 * - The local part is NFC and lower-cased: we treat addresses case-insensitively everywhere (the database compares
 *   lower(email)), and NFD and NFC are the same text.
 * - A quoted local part whose content is a plain dot-atom is the same mailbox unquoted (`"ada"@x` is `ada@x`, RFC
 *   5321 §4.1.2); one that needs its quotes keeps them, with its escapes resolved.
 * - Gmail ignores dots in the local part and everything from a `+`, and googlemail.com is gmail.com.
 *
 * Pure, and safe in the Worker: tr46 is bundled, never the runtime's URL parser. Something the syntax check
 * refuses still gets a stable key (trimmed, NFC, lower-cased), so nothing is ever left without one.
 */
import { parseEmailAddress } from "./syntax.ts";

const GMAIL_DOMAINS: ReadonlySet<string> = new Set(["gmail.com", "googlemail.com"]);
/** RFC 5321 atext, non-ASCII letters, marks and digits, and dots not at either end nor doubled: no quotes needed. */
const PLAIN_DOT_ATOM = /^[a-z0-9!#$%&'*+\-/=?^_`{|}~\p{L}\p{M}\p{N}]+(\.[a-z0-9!#$%&'*+\-/=?^_`{|}~\p{L}\p{M}\p{N}]+)*$/u;

const fold = (text: string) => text.normalize("NFC").toLowerCase().normalize("NFC");

/** The content of a quoted local part: quotes dropped, backslash escapes resolved. */
function unquote(quoted: string): string {
  return quoted.slice(1, -1).replace(/\\(.)/gu, "$1");
}

function canonicalLocal(local: string, quoted: boolean): string {
  if (!quoted) return fold(local);
  const content = fold(unquote(local));
  if (PLAIN_DOT_ATOM.test(content)) return content;
  return `"${content.replace(/(["\\])/g, "\\$1")}"`;
}

/** Printable ASCII without quotes or spaces: such an address needs no IDNA, NFC or unquoting. */
const PLAIN_ASCII = /^[\x21\x23-\x7e]+$/;
const ASCII_DOT_ATOM = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+(\.[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+)*$/;

/**
 * The key two spellings of one mailbox share (see above). Plain ASCII addresses, nearly all of them, take a short
 * way that gives the same key without the syntax check's IDNA work (a property test holds the two together).
 */
export function canonicalAddress(email: string): string {
  if (!PLAIN_ASCII.test(email)) return canonicalAddressByParsing(email);
  const at = email.indexOf("@");
  if (at < 0 || email.indexOf("@", at + 1) >= 0) return email.toLowerCase();
  const local = email.slice(0, at).toLowerCase();
  const domain = email.slice(at + 1).toLowerCase();
  if (!GMAIL_DOMAINS.has(domain)) return `${local}@${domain}`;
  // Gmail's rule applies to a valid address only: at gmail.com, valid is a dot-atom of at most 64 octets.
  if (local.length > 64 || !ASCII_DOT_ATOM.test(local)) return `${local}@${domain}`;
  return `${local.split("+")[0]!.replaceAll(".", "")}@gmail.com`;
}

/** canonicalAddress the long way, through the syntax check: for anything but plain ASCII, and to test the short way against. */
export function canonicalAddressByParsing(email: string): string {
  const parsed = parseEmailAddress(email);
  if (!parsed.ok) return fold(email.trim());
  let local = canonicalLocal(parsed.local, parsed.quotedLocal);
  let domain = parsed.domain.toLowerCase();
  if (GMAIL_DOMAINS.has(domain)) {
    domain = "gmail.com";
    local = local.split("+")[0]!.replaceAll(".", "");
  }
  return `${local}@${domain}`;
}
