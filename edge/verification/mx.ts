/**
 * Mail hosts of a domain over DoH (docs/api.md "The checks, in order", step 4): MX records, the implicit
 * MX of RFC 5321 §5.1 (A/AAAA, no MX), the null MX of RFC 7505, NXDOMAIN, no mail at all, MX hosts
 * that do not exist, or a DNS failure (the caller then assumes the MX). The whole resolution stays
 * within `deadlineMs`, and nothing here throws.
 */
import { queryDoh, type DohAnswer, type DohRecordType, type DohSuccess } from "../../shared/doh.ts";
import { TtlCache } from "../../shared/ttl-cache.ts";

export type MailHost = { host: string; preference: number; addresses: string[] };

/**
 * - mx: MX records, and at least one of their hosts has an address.
 * - mx_hosts_absent: MX records, but every host is authoritatively absent (NXDOMAIN, or no A and no
 *   AAAA): RFC 5321 §5.1 leaves nothing to deliver to, so the domain cannot receive mail.
 * - mx_hosts_failed: MX records, no host with an address, and at least one host lookup failed
 *   (timeout, SERVFAIL): nothing is known against the domain, so the MX is assumed.
 * - implicit, null_mx, nxdomain, no_mail, failed: as their names say (failed: the MX query itself).
 */
export type MailHostResolution = {
  status: "mx" | "mx_hosts_absent" | "mx_hosts_failed" | "implicit" | "null_mx" | "nxdomain" | "no_mail" | "failed";
  hosts: MailHost[];
  ms: number;
  /** Every DNS answer used came from the cache. */
  cached: boolean;
  error?: string;
};

/** Per-query timeout cap (each query also gets at most the time left before the deadline). */
export const PER_QUERY_TIMEOUT_MS = 1_500;
export const MAX_MX_HOSTS = 10;
export const MAX_ADDRESSES_PER_HOST = 8;
/** CNAMEs followed beyond what the resolver put in its answer, per address lookup. */
export const MAX_CNAME_FOLLOWS = 4;

/**
 * Answers per (name, type), and per resolver: `scope` (resolveMailHosts passes the DoH URL) keeps
 * answers from different resolvers apart, e.g. a test pointing one call at an unreachable resolver.
 */
export type DnsCache = {
  get<T extends DohRecordType>(name: string, type: T, scope?: string): DohSuccess<T> | undefined;
  /** Stores NOERROR and NXDOMAIN answers (positive and negative); anything else is ignored. */
  set<T extends DohRecordType>(name: string, type: T, answer: DohSuccess<T>, scope?: string): void;
  readonly size: number;
  clear(): void;
};

export type DnsCacheOptions = {
  /** Default 10 000; the oldest entry is evicted beyond it. */
  maxEntries?: number;
  /** TTL ceiling, default 3600 s. */
  maxTtlSeconds?: number;
  /** TTL floor, default 30 s (also used for negative answers without an SOA). */
  minTtlSeconds?: number;
  now?: () => number;
};

export function createDnsCache(options: DnsCacheOptions = {}): DnsCache {
  const maxEntries = Math.max(1, options.maxEntries ?? 10_000);
  const maxTtl = options.maxTtlSeconds ?? 3_600;
  const minTtl = Math.min(options.minTtlSeconds ?? 30, maxTtl);
  const now = options.now ?? Date.now;
  const entries = new TtlCache<string, DohSuccess>(maxEntries, now);
  const key = (name: string, type: string, scope = "") => `${scope} ${type} ${name.toLowerCase().replace(/\.$/, "")}`;

  return {
    get<T extends DohRecordType>(name: string, type: T, scope?: string) {
      return entries.get(key(name, type, scope)) as DohSuccess<T> | undefined;
    },
    set<T extends DohRecordType>(name: string, type: T, answer: DohSuccess<T>, scope?: string) {
      if (answer.failed || (answer.rcode !== "NOERROR" && answer.rcode !== "NXDOMAIN")) return;
      const ttl = Math.min(maxTtl, Math.max(minTtl, answer.ttl));
      entries.set(key(name, type, scope), answer as DohSuccess, ttl * 1000);
    },
    get size() {
      return entries.size;
    },
    clear() {
      entries.clear();
    },
  };
}

export type ResolveOptions = {
  dohUrl: string;
  /** The whole resolution (MX, then addresses) never takes longer than this. */
  deadlineMs: number;
  cache?: DnsCache;
  fetcher?: typeof fetch;
  /** Clock for `ms` and the time budget; default Date.now. */
  now?: () => number;
  /** Per-query timeout cap; default PER_QUERY_TIMEOUT_MS. */
  perQueryTimeoutMs?: number;
};

