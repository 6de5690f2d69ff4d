/**
 * The address list every verifier gets in bench/verify-compare.ts: 1,000 addresses over 50 domains
 * with a known truth, generated from a seed so every run and every tool sees the same list, plus the
 * DNS zone and the SMTP behaviour of each domain's mail server that make that truth so.
 *
 * Each domain has one MX host with its own loopback address (127.0.1.N), because a real list spreads
 * over many mail servers and verifiers limit connections per server.
 */
import type { Zone } from "../test/fixtures/doh-server.ts";
import { seededRandom } from "./stats.ts";

/** What the fixture's mail server (or DNS) does for a domain. */
export type DomainKind = "mailboxes" | "catch_all" | "greylisted" | "policy_blocked" | "dead_mx" | "nxdomain";

/** What is true about an address: "unknown" is what nobody can learn from outside (catch-all, refusals). */
export type Truth = "deliverable" | "undeliverable" | "unknown";

/** Finer than Truth, for the per-kind breakdown. */
export type AddressKind = "mailbox_exists" | "mailbox_unknown" | Exclude<DomainKind, "mailboxes">;

export type DomainSpec = {
  name: string;
  kind: DomainKind;
  /** The MX host's address; none for NXDOMAIN. */
  mxAddress: string | null;
  /** Mailboxes that exist (only for "mailboxes" domains). */
  mailboxes: string[];
};

export type ListedAddress = { email: string; kind: AddressKind; truth: Truth };

export type VerificationList = { domains: DomainSpec[]; addresses: ListedAddress[]; zone: Zone };

export const TRUTH: Record<AddressKind, Truth> = {
  mailbox_exists: "deliverable",
  mailbox_unknown: "undeliverable",
  nxdomain: "undeliverable",
  catch_all: "unknown",
  greylisted: "unknown",
  policy_blocked: "unknown",
  dead_mx: "unknown",
};

/** Domains per kind (50 in all) and addresses per domain (20): 1,000 addresses. */
const DOMAIN_MIX: [DomainKind, number][] = [
  ["mailboxes", 30],
  ["catch_all", 6],
  ["greylisted", 4],
  ["policy_blocked", 4],
  ["dead_mx", 4],
  ["nxdomain", 2],
];
const ADDRESSES_PER_DOMAIN = 20;
/** Share of a "mailboxes" domain's addresses that exist; the rest get 550 5.1.1. */
const EXISTING_SHARE = 0.65;

/** Replies as real servers word them: Postfix with postgrey, and Postfix's reject_rbl_client. */
export const GREYLIST_REPLY = "450 4.2.0 Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/";
export const POLICY_REPLY =
  "554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/127.0.0.1";


const FIRST = ["ana", "ben", "chloe", "david", "emma", "farid", "grace", "hiro", "ines", "jonas", "kofi", "lena", "mateo", "nina", "oscar", "priya", "quentin", "rosa", "sven", "yuki", "amara", "lucas", "mira", "tomas"];
const LAST = ["smith", "garcia", "muller", "rossi", "nguyen", "kim", "silva", "dubois", "kowalski", "tanaka", "okafor", "larsen", "novak", "haddad", "moreau", "ivanova"];
const WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "granite", "harbor", "iris", "juniper", "kestrel", "lumen", "meadow", "nimbus", "orchid", "pioneer", "quarry", "ridge", "summit", "tundra", "umber", "vertex", "willow", "zephyr"];
const TRADES = ["logistics", "analytics", "studio", "labs", "partners", "foods", "robotics", "legal", "clinic", "energy", "textiles", "capital"];
const TLDS = ["com", "com", "com", "net", "org", "io", "de", "fr", "co.uk"];

export function buildVerificationList(seed: number): VerificationList {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

  const names = new Set<string>();
  const domains: DomainSpec[] = [];
  for (const [kind, count] of DOMAIN_MIX) {
    for (let i = 0; i < count; i++) {
      let name: string;
      do name = `${pick(WORDS)}-${pick(TRADES)}.${pick(TLDS)}`;
      while (names.has(name));
      names.add(name);
      const n = domains.length + 1;
      domains.push({ name, kind, mxAddress: kind === "nxdomain" ? null : `127.0.1.${n}`, mailboxes: [] });
    }
  }

  const addresses: ListedAddress[] = [];
  for (const domain of domains) {
    const locals = new Set<string>();
    while (locals.size < ADDRESSES_PER_DOMAIN) {
      const first = pick(FIRST);
      const last = pick(LAST);
      const style = random();
      locals.add(style < 0.5 ? `${first}.${last}` : style < 0.8 ? `${first[0]}${last}` : `${first}.${last}${Math.floor(random() * 90) + 10}`);
    }
    for (const local of locals) {
      const email = `${local}@${domain.name}`;
      let kind: AddressKind;
      if (domain.kind === "mailboxes") {
        kind = random() < EXISTING_SHARE ? "mailbox_exists" : "mailbox_unknown";
        if (kind === "mailbox_exists") domain.mailboxes.push(email);
      } else {
        kind = domain.kind;
      }
      addresses.push({ email, kind, truth: TRUTH[kind] });
    }
  }
  // A list as users upload it is not sorted by domain; shuffle it (Fisher-Yates, same seed).
  for (let i = addresses.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [addresses[i], addresses[j]] = [addresses[j]!, addresses[i]!];
  }

  const zone: Zone = {};
  for (const domain of domains) {
    if (domain.kind === "nxdomain") {
      zone[domain.name] = "NXDOMAIN";
      continue;
    }
    zone[domain.name] = { MX: [{ preference: 10, exchange: `mx1.${domain.name}` }] };
    zone[`mx1.${domain.name}`] = { A: [domain.mxAddress!] };
  }
  return { domains, addresses, zone };
}
