/**
 * What a reply to RCPT TO (or a refusing greeting) says about the mailbox (docs/api.md, the smtp_outcome table).
 *
 * The product's promise rests on one asymmetry: a false "mailbox_not_found" makes our user drop a
 * real customer, while a false "policy_block" / "rejected_unclear" only costs a warning and a few
 * points. So "mailbox_not_found" needs positive evidence (an honest 5.1.x code, or explicit
 * "no such user" words) and anything that smells of policy, reputation or our own identity pulls a
 * reply back to "not evidence either way".
 *
 * Matching is case-insensitive over the whole text (all lines joined by the ReplyReader). Words
 * inside URLs count as policy evidence (blocklists are often named only in a lookup link) but never
 * as "user unknown" evidence: "?p=NoSuchUser" is a link, not a statement.
 *
 * Sources for the phrasings (read, not copied): RFC 3463 / RFC 5321 §4.2; Postfix smtpd_check.c;
 * Microsoft's Exchange Online NDR reference; Google's "Gmail SMTP errors and codes"; Yahoo's sender
 * error codes; the per-provider catalogues of sisimai (Sisimai::Rhost::*, Sisimai::Reason::*);
 * reacherhq/check-if-email-exists (core/src/smtp/parser.rs); AfterShip/email-verifier (error.go and
 * its captured replies); Mimecast's SMTP error code list; spamresource.com on Microsoft's
 * user-unknown variants. test/node/probe-classify.test.ts holds the replies, one row per phrasing.
 */
import type { ProbeOutcome } from "../../shared/smtp-outcome.ts";
import type { SmtpReply } from "./reply.ts";

/**
 * What a reply to RCPT TO says: one of the shared outcomes (shared/smtp-outcome.ts), or
 * "too_many_recipients" (4.5.3 / 5.5.3 / "too many recipients"), which is about the transaction,
 * never the mailbox: the scheduler sends the rest of the batch in the next one, and the session
 * leaves catch-all unknown.
 */
export type RcptClass =
  | Extract<ProbeOutcome, "accepted" | "mailbox_not_found" | "mailbox_full" | "policy_block" | "temporary_failure" | "rejected_unclear">
  | "too_many_recipients";

/**
 * The outcome a RCPT class answers: itself, but for "too many recipients", which only answers a check when it came
 * to the first RCPT (the server allows no recipients at all right now): a temporary failure. What each outcome
 * proves is shared/email/reasons.ts's; this only names the one class that is not an outcome.
 */
export function outcomeOfRcptClass(cls: RcptClass): ProbeOutcome {
  return cls === "too_many_recipients" ? "temporary_failure" : cls;
}

type Enhanced = { cls: number; subject: number; detail: number };

// The phrase lists below run on lowercased text with curly apostrophes straightened and
// whitespace collapsed.

/** Rejections of our MAIL FROM / identity, even when they arrive as the answer to RCPT TO. */
const SENDER = new RegExp(
  [
    String.raw`\bsender (?:address|domain|verif\w*|verify|rejected|denied|not (?:allowed|authori[sz]ed|permitted))`,
    String.raw`\bverification failed for <`, // Exim sender callout: "Verification failed for <probe@...>"
    String.raw`\bdomain of sender\b`, // Sendmail: "Domain of sender address ... does not exist"
    String.raw`\b(?:mail from|envelope[- ]from|return[- ]path) (?:address|domain)\b`,
    String.raw`\bunverified sender\b`,
  ].join("|"),
);

/** "Too many recipients" in any of its forms, including Google's per-transaction policy size. */
const TOO_MANY_RECIPIENTS =
  /\btoo many (?:recipients|rcpts?)\b|\brecipients? (?:limit|count) (?:exceeded|reached)|\bmaximum (?:number of )?recipients\b|\btry this recipient in a separate transaction\b/;

/**
 * Words that turn "<subject> ... unknown / not found / does not exist" into a statement about
 * something other than the mailbox ("Recipient address rejected: Domain not found").
 */
const OTHER_THING = "(?:domain|host|client|sender|command|server)\\b";

