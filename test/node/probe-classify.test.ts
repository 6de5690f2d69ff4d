/**
 * Longer than 400 lines on purpose: a table of real servers' RCPT replies and what each means, one row per reply.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { classifyRcptReply, outcomeOfRcptClass, type RcptClass } from "../../probe/smtp/classify.ts";
import { ReplyReader, type SmtpReply } from "../../probe/smtp/reply.ts";

/**
 * Real-world replies to RCPT TO (and refusing greetings), each with the software that produces it.
 * Every row goes through ReplyReader from raw bytes, so multi-line replies take the real parsing
 * path (enhanced code split off each line, lines joined with spaces).
 *
 * Where the phrasings come from (read, not copied):
 *   G  Google, "Gmail SMTP errors and codes" (support.google.com/a/answer/3726730) and sisimai's
 *      Sisimai::Rhost::Google catalogue
 *   M  Microsoft NDR reference for Exchange Online / Exchange Server, sisimai's Sisimai::Rhost::Microsoft,
 *      spamresource.com "Microsoft: Multiple types of invalid user bounces" (2023), zone-eu/zone-mta#214,
 *      sisimai/rb-sisimai#77
 *   Y  Yahoo sender error codes via sisimai's Sisimai::Rhost::YahooInc; the brief
 *   A  Apple iCloud via sisimai's Sisimai::Rhost::Apple
 *   P  Postfix smtpd_check.c strings, Postfix-based providers' help pages (Fastmail, bytecamp.de,
 *      inmotionhosting "Email error 450"), onesystems.ch
 *   R  reacherhq/check-if-email-exists core/src/smtp/parser.rs comments (replies seen in the wild)
 *   S  AfterShip/email-verifier error_test.go (replies captured verbatim in 2026)
 *   MC Mimecast SMTP error codes (community.mimecast.com DOC-1369) via sisimai's Sisimai::Rhost::Mimecast
 *   B  smtp.codes/550 (Barracuda), luxsci.com and tig.csail.mit.edu (Barracuda Reputation bounces)
 *   X  sisimai Sisimai::Reason::UserUnknown / Blocked phrase lists, sitepackage.de and dbmailserver.com
 *      bounce catalogues, yandex.com/support/mail/bounces, Zoho via sisimai's Sisimai::Rhost::Zoho
 * Rows marked "composite" put a real phrasing in a context built to test one precedence rule.
 */
type Row = { sw: string; raw: string; want: RcptClass; src: string };

/** A multi-line reply as servers send it: "550-5.1.1 a\r\n550-5.1.1 b\r\n550 5.1.1 c\r\n". */
function multi(code: number, enhanced: string | null, lines: string[]): string {
  const pre = enhanced ? ` ${enhanced} ` : " ";
  return lines.map((l, i) => `${code}${i === lines.length - 1 ? pre : pre.replace(/^ /, "-")}${l}`).join("\r\n") + "\r\n";
}