export async function resolveMailHosts(domain: string, opts: ResolveOptions): Promise<MailHostResolution> {
  const now = opts.now ?? Date.now;
  const started = now();
  // One controller per in-flight query (a shared signal would collect a listener per query).
  const inFlight = new Set<AbortController>();
  let deadlineHit = false;
  const timer = setTimeout(() => {
    deadlineHit = true;
    for (const c of inFlight) c.abort();
  }, Math.max(0, opts.deadlineMs));
  let allCached = true;
  const elapsed = () => Math.max(0, Math.round(now() - started));

  const query = async <T extends DohRecordType>(name: string, type: T): Promise<DohAnswer<T>> => {
    const hit = opts.cache?.get(name, type, opts.dohUrl);
    if (hit) return hit;
    allCached = false;
    const remaining = opts.deadlineMs - (now() - started);
    if (remaining <= 0 || deadlineHit) return { failed: true, reason: "timeout", detail: "deadline" };
    const controller = new AbortController();
    inFlight.add(controller);
    try {
      const answer = await queryDoh(opts.dohUrl, name, type, {
        timeoutMs: Math.min(remaining, opts.perQueryTimeoutMs ?? PER_QUERY_TIMEOUT_MS),
        signal: controller.signal,
        ...(opts.fetcher ? { fetcher: opts.fetcher } : {}),
      });
      if (!answer.failed) opts.cache?.set(name, type, answer, opts.dohUrl);
      else if (answer.reason === "aborted" && deadlineHit) return { failed: true, reason: "timeout", detail: "deadline" };
      return answer;
    } finally {
      inFlight.delete(controller);
    }
  };

  const done = (status: MailHostResolution["status"], hosts: MailHost[] = [], error?: string): MailHostResolution => {
    const r: MailHostResolution = { status, hosts, ms: elapsed(), cached: allCached };
    if (error !== undefined) r.error = error;
    return r;
  };

  try {
    const name = domain.trim().toLowerCase().replace(/\.$/, "");
    const mx = await query(name, "MX");
    if (mx.failed) return done("failed", [], describeFailure(mx));
    if (mx.rcode === "NXDOMAIN") return done("nxdomain");
    if (mx.rcode !== "NOERROR") return done("failed", [], mx.rcode);

    if (mx.answers.length > 0) {
      const usable = mx.answers.filter((r) => r.exchange !== "" && r.exchange !== ".");
      // RFC 7505: a null MX ("0 ."), alone; a "." exchange is never a host to dial.
      if (usable.length === 0) return done("null_mx");
      const hosts = pickHosts(usable);
      const lookups = await Promise.all(hosts.map((h) => lookupHost(h.host, mx, query)));
      hosts.forEach((h, i) => (h.addresses = lookups[i]!.addresses));
      if (lookups.some((l) => l.state === "found")) return done("mx", hosts);
      const failure = lookups.find((l) => l.state === "failed");
      return failure ? done("mx_hosts_failed", hosts, failure.error) : done("mx_hosts_absent", hosts);
    }

    // NOERROR, no MX: the implicit MX (RFC 5321 §5.1) when the domain itself has an address.
    const own = await lookupHost(name, null, query);
    if (own.state === "found") return done("implicit", [{ host: name, preference: 0, addresses: own.addresses }]);
    if (own.state === "failed") return done("failed", [], own.error);
    return done("no_mail");
  } catch (err) {
    return done("failed", [], `unexpected: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

/** Sorted by preference (stable: ties keep the resolver's order), de-duplicated, capped. */
function pickHosts(records: { preference: number; exchange: string }[]): MailHost[] {
  const sorted = records.map((r, i) => ({ r, i })).sort((x, y) => x.r.preference - y.r.preference || x.i - y.i);
  const seen = new Set<string>();
  const hosts: MailHost[] = [];
  for (const { r } of sorted) {
    const host = r.exchange.toLowerCase().replace(/\.$/, "");
    if (seen.has(host)) continue;
    seen.add(host);
    hosts.push({ host, preference: r.preference, addresses: [] });
    if (hosts.length >= MAX_MX_HOSTS) break;
  }
  return hosts;
}

type Query = <T extends DohRecordType>(name: string, type: T) => Promise<DohAnswer<T>>;

/** What DNS says about one host's addresses: found, authoritatively absent, or not known (a failure). */
type HostLookup = { state: "found" | "absent" | "failed"; addresses: string[]; error?: string };

/**
 * A and AAAA of one host, concurrently; a type present in the MX answer's additional section is
 * taken from there instead of queried. The host is absent only when both types are (NXDOMAIN or no
 * records); any failed lookup without an address makes it unknown.
 */
async function lookupHost(host: string, mx: DohSuccess<"MX"> | null, query: Query): Promise<HostLookup> {
  const results = await Promise.all(
    (["A", "AAAA"] as const).map((type) => {
      const glue = mx?.additional.filter((r) => r.type === type && r.name === host).map((r) => r.address) ?? [];
      return glue.length > 0 ? ({ state: "found", addresses: glue } as HostLookup) : lookupAddresses(host, type, query);
    }),
  );
  const addresses = capAddresses(results.flatMap((r) => r.addresses));
  if (addresses.length > 0) return { state: "found", addresses };
  const failure = results.find((r) => r.state === "failed");
  return failure ?? { state: "absent", addresses: [] };
}

/**
 * One address type of a name. An answer that stops at a CNAME (the resolver did not chase it) is
 * followed to its target, as a resolver would, at most MAX_CNAME_FOLLOWS times.
 */
async function lookupAddresses(name: string, type: "A" | "AAAA", query: Query): Promise<HostLookup> {
  const seen = new Set<string>([name]);
  let current = name;
  for (let follows = 0; ; follows++) {
    const answer = await query(current, type);
    if (answer.failed) return { state: "failed", addresses: [], error: describeFailure(answer) };
    if (answer.rcode === "NXDOMAIN") return { state: "absent", addresses: [] };
    if (answer.rcode !== "NOERROR") return { state: "failed", addresses: [], error: answer.rcode };
    if (answer.answers.length > 0) return { state: "found", addresses: answer.answers as string[] };
    if (!answer.cname) return { state: "absent", addresses: [] };
    if (seen.has(answer.cname)) return { state: "failed", addresses: [], error: "CNAME loop" };
    if (follows >= MAX_CNAME_FOLLOWS) return { state: "failed", addresses: [], error: "CNAME chain too long" };
    seen.add(answer.cname);
    current = answer.cname;
  }
}

function capAddresses(list: string[]): string[] {
  return [...new Set(list)].slice(0, MAX_ADDRESSES_PER_HOST);
}

function describeFailure(f: { reason: string; detail?: string }): string {
  return f.detail ? `${f.reason}: ${f.detail}` : f.reason;
}