/** Words that say, in so many words, that the addressed user or mailbox does not exist. */
const USER_UNKNOWN = new RegExp(
  [
    // "User unknown", "Addressee unknown", "user is unknown", "Sorry, user address unknown",
    // "mailbox foo@example.com unknown"
    String.raw`\b(?:user|recipient|addressee|mailbox|account|alias)(?: (?:address|name|mailbox|account|<?\S+@\S+))? (?:is )?unknown\b(?! ${OTHER_THING})`,
    String.raw`\bunknown (?:user|recipient|mailbox|addressee|local[- ]part|e-?mail address|account)\b`,
    String.raw`\bunknown or illegal alias\b`,
    String.raw`\bno such (?:user|recipient|mailbox|account|person|address|addressee|local user)\b`,
    // "User not found", "Mailbox not found", "Account not found", "Local User [x] not found",
    // "Recipient not found by SMTP address lookup"
    String.raw`\b(?:user|recipient|mailbox|account|addressee)(?: (?!${OTHER_THING})\S+){0,2}? not found\b`,
    String.raw`recip(?:ient)?notfound\b`, // RESOLVER.ADR.RecipientNotFound / RecipNotFound / ExRecipNotFound
    // "The email account that you tried to reach does not exist", "User does not exist",
    // "This mailbox does not exist", "recipient is not exist", "RCPT (x) dosn't exist"
    String.raw`\b(?:user|recipient|mailbox|account|addressee|rcpt)(?: (?!${OTHER_THING})\S+){0,8}? (?:does not|doesn't|dosn't|do not|is not|not) exists?\b`,
    String.raw`\b(?:e-?mail )?address (?:does not|doesn't) exist\b`,
    String.raw`\buser doesn't have an? \S+ account\b`, // Yahoo/AOL: "dd This user doesn't have a yahoo.com account"
    // "Invalid recipient" (Mimecast), "invalid mailbox" (Mail.ru); not "invalid recipient address",
    // Exchange's 5.1.3 wording for a malformed address
    String.raw`\b(?:invalid|non-?existent|nonexisting) (?:recipient|mailbox|user)\b(?! address| syntax)`,
    String.raw`\brecipient (?:is )?invalid\b`,
    String.raw`\bnot a valid (?:mailbox|user|recipient)\b`,
    String.raw`\bis not a known user\b`,
    String.raw`\bno mailbox (?:here|by that name)\b`, // qmail: "sorry, no mailbox here by that name"
    String.raw`\bunroute?able address\b`, // Exim's answer when no router accepts the local part
    String.raw`\be-?mail address could not be found\b`,
  ].join("|"),
);

/**
 * Policy, reputation, identity and rate-limit wording. Runs on the whole text, URLs included,
 * because blocklists are often named only in their lookup link (spamcop.net/bl.shtml,
 * ipcheck.proofpoint.com, barracudacentral.org).
 */
