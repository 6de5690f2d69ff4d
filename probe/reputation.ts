/**
 * The probe's self-audit of its own sending reputation (docs/probe.md "Self-audit"). A receiver
 * judges the probe by its IP address before it reads a command: whether the address's reverse DNS
 * names PROBE_HELO_NAME and that name points back at the address (FCrDNS), whether the envelope
 * sender's domain authorizes the address in SPF, and whether a DNS blocklist lists it. This checks
 * each of PROBE_PUBLIC_IPS that way over DNS-over-HTTPS, at start and every
 * PROBE_AUDIT_INTERVAL_SECONDS, and keeps the result for GET /healthz and GET /metrics.
 *
 * A problem is an "error" when it is about our records (a wrong PTR, an SPF fail, a listing): the
 * status is then "degraded". What only means we could not tell (a resolver failure, a blocklist
 * refusing the query) is a "warning": reported, logged, but it never changes the status, so a
 * resolver outage does not make the fleet flap.
 */
import ipaddr from "ipaddr.js";
import { spf } from "mailauth/lib/spf/index.js";
import { queryDoh, type DohAnswer, type DohRecordType } from "../shared/doh.ts";
import type { ProbeConfig } from "./config.ts";

export type AuditCheck = "ptr" | "fcrdns" | "spf" | "dnsbl";
export const AUDIT_CHECKS: readonly AuditCheck[] = ["ptr", "fcrdns", "spf", "dnsbl"];

export type ReputationProblem = {
  address: string;
  check: AuditCheck;
  /** ptr_mismatch, no_forward_match, spf_<result>, dnsbl_listed, dnsbl_refused, dnsbl_unexpected, check_failed */
  problem: string;
  detail: string;
  zone?: string;
  severity: "error" | "warning";
};

export type ReputationSnapshot = {
  status: "ok" | "degraded";
  /** When the last audit finished; null before the first one (or when there is none). */
  checked_at: string | null;
  problems: ReputationProblem[];
  /** False when PROBE_PUBLIC_IPS is not set: nothing is checked and the status stays "ok". */
  audited: boolean;
};

export type ReputationAuditConfig = Pick<ProbeConfig, "publicIps" | "heloName" | "mailFrom" | "dohUrl" | "dnsblZones" | "auditIntervalMs"> & {
  /** The most one DoH query may take, its single retry included. Default 5 s. */
  queryTimeoutMs?: number;
  fetcher?: typeof fetch;
};

const DEFAULT_QUERY_TIMEOUT_MS = 5_000;
/** The most a whole SPF evaluation may take (mailauth answers temperror beyond it). */
const SPF_TIME_LIMIT_MS = 20_000;
/** CNAMEs a lookup for SPF follows when the resolver hands back a chain that stops short. */
const MAX_CNAME_HOPS = 8;
/** The Spamhaus return codes that mean "your query was refused", not "listed" (typo, open resolver, too many queries). */
const REFUSAL_CODES = new Set(["127.255.255.252", "127.255.255.254", "127.255.255.255"]);

/** The reverse-DNS name of an address: in-addr.arpa for IPv4, nibbles under ip6.arpa for IPv6. */
export function reverseName(address: string): string {
  return `${reversedLabels(address)}.${ipaddr.parse(address).kind() === "ipv4" ? "in-addr.arpa" : "ip6.arpa"}`;
}

/** The address as a blocklist query prefix: octets (IPv4) or nibbles (IPv6), least significant first. */
export function reversedLabels(address: string): string {
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv4") return parsed.toByteArray().reverse().join(".");
  const nibbles: string[] = [];
  for (const byte of parsed.toByteArray()) nibbles.push((byte >> 4).toString(16), (byte & 0x0f).toString(16));
  return nibbles.reverse().join(".");
}

/**
 * A blocklist zone as it may be shown: a Spamhaus Data Query Service zone carries the customer's
 * key as its first label (<key>.zen.dq.spamhaus.net), which is a secret and never leaves the process.
 */
export function displayZone(zone: string): string {
  return /\.dq\.spamhaus\.net$/.test(zone) && zone.split(".").length > 4 ? `[key].${zone.split(".").slice(1).join(".")}` : zone;
}

const sameName = (a: string, b: string) => a.toLowerCase().replace(/\.$/, "") === b.toLowerCase().replace(/\.$/, "");

