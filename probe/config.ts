/**
 * The probe's configuration (docs/probe.md "The SMTP probe"), parsed once at start-up. A missing or malformed
 * setting stops the process with a message naming it.
 */
import ipaddr from "ipaddr.js";
import { z } from "zod";
import { normalizeDnsName } from "../shared/doh.ts";
import { probeSecretProblem } from "../shared/probe-contract.ts";
import { emptyToUndefined } from "../shared/config-values.ts";
import { RECEIVER_FAMILIES, receiverPolicy } from "../shared/email/receivers.ts";

const SELF_HOSTED = receiverPolicy("self-hosted");

/**
 * One family's overrides in PROBE_RECEIVER_POLICY: any field of its row the probe alone applies; not its name, its
 * reply rules, nor the fields the Worker decides (NOT_AT_THE_PROBE).
 */
const PolicyOverride = z
  .object({
    budgetKey: z.enum(["probe_ip_family", "probe_ip_destination"]),
    windowSeconds: z.number().int().min(1).max(86_400),
    unknownRatio: z.number().gt(0).max(1),
    minSample: z.number().int().min(0).max(100_000),
    unknownFloor: z.number().min(0).max(100_000),
    unknownPerHour: z.number().int().min(0).max(10_000_000),
    netblockUnknownPerHour: z.number().int().min(0).max(10_000_000),
    sessionsPerIp: z.number().int().min(1).max(10_000),
    rcptPerSecond: z.number().gt(0).max(10_000),
    rcptsPerTransaction: z.number().int().min(1).max(100),
    domainsPerTransaction: z.number().int().min(0).max(100),
    knownNotCatchAll: z.array(z.string().min(1).max(253)).max(1000),
    warmupStart: z.number().gt(0).max(1),
    warmupStepSeconds: z.number().int().min(1).max(86_400),
    blockSeconds: z.number().int().min(1).max(7 * 86_400),
    sessionIdleSeconds: z.number().int().min(0).max(300),
    sessionMaxAgeSeconds: z.number().int().min(1).max(3_600),
  })
  .partial()
  .strict();
const ReceiverPolicyOverrides = z.partialRecord(z.enum(RECEIVER_FAMILIES), PolicyOverride);

/**
 * What the Worker decides from its compiled copy of shared/email/receivers.ts, before it calls a probe: whether a
 * family is dialled at all (`probe`), whether its addresses spread over the fleet (`fleetSpread`), and the family of
 * an MX host (the suffixes). Set at a probe, the Worker would never see it, so it is refused at start.
 */
const NOT_AT_THE_PROBE: Record<string, string> = {
  probe: "the Worker decides it from shared/email/receivers.ts",
  fleetSpread: "the Worker decides it from shared/email/receivers.ts",
  suffixes: "the Worker and the probe both name a host's family from shared/email/receivers.ts",
};

/** The first field of PROBE_RECEIVER_POLICY's JSON that cannot be set at the probe, with why, or null. */
function notAtTheProbe(json: unknown): string | null {
  if (typeof json !== "object" || json === null) return null;
  for (const [family, fields] of Object.entries(json)) {
    if (typeof fields !== "object" || fields === null) continue;
    const field = Object.keys(fields).find((f) => Object.hasOwn(NOT_AT_THE_PROBE, f));
    if (field) return `${family}.${field} cannot be set at the probe: ${NOT_AT_THE_PROBE[field]}`;
  }
  return null;
}

const int = (min: number, max: number, fallback: number) => z.coerce.number().int().min(min).max(max).default(fallback);

/** A fully qualified host name: what a mail server expects after EHLO, and what our PTR record says. */
const HOST_NAME = /^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$/i;
const MAILBOX = /^[^\s@<>]{1,64}@[^\s@<>]{1,253}$/;

/** Comma-separated items, trimmed, empty ones dropped. */
const list = (value: string) => value.split(",").map((v) => v.trim()).filter((v) => v !== "");

/**
 * One public address of the probe in canonical form (IPv4 dotted quad, IPv6 RFC 5952; an
 * IPv4-mapped IPv6 address as IPv4), or null when it is not a unicast IP literal.
 */
