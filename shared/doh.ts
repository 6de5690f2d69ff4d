/**
 * Longer than 400 lines on purpose: RFC 8484 in wire format: the query, the bounded parser of five record types and the client, which share their limits.
 * RFC 8484 DNS-over-HTTPS client (wire format, POST application/dns-message).
 *
 * Runs in a Worker (nodejs_compat: Buffer from node:buffer) and in Node; it uses only fetch,
 * AbortController and Buffer. The answer is untrusted input: the body is read as a stream with a
 * byte limit (Content-Length is not trusted), the HTTP status and content type are checked, the
 * message structure is walked before decoding (bounded record counts, every name compression
 * pointer must point strictly backwards so a pointer loop is a parse failure), and the ID and
 * question must match the query. Nothing here throws: every problem is a `DohFailure`.
 */
import { Buffer } from "node:buffer";
import dnsPacket from "dns-packet";
import { raceAbort, readBytesWithin } from "./bounded-body.ts";

/**
 * The record types this client asks for. PTR data is a name (normalized like MX exchanges: lower
 * case, no trailing dot); TXT data is one string per record, its character-strings concatenated
 * without separators (RFC 7208 §3.3, as SPF reads them) and decoded as UTF-8 (invalid bytes become
 * U+FFFD).
 */
export type DohRecordType = "MX" | "A" | "AAAA" | "PTR" | "TXT";

/** Largest DNS message accepted (a DNS message cannot be longer over TCP either). */
export const MAX_DOH_RESPONSE_BYTES = 65_535;
/** Most records accepted per section (question: exactly one). */
export const MAX_RECORDS_PER_SECTION = 100;
/** Most compression pointers followed in one name (a name has at most 127 labels). */
const MAX_POINTERS_PER_NAME = 127;
/** Longest CNAME chain followed inside one answer. */
const MAX_CNAME_CHAIN = 8;

export type DohRcode =
  | "NOERROR"
  | "FORMERR"
  | "SERVFAIL"
  | "NXDOMAIN"
  | "NOTIMP"
  | "REFUSED"
  | "YXDOMAIN"
  | "YXRRSET"
  | "NXRRSET"
  | "NOTAUTH"
  | "NOTZONE"
  | `RCODE_${number}`;

const RCODES: readonly DohRcode[] = [
  "NOERROR",
  "FORMERR",
  "SERVFAIL",
  "NXDOMAIN",
  "NOTIMP",
  "REFUSED",
  "YXDOMAIN",
  "YXRRSET",
  "NXRRSET",
  "NOTAUTH",
  "NOTZONE",
];

export type MxRecord = { preference: number; exchange: string };
/** An A or AAAA record from the additional section (glue for MX exchanges). */
export type AdditionalAddress = { name: string; type: "A" | "AAAA"; address: string; ttl: number };

export type DohSuccess<T extends DohRecordType = DohRecordType> = {
  failed: false;
  rcode: DohRcode;
  /** Records of the asked type owned by the name (or by the end of its CNAME chain). */
  answers: T extends "MX" ? MxRecord[] : string[];
  /**
   * Seconds this answer may be cached: the minimum TTL of the answer RRset (CNAMEs included); for a
   * negative answer (NXDOMAIN/NODATA) min(SOA TTL, SOA MINIMUM) from the authority section
   * (RFC 2308 §5), 0 when the resolver gave no SOA.
   */
  ttl: number;
  additional: AdditionalAddress[];
  /**
   * Set when the answer is a CNAME chain that stops before any record of the asked type: the name
   * the chain ends at, which a resolver would look up next (the caller may follow it).
   */
  cname?: string;
};

export type DohFailureReason =
  | "timeout"
  | "aborted"
  | "network"
  | "http_status"
  | "content_type"
  | "oversized"
  | "malformed"
  | "id_mismatch"
  | "question_mismatch"
  | "truncated"
  | "invalid_name";

export type DohFailure = { failed: true; reason: DohFailureReason; detail?: string };

export type DohAnswer<T extends DohRecordType = DohRecordType> = DohSuccess<T> | DohFailure;

export type DohQueryOptions = {
  /** Per-attempt timeout (the single retry gets the same budget). */
  timeoutMs: number;
  /** External cancellation (e.g. an overall deadline); no retry once it has fired. */
  signal?: AbortSignal;
  fetcher?: typeof fetch;
  /** Body size limit; default MAX_DOH_RESPONSE_BYTES. */
  maxBytes?: number;
};

const TYPE_CODES: Record<DohRecordType, number> = { A: 1, PTR: 12, MX: 15, TXT: 16, AAAA: 28 };