const ROWS: Row[] = [
  // accepted
  { sw: "Postfix", raw: "250 2.1.5 Ok", want: "accepted", src: "P" },
  { sw: "Gmail", raw: "250 2.1.5 OK 41be03b00d2f7-cc4c687ec03si136868a12.335 - gsmtp", want: "accepted", src: "G" },
  { sw: "Microsoft 365", raw: "250 2.1.5 Recipient OK", want: "accepted", src: "M" },
  { sw: "Sendmail", raw: "250 2.1.5 <ana@example.com>... Recipient ok", want: "accepted", src: "X" },
  { sw: "RFC 5321 251", raw: "251 2.1.5 User not local; will forward to <ana@example.org>", want: "accepted", src: "RFC 5321" },
  { sw: "Exim (252)", raw: "252 2.1.5 Cannot VRFY user, but will accept message and attempt delivery", want: "accepted", src: "RFC 5321" },

  // mailbox_not_found
  {
    sw: "Gmail (multi-line)",
    raw: multi(550, "5.1.1", [
      "The email account that you tried to reach does not exist. Please try",
      "double-checking the recipient's email address for typos or",
      "unnecessary spaces. For more information, go to",
      " https://support.google.com/mail/?p=NoSuchUser 41be03b00d2f7-cc4c687ec03si136868a12.335 - gsmtp",
    ]),
    want: "mailbox_not_found",
    src: "G S",
  },
  {
    sw: "Google Workspace (older multi-line)",
    raw: multi(550, "5.1.1", [
      "The email account that you tried to reach does not exist. Please try",
      "double-checking the recipient's email address for typos or",
      "unnecessary spaces. Learn more at",
      "http://support.google.com/mail/bin/answer.py?answer=6596 vw5si4655694pab.333 - gsmtp",
    ]),
    want: "mailbox_not_found",
    src: "X",
  },
  { sw: "Postfix (local)", raw: "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in local recipient table", want: "mailbox_not_found", src: "P" },
  { sw: "Fastmail (Postfix virtual mailbox)", raw: "550 5.1.1 <nobody@fastmail.com>: Recipient address rejected: User unknown in virtual mailbox table", want: "mailbox_not_found", src: "P" },
  { sw: "Postfix (virtual alias)", raw: "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in virtual alias table", want: "mailbox_not_found", src: "R" },
  // "relay" is a policy word, but the user-unknown words are explicit.
  { sw: "Postfix (relay recipient table)", raw: "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in relay recipient table", want: "mailbox_not_found", src: "R" },
  { sw: "Postfix (reject_unverified_recipient)", raw: '550 5.1.1 <nobody@example.com>: Recipient address rejected: undeliverable address: unknown user: "nobody@example.com"', want: "mailbox_not_found", src: "X" },
  { sw: "Fastmail", raw: "550 5.1.1 Sorry, user address unknown", want: "mailbox_not_found", src: "P" },
  { sw: "Exim (verify = recipient)", raw: "550 Unrouteable address", want: "mailbox_not_found", src: "R X" },
  { sw: "Exim (cPanel)", raw: "550 No Such User Here", want: "mailbox_not_found", src: "R" },
  { sw: "Exim (web.de)", raw: "550 Unknown local part nobody in <nobody@web.de>", want: "mailbox_not_found", src: "X" },
  { sw: "Sendmail", raw: "550 5.1.1 <nobody@example.com>... User unknown", want: "mailbox_not_found", src: "X" },
  { sw: "Exchange Server 2013+", raw: "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup", want: "mailbox_not_found", src: "M" },
  { sw: "Exchange Server 2010 (recipient filter)", raw: "550 5.1.1 User unknown", want: "mailbox_not_found", src: "M" },
  {
    sw: "Microsoft 365 (DBEB, AS(201806281))",
    raw: "550 5.4.1 Recipient address rejected: Access denied. AS(201806281) [BN1NAM02FT022.eop-nam02.prod.protection.outlook.com]",
    want: "mailbox_not_found",
    src: "M",
  },
  {
    sw: "Microsoft 365 (DBEB, no AS tag)",
    raw: "550 5.4.1 [nobody@example.com.br]: Recipient address rejected: Access denied [BL2NAM02FT061.eop-nam02.prod.protection.outlook.com]",
    want: "mailbox_not_found",
    src: "M (sisimai/rb-sisimai#77, spamresource.com)",
  },
  {
    sw: "Outlook.com / Hotmail",
    raw: "550 5.5.0 Requested action not taken: mailbox unavailable (S2017062302). [SJ1PEPF000037A2.namprd04.prod.outlook.com 2026-09-10T17:20:46.631Z 08DF0B1332F1DE15]",
    want: "mailbox_not_found",
    src: "M S",
  },
  { sw: "Yahoo", raw: "554 delivery error: dd This user doesn't have a yahoo.com account (nobody@yahoo.com) [0] - mta1010.mail.gq1.yahoo.com", want: "mailbox_not_found", src: "Y" },
  { sw: "AOL (Yahoo, curly apostrophe)", raw: "554 delivery error: dd This user doesn\u2019t have a aol.com account (nobody@aol.com) [-5] - mta1155.mail.ne1.yahoo.com", want: "mailbox_not_found", src: "X" },
  { sw: "iCloud", raw: "550 5.1.1 <nobody@icloud.com>: user does not exist", want: "mailbox_not_found", src: "A" },
  { sw: "iCloud (5.1.6)", raw: "550 5.1.6 recipient no longer on server: nobody@icloud.com", want: "mailbox_not_found", src: "A" },
  { sw: "Zoho", raw: "550 5.1.1 User does not exist - <rcpwt0gy04lubc4qmkpppxr128xgnaef@zoho.com>", want: "mailbox_not_found", src: "S X" },
  {
    sw: "Mimecast",
    raw: "550 Invalid Recipient - https://community.mimecast.com/docs/DOC-1369#550 [aBcDeFgHiJkLmNoPqRsTuV.uk123]",
    want: "mailbox_not_found",
    src: "MC",
  },
  { sw: "Barracuda", raw: "550 No such user (nobody@example.com)", want: "mailbox_not_found", src: "B" },
  { sw: "Barracuda Email Security Service", raw: "550 cuda_nsu 5.1.1 <nobody@example.com> Recipient address rejected: User unknown", want: "mailbox_not_found", src: "B" },
  { sw: "Cisco IronPort (LDAP accept)", raw: "550 #5.1.0 Address rejected nobody@example.com", want: "mailbox_not_found", src: "X (dbmailserver.com, coviserver.de)" },
  { sw: "qmail", raw: "550 sorry, no mailbox here by that name. (#5.1.1)", want: "mailbox_not_found", src: "X" },
  // 5.7.1 is a policy code, but Yandex uses it for unknown users and says so explicitly.
  { sw: "Yandex", raw: "550 5.7.1 No such user! 1789063127-kwTVGUHdeiE0-huj9x1Wr", want: "mailbox_not_found", src: "S" },
  { sw: "Mail.ru", raw: "550 Message was not accepted -- invalid mailbox.  Local mailbox nobody@mail.ru is unavailable: user not found", want: "mailbox_not_found", src: "X" },
  {
    sw: "QQ Mail",
    raw: "550 Mailbox not found. http://service.mail.qq.com/detail/122/169 [MAW77ic63OtZB8WdcrvY/gIHPvUvsXupE8bE5roaPk+ab2Lvf59Ok0394SdGexrgVA== IP: 198.51.100.1]",
    want: "mailbox_not_found",
    src: "S",
  },
  { sw: "NetEase 163", raw: "550 User not found: lyta8y5m8nenxwdkg2vybjw2n2cjg602@163.com", want: "mailbox_not_found", src: "S" },
  { sw: "GMX", raw: "550 5.1.1 <nobody@gmx.net>... User is unknown", want: "mailbox_not_found", src: "X (sitepackage.de)" },
  { sw: "T-Online", raw: "550 5.1.1 user unknown", want: "mailbox_not_found", src: "X (sitepackage.de)" },
  { sw: "Virgin Media", raw: "550 5.1.1 MXIN501 mailbox nobody@virginmedia.com unknown", want: "mailbox_not_found", src: "R" },
  { sw: "Interia", raw: "550 5.1.1 Account not found", want: "mailbox_not_found", src: "X (pomoc.poczta.interia.pl)" },
  // 5.2.1 and "relay=" both pull away, but "Addressee unknown" is explicit.
  { sw: "AT&T (Sendmail)", raw: "550 5.2.1 <NOBODY@PRODIGY.NET>... Addressee unknown, relay=[192.0.2.10]", want: "mailbox_not_found", src: "B (smtp.codes)" },
  {
    sw: "Postfix with a help URL (composite: 'blocked' only inside the URL)",
    raw: "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in virtual mailbox table; see https://mail.example.com/help/why-was-my-mail-blocked.html",
    want: "mailbox_not_found",
    src: "P",
  },
  { sw: "Postfix (bare 5.1.1 text)", raw: "550 5.1.1 <nobody@example.com>: Recipient rejected", want: "mailbox_not_found", src: "R" },
  { sw: "Postfix (bare 5.1.1, RFC 3463 text)", raw: "550 5.1.1 Bad destination mailbox address", want: "mailbox_not_found", src: "X (dbmailserver.com)" },

  // mailbox_full
  {
    sw: "Gmail (552 5.2.2, multi-line)",
    raw: multi(552, "5.2.2", [
      "The email account that you tried to reach is over quota. Please direct",
      "the recipient to",
      " https://support.google.com/mail/?p=OverQuotaPerm a640c23a62f3a-a9a2a7c5e3bsi1.123 - gsmtp",
    ]),
    want: "mailbox_full",
    src: "G",
  },
  {
    // Decision: 452 4.2.2 is "the mailbox exists and is full right now"; mailbox_full scores the
    // same as temporary_failure but carries the truer warning.
    sw: "Gmail (452 4.2.2, OverQuotaTemp, multi-line)",
    raw: multi(452, "4.2.2", [
      "The recipient's inbox is out of storage space. Please direct the",
      "recipient to",
      " https://support.google.com/mail/?p=OverQuotaTemp a640c23a62f3a-a9a2a7c5e3bsi1.124 - gsmtp",
    ]),
    want: "mailbox_full",
    src: "G",
  },
  { sw: "iCloud", raw: "552 5.2.2 <nobody@icloud.com>: user is over quota", want: "mailbox_full", src: "A" },
  { sw: "T-Online", raw: "552 5.2.2 Over STORAGE quota", want: "mailbox_full", src: "X (sitepackage.de)" },
  // "limit exceeded" must not read as a rate limit when the code says 5.2.2.
  { sw: "Yandex", raw: "552 5.2.2 Mailbox size limit exceeded", want: "mailbox_full", src: "X (yandex.com bounces)" },
  { sw: "Exchange Server", raw: "550 5.2.2 Mailbox full", want: "mailbox_full", src: "M" },
  { sw: "RFC 5321 552 / Exim", raw: "552 Requested mail action aborted: exceeded storage allocation", want: "mailbox_full", src: "RFC 5321" },
  { sw: "web.de", raw: "550 Benutzer hat das Speichervolumen ueberschritten. / User has exhausted allowed storage space.", want: "mailbox_full", src: "X (sitepackage.de)" },
  { sw: "bytecamp (Postfix + quota service)", raw: "422 4.2.2 Quota limit exceeded (Speicherplatz des Kontos ueberschritten)", want: "mailbox_full", src: "P (bytecamp.net)" },

  // policy_block
  { sw: "Postfix (reject_unknown_reverse_client_hostname, 5xx)", raw: "550 5.7.1 Client host rejected: cannot find your reverse hostname, [192.0.2.10]", want: "policy_block", src: "P R" },
  {
    sw: "Postfix (reject_rbl_client)",
    raw: "554 5.7.1 Service unavailable; Client host [192.0.2.10] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/192.0.2.10",
    want: "policy_block",
    src: "P",
  },
  { sw: "Postfix (relay)", raw: "554 5.7.1 <nobody@example.net>: Relay access denied", want: "policy_block", src: "P (postalserver/postal#647)" },
  { sw: "Postfix (check_recipient_access REJECT)", raw: "554 5.7.1 <ana@example.com>: Recipient address rejected: Access denied", want: "policy_block", src: "P (RainLoop#2018, Turgon37/docker-smtp-relay#25)" },
  { sw: "mail.fr (access map, no enhanced code)", raw: "550 <ana@example.com>: Recipient address rejected: Access denied", want: "policy_block", src: "X (mail.fr)" },
  // 5.1.0 and "User unknown" — but about our MAIL FROM.
  { sw: "Postfix (reject_unlisted_sender)", raw: "550 5.1.0 <probe@verify.example>: Sender address rejected: User unknown in local recipient table", want: "policy_block", src: "P" },
  {
    sw: "Exim (sender verify at RCPT, multi-line)",
    raw: multi(550, null, ["Verification failed for <probe@verify.example>", "Unrouteable address", "Sender verify failed"]),
    want: "policy_block",
    src: "X",
  },
  { sw: "Fastmail (HELO check)", raw: "501 5.7.1 <localhost>: Helo command rejected: HELO string 'localhost' not accepted, Use a real hostname/ip", want: "policy_block", src: "S" },
  { sw: "Tuta (Postfix HELO check)", raw: "504 5.5.2 <localhost>: Helo command rejected: need fully-qualified hostname", want: "policy_block", src: "S" },
  {
    sw: "Gmail (NotAuthorizedError, multi-line)",
    raw: multi(550, "5.7.1", [
      "[192.0.2.10] The IP you're using to send mail is not authorized to",
      "send email directly to our servers. Please use the SMTP relay at your",
      "service provider instead. Learn more at",
      " https://support.google.com/mail/?p=NotAuthorizedError d9443c01a7336-20b0f1c0a3bsi1.2 - gsmtp",
    ]),
    want: "policy_block",
    src: "G",
  },
  {
    sw: "Gmail (unsolicited, multi-line)",
    raw: multi(550, "5.7.1", [
      "[192.0.2.10] Our system has detected that this message is",
      "likely unsolicited mail. To reduce the amount of spam sent to Gmail,",
      "this message has been blocked. For more information, go to",
      " https://support.google.com/mail/?p=UnsolicitedMessageError d9443c01a7336-20b0f1c0a3bsi1.3 - gsmtp",
    ]),
    want: "policy_block",
    src: "G",
  },
  {
    sw: "Gmail (5.7.25 PTR)",
    raw: "550 5.7.25 The IP address sending this message does not have a PTR record setup, or the corresponding forward DNS entry does not point to the sending IP. As a policy, Gmail does not accept messages from IPs with missing PTR records.",
    want: "policy_block",
    src: "G",
  },
  {
    sw: "Gmail (receiving rate, 5xx)",
    raw: "550 5.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered. For more information, go to https://support.google.com/mail/?p=ReceivingRatePerm - gsmtp",
    want: "policy_block",
    src: "G",
  },
  {
    sw: "Outlook.com (S3150 block list)",
    raw: "550 5.7.1 Unfortunately, messages from [192.0.2.10] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150). You can also refer your provider to http://mail.live.com/mail/troubleshooting.aspx#errors. [AM1EUR03FT012.eop-EUR03.prod.protection.outlook.com]",
    want: "policy_block",
    src: "M",
  },
  {
    sw: "Microsoft 365 (banned sending IP)",
    raw: "550 5.7.606 Access denied, banned sending IP [192.0.2.10]. To request removal from this list please visit https://sender.office.com/ and follow the directions. For more information please go to http://go.microsoft.com/fwlink/?LinkID=526655 AS(1430) [DB5EUR03FT053.eop-EUR03.prod.protection.outlook.com]",
    want: "policy_block",
    src: "M",
  },
  {
    // Only Microsoft's DBEB (AS(201806281) or its protection.outlook.com host) counts as "no such user".
    sw: "Gateway relaying 5.4.1 without Microsoft's tag or host (composite)",
    raw: "550 5.4.1 <ana@example.com>: Recipient address rejected: Access denied",
    want: "policy_block",
    src: "M",
  },
  {
    sw: "Microsoft 365 (5.4.1 with an anti-spam AS code, composite)",
    raw: "550 5.4.1 Recipient address rejected: Access denied. AS(7101) [BN8NAM12FT011.eop-nam12.prod.protection.outlook.com]",
    want: "policy_block",
    src: "M (MicrosoftDocs/OfficeDocs-Exchange#2336)",
  },
  { sw: "Exchange Server", raw: "550 5.7.1 Unable to relay", want: "policy_block", src: "M" },
  { sw: "Exchange Server", raw: "530 5.7.1 Client was not authenticated", want: "policy_block", src: "M" },
  {
    sw: "Yahoo ([BL21] Spamhaus)",
    raw: "553 5.7.1 [BL21] Connections will not be accepted from 192.0.2.10, because the ip is in Spamhaus's list; see http://postmaster.yahoo.com/550-bl23.html",
    want: "policy_block",
    src: "Y",
  },
  {
    sw: "Yahoo ([TSS09])",
    raw: "553 5.7.2 [TSS09] All messages from 192.0.2.10 will be permanently deferred; Retrying will NOT succeed. See https://postmaster.yahooinc.com/error-codes",
    want: "policy_block",
    src: "Y",
  },
  { sw: "Yahoo (policy)", raw: "554 5.7.9 Message not accepted for policy reasons.  See https://postmaster.yahooinc.com/error-codes", want: "policy_block", src: "Y" },
  { sw: "iCloud ([CS01])", raw: "550 5.7.1 [CS01] Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137", want: "policy_block", src: "A" },
  { sw: "iCloud (Proofpoint DNSBL)", raw: "550 5.7.0 Blocked - see https://support.proofpoint.com/dnsbl-lookup.cgi?ip=192.0.2.10", want: "policy_block", src: "A" },
  {
    sw: "iCloud (Spamhaus SBL)",
    raw: "550 5.7.1 Mail from IP 192.0.2.10 was rejected due to listing in Spamhaus SBL. For details please see http://www.spamhaus.org/query/bl?ip=192.0.2.10",
    want: "policy_block",
    src: "A S",
  },
  { sw: "Proofpoint (greeting)", raw: "554 Blocked - see https://ipcheck.proofpoint.com/?ip=192.0.2.10", want: "policy_block", src: "R" },
  {
    sw: "Proofpoint Protection Server",
    raw: "550 5.7.0  Mail from 192.0.2.10 refused by Proofpoint Reputation Services.  SENDER please see and take action: https://support.proofpoint.com/dnsbl-lookup.cgi?192.0.2.10",
    want: "policy_block",
    src: "R",
  },
  {
    sw: "Mimecast (blocked senders)",
    raw: "550 Rejected by header based Blocked Senders - Block policy for Header From - https://community.mimecast.com/docs/DOC-1369#550 [xYz0AbCdEfGhIjKlMnOpQr.us123]",
    want: "policy_block",
    src: "MC",
  },
  {
    sw: "Mimecast (reputation)",
    raw: "550 csi.mimecast.org Poor Reputation Sender. - https://community.mimecast.com/docs/DOC-1369#550 [6ATVl4DjOvSA6XNsWGoUFw.us31]",
    want: "policy_block",
    src: "MC R",
  },
  { sw: "Mimecast (envelope blocked)", raw: "550 Administrative prohibition envelope blocked - https://community.mimecast.com/docs/DOC-1369#550 [AbC123.uk51]", want: "policy_block", src: "MC" },
  {
    sw: "Barracuda (Barracuda Reputation)",
    raw: "554 Service unavailable; Client host [192.0.2.10] blocked using Barracuda Reputation; http://bbl.barracudacentral.com/q.cgi?ip=192.0.2.10",
    want: "policy_block",
    src: "B",
  },
  { sw: "Barracuda Email Security Service", raw: "550 permanent failure for one or more recipients (ana@example.com:blocked)", want: "policy_block", src: "B (suped.com)" },
  { sw: "Barracuda", raw: "550 Blocked", want: "policy_block", src: "B" },
  { sw: "Cisco IronPort (Amazon)", raw: "554 smtp-fw-9107.amazon.com; SBRS score too low: http://www.senderbase.org/", want: "policy_block", src: "R" },
  {
    sw: "Cisco IronPort (HAT reject)",
    raw: "550 #5.7.1 Your access to this mail system has been rejected due to the sending MTA's poor reputation. If you believe that this failure is in error, please contact the intended recipient via alternate means.",
    want: "policy_block",
    src: "R",
  },
  {
    sw: "GMX (greeting, multi-line)",
    raw: multi(554, null, [
      "gmx.net (mxgmx009) Nemesis ESMTP Service not available",
      "No SMTP service",
      "IP address is block listed.",
      "For explanation visit https://postmaster.gmx.net/en/case?c=r0303&i=ip&v=198.51.100.1&r=1N6a0i-1wlEnE2roU-012Max",
    ]),
    want: "policy_block",
    src: "S R",
  },
  {
    sw: "web.de (greeting, multi-line, PTR)",
    raw: multi(554, null, [
      "web.de (mxweb112) Nemesis ESMTP Service not available",
      "No SMTP service",
      "Bad DNS PTR resource record.",
      "For explanation visit https://postmaster.web.de/en/case?c=r0302&i=ip&v=198.51.100.1&r=1MqHYl-1wlEnE2roU-0abcde",
    ]),
    want: "policy_block",
    src: "S (same Nemesis format)",
  },
  { sw: "Yandex (spam)", raw: "554 5.7.1 [2] Message rejected under suspicion of SPAM; https://ya.cc/1IrBc 1789063127-abcdEFGH", want: "policy_block", src: "X (yandex.com bounces)" },
  // Yandex: the recipient's account is blocked for terms violations. Not "no such user".
  { sw: "Yandex (blocked account)", raw: "550 5.7.1 Policy rejection on the target address", want: "policy_block", src: "X (yandex.com bounces)" },
  { sw: "Mail.ru (dynamic IPs)", raw: "550 5.7.1 We do not accept mail from hosts with dynamic IP or generic dns PTR-records", want: "policy_block", src: "X (sisimai Blocked)" },
  { sw: "Mail.ru (spam)", raw: "550 spam message rejected. Please visit http://help.mail.ru/notspam-support/id?c=AbCdEf", want: "policy_block", src: "X" },
  { sw: "Exim (dnslists)", raw: "550 Rejected because 192.0.2.10 is in a black list at zen.spamhaus.org", want: "policy_block", src: "R" },
  {
    sw: "Exim (cPanel, RBL)",
    raw: "550 JunkMail rejected - mail.example.net [192.0.2.10]:46615 is in an RBL: http://www.barracudanetworks.com/reputation/?pr=1&ip=192.0.2.10",
    want: "policy_block",
    src: "R",
  },
  { sw: "Exim", raw: "550 Administrative prohibition", want: "policy_block", src: "X" },
  { sw: "Sendmail (relay)", raw: "550 5.7.1 <nobody@example.net>... Relaying denied. IP name lookup failed [192.0.2.10]", want: "policy_block", src: "R" },
  { sw: "Sendmail (dnsbl feature)", raw: "553 5.3.0 <nobody@example.com>... Spam blocked see: http://spamcop.net/bl.shtml?192.0.2.10", want: "policy_block", src: "X" },
  { sw: "rspamd (milter reject)", raw: "554 5.7.1 Spam message rejected", want: "policy_block", src: "X" },
  { sw: "Zoho (spam)", raw: "554 5.7.1 Email cannot be delivered. Reason: Email flagged as Spam.", want: "policy_block", src: "X (sisimai Zoho)" },
  // A 5.1.1 code with policy wording and no user-unknown words: policy wins.
  { sw: "Zoho (5.1.1 with policy text)", raw: "552 5.1.1 <nobody@zoho.com> Mailbox delivery failure policy error", want: "policy_block", src: "X (sisimai Zoho)" },
  { sw: "Gateway answering DNSBL hits with 5.1.1 (composite)", raw: "550 5.1.1 Rejected - see https://www.spamhaus.org/query/ip/192.0.2.10", want: "policy_block", src: "X" },
  // An IP address that looks like an enhanced code must not be read as one.
  {
    sw: "Postfix (RBL, client IP 5.1.1.9)",
    raw: "554 5.7.1 Service unavailable; Client host [5.1.1.9] blocked using bl.spamcop.net; Blocked - see https://www.spamcop.net/bl.shtml?5.1.1.9",
    want: "policy_block",
    src: "P",
  },
  { sw: "Barracuda (client IP 5.1.1.9, no enhanced code)", raw: "554 Service unavailable; Client host [5.1.1.9] blocked using b.barracudacentral.org", want: "policy_block", src: "B" },
  {
    sw: "Aliyun",
    raw: "554 Reject by behaviour spam at Rcpt State(Connection IP address:198.51.100.1)ANTISPAM_BAT[01201311R846a, maildocker-behaviorspam033068209079]: spf check failedCONTINUE",
    want: "policy_block",
    src: "S",
  },
  { sw: "qmail (rcpthosts)", raw: "553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)", want: "policy_block", src: "X" },
  {
    sw: "Comcast",
    raw: "554 resimta-h1p-037598.sys.comcast.net resimta-h1p-037598.sys.comcast.net 192.0.2.10 found on one or more DNSBLs, see http://postmaster.comcast.net/smtp-error-codes.php#BL000001",
    want: "policy_block",
    src: "R",
  },
  { sw: "Trend Micro", raw: "550 5.7.1 Mail from 192.0.2.10 has been blocked by Trend Micro Email Reputation Service.", want: "policy_block", src: "R" },
  { sw: "AT&T", raw: "550 5.7.1 Connections not accepted from servers without a valid sender domain. ## Fix reverse DNS for 192.0.2.10", want: "policy_block", src: "B (smtp.codes)" },

  // temporary_failure
  {
    sw: "postgrey",
    raw: "450 4.2.0 <nobody@example.com>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.com.html",
    want: "temporary_failure",
    src: "P",
  },
  { sw: "Exim (greylistd)", raw: "451 4.7.1 Please try again later", want: "temporary_failure", src: "brief" },
  { sw: "rspamd (greylist)", raw: "451 4.7.1 Try again later", want: "temporary_failure", src: "X (rspamd/rspamd#1776)" },
  { sw: "Zoho (greylist)", raw: "451 4.7.1 Greylisted, try again after some time", want: "temporary_failure", src: "X (sisimai Zoho)" },
  { sw: "Postfix (reject_unknown_client_hostname, 4xx)", raw: "450 4.7.1 Client host rejected: cannot find your hostname, [192.0.2.10]", want: "temporary_failure", src: "P" },
  // 4xx "User unknown" (soft_bounce / 450 reject code) is still "try later".
  { sw: "Postfix (soft_bounce)", raw: "450 4.1.1 <nobody@example.com>: Recipient address rejected: User unknown in local recipient table", want: "temporary_failure", src: "P" },
  { sw: "Postfix (address verification)", raw: "450 4.1.1 <nobody@example.com>: Recipient address rejected: unverified address: Address verification in progress", want: "temporary_failure", src: "P" },
  { sw: "Postfix", raw: "452 4.3.1 Insufficient system storage", want: "temporary_failure", src: "P" },
  {
    sw: "Gmail (421 unsolicited rate, multi-line)",
    raw: multi(421, "4.7.0", [
      "[192.0.2.10] Our system has detected an unusual rate of",
      "unsolicited mail originating from your IP address. To protect our",
      "users from spam, mail sent from your IP address has been temporarily",
      "rate limited. Please visit",
      " https://support.google.com/mail/?p=UnsolicitedRateLimitError to review our Bulk Email Senders Guidelines. 5b1f17b1804b1-42f8a3c1b2asi1.4 - gsmtp",
    ]),
    want: "temporary_failure",
    src: "G",
  },
  { sw: "Gmail", raw: "421 4.7.0 IP not in whitelist for RCPT domain, closing connection.", want: "temporary_failure", src: "G" },
  { sw: "Gmail", raw: "421 4.7.0 Try again later, closing connection.", want: "temporary_failure", src: "G" },
  {
    sw: "Gmail (receiving too quickly)",
    raw: "450 4.2.1 The user you are trying to contact is receiving mail too quickly. Please resend your message at a later time. - gsmtp",
    want: "temporary_failure",
    src: "G",
  },
  {
    sw: "Outlook.com",
    raw: "451 4.7.500 Server busy. Please try again later from [192.0.2.10]. (S77714) [DB5EUR03FT012.eop-EUR03.prod.protection.outlook.com]",
    want: "temporary_failure",
    src: "M",
  },
  {
    sw: "Outlook.com (IP reputation)",
    raw: "451 4.7.650 The mail server [192.0.2.10] has been temporarily rate limited due to IP reputation. For e-mail delivery information, see https://postmaster.live.com (S775)",
    want: "temporary_failure",
    src: "M",
  },
  {
    sw: "Yahoo ([TSS04])",
    raw: "421 4.7.0 [TSS04] Messages from 192.0.2.10 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes",
    want: "temporary_failure",
    src: "Y",
  },
  { sw: "AOL / Yahoo (FCrDNS)", raw: "450 4.7.25 Forward-confirmed reverse DNS failed", want: "temporary_failure", src: "R (backend docs)" },
  { sw: "iCloud", raw: "421 4.7.1 Messages to nobody@icloud.com deferred due to excessive volume. Try again later - https://support.apple.com/en-us/HT204137", want: "temporary_failure", src: "A" },
  { sw: "Mimecast (greylisting)", raw: "451 Internal resources are temporarily unavailable - https://community.mimecast.com/docs/DOC-1369#451 [xYz0AbCdEf.uk80]", want: "temporary_failure", src: "MC" },
  { sw: "Sendmail", raw: "451 4.1.8 Domain of sender address probe@verify.example does not resolve", want: "temporary_failure", src: "X" },
  { sw: "RFC 5321 421 (greeting)", raw: "421 Service not available, closing transmission channel", want: "temporary_failure", src: "RFC 5321" },

  // too_many_recipients
  {
    sw: "Gmail (multi-line)",
    raw: multi(452, "4.5.3", [
      "Your message has too many recipients. For more information regarding",
      "Google's sending limits, visit",
      " https://support.google.com/mail/?p=TooManyRecipientsError 5b1f17b1804b1-42f8a3c1b2asi1.5 - gsmtp",
    ]),
    want: "too_many_recipients",
    src: "G",
  },
  { sw: "Gmail (policy size)", raw: "452 4.5.3 Domain policy size per transaction exceeded, please try this recipient in a separate transaction.", want: "too_many_recipients", src: "G" },
  { sw: "Postfix (smtpd_recipient_limit)", raw: "452 4.5.3 Error: too many recipients", want: "too_many_recipients", src: "P" },
  { sw: "Microsoft 365", raw: "452 4.5.3 Recipients belong to multiple regions ATTR38 [AMS1EPF0000008F.eurprd05.prod.outlook.com]", want: "too_many_recipients", src: "S" },
  { sw: "Exchange Server", raw: "550 5.5.3 Too many recipients", want: "too_many_recipients", src: "M" },
  { sw: "Mimecast", raw: "452 Too many recipients - https://community.mimecast.com/docs/DOC-1369#452 [AbC123.uk51]", want: "too_many_recipients", src: "MC" },
  { sw: "Sina (5xx rate limit)", raw: "550 Too many recipients.", want: "too_many_recipients", src: "S" },

  // rejected_unclear
  // RFC 5321 gives this text for "mailbox not found, no access, or command rejected for policy
  // reasons": it says nothing either way (GMX/1&1 and old Hotmail send it bare).
  { sw: "GMX / 1&1 / RFC 5321 default text", raw: "550 Requested action not taken: mailbox unavailable", want: "rejected_unclear", src: "RFC 5321, X (newsroom.gmx.net, sitepackage.de)" },
  { sw: "Generic", raw: "550 Rejected", want: "rejected_unclear", src: "brief" },
  { sw: "Generic (RFC 5321 554)", raw: "554 Transaction failed", want: "rejected_unclear", src: "RFC 5321" },
  {
    // A disabled account exists (or existed): not "no such mailbox".
    sw: "Gmail (disabled, multi-line)",
    raw: multi(550, "5.2.1", [
      "The email account that you tried to reach is disabled. Learn more at",
      " https://support.google.com/mail/?p=DisabledUser d9443c01a7336-20b0f1c0a3bsi1.6 - gsmtp",
    ]),
    want: "rejected_unclear",
    src: "G",
  },
  {
    sw: "Yahoo (disabled)",
    raw: "554 delivery error: dd Sorry your message to nobody@yahoo.com cannot be delivered. This account has been disabled or discontinued [#102]. - mta1234.mail.bf1.yahoo.com",
    want: "rejected_unclear",
    src: "Y R",
  },
  { sw: "Yahoo (no longer valid)", raw: "554 delivery error: dd nobody@yahoo.com is no longer valid. [-20] - mta4010.mail.bf1.yahoo.com", want: "rejected_unclear", src: "Y" },
  // 5.1.1, but the words say "inactive", not "does not exist".
  { sw: "iCloud (inactive)", raw: "550 5.1.1 <nobody@icloud.com>: inactive email address", want: "rejected_unclear", src: "A" },
  { sw: "GMX (inactive)", raw: "550 5.2.1 <nobody@gmx.net>... User is inactive", want: "rejected_unclear", src: "X (sitepackage.de)" },
  { sw: "Lycos", raw: "550 <nobody@lycos.com>: Recipient address rejected: Account Closed", want: "rejected_unclear", src: "X (sitepackage.de)" },
  {
    sw: "Gmail (5.1.2 domain)",
    raw: "553 5.1.2 We weren't able to find the recipient domain. Please check for any spelling errors, and make sure you didn't enter any spaces, periods, or other punctuation after the recipient's email address.",
    want: "rejected_unclear",
    src: "G",
  },
  // 5.1.1 but about the domain: DNS already said the domain takes mail.
  { sw: "Postfix relay (5.1.1 about the domain, composite)", raw: "550 5.1.1 <ana@example.com>: Recipient address rejected: Domain not found", want: "rejected_unclear", src: "P" },
  { sw: "Exchange Server (5.1.3 syntax)", raw: "550 5.1.3 STOREDRV.Submit; invalid recipient address", want: "rejected_unclear", src: "M" },
  { sw: "Postfix postscreen", raw: "550 5.3.2 Service currently unavailable", want: "rejected_unclear", src: "P" },
  { sw: "Zoho", raw: "541 5.4.1 Mail rejected by destination domain", want: "rejected_unclear", src: "X (sisimai Zoho)" },
  { sw: "Interia", raw: "550 5.2.1 Mailbox not available", want: "rejected_unclear", src: "X (pomoc.poczta.interia.pl)" },
  { sw: "RFC 5321 551", raw: "551 User not local; please try <ana@example.org>", want: "rejected_unclear", src: "RFC 5321" },
  // Fastmail's help said this "actually means the user doesn't exist": the words do not, so no.
  { sw: "Fastmail (old LMTP proxy)", raw: "554 5.0.0 Unexpected internal error", want: "rejected_unclear", src: "P (fastimap.com help)" },
  { sw: "3xx to RCPT (protocol oddity)", raw: "354 Start mail input; end with <CRLF>.<CRLF>", want: "rejected_unclear", src: "RFC 5321" },
];

