/**
 * Over 400 lines: one table on purpose. Who runs an MX host, the family that follows from it, and how that
 * family may be probed are one rule, decided once; split, two suffix tables said half of it twice.
 *
 * Who receives an address's mail, and how it may be probed: one table, read by the Worker and the probe alike.
 *
 * - MX_SUFFIXES: an MX host name suffix -> the provider that runs it (`details.mx_provider`, docs/api.md
 *   "details") and, where one provider runs receivers that behave differently, the receiver family of that name.
 * - MX_PROVIDERS: a provider -> its receiver family and its columns (rcptProvesNothing).
 * - RECEIVER_POLICIES: a family -> how it may be probed (docs/probe.md "Receiver policy"): whether a RCPT there
 *   may be sent at all, how its unknown-recipient budget is keyed and sized, how fast and how wide the probe may
 *   talk to it, and which replies mean "back off" or "stop". Data, one row a family, each number tied to its
 *   evidence (../shared/research/provider-limits.md in the team folder, "§" below). Numbers marked THIN rest on
 *   no published threshold: a conservative guess to be tuned by measurement.
 *
 * One matcher reads the suffixes (receiverOfHost): a suffix matches the host itself or any name below it, by whole
 * labels (`google.com` matches `aspmx.l.google.com`, not `mx.notgoogle.com`), and the longest suffix wins, so a
 * narrower row refines a broader one. The suffixes come from each provider's published MX names (its setup guide
 * for custom domains, or the MX records of its own consumer domains); add a row when a provider is missing.
 *
 * Who reads what: the Worker answers the families that are not probed (`probe`) without a conversation and spreads
 * the big families over the fleet (`fleetSpread`), from this compiled table; the probe applies the rest. Operators
 * may override a family's other fields at the probe (PROBE_RECEIVER_POLICY, probe/config.ts), not these two nor
 * the suffixes: the Worker would never see such an override, so the probe refuses it at start.
 */

/** A provider's columns. */
export type MxProviderRow = {
  /** The receiver family of its MX hosts (RECEIVER_POLICIES), unless a suffix row names another. */
  family: ReceiverFamily;
  /**
   * RCPT proves nothing here: its servers accept every recipient at RCPT time (Yahoo; most Microsoft 365 tenants,
   * which refuse unknown users only after the message, by bounce, unless Directory-Based Edge Blocking is on), so
   * only the catch-all test (a random address) tells an accepting tenant apart.
   */
  rcptProvesNothing: boolean;
};

/** A provider with no family of its own: its MX hosts are probed as self-hosted servers. */
const SELF_HOSTED_PROVIDER: MxProviderRow = { family: "self-hosted", rcptProvesNothing: false };
/** A security gateway in front of the mailboxes, with a family row of its own under the same name. */
const gatewayProvider = (family: ReceiverFamily): MxProviderRow => ({ family, rcptProvesNothing: false });

export const MX_PROVIDERS = {
  // Mailbox providers
  google: { family: "google", rcptProvesNothing: false },
  // Exchange Online Protection (Microsoft 365) unless its suffix row says otherwise.
  microsoft: { family: "microsoft-eop", rcptProvesNothing: true },
  yahoo: { family: "yahoo", rcptProvesNothing: true },
  apple: SELF_HOSTED_PROVIDER,
  zoho: SELF_HOSTED_PROVIDER,
  fastmail: SELF_HOSTED_PROVIDER,
  proton: SELF_HOSTED_PROVIDER,
  yandex: SELF_HOSTED_PROVIDER,
  mailru: SELF_HOSTED_PROVIDER,
  gmx: SELF_HOSTED_PROVIDER,
  webde: SELF_HOSTED_PROVIDER,
  ionos: SELF_HOSTED_PROVIDER,
  ovh: SELF_HOSTED_PROVIDER,
  godaddy: SELF_HOSTED_PROVIDER,
  rackspace: SELF_HOSTED_PROVIDER,
  namecheap: SELF_HOSTED_PROVIDER,
  tuta: SELF_HOSTED_PROVIDER,
  qq: SELF_HOSTED_PROVIDER,
  netease: SELF_HOSTED_PROVIDER,
  naver: SELF_HOSTED_PROVIDER,
  seznam: SELF_HOSTED_PROVIDER,
  gandi: SELF_HOSTED_PROVIDER,
  amazon: SELF_HOSTED_PROVIDER,
  // Security gateways in front of the mailboxes
  proofpoint: gatewayProvider("proofpoint"),
  mimecast: gatewayProvider("mimecast"),
  barracuda: gatewayProvider("barracuda"),
  cisco: gatewayProvider("cisco"),
  trendmicro: gatewayProvider("trendmicro"),
  symantec: gatewayProvider("symantec"),
  forcepoint: gatewayProvider("forcepoint"),
  sophos: gatewayProvider("sophos"),
  hornetsecurity: SELF_HOSTED_PROVIDER,
  spamhero: SELF_HOSTED_PROVIDER,
  mailgun: SELF_HOSTED_PROVIDER,
  sendgrid: SELF_HOSTED_PROVIDER,
} as const satisfies Record<string, MxProviderRow>;
export type MxProvider = keyof typeof MX_PROVIDERS;