const POLICY = new RegExp(
  [
    // blocklists and reputation
    String.raw`\bblock(?:ed|ing)?\b`,
    String.raw`\bblock ?list`,
    String.raw`\bblack ?list`,
    String.raw`\bdeny ?list`,
    String.raw`\bbanned\b`,
    String.raw`\b(?:rbl|dnsbl|dnsbls|uribl|surbl)\b`,
    String.raw`spamhaus|spamcop|sorbs\.net|\bsorbs\b|barracudacentral|barracuda reputation|uceprotect|abusix|senderbase|\bsbrs\b|mailspike|cloudmark`,
    String.raw`proofpoint (?:reputation|dynamic reputation)|refused by proofpoint|ipcheck\.proofpoint|dnsbl-lookup`,
    String.raw`reputation`,
    String.raw`\bspam`,
    String.raw`\bjunk ?mail`,
    String.raw`unsolicited`,
    String.raw`\babus(?:e|ive)\b`,
    String.raw`\blisted (?:at|on|in|by)\b`,
    // our identity: reverse DNS, HELO, dynamic ranges
    String.raw`reverse (?:dns|hostname|lookup|name)`,
    String.raw`\brdns\b`,
    String.raw`\bptr\b`,
    String.raw`cannot find your hostname`,
    String.raw`client host rejected`,
    String.raw`\b(?:helo|ehlo)\b`,
    String.raw`dynamic ip|residential|dial-?up|generic (?:dns|rdns|ptr)`,
    // relay, access and authorization refusals
    String.raw`\brelay`,
    String.raw`\bdenied\b`,
    String.raw`not (?:permitted|allowed|authori[sz]ed)`,
    String.raw`unauthori[sz]ed`,
    String.raw`prohibit`,
    String.raw`forbidden`,
    String.raw`\brefused\b`,
    String.raw`administrative`,
    String.raw`allowed rcpthosts`,
    String.raw`not accepting (?:connections|mail|messages)`,
    String.raw`service not available`, // GMX/web.de "Nemesis ESMTP Service not available ... No SMTP service"
    // authentication and content policies
    String.raw`\b(?:spf|dkim|dmarc)\b`,
    String.raw`unauthenticated|authentication`,
    String.raw`\bpolic(?:y|ies)\b`,
    String.raw`\bsecurity\b`,
    String.raw`virus|malware|phish`,
    String.raw`suspicious`,
    String.raw`content filter`,
    String.raw`tls required|requires? (?:tls|encryption)`,
    String.raw`gr[ae]ylist`,
    // rate limits given as 5xx
    String.raw`rate[- ]limit`,
    String.raw`too many (?:connections|messages|mails|errors|invalid)`,
    String.raw`too (?:quickly|fast)`,
    String.raw`excessive`,
    String.raw`(?:sending|relay|submission|daily|hourly) (?:quota|limit)`,
    String.raw`at a rate that`,
  ].join("|"),
);

/** Over-quota wording (the mailbox exists but is full). */
const MAILBOX_FULL = new RegExp(
  [
    String.raw`\bmailbox (?:is )?full\b`,
    String.raw`\binbox (?:is )?full\b`,
    String.raw`\bover ?quota\b`,
    String.raw`\bquota (?:exceeded|limit exceeded|full)\b`,
    String.raw`\bexceeded (?:its |their |the )?(?:storage|quota|mailbox)`,
    String.raw`\bout of storage\b`,
    String.raw`\bmailbox size limit\b`,
    String.raw`\b(?:has )?exhausted (?:allowed )?storage`,
    String.raw`\btoo many messages (?:on the server|in (?:the |this )?mailbox)`,
  ].join("|"),
);

/**
 * An account that exists (or existed) but is disabled, inactive or suspended. It will not take mail
 * now, but it is not "no such mailbox": the person is real and the account may come back.
 */
const DISABLED =
  /\b(?:disabled|deactivated|inactive|suspended|discontinued|account (?:is )?(?:closed|locked|blocked))\b|\bno longer (?:valid|active|in use)\b/;

/** Statements about the recipient's domain, not the mailbox ("Recipient address rejected: Domain not found"). */
const DOMAIN_LEVEL =
  /\b(?:domain|host) (?:not found|unknown|does not exist|doesn't exist|not (?:handled|served|hosted|accepted))\b|\b(?:unknown|no such|invalid) domain\b|\bdomain (?:is )?not (?:in|listed)\b/;

const URL = /\b(?:https?:\/\/|www\.)\S+/g;

function normalize(text: string): string {
  return text
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc\u0060\u00b4]/g, "'")
    .replace(/\s+/g, " ")
    .trim();
}

function parseEnhanced(code: number, enhanced: string | null, text: string): Enhanced | null {
  // The reader only takes an enhanced code from the start of the first line. qmail and Cisco
  // IronPort put theirs in the text with a hash ("(#5.1.1)", "550 #5.1.0 Address rejected"); take
  // that form too, but only with the hash, so an IP address such as 5.1.1.9 is never read as one.
  const raw = enhanced ?? /#([245]\.\d{1,3}\.\d{1,3})\b/.exec(text)?.[1] ?? null;
  if (!raw) return null;
  const [cls, subject, detail] = raw.split(".").map(Number) as [number, number, number];
  if (cls !== Math.floor(code / 100)) return null;
  return { cls, subject, detail };
}

const is = (e: Enhanced | null, subject: number, detail?: number): boolean =>
  e !== null && e.subject === subject && (detail === undefined || e.detail === detail);