const sameAddress = (a: string, b: string) => {
  try {
    const x = ipaddr.process(a);
    const y = ipaddr.process(b);
    return x.kind() === y.kind() && x.toNormalizedString() === y.toNormalizedString();
  } catch {
    return false;
  }
};

const problemKey = (p: ReputationProblem) => `${p.address}|${p.check}|${p.problem}|${p.zone ?? ""}`;

/** A DNS error as node's dns.promises.resolve throws it, which is what mailauth expects of a resolver. */
class DnsError extends Error {
  constructor(
    readonly code: string,
    name: string,
  ) {
    super(`query ${code} ${name}`);
  }
}

/** An answer that says nothing about our records: the resolver failed, or answered SERVFAIL/REFUSED/... */
function unusable(answer: DohAnswer): string | null {
  if (answer.failed) return `DoH query failed: ${answer.reason}${answer.detail ? ` (${answer.detail.slice(0, 100)})` : ""}`;
  if (answer.rcode !== "NOERROR" && answer.rcode !== "NXDOMAIN") return `resolver answered ${answer.rcode}`;
  return null;
}

/** The DoH queries of one audit run: each at most once, each bounded in time, all cancelled by close(). */
class RunResolver {
  private readonly answers = new Map<string, Promise<DohAnswer>>();
  constructor(
    private readonly config: ReputationAuditConfig,
    private readonly signal: AbortSignal,
  ) {}

  query<T extends DohRecordType>(name: string, type: T): Promise<DohAnswer<T>> {
    const key = `${type} ${name.toLowerCase()}`;
    let answer = this.answers.get(key);
    if (!answer) {
      const timeoutMs = this.config.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
      // The overall bound covers the client's single retry; the per-attempt timeout alone would double it.
      const signal = AbortSignal.any([this.signal, AbortSignal.timeout(timeoutMs)]);
      answer = queryDoh(this.config.dohUrl, name, type, { timeoutMs, signal, ...(this.config.fetcher ? { fetcher: this.config.fetcher } : {}) });
      this.answers.set(key, answer);
    }
    return answer as Promise<DohAnswer<T>>;
  }

  /**
   * dns.promises.resolve(name, rrtype) over DoH, for mailauth's spf(): arrays shaped like node's
   * (TXT: one array of strings per record; MX: { exchange, priority }), and errors with node's codes
   * (ENOTFOUND, ENODATA, ESERVFAIL, EREFUSED, ETIMEOUT, ...). `onFailure` hears of every answer that
   * was no answer, so that a temperror caused by the resolver is told apart from one caused by our DNS.
   */
  nodeResolver(onFailure: () => void) {
    return async (name: string, rrtype: string): Promise<unknown[]> => {
      if (!["A", "AAAA", "MX", "TXT", "PTR"].includes(rrtype)) throw new DnsError("ENOTIMP", name);
      const type = rrtype as DohRecordType;
      let current = name;
      for (let hop = 0; hop <= MAX_CNAME_HOPS; hop++) {
        const answer = await this.query(current, type);
        if (answer.failed) {
          onFailure();
          throw new DnsError(answer.reason === "timeout" ? "ETIMEOUT" : answer.reason === "invalid_name" ? "EBADNAME" : answer.reason === "network" ? "ECONNREFUSED" : "EBADRESP", name);
        }
        if (answer.rcode === "NXDOMAIN") throw new DnsError("ENOTFOUND", name);
        if (answer.rcode !== "NOERROR") {
          onFailure();
          throw new DnsError(answer.rcode === "SERVFAIL" ? "ESERVFAIL" : answer.rcode === "REFUSED" ? "EREFUSED" : "EBADRESP", name);
        }
        if (answer.answers.length > 0) {
          if (type === "MX") return (answer as DohAnswer<"MX"> & { failed: false }).answers.map((mx) => ({ exchange: mx.exchange, priority: mx.preference }));
          if (type === "TXT") return (answer.answers as string[]).map((text) => [text]);
          return answer.answers as string[];
        }
        if (!answer.cname) break;
        current = answer.cname;
      }
      throw new DnsError("ENODATA", name);
    };
  }
}