/** The MX host name suffixes: suffix, provider, and the family where it is not the provider's. */
export const MX_SUFFIXES: readonly (readonly [suffix: string, provider: MxProvider, family?: ReceiverFamily])[] = [
  // Mailbox providers
  ["google.com", "google"],
  ["googlemail.com", "google"],
  ["smtp.goog", "google"],
  // §2a: Exchange Online Protection refuses unknown users at RCPT only with Directory-Based Edge Blocking.
  ["protection.outlook.com", "microsoft"],
  ["mail.protection.outlook.com", "microsoft"],
  ["mail.eo.outlook.com", "microsoft"],
  // §2b: Outlook.com's consumer mail (hotmail.com, outlook.com, live.com addresses) forbids verifying without sending.
  ["olc.protection.outlook.com", "microsoft", "outlook-consumer"],
  // No family row covers other hosts under these names: probed as self-hosted servers.
  ["outlook.com", "microsoft", "self-hosted"],
  ["hotmail.com", "microsoft", "self-hosted"],
  ["yahoodns.net", "yahoo"],
  ["yahoo.com", "yahoo"],
  ["icloud.com", "apple"],
  ["me.com", "apple"],
  ["zoho.com", "zoho"],
  ["zoho.eu", "zoho"],
  ["zoho.in", "zoho"],
  ["zoho.com.au", "zoho"],
  ["zohomail.com", "zoho"],
  ["messagingengine.com", "fastmail"],
  ["fastmail.com", "fastmail"],
  ["protonmail.ch", "proton"],
  ["proton.me", "proton"],
  ["yandex.net", "yandex"],
  ["yandex.ru", "yandex"],
  ["mail.ru", "mailru"],
  ["gmx.net", "gmx"],
  ["gmx.com", "gmx"],
  ["web.de", "webde"],
  ["kundenserver.de", "ionos"],
  ["ionos.com", "ionos"],
  ["ionos.de", "ionos"],
  ["ionos.co.uk", "ionos"],
  ["ionos.fr", "ionos"],
  ["ionos.es", "ionos"],
  ["1and1.com", "ionos"],
  ["ovh.net", "ovh"],
  ["ovh.ca", "ovh"],
  ["secureserver.net", "godaddy"],
  ["emailsrvr.com", "rackspace"],
  ["privateemail.com", "namecheap"],
  ["registrar-servers.com", "namecheap"],
  ["tutanota.de", "tuta"],
  ["qq.com", "qq"],
  ["163.com", "netease"],
  ["naver.com", "naver"],
  ["seznam.cz", "seznam"],
  ["gandi.net", "gandi"],
  ["amazonaws.com", "amazon"],
  ["awsapps.com", "amazon"],
  // Security gateways in front of the mailboxes
  ["pphosted.com", "proofpoint"],
  ["ppe-hosted.com", "proofpoint"],
  ["mimecast.com", "mimecast"],
  ["mimecast.co.za", "mimecast"],
  ["mimecast-offshore.com", "mimecast"],
  ["barracudanetworks.com", "barracuda"],
  ["barracuda.com", "barracuda"],
  ["iphmx.com", "cisco"],
  ["trendmicro.com", "trendmicro"],
  ["trendmicro.eu", "trendmicro"],
  ["messagelabs.com", "symantec"],
  ["mailcontrol.com", "forcepoint"],
  ["sophos.com", "sophos"],
  ["hornetsecurity.com", "hornetsecurity"],
  ["spamh.com", "spamhero"],
  ["mailgun.org", "mailgun"],
  ["sendgrid.net", "sendgrid"],
];

