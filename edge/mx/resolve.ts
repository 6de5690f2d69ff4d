/**
 * Mail hosts of a domain over DoH (decisions §5.2 mx_record): MX records, the implicit MX of
 * RFC 5321 §5.1 (A/AAAA, no MX), the null MX of RFC 7505, NXDOMAIN, no mail at all, or a DNS
 * failure (the caller then assumes the MX). The whole resolution stays within `deadlineMs`, and
 * nothing here throws.
 */
import { queryDoh, type DohAnswer, type DohRecordType, type DohSuccess } from "./doh.ts";

export type MailHost = { host: string; preference: number; addresses: string[] };

export type MailHostResolution = {
  status: "mx" | "implicit" | "null_mx" | "nxdomain" | "no_mail" | "failed";
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
  const entries = new Map<string, { answer: DohSuccess; expiresAt: number }>();
  const key = (name: string, type: string, scope = "") => `${scope} ${type} ${name.toLowerCase().replace(/\.$/, "")}`;

  return {
    get<T extends DohRecordType>(name: string, type: T, scope?: string) {
      const k = key(name, type, scope);
      const e = entries.get(k);
      if (!e) return undefined;
      if (now() >= e.expiresAt) {
        entries.delete(k);
        return undefined;
      }
      return e.answer as DohSuccess<T>;
    },
    set<T extends DohRecordType>(name: string, type: T, answer: DohSuccess<T>, scope?: string) {
      if (answer.failed || (answer.rcode !== "NOERROR" && answer.rcode !== "NXDOMAIN")) return;
      const ttl = Math.min(maxTtl, Math.max(minTtl, answer.ttl));
      const k = key(name, type, scope);
      entries.delete(k);
      entries.set(k, { answer: answer as DohSuccess, expiresAt: now() + ttl * 1000 });
      while (entries.size > maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest === undefined) break;
        entries.delete(oldest);
      }
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
      await Promise.all(hosts.map((h) => fillAddresses(h, mx, query)));
      return done("mx", hosts);
    }

    // NOERROR, no MX: the implicit MX (RFC 5321 §5.1) when the domain itself has an address.
    const [a, aaaa] = await Promise.all([query(name, "A"), query(name, "AAAA")]);
    const addresses = capAddresses([...addressesOf(a), ...addressesOf(aaaa)]);
    if (addresses.length > 0) return done("implicit", [{ host: name, preference: 0, addresses }]);
    const failure = [a, aaaa].find((r) => r.failed || (r.rcode !== "NOERROR" && r.rcode !== "NXDOMAIN"));
    if (failure) return done("failed", [], failure.failed ? describeFailure(failure) : failure.rcode);
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

/**
 * A and AAAA of one host, concurrently; a type present in the MX answer's additional section is
 * taken from there instead of queried. A failed lookup leaves the host listed without addresses.
 */
async function fillAddresses(
  host: MailHost,
  mx: DohSuccess<"MX">,
  query: <T extends DohRecordType>(name: string, type: T) => Promise<DohAnswer<T>>,
): Promise<void> {
  const lookups = (["A", "AAAA"] as const).map(async (type) => {
    const glue = mx.additional.filter((r) => r.type === type && r.name === host.host).map((r) => r.address);
    if (glue.length > 0) return glue;
    return addressesOf(await query(host.host, type));
  });
  const [v4, v6] = await Promise.all(lookups);
  host.addresses = capAddresses([...(v4 ?? []), ...(v6 ?? [])]);
}

function addressesOf(answer: DohAnswer<"A" | "AAAA">): string[] {
  if (answer.failed || answer.rcode !== "NOERROR") return [];
  return answer.answers as string[];
}

function capAddresses(list: string[]): string[] {
  return [...new Set(list)].slice(0, MAX_ADDRESSES_PER_HOST);
}

function describeFailure(f: { reason: string; detail?: string }): string {
  return f.detail ? `${f.reason}: ${f.detail}` : f.reason;
}
