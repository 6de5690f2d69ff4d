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
 * And how far a block reaches (issue 44, judgeRcpt): one server holds many tenants' domains, and a tenant's own block
 * list refuses us for that tenant only. A refusal at the greeting, EHLO or MAIL FROM carries no recipient and stops the
 * whole destination; at RCPT a block stops the recipient domain it came for, unless the family documents the text as
 * global (DESTINATION_WIDE_TEXTS) or two or more recipient domains refused us so (in one transaction, or within the
 * evidence window the caller keeps).
 *
 * Pure: no I/O, no clock.
 */
import type { ReceiverFamily } from "../../shared/email/receivers.ts";

export type RefusalStage = "greeting" | "ehlo" | "mail" | "rcpt";
type Reply = { code: number; enhanced: string | null; text: string };

/**
 * Words receivers use when they refuse the client rather than a mailbox (research §1, §2, §4, §5: Reacher's
 * is_err_ip_blacklisted list, Google's and Microsoft's block texts, Forcepoint's harvest block, Exim's "is in a black
 * list", Postfix's reject_rbl_client "Client host [ip] blocked using"). Each names the client, its address, a
 * blocklist or our traffic: no mailbox refuses with them.
 */
const NAMES_US = [
  /client host/i,
  /\byour ip\b/i,
  /\bip address\b/i,
  /sending ip/i,
  /blocked using/i,
  /black ?list/i,
  /customer block list/i,
  /our block list/i,
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
 * Words that name us only when the text is not about a recipient (issue 44 item 6): "blocked", "banned" or "block
 * list" in "Recipient address rejected: sender blocked" is that mailbox's own list (a Postfix check_recipient_access
 * text, a user's blocked senders), its answer; alone ("550 5.7.0 Blocked - see ...") they are about us.
 */
const NAMES_US_UNLESS_RECIPIENT = [/\bbanned\b/i, /\bblock(ed|list)\b/i, /block list/i, /\bdenylist/i];
const ABOUT_A_RECIPIENT = /recipient|mailbox|\buser\b|target address/i;

/**
 * 5.7.x refusals that are about this conversation, not about who we are: a server that does not take mail for the
 * domain ("Relay access denied": the MX records point at the wrong host), or wants TLS or authentication first.
 */
const NOT_A_BLOCK = [/\brelay/i, /\btls\b|starttls/i, /authenticat/i];

/** Whether a reply's text names us (our IP, our reputation, our traffic) rather than a mailbox. */
export function namesUs(reply: Reply): boolean {
  if (NAMES_US.some((re) => re.test(reply.text))) return true;
  return NAMES_US_UNLESS_RECIPIENT.some((re) => re.test(reply.text)) && !ABOUT_A_RECIPIENT.test(reply.text);
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

/**
 * Block texts a family documents as a refusal of our address wherever it answers, whichever tenant a RCPT is for
 * (docs/probe.md "How far a block reaches"; research provider-limits.md §1, §2, §4): these stop the whole budget key at
 * once. Every other RCPT block is scoped by evidence.
 */
export const DESTINATION_WIDE_TEXTS: { families: readonly ReceiverFamily[] | "all"; test: (r: Reply) => boolean; why: string }[] = [
  // A harvest defence counts a client's recipients over every domain behind it (Forcepoint, Cisco, Trend, Yahoo's "Excessive unknown recipients").
  { families: "all", test: (r) => /directory harvest|too many (invalid|unknown|bad) recipients|namespace mining|SC-00\d/i.test(r.text), why: "harvest defences count per client IP" },
  // EOP: 5.7.606-649 "Access denied, banned sending IP", 5.7.511 banned sender, 5.7.705/708 "traffic not accepted from this IP", S3150 network block list.
  {
    families: ["microsoft-eop", "outlook-consumer"],
    test: (r) => /^5\.7\.(6[0-4]\d|511|705|708)$/.test(r.enhanced ?? "") || /banned sending ip|our block list|traffic not accepted from this ip/i.test(r.text),
    why: "EOP's service-wide bans of a sending IP (its per-tenant Customer Block list is not one)",
  },
  // Google and Yahoo count by our IP across every domain they host ("unsolicited mail originating from your IP address").
  { families: ["google", "yahoo"], test: () => true, why: "Google and Yahoo block by sending IP" },
  // Cisco's SenderBase score is the appliance's host access table, for every domain it relays.
  { families: ["cisco"], test: (r) => /\bsbrs\b|senderbase/i.test(r.text), why: "Cisco's HAT applies to the listener" },
];

/** Whether the family documents this block text as reaching every tenant behind the key. */
export function destinationWideText(family: ReceiverFamily, reply: Reply): boolean {
  return DESTINATION_WIDE_TEXTS.some((t) => (t.families === "all" || t.families.includes(family)) && t.test(reply));
}

/** One RCPT's reply, with the recipient domain it was for. */
export type RcptReply<R extends Reply = Reply> = { domain: string; reply: R };

/** How far a RCPT block reaches: the whole key, or these recipient domains at it; with the reply that showed it. */
export type RcptJudgement<R extends Reply = Reply> = { scope: "destination"; reply: R } | { scope: "domain"; domains: string[]; reply: R };

/**
 * Whether one transaction's RCPT replies are a block of our probe, and how far it reaches (issue 44 item 1):
 * - a domain blocks us when a 5.7.x to it names us, or every one of two or more RCPTs for it got a 5.7.x; a 5.7.x
 *   to every RCPT of a transaction of two or more blocks each of its domains (isBlock's rule);
 * - destination-wide when the family documents the text as global (destinationWideText), or when two or more
 *   recipient domains block us, counting those that blocked us at this key within the evidence window
 *   (`blockedLately`, the caller's);
 * - otherwise the domain (or domains) alone: the others at the key go on.
 */
export function judgeRcpt<R extends Reply>(family: ReceiverFamily, items: readonly RcptReply<R>[], blockedLately: ReadonlySet<string> = new Set()): RcptJudgement<R> | null {
  if (items.length === 0) return null;
  const byDomain = new Map<string, R[]>();
  for (const { domain, reply } of items) byDomain.set(domain, [...(byDomain.get(domain) ?? []), reply]);
  const all = items.length >= 2 && items.every((i) => isPolicy(i.reply));
  const blocking: string[] = [];
  for (const [domain, replies] of byDomain) {
    if (all || replies.some((r) => isPolicy(r) && namesUs(r)) || (replies.length >= 2 && replies.every(isPolicy))) blocking.push(domain);
  }
  if (blocking.length === 0) return null;
  const replies = blocking.flatMap((d) => byDomain.get(d)!.filter(isPolicy));
  const reply = replies.find(namesUs) ?? replies[0]!;
  if (replies.some((r) => destinationWideText(family, r))) return { scope: "destination", reply: replies.find((r) => destinationWideText(family, r))! };
  const domains = new Set([...blocking, ...blockedLately]);
  if (domains.size >= 2) return { scope: "destination", reply };
  return { scope: "domain", domains: blocking, reply };
}