export const RECEIVER_FAMILIES = [
  "google",
  "microsoft-eop",
  "outlook-consumer",
  "yahoo",
  "cisco",
  "forcepoint",
  "trendmicro",
  "symantec",
  "sophos",
  "mimecast",
  "proofpoint",
  "barracuda",
  "self-hosted",
] as const;
export type ReceiverFamily = (typeof RECEIVER_FAMILIES)[number];

/**
 * What a reply means for the family: `pause` the budget key for `seconds` (doubling on repeats, up to
 * `maxSeconds`), or `stop` it for `seconds` and alert (a block, a ban: a person must look).
 */
export type ReplyRule = {
  /** The reply code, or its first digit ("4" for every 4xx). */
  code: number | "4" | "5";
  /** A prefix of the enhanced status code ("4.7.28", "4.7.5"), when it must match. */
  enhanced?: string;
  /** Words the reply text must contain (case-insensitive), when they must. */
  text?: string;
  action: "pause" | "stop";
  seconds: number;
  maxSeconds?: number;
  /** The reply says the receiver has been accepting unknown users silently: what it accepted since its last refusal is not trusted (docs/probe.md "Receiver policy"). */
  untrustsAccepted?: boolean;
  /**
   * A stop only where probe/policy/block.ts judges the reply a block (a generic 5.7.1 is also a mailbox's own answer, and
   * a tenant's block reaches its domain only: issue 44); `seconds` is then the block's length.
   */
  judged?: boolean;
};

export type ReceiverPolicy = {
  family: ReceiverFamily;
  /**
   * yes: probe at RCPT. forbidden: the receiver's published policy forbids verifying without sending
   * (answered without a conversation, `provider_forbids_probing`). accepts_all: RCPT accepts every
   * address there, so a probe spends reputation for no answer (answered as the catch-all it behaves as).
   */
  probe: "yes" | "forbidden" | "accepts_all";
  /**
   * What the receiver counts by: our sending IP and the family (google, microsoft: they throttle the
   * sender's IP whichever of their MX addresses it reaches), or our sending IP and the MX address
   * (gateways and self-hosted servers count per connecting host).
   */
  budgetKey: "probe_ip_family" | "probe_ip_destination";
  /** The sliding window of the unknown share, seconds. */
  windowSeconds: number;
  /** The largest share of unknown users in the window... */
  unknownRatio: number;
  /** ...judged once this many RCPTs were sent in it... */
  minSample: number;
  /** ...and once more unknown users than this are expected in it: below, no receiver of the family reacts. */
  unknownFloor: number;
  /** Unknown-user refusals per hour per budget key (before warm-up). */
  unknownPerHour: number;
  /** Unknown-user refusals per hour for the probe's whole /24 (google only: its 421 4.7.28 names the netblock); 0: none. */
  netblockUnknownPerHour: number;
  /** SMTP sessions open at once per probe IP to the whole family (probe_ip_family) or to one address. */
  sessionsPerIp: number;
  /** RCPT commands per second per probe IP to the family (or to one address). */
  rcptPerSecond: number;
  /** RCPTs in one transaction, the catch-all test's included. */
  rcptsPerTransaction: number;
  /** Recipient domains in one transaction; 0: any number. */
  domainsPerTransaction: number;
  /** Domains of the family whose catch-all answer is known (not catch-all): no random address is sent there. */
  knownNotCatchAll: readonly string[];
  /** A new probe IP starts at this fraction of the hourly cap and RCPT rate and grows at most 1.5x a day; 1: no warm-up. */
  warmupStart: number;
  /**
   * The RCPT rate of a warming probe IP grows WARMUP_STEP_GROWTH times per this many seconds of sending, from
   * warmupStart to the row's rate (the hourly cap grows by the day, WARMUP_DAILY_GROWTH); 86,400: by the day too.
   */
  warmupStepSeconds: number;
  /** Spread one domain's addresses over the healthy probes (rendezvous on the address): a family keyed by probe IP. */
  fleetSpread: boolean;
  /**
   * How long a block of our IP lasts here (the family's documented block time): a refusal that names our IP, our
   * reputation or a policy (probe/policy/block.ts) stops the budget key this long; nothing is sent there meanwhile.
   */
  blockSeconds: number;
  /**
   * How long a session with work waiting on pacing is kept open between transactions, a NOOP every
   * SESSION_KEEPALIVE_SECONDS keeping it alive: below the receiver's own idle limit (RFC 5321 4.5.3.2.7 gives a
   * server at least 5 minutes; Postfix under stress 10 s, which the NOOP covers), and long enough for the pacing
   * gap, so a paced receiver sees one session carry many RCPTs instead of a stream of short connections.
   */
  sessionIdleSeconds: number;
  /**
   * How long one session is reused at most (Postfix's smtp_connection_reuse_time_limit, 300 s by default): at a paced
   * receiver a session carries a minute's few RCPTs, so a longer reuse is what keeps connections per RCPT low; at
   * self-hosted servers PROBE_SESSION_MAX_AGE_MS (60 s) rules, and the longer of the two applies.
   */
  sessionMaxAgeSeconds: number;
  replies: readonly ReplyRule[];
};