function fail(reason: DohFailureReason, detail?: string): DohFailure {
  return detail === undefined ? { failed: true, reason } : { failed: true, reason, detail };
}

/** Lower-case, no trailing dot; null when not a valid DNS name in presentation form (A-labels). */
export function normalizeDnsName(name: string): string | null {
  const n = name.trim().toLowerCase().replace(/\.$/, "");
  if (n.length === 0 || n.length > 253) return null;
  for (const label of n.split(".")) {
    if (label.length === 0 || label.length > 63) return null;
    if (!/^[a-z0-9_-]+$/.test(label)) return null;
  }
  return n;
}

/**
 * One DoH query with a per-attempt timeout and exactly one retry when the first attempt timed out
 * or hit a network error. Never throws.
 */
export async function queryDoh<T extends DohRecordType>(
  dohUrl: string,
  name: string,
  type: T,
  opts: DohQueryOptions,
): Promise<DohAnswer<T>> {
  try {
    const first = await queryOnce(dohUrl, name, type, opts);
    if (!first.failed || (first.reason !== "timeout" && first.reason !== "network")) return first;
    if (opts.signal?.aborted) return first;
    return await queryOnce(dohUrl, name, type, opts);
  } catch (err) {
    return fail("malformed", `unexpected: ${errorMessage(err)}`);
  }
}

/** A single attempt, no retry. Exported for tests. */
export async function queryOnce<T extends DohRecordType>(
  dohUrl: string,
  name: string,
  type: T,
  opts: DohQueryOptions,
): Promise<DohAnswer<T>> {
  const qname = normalizeDnsName(name);
  if (qname === null) return fail("invalid_name", name.slice(0, 300));
  if (opts.signal?.aborted) return fail("aborted");

  const id = randomId();
  let query: Buffer;
  try {
    query = dnsPacket.encode({
      type: "query",
      id,
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ type, class: "IN", name: qname }],
    });
  } catch (err) {
    return fail("invalid_name", errorMessage(err));
  }

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, Math.max(0, opts.timeoutMs));
  const onOuterAbort = () => controller.abort();
  opts.signal?.addEventListener("abort", onOuterAbort, { once: true });
  const fetcher = opts.fetcher ?? ((...args: Parameters<typeof fetch>) => fetch(...args));
  const abortReason = (): DohFailure => (timedOut ? fail("timeout") : fail("aborted"));

  try {
    let res: Response;
    try {
      res = await raceAbort(
        fetcher(dohUrl, {
          method: "POST",
          headers: { "content-type": "application/dns-message", accept: "application/dns-message" },
          body: query,
          signal: controller.signal,
        }),
        controller.signal,
      );
    } catch (err) {
      if (controller.signal.aborted) return abortReason();
      return fail("network", errorMessage(err));
    }

    if (res.status !== 200) {
      void cancelBody(res);
      return fail("http_status", String(res.status));
    }
    const contentType = (res.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (contentType !== "application/dns-message") {
      void cancelBody(res);
      return fail("content_type", contentType.slice(0, 100));
    }

    let body: Uint8Array | "oversized";
    try {
      body = await readBodyLimited(res, opts.maxBytes ?? MAX_DOH_RESPONSE_BYTES, controller.signal);
    } catch (err) {
      if (controller.signal.aborted) return abortReason();
      return fail("network", errorMessage(err));
    }
    if (body === "oversized") return fail("oversized");
    return parseDohResponse(Buffer.from(body.buffer, body.byteOffset, body.byteLength), id, qname, type);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onOuterAbort);
  }
}

/**
 * Validates and decodes a response to the query (`id`, `qname`, `type`). Exported for tests.
 */