export function canonicalPublicIp(value: string): string | null {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  if (ipaddr.IPv4.isValidFourPartDecimal(value)) address = ipaddr.IPv4.parse(value);
  else if (!value.includes("%") && ipaddr.IPv6.isValid(value)) {
    const v6 = ipaddr.IPv6.parse(value);
    address = v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
  } else return null;
  if (["unspecified", "multicast", "broadcast"].includes(address.range())) return null;
  return address.toString();
}

/**
 * One item of PROBE_ORIGIN as `new URL(url).origin` spells it (what the Worker signs), or null when it is not
 * an http(s) origin: scheme, host and port, with nothing after them but an optional "/".
 */
function httpOrigin(text: string): string | null {
  if (!URL.canParse(text)) return null;
  const url = new URL(text);
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.origin !== text.replace(/\/$/, "").toLowerCase()) return null;
  return url.origin;
}

/** The probe's settings as environment variables: names, bounds and defaults (docs/probe.md lists them from here). */
export const PROBE_SETTINGS = z.object({
  PORT: int(0, 65535, 8788),
  /**
   * The origins (comma-separated) of the URLs the Worker calls this probe at, such as https://probe1.example.com
   * behind its TLS proxy: a request's signature must be made for one of them. Unset: the probe's own loopback URLs.
   */
  PROBE_ORIGIN: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .optional()
      .transform((value, ctx) => {
        if (value === undefined) return undefined;
        const origins: string[] = [];
        for (const item of list(value)) {
          const origin = httpOrigin(item);
          if (origin === null) {
            ctx.addIssue({ code: "custom", message: `PROBE_ORIGIN must be URL origins (scheme, host and port only) such as https://probe1.example.com, comma-separated; "${item.slice(0, 80)}" is not one` });
            return z.NEVER;
          }
          origins.push(origin);
        }
        if (origins.length === 0) ctx.addIssue({ code: "custom", message: "PROBE_ORIGIN must list at least one origin" });
        return origins;
      }),
  ),
  /** Where the HTTP service listens; 0.0.0.0 in a container, 127.0.0.1 under `npm start`. */
  PROBE_LISTEN_HOST: z.preprocess(emptyToUndefined, z.string().default("0.0.0.0")),
  PROBE_SECRET: z.string({ message: "PROBE_SECRET is required" }).superRefine((secret, ctx) => {
    const problem = probeSecretProblem(secret);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
  /**
   * The name we give after EHLO. It must be ours and match the reverse DNS of the probe's IP:
   * there is no default, because any default would be someone else's name.
   */
  PROBE_HELO_NAME: z
    .string({ message: "PROBE_HELO_NAME is required (the probe host's own FQDN, matching its reverse DNS)" })
    .regex(HOST_NAME, "PROBE_HELO_NAME must be a fully qualified host name such as probe1.example.net")
    // An IP literal passes the label pattern; a top-level label of digits only is not a name.
    .refine((name) => !/\.[0-9]+$/.test(name), "PROBE_HELO_NAME must be a fully qualified host name such as probe1.example.net"),
  /** The envelope sender; defaults to verify@<PROBE_HELO_NAME>, an address on our own name. */
  PROBE_MAIL_FROM: z.preprocess(emptyToUndefined, z.string().regex(MAILBOX, "PROBE_MAIL_FROM must be an email address").optional()),
  PROBE_SMTP_PORT: int(1, 65535, 25),
  /**
   * The probe's own public addresses, comma-separated: the ones receivers see, whose reverse DNS,
   * SPF and blocklist entries the self-audit checks. Required unless PROBE_ALLOW_PRIVATE_TARGETS=true.
   */
  PROBE_PUBLIC_IPS: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .optional()
      .superRefine((value, ctx) => {
        if (value === undefined) return;
        const items = list(value);
        if (items.length === 0) ctx.addIssue({ code: "custom", message: "PROBE_PUBLIC_IPS must list at least one IP address" });
        for (const item of items) {
          if (canonicalPublicIp(item) === null) {
            ctx.addIssue({ code: "custom", message: `PROBE_PUBLIC_IPS must be comma-separated unicast IPv4/IPv6 addresses; "${item.slice(0, 60)}" is not one` });
          }
        }
      }),
  ),
  /** The DNS-over-HTTPS resolver (RFC 8484) the self-audit asks. */
  PROBE_DOH_URL: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .default("https://cloudflare-dns.com/dns-query")
      .refine((v) => URL.canParse(v) && ["http:", "https:"].includes(new URL(v).protocol), { message: "PROBE_DOH_URL must be an http(s) URL" }),
  ),
  /** Seconds between two self-audits (one runs at start). */
  PROBE_AUDIT_INTERVAL_SECONDS: int(10, 86_400, 900),
  /** DNS blocklists the self-audit looks the public addresses up in, comma-separated; empty: none. */
  PROBE_DNSBL_ZONES: z
    .string()
    .default("zen.spamhaus.org,b.barracudacentral.org,bl.spamcop.net")
    .superRefine((value, ctx) => {
      for (const zone of list(value)) {
        if (normalizeDnsName(zone) === null) ctx.addIssue({ code: "custom", message: `PROBE_DNSBL_ZONES must be comma-separated DNS names; "${zone.slice(0, 60)}" is not one` });
      }
    }),
  PROBE_ALLOW_PRIVATE_TARGETS: z.preprocess(
    emptyToUndefined,
    z.enum(["true", "false"], { message: "PROBE_ALLOW_PRIVATE_TARGETS must be true or false" }).default("false"),
  ),
  /** SMTP sessions open at once, all destinations together (idle ones are closed to make room). */
  PROBE_MAX_CONCURRENCY: int(1, 100_000, 500),
  /** SMTP sessions open at once to one destination address (halved while it pushes back). */
  PROBE_MAX_PER_DESTINATION: int(1, 1000, 4),
  /** Checks accepted and not yet answered; a request beyond it is answered 503. */
  PROBE_MAX_QUEUED: int(1, 1_000_000, 20_000),
  /** RCPT commands per second to one destination address (also the burst). */
  PROBE_DESTINATION_RCPT_RATE: int(1, 10_000, 100),
  /** RCPT commands in one transaction, the catch-all address included (RFC 5321 promises 100). */
  PROBE_MAX_RCPTS_PER_TRANSACTION: int(1, 100, 20),
  /** Refused RCPTs a session may collect before it is rotated: below Postfix's smtpd_soft_error_limit (10). */
  PROBE_MAX_REJECTIONS_PER_SESSION: int(1, 1000, 9),
  /** How long a session is kept open without work before QUIT (Postfix: smtp_connection_cache_time_limit). */
  PROBE_SESSION_IDLE_MS: int(0, 300_000, 5_000),
  /** How long a session is reused at most (Postfix: smtp_connection_reuse_time_limit). */
  PROBE_SESSION_MAX_AGE_MS: int(1_000, 3_600_000, 60_000),
  /** Transactions on one session at most (Postfix counts each RSET towards smtpd_junk_command_limit, 100). */
  PROBE_SESSION_MAX_TRANSACTIONS: int(1, 1000, 20),
  /** How long a TCP connect may take before the next MX address is tried. */
  PROBE_CONNECT_TIMEOUT_MS: int(100, 60_000, 5_000),
  PROBE_CATCH_ALL_TTL_SECONDS: int(0, 7 * 86_400, 6 * 3_600),
  /** Catch-all answers kept at most (per domain and MX host); the oldest goes first. */
  PROBE_CATCH_ALL_CACHE_ENTRIES: int(1, 10_000_000, 100_000),
  /** Destination addresses held in memory at most; beyond it one with nothing queued or open is forgotten. */
  PROBE_MAX_DESTINATIONS: int(1, 1_000_000, 10_000),
  /** A destination with nothing queued or open is forgotten after this long (what it taught us is kept apart). */
  PROBE_DESTINATION_FORGET_MS: int(1_000, 86_400_000, 600_000),
  /** Addresses remembered per learned fact (no TLS, no reuse, tarpit, RCPT limit, dead); the oldest goes first. */
  PROBE_DESTINATION_MEMORY_ENTRIES: int(1, 10_000_000, 100_000),
  /** Times a check is put back after a 421, a rate limit, a 452 or a dropped session. */
  PROBE_RETRY_LIMIT: int(0, 100, 3),
  /** The first back-off after a destination pushed back, doubled each time (Postfix: minimal_backoff_time). */
  PROBE_DESTINATION_BACKOFF_MIN_MS: int(1, 3_600_000, 1_000),
  /** The longest back-off (Postfix: maximal_backoff_time). */
  PROBE_DESTINATION_BACKOFF_MAX_MS: int(1, 3_600_000, 30_000),
  /** A refused connection or greeting marks the address dead this long: its checks move on at once. */
  PROBE_DESTINATION_DEAD_MS: int(0, 3_600_000, 5_000),
  /** After a failed TLS handshake the address is dialled in plain text this long. */
  PROBE_TLS_FALLBACK_MEMORY_MS: int(0, 7 * 86_400_000, 3_600_000),
  /** After sessions die when reused, the address gets one transaction per session this long. */
  PROBE_NO_REUSE_MEMORY_MS: int(0, 7 * 86_400_000, 600_000),
  /** A refusal this much later than the reply before it in its transaction is a tarpit. */
  PROBE_TARPIT_REPLY_MS: int(1, 60_000, 1_000),
  /** How long a tarpit limits its address to two RCPTs per transaction. */
  PROBE_TARPIT_MODE_MS: int(0, 86_400_000, 120_000),
  /** A 452 "too many recipients" lowers the address's RCPTs per transaction this long. */
  PROBE_RCPT_LIMIT_MEMORY_MS: int(0, 7 * 86_400_000, 3_600_000),
  /** The least an accepted address waits for its catch-all answer (3x its own reply time if longer). */
  PROBE_CATCH_ALL_MIN_WAIT_MS: int(0, 60_000, 1_500),
  /**
   * Harvest-aware pacing (docs/probe.md "Receiver policy"), the self-hosted row's: the largest share of a destination's
   * RCPTs in any PROBE_DESTINATION_WINDOW_SECONDS that may be refused as unknown users, once 10 were sent. 1 (the
   * row's default): no share rule. The defaults of these three are the row's (one rule in one place).
   */
  PROBE_DESTINATION_UNKNOWN_RATIO: z.coerce
    .number()
    .gt(0, "PROBE_DESTINATION_UNKNOWN_RATIO must be above 0")
    .max(1, "PROBE_DESTINATION_UNKNOWN_RATIO must be at most 1")
    .default(SELF_HOSTED.unknownRatio),
  /** The sliding window of that share, in seconds (Forcepoint's harvest defence counts over 60 s). */
  PROBE_DESTINATION_WINDOW_SECONDS: int(1, 3_600, SELF_HOSTED.windowSeconds),
  /** Unknown-user refusals one self-hosted destination address may give us in any hour; 0: no hourly limit. */
  PROBE_DESTINATION_UNKNOWN_PER_HOUR: int(0, 10_000_000, SELF_HOSTED.unknownPerHour),
  /**
   * Overrides of the receiver policy table (shared/email/receivers.ts), as JSON: family -> fields,
   * e.g. {"google":{"unknownPerHour":500},"cisco":{"unknownPerHour":5}}. Empty: the table as it is. The fields
   * the Worker decides (NOT_AT_THE_PROBE) are refused.
   */
  PROBE_RECEIVER_POLICY: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .default("{}")
      .transform((value, ctx) => {
        let json: unknown;
        try {
          json = JSON.parse(value);
        } catch {
          ctx.addIssue({ code: "custom", message: "PROBE_RECEIVER_POLICY must be JSON, such as {\"google\":{\"unknownPerHour\":500}}" });
          return z.NEVER;
        }
        const refused = notAtTheProbe(json);
        if (refused) {
          ctx.addIssue({ code: "custom", message: `PROBE_RECEIVER_POLICY: ${refused}` });
          return z.NEVER;
        }
        const parsed = ReceiverPolicyOverrides.safeParse(json);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          ctx.addIssue({ code: "custom", message: `PROBE_RECEIVER_POLICY: ${issue.path.join(".") || "(top)"}: ${issue.message}` });
          return z.NEVER;
        }
        return parsed.data;
      }),
  ),
  /** Every receiver-policy duration divided by it and every rate multiplied: for tests and benches only. */
  PROBE_POLICY_TIME_SCALE: z.coerce.number().min(1, "PROBE_POLICY_TIME_SCALE must be at least 1").max(100_000).default(1),
  /** Probes that send from this probe's /24, itself included: Google's per-netblock cap is shared among them. */
  PROBE_NETBLOCK_PEERS: int(1, 256, 1),
  /**
   * Where the probe keeps what must survive a restart (budgets, pauses, warm-up): a JSON file, written
   * every few seconds and at a clean stop. Empty: kept in memory only (npm start).
   */
  PROBE_STATE_FILE: z.preprocess(emptyToUndefined, z.string().max(4096).optional()),
  /** Where GET /metrics (Prometheus) listens, host:port, apart from the public port; "off": nowhere. Served by the probe process (npm run probe). */
  PROBE_METRICS_LISTEN: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .default("127.0.0.1:9788")
      .refine((v) => v === "off" || /^(\[[0-9a-fA-F:.]+\]|[^\s:/]+):\d{1,5}$/.test(v), { message: 'PROBE_METRICS_LISTEN must be host:port (such as 127.0.0.1:9788) or "off"' }),
  ),
});