/** A kept session sends NOOP this often while it waits (Postfix's smtpd_timeout under stress is 10 s). */
export const SESSION_KEEPALIVE_SECONDS = 8;

/**
 * The rule a destination keeps for ever once it blocked us for harvesting (issue 36 item 2, docs/probe.md "What is
 * learned"): the gateways' 60 s share (Forcepoint blocks past half of at least 20 in 60 s) and Cisco's hourly cap,
 * whichever of the row's own limits is stricter wins.
 */
export const LEARNED_HARVEST_RULE = { windowSeconds: 60, unknownRatio: 0.3, minSample: 10, unknownFloor: 9, unknownPerHour: 10 } as const;
/** A throttle (a 421 or 4.7.x rate reply) multiplies the learned RCPT rate by this, down to LEARNED_MIN_RATE_FACTOR. */
export const LEARNED_THROTTLE_FACTOR = 0.5;
export const LEARNED_MIN_RATE_FACTOR = 1 / 16;

/**
 * Greeting banners of mail server software that counts a client's errors per session (research §4: Postfix's
 * smtpd_soft_error_limit and smtpd_hard_error_limit, Exim's ACLs on $rcpt_fail_count, per connection, Exchange's tarpit
 * per session), never as a share over a window: a self-hosted destination that greets as one of them, and has never
 * blocked us, needs no 60 s share (the session rotation below their limits and the hourly cap still hold). A gateway
 * can greet with any name: one that lies and blocks us costs that one block, which is then learned for good
 * (LEARNED_HARVEST_RULE) and never answers a customer (the lines wait).
 */
export const PER_SESSION_COUNTING_BANNERS: readonly RegExp[] = [/\bESMTP Postfix\b/i, /\bESMTP Exim\b/i, /Microsoft ESMTP MAIL Service/i];

/**
 * Where the greeting names nothing (`smtpd_banner = $myhostname ESMTP`, as hardening guides advise), the same software is
 * known by how it answers (issue 44 item 4, docs/probe.md "Software known by how it answers"), evidence of the same
 * weight as a greeting that names it, and as easily imitated, so it loosens only what a greeting would and a block
 * takes it back the same way:
 * - Postfix's EHLO: its extensions in the fixed order smtpd.c writes them (ehlo_cmd), with ETRN, ENHANCEDSTATUSCODES
 *   and DSN among them (Postfix's defaults; Exim and Exchange advertise no ETRN by default);
 * - Exchange's EHLO: its own X- extensions (X-ANONYMOUSTLS, XEXCH50, XRDST, X-EXPS); Exim's: PRDR or PIPE_CONNECT.
 * Not an unknown user refused in Postfix's words ("User unknown in virtual mailbox table"): a gateway in front of a
 * Postfix relays them (recipient verification, call-ahead), so they name the backend, not who counts our errors.
 */