export function parseDohResponse<T extends DohRecordType>(
  buf: Buffer,
  id: number,
  qname: string,
  type: T,
): DohAnswer<T> {
  if (buf.length < 12) return fail("malformed", "short header");
  if (buf.readUInt16BE(0) !== id) return fail("id_mismatch");
  const structure = validateDnsMessage(buf);
  if (!structure.ok) return fail("malformed", structure.error);

  const flags = buf.readUInt16BE(2);
  if ((flags & 0x8000) === 0) return fail("malformed", "not a response");
  if ((flags & 0x0200) !== 0) return fail("truncated");
  const rcodeNum = flags & 0x0f;
  const rcode: DohRcode = RCODES[rcodeNum] ?? `RCODE_${rcodeNum}`;

  let packet: dnsPacket.DecodedPacket;
  try {
    packet = dnsPacket.decode(buf);
  } catch (err) {
    return fail("malformed", errorMessage(err));
  }

  const question = packet.questions?.[0];
  if (
    packet.questions?.length !== 1 ||
    !question ||
    sameName(question.name, qname) === false ||
    question.type !== type ||
    (question.class !== undefined && question.class !== "IN")
  ) {
    return fail("question_mismatch");
  }

  // Follow a CNAME chain inside the answer section, then collect the asked type at its end.
  const answers = packet.answers ?? [];
  const owners = new Set<string>([qname]);
  let ttl = Infinity;
  let current = qname;
  for (let hop = 0; hop < MAX_CNAME_CHAIN; hop++) {
    const cname = answers.find(
      (a): a is dnsPacket.StringAnswer => a.type === "CNAME" && sameName(a.name, current),
    );
    if (!cname || typeof cname.data !== "string") break;
    ttl = Math.min(ttl, ttlOf(cname));
    current = lowerName(cname.data);
    if (owners.has(current)) break;
    owners.add(current);
  }

  const out: (MxRecord | string)[] = [];
  for (const a of answers) {
    if (a.type !== type || !owners.has(lowerName(a.name))) continue;
    if (a.class !== undefined && a.class !== "IN") continue;
    if (a.type === "MX") {
      const d = a.data;
      if (!d || typeof d.preference !== "number" || typeof d.exchange !== "string") continue;
      out.push({ preference: d.preference, exchange: lowerName(d.exchange) });
    } else if (a.type === "A" || a.type === "AAAA") {
      if (typeof a.data !== "string") continue;
      out.push(a.data.toLowerCase());
    } else if (a.type === "PTR") {
      if (typeof a.data !== "string") continue;
      const target = lowerName(a.data);
      if (target.length === 0) continue;
      out.push(target);
    } else if (a.type === "TXT") {
      const text = txtString(a.data);
      if (text === null) continue;
      out.push(text);
    }
    ttl = Math.min(ttl, ttlOf(a));
  }

  if (out.length === 0) {
    // Negative answer (NXDOMAIN or NODATA): RFC 2308 §5, the SOA's TTL capped by its MINIMUM.
    ttl = 0;
    const soa = (packet.authorities ?? []).find((a) => a.type === "SOA");
    if (soa && soa.type === "SOA" && soa.data && typeof soa.data.minimum === "number") {
      ttl = Math.min(ttlOf(soa), soa.data.minimum >>> 0);
    }
  }

  const additional: AdditionalAddress[] = [];
  for (const a of packet.additionals ?? []) {
    if ((a.type === "A" || a.type === "AAAA") && typeof a.data === "string") {
      if (a.class !== undefined && a.class !== "IN") continue;
      additional.push({ name: lowerName(a.name), type: a.type, address: a.data.toLowerCase(), ttl: ttlOf(a) });
    }
  }

  const success: DohSuccess<T> = {
    failed: false,
    rcode,
    answers: out as DohSuccess<T>["answers"],
    ttl: Number.isFinite(ttl) ? ttl : 0,
    additional,
  };
  if (out.length === 0 && current !== qname) success.cname = current;
  return success;
}

/**
 * Walks a whole DNS message without decoding it: header, bounded section counts, every owner name
 * and every name inside MX/NS/CNAME/PTR/DNAME/SOA data, TXT character-strings filling their record
 * data exactly, record lengths within the buffer. A name's
 * compression pointer must point strictly before the start of the label run it ends (the start of
 * the name, or the previous pointer's target), so the targets strictly decrease and no pointer
 * loop can exist; a pointer into the header, a forward or self pointer, or a loop is an error.
 */