/**
 * Audits the probe's public addresses at start() and every interval; snapshot() is what the last
 * run found. Runs never overlap: a run asked for while one is going gets that one.
 */
export class ReputationAudit {
  private problems: ReputationProblem[] = [];
  private checkedAt: Date | null = null;
  private running: Promise<ReputationSnapshot> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly abort = new AbortController();

  constructor(private readonly config: ReputationAuditConfig) {}

  /** False when there are no public addresses to audit (PROBE_PUBLIC_IPS not set). */
  get enabled(): boolean {
    return this.config.publicIps.length > 0;
  }

  /** The first run now, then one every interval (the timer does not keep the process alive). */
  start(): void {
    if (!this.enabled || this.timer || this.abort.signal.aborted) return;
    void this.run();
    this.timer = setInterval(() => void this.run(), this.config.auditIntervalMs);
    this.timer.unref();
  }

  /** Stops the timer and cancels the queries of a run in flight (which then records nothing). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.abort.abort();
  }

  /** One audit, or the one in flight. Never rejects. */
  run(): Promise<ReputationSnapshot> {
    if (!this.enabled || this.abort.signal.aborted) return Promise.resolve(this.snapshot());
    this.running ??= this.audit()
      .catch((err: unknown) => {
        console.error(JSON.stringify({ level: "error", msg: "reputation audit failed", error: err instanceof Error ? err.name : typeof err }));
      })
      .then(() => this.snapshot())
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  snapshot(): ReputationSnapshot {
    return {
      status: this.degraded ? "degraded" : "ok",
      checked_at: this.checkedAt?.toISOString() ?? null,
      problems: this.problems.map((p) => ({ ...p })),
      audited: this.enabled,
    };
  }

  /** True when an error-severity problem exists (a warning alone never degrades). */
  get degraded(): boolean {
    return this.problems.some((p) => p.severity === "error");
  }

  /** False when some address has an error-severity problem in this check. */
  checkOk(check: AuditCheck): boolean {
    return !this.problems.some((p) => p.check === check && p.severity === "error");
  }

  private async audit(): Promise<void> {
    const resolver = new RunResolver(this.config, this.abort.signal);
    const found = (
      await Promise.all(
        this.config.publicIps.flatMap((address) => [
          this.checkPtr(resolver, address),
          this.checkForward(resolver, address),
          this.checkSpf(resolver, address),
          ...this.config.dnsblZones.map((zone) => this.checkDnsbl(resolver, address, zone)),
        ]),
      )
    ).flat();
    if (this.abort.signal.aborted) return;
    this.record(found);
  }

  /** Takes a run's problems, logging those that appeared and those that cleared since the last run. */
  private record(found: ReputationProblem[]): void {
    const before = new Map(this.problems.map((p) => [problemKey(p), p]));
    const after = new Map(found.map((p) => [problemKey(p), p]));
    for (const [key, p] of after) {
      if (!before.has(key)) {
        console.warn(JSON.stringify({ level: "warn", msg: "reputation problem appeared", address: p.address, check: p.check, problem: p.problem, severity: p.severity, ...(p.zone ? { zone: p.zone } : {}), detail: p.detail }));
      }
    }
    for (const [key, p] of before) {
      if (!after.has(key)) {
        console.log(JSON.stringify({ level: "info", msg: "reputation problem cleared", address: p.address, check: p.check, problem: p.problem, ...(p.zone ? { zone: p.zone } : {}) }));
      }
    }
    this.problems = [...after.values()];
    this.checkedAt = new Date();
  }

  private failed(address: string, check: AuditCheck, detail: string, zone?: string): ReputationProblem {
    return { address, check, problem: "check_failed", detail, ...(zone ? { zone } : {}), severity: "warning" };
  }

  /** The address's PTR must name PROBE_HELO_NAME. */
  private async checkPtr(resolver: RunResolver, address: string): Promise<ReputationProblem[]> {
    const name = reverseName(address);
    const answer = await resolver.query(name, "PTR");
    const why = unusable(answer);
    if (why !== null || answer.failed) return [this.failed(address, "ptr", `${name} PTR: ${why}`)];
    if (answer.answers.some((ptr) => sameName(ptr, this.config.heloName))) return [];
    const seen = answer.answers.length ? answer.answers.slice(0, 5).join(", ") : "no PTR record";
    return [{ address, check: "ptr", problem: "ptr_mismatch", detail: `${name} PTR is ${seen}, expected ${this.config.heloName}`, severity: "error" }];
  }

  /** PROBE_HELO_NAME's A (IPv4) or AAAA (IPv6) records must hold the address (forward-confirmed reverse DNS). */
  private async checkForward(resolver: RunResolver, address: string): Promise<ReputationProblem[]> {
    const type = ipaddr.parse(address).kind() === "ipv4" ? "A" : "AAAA";
    const answer = await resolver.query(this.config.heloName, type);
    const why = unusable(answer);
    if (why !== null || answer.failed) return [this.failed(address, "fcrdns", `${this.config.heloName} ${type}: ${why}`)];
    if (answer.answers.some((a) => sameAddress(a, address))) return [];
    const seen = answer.answers.length ? answer.answers.slice(0, 5).join(", ") : `no ${type} record`;
    return [{ address, check: "fcrdns", problem: "no_forward_match", detail: `${this.config.heloName} ${type} is ${seen}, not ${address}`, severity: "error" }];
  }

  /** SPF of the PROBE_MAIL_FROM domain for the address (mailauth, RFC 7208), asked through our DoH resolver. */
  private async checkSpf(resolver: RunResolver, address: string): Promise<ReputationProblem[]> {
    let resolverFailed = false;
    const result = await spf({
      sender: this.config.mailFrom,
      ip: address,
      helo: this.config.heloName,
      mta: this.config.heloName,
      maxElapsedTime: SPF_TIME_LIMIT_MS,
      resolver: resolver.nodeResolver(() => (resolverFailed = true)) as never,
    });
    const outcome = result.status.result;
    if (outcome === "pass") return [];
    const comment = typeof result.status.comment === "string" ? result.status.comment : "";
    const detail = `spf=${outcome} for ${this.config.mailFrom}${comment ? `: ${comment}` : ""}`.slice(0, 300);
    if (outcome === "temperror" && resolverFailed) return [this.failed(address, "spf", detail)];
    return [{ address, check: "spf", problem: `spf_${outcome}`, detail, severity: "error" }];
  }

  /**
   * The address looked up in one blocklist: NXDOMAIN (or no record) is not listed; an A record in
   * 127.0.0.0/8 is a listing, except the Spamhaus codes that mean the query was refused; an answer
   * outside 127.0.0.0/8 is no listing (a wildcarding zone, a hijacking resolver), reported as a warning.
   */
  private async checkDnsbl(resolver: RunResolver, address: string, zone: string): Promise<ReputationProblem[]> {
    const shown = displayZone(zone);
    const answer = await resolver.query(`${reversedLabels(address)}.${zone}`, "A");
    const why = unusable(answer);
    if (why !== null || answer.failed) return [this.failed(address, "dnsbl", `${shown} A: ${why}`, shown)];
    const codes = answer.answers.filter((a) => ipaddr.IPv4.isValidFourPartDecimal(a));
    const inLoopback = (a: string) => ipaddr.IPv4.parse(a).match(ipaddr.IPv4.parse("127.0.0.0"), 8);
    const listed = codes.filter((a) => inLoopback(a) && !REFUSAL_CODES.has(a));
    const refused = codes.filter((a) => REFUSAL_CODES.has(a));
    const other = answer.answers.filter((a) => !listed.includes(a) && !refused.includes(a));
    const problems: ReputationProblem[] = [];
    if (listed.length) {
      problems.push({ address, check: "dnsbl", problem: "dnsbl_listed", detail: `listed on ${shown}: ${listed.join(", ")}`, zone: shown, severity: "error" });
    }
    if (refused.length) {
      problems.push({
        address,
        check: "dnsbl",
        problem: "dnsbl_refused",
        detail: `${shown} refused the query (${refused.join(", ")}: 252 malformed query, 254 query via a public/open resolver, 255 too many queries); listing unknown`,
        zone: shown,
        severity: "warning",
      });
    }
    if (other.length) {
      problems.push({ address, check: "dnsbl", problem: "dnsbl_unexpected", detail: `${shown} answered ${other.slice(0, 5).join(", ")}, outside 127.0.0.0/8: not a listing`, zone: shown, severity: "warning" });
    }
    return problems;
  }
}