function parse(raw: string): SmtpReply {
  const wire = /\r?\n$/.test(raw) ? raw : `${raw}\r\n`;
  const replies = new ReplyReader().push(Buffer.from(wire, "utf8"));
  expect(replies).toHaveLength(1);
  return replies[0]!;
}

const CLASSES: RcptClass[] = [
  "accepted",
  "mailbox_not_found",
  "mailbox_full",
  "policy_block",
  "temporary_failure",
  "too_many_recipients",
  "rejected_unclear",
];

describe("outcomeOfRcptClass", () => {
  it("answers each class as itself, and too many recipients (a first RCPT the server takes none at all for now) as a temporary failure", () => {
    expect(Object.fromEntries(CLASSES.map((c) => [c, outcomeOfRcptClass(c)]))).toEqual({
      accepted: "accepted",
      mailbox_not_found: "mailbox_not_found",
      mailbox_full: "mailbox_full",
      policy_block: "policy_block",
      temporary_failure: "temporary_failure",
      too_many_recipients: "temporary_failure",
      rejected_unclear: "rejected_unclear",
    });
  });
});

describe("classifyRcptReply: real-world replies", () => {
  it("has at least 70 rows and covers every class", () => {
    expect(ROWS.length).toBeGreaterThanOrEqual(70);
    for (const c of CLASSES) expect(ROWS.filter((r) => r.want === c).length, c).toBeGreaterThanOrEqual(5);
  });

  it.each(ROWS.map((r) => [r.want, r.sw, r.raw.split("\r\n")[0]!.slice(0, 70), r] as const))(
    "%s <- %s: %s",
    (_want, _sw, _head, row) => {
      const reply = parse(row.raw);
      expect(classifyRcptReply(reply)).toBe(row.want);
    },
  );

  it("reads multi-line replies through the reader (Gmail repeats the enhanced code on every line)", () => {
    const gmail = parse(ROWS.find((r) => r.sw === "Gmail (multi-line)")!.raw);
    expect(gmail.code).toBe(550);
    expect(gmail.enhanced).toBe("5.1.1");
    expect(gmail.lines).toHaveLength(4);
    expect(gmail.text).not.toContain("5.1.1");
    expect(gmail.text).toContain("does not exist. Please try double-checking");
  });

  it("takes the plain Pick<SmtpReply> as well as a parsed reply", () => {
    expect(classifyRcptReply({ code: 550, enhanced: "5.1.1", text: "Bad destination mailbox address" })).toBe("mailbox_not_found");
    expect(classifyRcptReply({ code: 550, enhanced: null, text: "" })).toBe("rejected_unclear");
    expect(classifyRcptReply({ code: 451, enhanced: null, text: "" })).toBe("temporary_failure");
  });
});