export const POSTFIX_EHLO_ORDER: readonly string[] = ["PIPELINING", "SIZE", "VRFY", "ETRN", "STARTTLS", "AUTH", "XCLIENT", "XFORWARD", "ENHANCEDSTATUSCODES", "8BITMIME", "DSN", "SMTPUTF8", "CHUNKING"];
export const POSTFIX_EHLO_REQUIRED: readonly string[] = ["ETRN", "ENHANCEDSTATUSCODES", "DSN"];
export const PER_SESSION_COUNTING_EHLO: readonly string[] = ["X-ANONYMOUSTLS", "XEXCH50", "XRDST", "X-EXPS", "PRDR", "PIPE_CONNECT", "X_PIPE_CONNECT"];

/** The day-over-day growth of a warming probe IP: Google warns that doubling volumes "could result in rate limiting". */
export const WARMUP_DAILY_GROWTH = 1.5;
/** The step-over-step growth of a warming probe IP's RCPT rate (one step: the row's warmupStepSeconds of sending). */
export const WARMUP_STEP_GROWTH = 1.5;

/**
 * Postfix's smtpd_hard_error_limit (§4 Postfix): "421 ... too many errors" means we already went past
 * its soft limit; pause the address an hour. A 5.7.1 at RCPT is often about one recipient there, so
 * it stops nothing (a refused greeting or MAIL FROM already marks the address dead: pacing.ts).
 */
const SELF_HOSTED_REPLIES: readonly ReplyRule[] = [{ code: 421, text: "too many errors", action: "pause", seconds: 3_600 }];

/** Gateways: "Too many invalid recipients" (Cisco's DHAP drop, §4) means the hour's 250s are suspect. */
const GATEWAY_REPLIES: readonly ReplyRule[] = [
  { code: 550, text: "too many invalid recipients", action: "stop", seconds: 4_200, untrustsAccepted: true },
  { code: 554, enhanced: "5.7.1", action: "stop", seconds: 86_400, judged: true },
  { code: "4", action: "pause", seconds: 900, maxSeconds: 14_400 },
];

/** A gateway row: per destination address, 60 s ratio as today's rule, a tight hourly cap, one session. */
function gateway(family: ReceiverFamily, unknownPerHour: number, replies = GATEWAY_REPLIES, blockSeconds = 86_400): ReceiverPolicy {
  return {
    family,
    probe: "yes",
    budgetKey: "probe_ip_destination",
    windowSeconds: 60,
    unknownRatio: 0.3,
    minSample: 10,
    // Forcepoint blocks past half of at least 20 recipients in 60 s (≥ 11 unknown): 9 never reaches it.
    unknownFloor: 9,
    unknownPerHour,
    netblockUnknownPerHour: 0,
    sessionsPerIp: 1,
    // ≤ 10 RCPT a minute per destination (§8 gateways).
    rcptPerSecond: 10 / 60,
    rcptsPerTransaction: 5,
    domainsPerTransaction: 0,
    knownNotCatchAll: [],
    warmupStart: 1,
    warmupStepSeconds: 86_400,
    fleetSpread: false,
    blockSeconds,
    // A paced gateway (10 RCPTs a minute) waits 30 s between bursts of 5: the session outlives that gap.
    sessionIdleSeconds: 45,
    sessionMaxAgeSeconds: 300,
    replies,
  };
}

/**
 * A family the probe never dials: its budget fields are never read (kept at the most cautious values,
 * should this table ever turn probing on); its reply rules still say what its block looks like.
 */
