/**
 * Classic DNS over UDP (RFC 1035) answering from the same Zone the DoH fixture serves, so tools that
 * resolve through the system resolver (glibc's getaddrinfo, Node's c-ares) see the same names,
 * MX hosts and NXDOMAINs as the Worker does over DoH. Only what the benchmark zone uses is served:
 * MX, A and AAAA records, NODATA and NXDOMAIN with an SOA; anything else in a Zone is SERVFAIL.
 */
import dgram from "node:dgram";
import dnsPacket from "dns-packet";
import type { Zone, ZoneEntry } from "../test/fixtures/doh-server.ts";

const TTL = 300;
const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3 } as const;

export type UdpDnsServer = { host: string; port: number; close(): Promise<void> };

const normalize = (name: string) => name.toLowerCase().replace(/\.$/, "");

function soa(name: string): dnsPacket.Answer {
  const apex = normalize(name).split(".").slice(-2).join(".");
  return {
    type: "SOA",
    name: apex,
    ttl: TTL,
    class: "IN",
    data: { mname: `ns.${apex}`, rname: `hostmaster.${apex}`, serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: 60 },
  };
}

function answer(zone: Map<string, ZoneEntry>, query: dnsPacket.DecodedPacket): Buffer {
  const question = query.questions?.[0];
  const reply = (rcode: number, answers: dnsPacket.Answer[] = [], authorities: dnsPacket.Answer[] = []) =>
    dnsPacket.encode({
      type: "response",
      id: query.id ?? 0,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | rcode,
      questions: query.questions ?? [],
      answers,
      authorities,
    });
  if (!question) return reply(RCODE.SERVFAIL);
  const entry = zone.get(normalize(question.name));
  if (entry === undefined || entry === "NXDOMAIN") return reply(RCODE.NXDOMAIN, [], [soa(question.name)]);
  if (typeof entry !== "object") return reply(RCODE.SERVFAIL);
  const ttl = entry.ttl ?? TTL;
  let answers: dnsPacket.Answer[] = [];
  if (question.type === "MX") {
    answers = (entry.MX ?? []).map((mx) => ({ type: "MX" as const, name: question.name, ttl, class: "IN" as const, data: mx }));
  } else if (question.type === "A" || question.type === "AAAA") {
    answers = (entry[question.type] ?? []).map((data) => ({ type: question.type as "A" | "AAAA", name: question.name, ttl, class: "IN" as const, data }));
  }
  return reply(RCODE.NOERROR, answers, answers.length === 0 ? [soa(question.name)] : []);
}

export async function startUdpDnsServer(options: { zone: Zone; host: string; port: number }): Promise<UdpDnsServer> {
  const zone = new Map(Object.entries(options.zone).map(([name, entry]) => [normalize(name), entry]));
  const socket = dgram.createSocket("udp4");
  const server: UdpDnsServer = {
    host: options.host,
    port: options.port,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
  socket.on("message", (message, remote) => {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return; // not DNS: a real server drops it too
    }
    socket.send(answer(zone, query), remote.port, remote.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(options.port, options.host, () => {
      socket.off("error", reject);
      resolve();
    });
  });
  return server;
}