/**
 * Microsoft 365 Directory-Based Edge Blocking: "550 5.4.1 Recipient address rejected: Access
 * denied. AS(201806281) [....prod.protection.outlook.com]". Microsoft documents this exact reply
 * as "the recipient's address doesn't exist in the tenant". Newer replies drop the AS(...) tag but
 * keep the 5.4.1 code and the protection.outlook.com host, so those count too; any other AS(n)
 * code is one of Microsoft's anti-spam rules and stays a policy block. Postfix access maps say
 * "Recipient address rejected: Access denied" with 5.7.1 and never match this.
 */
function isM365EdgeBlock(e: Enhanced | null, t: string): boolean {
  if (!is(e, 4, 1) || !t.includes("recipient address rejected: access denied")) return false;
  if (t.includes("as(201806281)")) return true;
  return !/\bas\(\d+\)/.test(t) && t.includes(".protection.outlook.com");
}

/**
 * Outlook.com / Hotmail (consumer): "550 5.5.0 Requested action not taken: mailbox unavailable
 * (S2017062302)". Microsoft documents 5.5.0 with this text as the hotmail.com/outlook.com version
 * of 5.1.10 RecipientNotFound; the S2017062302 tag is what tells it apart from the RFC 5321
 * boilerplate, which alone stays ambiguous.
 */
function isOutlookComUnknown(e: Enhanced | null, t: string): boolean {
  return is(e, 5, 0) && t.includes("mailbox unavailable") && t.includes("(s2017062302)");
}

/** 5.1.x codes that are about the addressed mailbox itself (RFC 3463 §3.2). */
function isMailboxAddressCode(e: Enhanced | null): boolean {
  if (e === null || e.cls !== 5 || e.subject !== 1) return false;
  // 5.1.0 other address status, 5.1.1 bad destination mailbox, 5.1.6 mailbox moved (no forwarding
  // address), 5.1.10 Microsoft RecipientNotFound. Not 5.1.2/5.1.3 (the domain or the syntax: our
  // own checks passed, so it is this server's view of the domain or our encoding), not 5.1.4/5.1.5,
  // not 5.1.7/5.1.8 (the sender).
  return e.detail === 0 || e.detail === 1 || e.detail === 6 || e.detail === 10;
}