function notProbed(family: ReceiverFamily, probe: "forbidden" | "accepts_all", replies: readonly ReplyRule[]): ReceiverPolicy {
  return {
    family,
    probe,
    budgetKey: "probe_ip_family",
    windowSeconds: 3_600,
    unknownRatio: 0.3,
    minSample: 10,
    unknownFloor: 0,
    // §8: "if forced: ≤ 10 per B per hour", one RCPT per transaction, one connection.
    unknownPerHour: 10,
    netblockUnknownPerHour: 0,
    sessionsPerIp: 1,
    rcptPerSecond: 0.1,
    rcptsPerTransaction: 1,
    domainsPerTransaction: 1,
    knownNotCatchAll: [],
    warmupStart: 1,
    warmupStepSeconds: 86_400,
    fleetSpread: false,
    blockSeconds: 86_400,
    sessionIdleSeconds: 5,
    sessionMaxAgeSeconds: 60,
    replies,
  };
}

export const RECEIVER_POLICIES: readonly ReceiverPolicy[] = [
  {
    // §1, §8 google. Google publishes no harvest threshold; its 421 4.7.28 names "your IP address" and
    // "your IP Netblock", so the budget is per probe IP and family, and per /24. 1,000 unknown an hour,
    // 1.5 RCPT/s and 2 sessions are THIN (one 2019 anecdote: ~200 checks in 30-60 min, then failures).
    family: "google",
    probe: "yes",
    budgetKey: "probe_ip_family",
    windowSeconds: 3_600,
    // An anomaly guard borrowed from Forcepoint's 50% (§8): Google publishes no ratio.
    unknownRatio: 0.5,
    minSample: 200,
    unknownFloor: 100,
    unknownPerHour: 1_000,
    netblockUnknownPerHour: 1_000,
    sessionsPerIp: 2,
    rcptPerSecond: 1.5,
    // No inbound figure is published; 20 is the probe's own default.
    rcptsPerTransaction: 20,
    // 451 4.3.0 "Multiple destination domains per transaction is unsupported" [official].
    domainsPerTransaction: 1,
    // gmail.com is not catch-all (Reacher's SkipCatchAll); Workspace domains may be, so they are tested.
    knownNotCatchAll: ["gmail.com", "googlemail.com"],
    // "immediately doubling previously sent volumes suddenly could result in rate limiting" [official]: the
    // hourly cap (volume) grows 1.5x a day. The RCPT rate is no volume: it starts at a fifth and grows 1.5x every
    // 30 s of sending ("send at a consistent rate, avoid bursts" [official]: no step more than half again the one
    // before), so 1.5 RCPT/s (90 a minute, below the 120 a minute past which the observed throttle starts and the
    // per-mailbox 60 a minute Google publishes, since a list's RCPTs spread over mailboxes) is reached in 2 minutes.
    warmupStart: 0.2,
    warmupStepSeconds: 30,
    fleetSpread: true,
    // 550 5.7.1 "unsolicited mail ... has been blocked": a day (§8).
    blockSeconds: 86_400,
    // Google's inbound MX keeps an idle session for minutes (RFC 5321's 5); 60 s covers any pacing gap.
    sessionIdleSeconds: 60,
    sessionMaxAgeSeconds: 300,
    replies: [
      // 421 4.7.28 / 4.7.0 "rate limited" or "blocked": pause 30 min, doubling to a day.
      { code: 421, enhanced: "4.7.28", action: "pause", seconds: 1_800, maxSeconds: 86_400 },
      { code: 421, enhanced: "4.7.0", action: "pause", seconds: 1_800, maxSeconds: 86_400 },
      // 421 4.4.5 "Server busy", 421 4.3.0: retry within minutes.
      { code: 421, enhanced: "4.4.5", action: "pause", seconds: 300, maxSeconds: 900 },
      { code: 421, enhanced: "4.3.0", action: "pause", seconds: 300, maxSeconds: 900 },
      // 550 5.7.1 "unsolicited mail ... has been blocked": stop a day and alert.
      { code: 550, enhanced: "5.7.1", action: "stop", seconds: 86_400 },
    ],
  },
  {
    // §2a. EOP refuses unknown users at RCPT only with Directory-Based Edge Blocking; 452 4.5.3 on the
    // second RCPT of a transaction (AS780090, verifiers' reports); 451 4.7.500-699 when a sending IP's
    // pattern "changes significantly". 500 unknown an hour and 5 sessions are THIN.
    family: "microsoft-eop",
    probe: "yes",
    budgetKey: "probe_ip_family",
    windowSeconds: 3_600,
    unknownRatio: 0.5,
    minSample: 50,
    unknownFloor: 25,
    unknownPerHour: 500,
    netblockUnknownPerHour: 0,
    sessionsPerIp: 5,
    // ≤ 1 transaction a second, and a transaction is one RCPT.
    rcptPerSecond: 1,
    rcptsPerTransaction: 1,
    domainsPerTransaction: 1,
    knownNotCatchAll: [],
    warmupStart: 0.2,
    // 4.7.500-699 fires on a "significant" change from a sending IP's pattern over "a few days" [official]: by the day.
    warmupStepSeconds: 86_400,
    fleetSpread: true,
    // Banned sending IP: a day, then the delist workflow (§8).
    blockSeconds: 86_400,
    sessionIdleSeconds: 60,
    sessionMaxAgeSeconds: 300,
    replies: [
      { code: 451, enhanced: "4.7.5", action: "pause", seconds: 3_600, maxSeconds: 86_400 },
      { code: 451, enhanced: "4.7.6", action: "pause", seconds: 3_600, maxSeconds: 86_400 },
      { code: 451, enhanced: "4.7.8", action: "pause", seconds: 86_400 },
      { code: 421, enhanced: "4.3.2", action: "pause", seconds: 300, maxSeconds: 900 },
      { code: 451, enhanced: "4.4.4", action: "pause", seconds: 300, maxSeconds: 900 },
      // Banned sending IP, banned sender, traffic not accepted: stop and alert.
      { code: 550, enhanced: "5.7.6", action: "stop", seconds: 86_400 },
      { code: 550, enhanced: "5.7.511", action: "stop", seconds: 86_400 },
      { code: 550, enhanced: "5.7.70", action: "stop", seconds: 86_400 },
    ],
  },
  // §2b. "Senders must not use namespace mining techniques ... verifying email addresses without
  // sending" [official]; 550 SC-002 is the block for it. Not probed at all.
  notProbed("outlook-consumer", "forbidden", [{ code: 550, text: "SC-00", action: "stop", seconds: 86_400 }]),
  // §3. Yahoo refuses unknown users after DATA, not at RCPT; RCPT accepts random addresses (4+
  // reports); "Excessive unknown recipients" is a Yahoo block. Not probed: answered as catch-all.
  notProbed("yahoo", "accepts_all", [
    { code: 421, enhanced: "4.7.0", action: "pause", seconds: 14_400 },
    { code: 451, text: "VS1-", action: "pause", seconds: 86_400 },
    { code: 553, action: "stop", seconds: 86_400 },
  ]),
  // §4: Cisco's DHAP allows 25 invalid recipients an hour per remote host by default and may then
  // accept silently and drop: 10 keeps well below it.
  // Its "Too many invalid recipients" stop lasts to the next clock hour and 10 minutes (4,200 s at most).
  gateway("cisco", 10, GATEWAY_REPLIES, 4_200),
  // §4: Forcepoint, 60 s window, block 3 h; ≤ 10 an hour is THIN.
  gateway(
    "forcepoint",
    10,
    [
      { code: 554, enhanced: "5.7.1", action: "stop", seconds: 10_800, judged: true },
      { code: "4", action: "pause", seconds: 900, maxSeconds: 14_400 },
    ],
    10_800,
  ),
  // §4: Trend's worked example blocks at more than 5 non-existing recipients.
  gateway("trendmicro", 5),
  // §4: Symantec/Broadcom, Sophos, Mimecast, Proofpoint, Barracuda: no default published (THIN).
  gateway("symantec", 5),
  gateway("sophos", 5),
  // Mimecast greylists an unseen (IP, sender, recipient) with 451 for 60 s: retry after a minute, not 15.
  gateway("mimecast", 10, [
    { code: 451, action: "pause", seconds: 60, maxSeconds: 900 },
    ...GATEWAY_REPLIES,
  ]),
  gateway("proofpoint", 10),
  gateway("barracuda", 10),
  {
    // §4 Postfix, §8 self-hosted: many small servers sit behind appliances or fail2ban-like monitors;
    // 25 an hour is Cisco's default. The 60 s share the gateways get (30% once 10 were sent, 9 unknown never
    // held): behind a company's own MX name may sit an on-premises Forcepoint, which blocks past half of at
    // least 20 recipients in 60 s for 3 h, and a block costs every customer hours at that destination (issue 36).
    // A destination earns looser limits from what it shows (PER_SESSION_COUNTING_BANNERS: software that counts
    // errors per session), never the reverse; one that blocked or throttled us keeps the stricter rule (learned).
    family: "self-hosted",
    probe: "yes",
    budgetKey: "probe_ip_destination",
    windowSeconds: 60,
    unknownRatio: 0.3,
    minSample: 10,
    unknownFloor: 9,
    unknownPerHour: 25,
    netblockUnknownPerHour: 0,
    sessionsPerIp: 4,
    rcptPerSecond: 100,
    rcptsPerTransaction: 20,
    domainsPerTransaction: 0,
    knownNotCatchAll: [],
    warmupStart: 1,
    warmupStepSeconds: 86_400,
    fleetSpread: false,
    // §8 self-hosted: "5xx policy/RBL (5.7.x, blocked, Spamhaus): stop D 24 h".
    blockSeconds: 86_400,
    // Postfix's smtpd_timeout is 300 s (10 s under stress, which the NOOP covers).
    sessionIdleSeconds: 30,
    sessionMaxAgeSeconds: 60,
    replies: SELF_HOSTED_REPLIES,
  },
];