export function validateDnsMessage(
  buf: Uint8Array,
  maxRecordsPerSection = MAX_RECORDS_PER_SECTION,
): { ok: true } | { ok: false; error: string } {
  if (buf.length < 12) return { ok: false, error: "short header" };
  const u16 = (o: number) => (buf[o]! << 8) | buf[o + 1]!;
  const qd = u16(4);
  const counts = [u16(6), u16(8), u16(10)];
  if (qd !== 1) return { ok: false, error: `question count ${qd}` };
  for (const c of counts) if (c > maxRecordsPerSection) return { ok: false, error: `record count ${c}` };

  let offset = 12;
  const name = (at: number): number => {
    const end = checkName(buf, at);
    if (typeof end === "string") throw new NameError(end);
    return end;
  };
  try {
    offset = name(offset);
    if (offset + 4 > buf.length) return { ok: false, error: "question overflow" };
    offset += 4;
    const total = counts[0]! + counts[1]! + counts[2]!;
    for (let i = 0; i < total; i++) {
      offset = name(offset);
      if (offset + 10 > buf.length) return { ok: false, error: "record header overflow" };
      const rtype = u16(offset);
      const rdlength = u16(offset + 8);
      offset += 10;
      const rdataEnd = offset + rdlength;
      if (rdataEnd > buf.length) return { ok: false, error: "record data overflow" };
      switch (rtype) {
        case 2: // NS
        case 5: // CNAME
        case 12: // PTR
        case 39: // DNAME
          if (name(offset) > rdataEnd) return { ok: false, error: "name overflows record data" };
          break;
        case 15: // MX
          if (rdlength < 3 || name(offset + 2) > rdataEnd) return { ok: false, error: "bad MX data" };
          break;
        case 6: {
          // SOA
          const afterRname = name(name(offset));
          if (afterRname + 20 > rdataEnd) return { ok: false, error: "bad SOA data" };
          break;
        }
        case 16: {
          // TXT: one or more <length><bytes> character-strings filling the record data exactly
          let at = offset;
          while (at < rdataEnd) at += 1 + buf[at]!;
          if (at !== rdataEnd) return { ok: false, error: "bad TXT data" };
          break;
        }
        case 1: // A
          if (rdlength !== 4) return { ok: false, error: "bad A data" };
          break;
        case 28: // AAAA
          if (rdlength !== 16) return { ok: false, error: "bad AAAA data" };
          break;
      }
      offset = rdataEnd;
    }
  } catch (err) {
    if (err instanceof NameError) return { ok: false, error: err.message };
    throw err;
  }
  return { ok: true };
}

class NameError extends Error {}

/**
 * Checks the name at `start`; returns the offset just past it in the record (after the first
 * pointer, or after the root label), or an error string. Exported for tests.
 */
export function checkName(buf: Uint8Array, start: number): number | string {
  let offset = start;
  let runStart = start;
  let end = -1;
  let length = 0;
  let pointers = 0;
  for (;;) {
    if (offset >= buf.length) return "name overflow";
    const len = buf[offset]!;
    if (len === 0) {
      if (end < 0) end = offset + 1;
      return end;
    }
    const kind = len & 0xc0;
    if (kind === 0) {
      if (offset + 1 + len > buf.length) return "label overflow";
      length += len + 1;
      if (length > 255) return "name too long";
      offset += 1 + len;
    } else if (kind === 0xc0) {
      if (offset + 2 > buf.length) return "pointer overflow";
      const target = ((len & 0x3f) << 8) | buf[offset + 1]!;
      if (end < 0) end = offset + 2;
      if (target < 12) return "pointer into header";
      if (target >= runStart) return "compression pointer does not point backwards (loop)";
      if (++pointers > MAX_POINTERS_PER_NAME) return "too many compression pointers";
      runStart = target;
      offset = target;
    } else {
      return "bad label type";
    }
  }
}

/** The answer's bytes, or "oversized": a declared length over the limit is refused unread. */
async function readBodyLimited(res: Response, maxBytes: number, signal: AbortSignal): Promise<Uint8Array | "oversized"> {
  const declared = Number(res.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    void cancelBody(res);
    return "oversized";
  }
  return (await readBytesWithin(res.body, maxBytes, { signal })) ?? "oversized";
}

async function cancelBody(res: Response): Promise<void> {
  try {
    await res.body?.cancel();
  } catch {
    // ignore
  }
}

function randomId(): number {
  const a = new Uint16Array(1);
  crypto.getRandomValues(a);
  return a[0]!;
}

function lowerName(n: string): string {
  return n.toLowerCase().replace(/\.$/, "");
}

function sameName(a: string, b: string): boolean {
  return lowerName(a) === lowerName(b);
}

/** A TXT record's character-strings joined without separators (RFC 7208 §3.3), or null if malformed. */
function txtString(data: unknown): string | null {
  const parts = Array.isArray(data) ? data : [data];
  if (parts.length === 0) return null;
  const bytes: Uint8Array[] = [];
  for (const part of parts) {
    if (part instanceof Uint8Array) bytes.push(part);
    else if (typeof part === "string") bytes.push(Buffer.from(part, "utf8"));
    else return null;
  }
  return Buffer.concat(bytes).toString("utf8");
}

function ttlOf(a: { ttl?: number | undefined }): number {
  const t = a.ttl ?? 0;
  // RFC 2181 §8: a TTL with the top bit set is treated as zero.
  return t >= 0 && t <= 0x7fffffff ? t : 0;
}

function errorMessage(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.slice(0, 200);
}