/** Classifies a reply to RCPT TO (or a refusing greeting). Pure; reads code, enhanced and text. */
export function classifyRcptReply(reply: Pick<SmtpReply, "code" | "enhanced" | "text">): RcptClass {
  const code = reply.code;
  const full = normalize(reply.text);
  const prose = full.replace(URL, " ");
  const e = parseEnhanced(code, reply.enhanced, reply.text);

  // 1. 2xx accepts the recipient, whatever the text says (251 forwards, 252 cannot verify but takes it).
  if (code >= 200 && code <= 299) return "accepted";

  // 2. Too many recipients (4.5.3, 5.5.3 or the words), 4xx or 5xx: a limit on the transaction, not
  //    a verdict on this mailbox; the session leaves catch-all unknown instead of reading a reject.
  if (code >= 400 && code <= 599 && (is(e, 5, 3) || TOO_MANY_RECIPIENTS.test(prose))) return "too_many_recipients";

  // 3. 3xx to RCPT TO is a protocol oddity, and codes outside 200..599 never arrive (the reader
  //    rejects them): neither is evidence.
  if (code < 400 || code > 599) return "rejected_unclear";

  // 4. 4xx is transient by definition, whatever the words: "450 4.1.1 User unknown" (Postfix
  //    soft_bounce), "451 4.7.1 Greylisting", "421 4.7.0 IP not in whitelist" are all "try later".
  //    The one exception is over quota (452 4.2.2, Gmail's OverQuotaTemp): the mailbox exists and
  //    is full now, which is exactly what mailbox_full reports (same score, a truer warning).
  if (code < 500) {
    if (is(e, 2, 2) || (MAILBOX_FULL.test(prose) && !POLICY.test(full))) return "mailbox_full";
    return "temporary_failure";
  }

  // From here on: 5xx.

  // 5. A rejection of our sender (MAIL FROM, callout on our address) says nothing about the
  //    recipient, even when it contains "User unknown" or a 5.1.x code (Postfix reject_unlisted_sender
  //    answers "5.1.0 <probe@...>: Sender address rejected: User unknown ...", Exim's sender verify
  //    answers "Verification failed for <probe@...> / Unrouteable address / Sender verify failed").
  if (SENDER.test(prose) || is(e, 1, 7) || is(e, 1, 8)) return "policy_block";

  // 6. Microsoft 365's edge block of a recipient missing from the tenant's directory: documented as
  //    "address doesn't exist", and checked before rule 9, which would read "Access denied" as policy.
  if (isM365EdgeBlock(e, full)) return "mailbox_not_found";

  // 7. Explicit "no such user" words win over every rule below: honest servers say it in plain
  //    words, some with odd codes (Yandex "550 5.7.1 No such user!"), and a policy word elsewhere
  //    (Postfix's "relay recipient table", a help URL) does not make the statement less explicit.
  if (USER_UNKNOWN.test(prose)) return "mailbox_not_found";

  // 8. 5.2.2 "mailbox full" is a specific code; honour it before the policy words so that incidental
  //    words ("Mailbox size limit exceeded", a filter's host name) do not turn it into a block.
  if (is(e, 2, 2)) return "mailbox_full";

  // 9. Policy: 5.7.x (RFC 3463 security/policy) or policy/reputation/identity/rate-limit wording.
  //    This beats a bare 5.1.x code (servers that answer blocklist hits with 5.1.1 exist), but not
  //    the explicit words of rule 7: the false "mailbox_not_found" is the error we must not make.
  if ((e !== null && e.subject === 7) || POLICY.test(full)) return "policy_block";

  // 10. Over-quota wording without 5.2.2 ("552 Requested mail action aborted: exceeded storage
  //     allocation", "user is over quota").
  if (MAILBOX_FULL.test(prose)) return "mailbox_full";

  // 11. Disabled / inactive / suspended accounts exist (or existed) and may come back; that is not
  //     "no such mailbox", even under 5.1.1 (iCloud "inactive email address") or 5.2.1.
  if (DISABLED.test(prose)) return "rejected_unclear";

  // 12. Outlook.com's user-unknown wears the RFC boilerplate plus its own tag (see above).
  if (isOutlookComUnknown(e, full)) return "mailbox_not_found";

  // 13. An honest 5.1.x mailbox code with nothing pulling the other way: Postfix, Exim, Sendmail,
  //     Gmail and Exchange all use 5.1.1 / 5.1.10 for unknown users, 5.1.6 for a mailbox that moved.
  //     Words about the domain ("Domain not found") pull it back: DNS already said the domain takes
  //     mail, so this server's view of the domain says nothing about the mailbox.
  if (isMailboxAddressCode(e) && !DOMAIN_LEVEL.test(prose)) return "mailbox_not_found";

  // 14. Anything else is a 5xx that says neither: "550 Requested action not taken: mailbox
  //     unavailable" is RFC 5321's text for "not found, no access, or rejected for policy reasons",
  //     "554 Transaction failed", a bare "550 Rejected", 5.1.2 (domain), 5.2.1 (disabled), 551.
  return "rejected_unclear";
}

/** Words that say "you are going too fast": a reason to slow down and come back, not a verdict. */
const THROTTLE =
  /rate[- ]?limit|too many (?:connections|concurrent|sessions|messages|recipients from|commands|errors)|too (?:quickly|fast)|throttl|slow down|try (?:again )?later|unusual rate|exceeded the (?:rate|limit)|temporarily (?:deferred|rate)/;

/**
 * A reply that asks the client to back off from this server: any 421 (the server is closing the
 * session) or a 4.7.x temporary refusal in rate-limit words. Greylisting (450 4.7.1 "Greylisted")
 * is not one: it is about this sender and recipient, and coming back in a second does not help.
 */
export function isThrottling(reply: Pick<SmtpReply, "code" | "enhanced" | "text">): boolean {
  if (reply.code === 421) return true;
  if (reply.code < 400 || reply.code >= 500) return false;
  const text = normalize(reply.text);
  if (/gr[ae]ylist/.test(text)) return false;
  const e = parseEnhanced(reply.code, reply.enhanced, reply.text);
  return (e === null || e.subject === 7) && THROTTLE.test(text);
}