const BY_FAMILY = new Map(RECEIVER_POLICIES.map((p) => [p.family, p]));

export function receiverPolicy(family: ReceiverFamily): ReceiverPolicy {
  return BY_FAMILY.get(family)!;
}

/** What one MX host name is: who runs it (null: nobody we know of) and its receiver family (self-hosted: none of ours). */
export type Receiver = Readonly<{ provider: MxProvider | null; family: ReceiverFamily }>;

const BY_SUFFIX = new Map<string, Receiver>(MX_SUFFIXES.map(([suffix, provider, family]) => [suffix, { provider, family: family ?? MX_PROVIDERS[provider].family }]));
const NOBODY: Receiver = { provider: null, family: "self-hosted" };

/** The receiver of one MX host name: its longest matching suffix's row. */
export function receiverOfHost(host: string): Receiver {
  const labels = host.toLowerCase().replace(/\.$/, "").split(".");
  // From the whole name down to its last two labels: the first hit is the longest suffix.
  for (let i = 0; i < labels.length - 1; i++) {
    const hit = BY_SUFFIX.get(labels.slice(i).join("."));
    if (hit) return hit;
  }
  return NOBODY;
}

type MxHosts = readonly { host: string; preference: number }[];
const byPreference = (hosts: MxHosts) => [...hosts].sort((a, b) => a.preference - b.preference);