/** PROBE_METRICS_LISTEN as host and port, or null when off. */
function metricsListen(value: string): { host: string; port: number } | null {
  if (value === "off") return null;
  const at = value.lastIndexOf(":");
  return { host: value.slice(0, at).replace(/^\[|\]$/g, ""), port: Number(value.slice(at + 1)) };
}

/**
 * The settings checked together and renamed. `requirePublicIps`: PROBE_PUBLIC_IPS is required when
 * private targets are refused (production); `npm start`'s local probe alone passes false.
 */
const probeConfigSchema = (requirePublicIps: boolean) => PROBE_SETTINGS
  .refine((c) => c.PROBE_DESTINATION_BACKOFF_MIN_MS <= c.PROBE_DESTINATION_BACKOFF_MAX_MS, {
    message: "PROBE_DESTINATION_BACKOFF_MIN_MS must not exceed PROBE_DESTINATION_BACKOFF_MAX_MS",
  })
  .refine((c) => { const m = metricsListen(c.PROBE_METRICS_LISTEN); return m === null || (m.port <= 65535 && (m.port === 0 || m.port !== c.PORT)); }, {
    message: "PROBE_METRICS_LISTEN must be a port of its own (not PORT, the public one) up to 65535",
  })
  .superRefine((c, ctx) => {
    if (requirePublicIps && c.PROBE_PUBLIC_IPS === undefined && c.PROBE_ALLOW_PRIVATE_TARGETS === "false") {
      ctx.addIssue({
        code: "custom",
        path: ["PROBE_PUBLIC_IPS"],
        message:
          "PROBE_PUBLIC_IPS is required (set it to this probe's public IPv4/IPv6 addresses, comma-separated, such as 203.0.113.7,2001:db8::7: the self-audit checks their reverse DNS, SPF and blocklist entries)",
      });
    }
  })
  .transform((c) => ({
    port: c.PORT,
    listenHost: c.PROBE_LISTEN_HOST,
    /** PROBE_ORIGIN; undefined: the probe's loopback URLs (startProbeServer works them out once it has a port). */
    origins: c.PROBE_ORIGIN,
    metricsListen: metricsListen(c.PROBE_METRICS_LISTEN),
    secret: c.PROBE_SECRET,
    heloName: c.PROBE_HELO_NAME.toLowerCase(),
    mailFrom: c.PROBE_MAIL_FROM ?? `verify@${c.PROBE_HELO_NAME.toLowerCase()}`,
    smtpPort: c.PROBE_SMTP_PORT,
    allowPrivateTargets: c.PROBE_ALLOW_PRIVATE_TARGETS === "true",
    maxConcurrency: c.PROBE_MAX_CONCURRENCY,
    maxPerDestination: c.PROBE_MAX_PER_DESTINATION,
    maxQueued: c.PROBE_MAX_QUEUED,
    destinationRcptRate: c.PROBE_DESTINATION_RCPT_RATE,
    maxRcptsPerTransaction: c.PROBE_MAX_RCPTS_PER_TRANSACTION,
    maxRejectionsPerSession: c.PROBE_MAX_REJECTIONS_PER_SESSION,
    sessionIdleMs: c.PROBE_SESSION_IDLE_MS,
    sessionMaxAgeMs: c.PROBE_SESSION_MAX_AGE_MS,
    sessionMaxTransactions: c.PROBE_SESSION_MAX_TRANSACTIONS,
    connectTimeoutMs: c.PROBE_CONNECT_TIMEOUT_MS,
    catchAllTtlMs: c.PROBE_CATCH_ALL_TTL_SECONDS * 1000,
    catchAllCacheEntries: c.PROBE_CATCH_ALL_CACHE_ENTRIES,
    maxDestinations: c.PROBE_MAX_DESTINATIONS,
    destinationForgetMs: c.PROBE_DESTINATION_FORGET_MS,
    destinationMemoryEntries: c.PROBE_DESTINATION_MEMORY_ENTRIES,
    retryLimit: c.PROBE_RETRY_LIMIT,
    backoffMinMs: c.PROBE_DESTINATION_BACKOFF_MIN_MS,
    backoffMaxMs: c.PROBE_DESTINATION_BACKOFF_MAX_MS,
    deadMs: c.PROBE_DESTINATION_DEAD_MS,
    tlsFallbackMemoryMs: c.PROBE_TLS_FALLBACK_MEMORY_MS,
    noReuseMemoryMs: c.PROBE_NO_REUSE_MEMORY_MS,
    tarpitReplyMs: c.PROBE_TARPIT_REPLY_MS,
    tarpitModeMs: c.PROBE_TARPIT_MODE_MS,
    rcptLimitMemoryMs: c.PROBE_RCPT_LIMIT_MEMORY_MS,
    catchAllMinWaitMs: c.PROBE_CATCH_ALL_MIN_WAIT_MS,
    unknownRatio: c.PROBE_DESTINATION_UNKNOWN_RATIO,
    unknownWindowMs: c.PROBE_DESTINATION_WINDOW_SECONDS * 1000,
    unknownPerHour: c.PROBE_DESTINATION_UNKNOWN_PER_HOUR,
    receiverPolicy: c.PROBE_RECEIVER_POLICY,
    policyTimeScale: c.PROBE_POLICY_TIME_SCALE,
    netblockPeers: c.PROBE_NETBLOCK_PEERS,
    stateFile: c.PROBE_STATE_FILE ?? null,
    /** Canonical, deduplicated; empty when PROBE_PUBLIC_IPS is not set (the self-audit is then off). */
    publicIps: [...new Set(list(c.PROBE_PUBLIC_IPS ?? "").map((ip) => canonicalPublicIp(ip)!))],
    dohUrl: c.PROBE_DOH_URL,
    auditIntervalMs: c.PROBE_AUDIT_INTERVAL_SECONDS * 1000,
    dnsblZones: [...new Set(list(c.PROBE_DNSBL_ZONES).map((zone) => normalizeDnsName(zone)!))],
  }));

const SCHEMAS = { required: probeConfigSchema(true), optional: probeConfigSchema(false) };

export type ProbeConfig = z.output<ReturnType<typeof probeConfigSchema>>;

export class ProbeConfigError extends Error {
  override name = "ProbeConfigError";
}

/**
 * The configuration from the environment, or a ProbeConfigError naming every bad setting.
 * `publicIpsOptional`: only for a local development probe (`npm start`), which may run without
 * PROBE_PUBLIC_IPS and so without the self-audit even when it refuses private targets.
 */
export function loadProbeConfig(env: Record<string, string | undefined>, options: { publicIpsOptional?: boolean } = {}): ProbeConfig {
  const result = (options.publicIpsOptional ? SCHEMAS.optional : SCHEMAS.required).safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message));
    throw new ProbeConfigError(`Invalid probe configuration: ${problems.join("; ")}`);
  }
  return result.data;
}
