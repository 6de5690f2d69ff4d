/**
 * Which addresses we connect to on someone else's say-so (docs/probe.md "The SMTP probe", "Bounded and
 * safe"): the probe's MX addresses and the Worker's job callbacks. MX records and callback URLs are
 * written by whoever owns the domain, so an attacker could point one at 10.0.0.1 or 169.254.169.254
 * and use us to reach our own network. Only public unicast addresses pass, unless the caller allows
 * private targets (PROBE_ALLOW_PRIVATE_TARGETS, CALLBACK_ALLOW_PRIVATE_TARGETS: tests only).
 */
import ipaddr from "ipaddr.js";

export type TargetCheck = { ok: true; address: string } | { ok: false; reason: string };

/** IPv6 global unicast (RFC 4291 §2.4): anything outside 2000::/3 is not a host on the internet. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

/**
 * Checks one IP literal. IPv4-mapped IPv6 forms (::ffff:10.0.0.1) and shorthand IPv4 (127.1,
 * 0x7f.1, 2130706433) are judged as the IPv4 address they reach; NAT64, 6to4 and Teredo prefixes
 * are refused whatever they embed (a relay decides where they go, and authoritative MX data never
 * needs them). The address to dial is returned in canonical form.
 */
export function checkTarget(literal: string, allowPrivate: boolean): TargetCheck {
  if (!ipaddr.isValid(literal)) return { ok: false, reason: "not an IP address" };
  let addr = ipaddr.parse(literal);
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
  }
  // ipaddr.isValid accepts shorthand IPv4 ("10.1", "0x7f.1"); dial only the canonical dotted form.
  const address = addr.toString();
  if (allowPrivate) return { ok: true, address };
  const range = addr.range();
  if (range !== "unicast") return { ok: false, reason: `${range} address` };
  if (addr.kind() === "ipv6" && !(addr as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)) {
    return { ok: false, reason: "not a global unicast IPv6 address" };
  }
  return { ok: true, address };
}