describe("classifyRcptReply: properties", () => {
  const tableTexts = ROWS.map((r) => parse(r.raw).text);
  const anyText = fc.oneof(
    fc.constantFrom(...tableTexts),
    fc.string(),
    fc.constantFrom("User unknown", "blocked using zen.spamhaus.org", "Recipient address rejected: Access denied. AS(201806281)", "over quota"),
  );
  const enhancedOf = (cls: number) =>
    fc.option(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 999 })).map(([s, d]) => `${cls}.${s}.${d}`), { nil: null });

  it("a 4xx is never mailbox_not_found or policy_block (only temporary, full or too-many)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 499 }), enhancedOf(4), anyText, (code, enhanced, text) => {
        expect(["temporary_failure", "mailbox_full", "too_many_recipients"]).toContain(classifyRcptReply({ code, enhanced, text }));
      }),
      { numRuns: 2000 },
    );
  });

  it("every table row re-sent as a 4xx is temporary (or full / too many), never a verdict", () => {
    for (const row of ROWS) {
      const r = parse(row.raw);
      const enhanced = r.enhanced ? `4${r.enhanced.slice(1)}` : null;
      for (const code of [421, 450, 451, 452]) {
        expect(["temporary_failure", "mailbox_full", "too_many_recipients"], row.sw).toContain(classifyRcptReply({ code, enhanced, text: r.text }));
      }
    }
  });

  it("any 2xx is accepted, whatever the text", () => {
    fc.assert(
      fc.property(fc.integer({ min: 200, max: 299 }), enhancedOf(2), anyText, (code, enhanced, text) => {
        expect(classifyRcptReply({ code, enhanced, text })).toBe("accepted");
      }),
      { numRuns: 1000 },
    );
  });

  it("matching ignores case", () => {
    for (const row of ROWS) {
      const r = parse(row.raw);
      expect(classifyRcptReply({ ...r, text: r.text.toUpperCase() }), row.sw).toBe(row.want);
      expect(classifyRcptReply({ ...r, text: r.text.toLowerCase() }), row.sw).toBe(row.want);
    }
  });

  it("policy wording next to a bare 5.1.1 (no user-unknown words) never gives mailbox_not_found", () => {
    const policy = [
      "blocked using zen.spamhaus.org",
      "see https://www.spamcop.net/bl.shtml?192.0.2.10",
      "Client host rejected: cannot find your reverse hostname",
      "poor reputation",
      "Relay access denied",
      "listed at b.barracudacentral.org",
      "rate limited",
      "rejected by policy",
      "Access denied",
      "spam",
      "https://ipcheck.proofpoint.com/?ip=192.0.2.10",
    ];
    fc.assert(
      fc.property(fc.constantFrom(...policy), fc.constantFrom("550", "553", "554"), fc.boolean(), (p, code, before) => {
        const text = before ? `${p} - Recipient rejected` : `<ana@example.com>: Recipient rejected; ${p}`;
        expect(classifyRcptReply({ code: Number(code), enhanced: "5.1.1", text })).not.toBe("mailbox_not_found");
      }),
    );
  });

  it("an explicit user-unknown phrase keeps mailbox_not_found even with a blocklist URL appended", () => {
    const explicit = ROWS.filter((r) => r.want === "mailbox_not_found" && !r.sw.includes("DBEB") && !r.sw.startsWith("Outlook.com") && !/^5\d\d[ -]5\.1\.(?:1|6|10) |#5\./.test(r.raw))
      .map((r) => parse(r.raw));
    expect(explicit.length).toBeGreaterThan(10);
    for (const r of explicit) {
      expect(classifyRcptReply({ ...r, text: `${r.text} https://www.spamhaus.org/lookup/` })).toBe("mailbox_not_found");
    }
  });

  it("is deterministic and pure (same input, same answer; input untouched)", () => {
    for (const row of ROWS) {
      const r = parse(row.raw);
      const copy = { ...r, lines: [...r.lines] };
      expect(classifyRcptReply(r)).toBe(classifyRcptReply(r));
      expect(r).toEqual(copy);
    }
  });
});
