/**
 * When a refusal is our block, not an answer (issue 36 item 1, docs/probe.md "Blocks"): a receiver that refuses our
 * IP, our reputation or our traffic by policy says nothing about any mailbox, and every check sent there meanwhile
 * would come back the same. The probe then stops the destination for the family's documented time
 * (shared/email/receivers.ts `blockSeconds`), hands a job's lines back to wait (or to another probe) and answers a
 * single check `probe_refused`: a block is never a customer's answer.
 *
 * - At the greeting: any 5xx (RFC 5321: 554 there means "no SMTP service for you"), or a 4xx whose text names us.
 * - At EHLO/HELO and MAIL FROM: a 5.7.x, or a 5xx whose text names us: the command carries no recipient.
 * - Never: a 5.7.x about this conversation (NOT_A_BLOCK: relaying refused, TLS or authentication wanted).
 * - At RCPT: a 5.7.x whose text names our client (Forcepoint's "Client host rejected", Google's "unsolicited mail
 *   ... has been blocked", "banned sending IP", a blocklist), or a 5.7.x to every RCPT of a transaction of two or
 *   more. One 5.7.1 alone with no such words is often about that one mailbox (an access list), and stays its answer.
 *
 * Pure: no I/O, no clock.
 */

export type RefusalStage = "greeting" | "ehlo" | "mail" | "rcpt";
type Reply = { code: number; enhanced: string | null; text: string };

/**
 * Words receivers use when they refuse the client rather than a mailbox (research §1, §2, §4, §5: Reacher's
 * is_err_ip_blacklisted list, Google's and Microsoft's block texts, Forcepoint's harvest block).
 */
const NAMES_US = [
  /client host/i,
  /\byour ip\b/i,
  /\bip address\b/i,
  /sending ip/i,
  /\bbanned\b/i,
  /\bblock(ed|list)\b/i,
  /block list/i,
  /\bblacklist/i,
  /\bdenylist/i,
  /spamhaus|spamcop|barracudacentral|\bsorbs\b|\brbl\b|\bdnsbl\b/i,
  /reputation/i,
  /\bsbrs\b/i,
  /directory harvest/i,
  /namespace mining|SC-00\d/i,
  /unsolicited mail/i,
  /refused by (proofpoint|mimecast)/i,
  /too many (invalid|unknown|bad) recipients/i,
];

/**
 * 5.7.x refusals that are about this conversation, not about who we are: a server that does not take mail for the
 * domain ("Relay access denied": the MX records point at the wrong host), or wants TLS or authentication first.
 */
const NOT_A_BLOCK = [/\brelay/i, /\btls\b|starttls/i, /authenticat/i];

/** Whether a reply's text names us (our IP, our reputation, our traffic) rather than a mailbox. */
export function namesUs(reply: Reply): boolean {
  return NAMES_US.some((re) => re.test(reply.text));
}

const isPolicy = (reply: Reply) => reply.code >= 500 && (reply.enhanced ?? "").startsWith("5.7.") && !NOT_A_BLOCK.some((re) => re.test(reply.text));

/**
 * Whether these replies, at this stage, are a block of our probe: one reply at the greeting, EHLO or MAIL FROM; at
 * RCPT, the replies of one transaction (those that came, in order).
 */
export function isBlock(stage: RefusalStage, replies: readonly Reply[]): boolean {
  if (replies.length === 0) return false;
  if (stage === "greeting") {
    const r = replies[0]!;
    return r.code >= 500 || (r.code >= 400 && namesUs(r));
  }
  if (stage === "ehlo" || stage === "mail") {
    const r = replies[0]!;
    return isPolicy(r) || (r.code >= 500 && namesUs(r) && !NOT_A_BLOCK.some((re) => re.test(r.text)));
  }
  if (replies.some((r) => isPolicy(r) && namesUs(r))) return true;
  return replies.length >= 2 && replies.every(isPolicy);
}