/** Who runs a domain's mail (`details.mx_provider`): the most preferred host that matches a provider decides; null when none does. */
export function mxProvider(hosts: MxHosts): MxProvider | null {
  for (const { host } of byPreference(hosts)) {
    const { provider } = receiverOfHost(host);
    if (provider) return provider;
  }
  return null;
}

/** The family of a domain's receiver: the most preferred host's, the one the probe dials first. */
export function receiverFamily(hosts: MxHosts): ReceiverFamily {
  const first = byPreference(hosts)[0];
  return first ? receiverOfHost(first.host).family : "self-hosted";
}

/** Whether an accepted RCPT proves nothing at this provider (`details.mx_provider`, stored or fresh). */
export function rcptProvesNothing(provider: string | null): boolean {
  return provider !== null && Object.hasOwn(MX_PROVIDERS, provider) && MX_PROVIDERS[provider as MxProvider].rcptProvesNothing;
}

/** Whether a reply matches a rule. */
export function replyMatches(rule: ReplyRule, reply: { code: number; enhanced: string | null; text: string }): boolean {
  if (typeof rule.code === "number" ? reply.code !== rule.code : String(reply.code)[0] !== rule.code) return false;
  if (rule.enhanced !== undefined && !(reply.enhanced ?? "").startsWith(rule.enhanced)) return false;
  if (rule.text !== undefined && !reply.text.toLowerCase().includes(rule.text.toLowerCase())) return false;
  return true;
}
