/**
 * Longer than 400 lines on purpose: one benchmark, its labelled world, the two finders it compares and their tables.
 * The email finder on a labelled world made of real parts (issue 47, GET /v1/email_finder): companies' domains with
 * the address patterns companies use, people whose work address we hold and people we only know by name, mail
 * servers that know every real mailbox, and the finder asked for each person to find; then, on the same world with
 * fresh receivers, a naive permutation finder that tries up to 8 patterns by SMTP.
 *
 * - The world (seeded, deterministic): `--domains` companies (each a domain, a company name, one or two address
 *   patterns: first.last most common, then flast, first, firstlast, first_last, f.last, last.first, first.l; a way of
 *   writing particles, "vanderberg" or "berg", and hyphens, "jean-luc" or "jeanluc"), of four kinds: plain
 *   (self-hosted, probed), catch-all (the server takes any address), no-probe (Microsoft 365,
 *   `<dom>-<tld>.mail.protection.outlook.com`, and Yahoo, `mta7.am0.yahoodns.net`: their published policy forbids
 *   verifying without sending) and one Forcepoint-style gateway (`<dom>-<tld>.mailcontrol.com`) that blocks a client
 *   past half unknown of at least 20 recipients in 60 s (test/fixtures/receiver-fixtures.ts FORCEPOINT_DEFENCE).
 *   Names carry diacritics, particles, hyphenated given names, apostrophes and middle names; local parts are ASCII
 *   folded.
 * - People: at each domain, known people (imported with their name, employment at the domain and work address: what
 *   the finder learns patterns from) and `--people` people to find: half of them in our data (imported the same way),
 *   the rest only a name: most of them with a mailbox at the server, some without any (they left: the right answer
 *   is none).
 * - The mail servers: one fixture (test/fixtures/mta-fixture.ts, in this process) per MX host on its own loopback
 *   address, port 25, knowing every real mailbox (known people, people to find, generic ones like info@): 550 5.1.1
 *   for any other address, or every address taken at a catch-all domain. RCPTs, connections, unknown recipients and
 *   blocks are counted there, at the receivers.
 * - Our finder: the whole local stack (bench/child.ts startJobsStack: `npm start`'s Worker with the probe, a fresh
 *   libSQL server, the DoH fixture serving the world's zone), the people imported through the real import path
 *   (`people import`'s importPeople), the Worker's own re-verification off (EMAIL_REFRESH_BATCH=0: every RCPT counted
 *   is the finder's), the probe at its real harvest budgets. Each person to find asked once, a few at a time, by an
 *   account with plenty of credits; a 202 is asked again after its Retry-After.
 * - The naive finder: for each person, one connection to the domain's MX from a client identity of its own (its EHLO
 *   name), RCPT each of up to 8 candidates until one is accepted, QUIT; against fresh fixtures (no harvest memory).
 *
 *   sudo unshare -n bash -c 'ip link set lo up; npx tsx bench/finder.ts [--seed 47] [--domains 200] [--people 2000] [--quick]'
 *
 * Needs root (port 25). Without GET /v1/email_finder in edge/ (the route being built), only the naive finder runs.
 */
import { readFileSync, readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { importPeople } from "../scripts/admin/people-import.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";
import { isDisposableDomain, isFreeProviderDomain } from "../shared/email/lists.ts";
import type { Zone } from "../test/fixtures/doh-server.ts";
import { startMtaFixture, type MtaFixture } from "../test/fixtures/mta-fixture.ts";
import { FORCEPOINT_DEFENCE, RECEIVER_MX } from "../test/fixtures/receiver-fixtures.ts";
import { root, startJobsStack } from "./child.ts";
import { median, percentile, seededRandom } from "./stats.ts";

const EDGE_PORT = 8779;
const PROBE_PORT = 8778;
const FIRST_PROFNET_ID = 47_000_000;
const FINDS_IN_FLIGHT = 8;
const NAIVE_IN_FLIGHT = 8;
/** Keys of the finding account: the lookup family allows 100 calls per 10 s per key. */
const FINDER_KEYS = 30;
const NAIVE_HELO = "naive-finder.bench.example";
/** Give up on one person after this long (202s asked again until then). */
const FIND_LIMIT_MS = 120_000;
const GENERIC_LOCAL_PARTS = ["info", "sales", "contact", "support", "office", "hr", "jobs", "press"];

export const PATTERNS = ["{first}.{last}", "{f}{last}", "{first}", "{first}{last}", "{first}_{last}", "{f}.{last}", "{last}.{first}", "{first}.{l}"] as const;
export type Pattern = (typeof PATTERNS)[number];
/** How often companies use each pattern (first.last most common). */
const PATTERN_WEIGHTS: Record<Pattern, number> = { "{first}.{last}": 45, "{f}{last}": 16, "{first}": 6, "{first}{last}": 9, "{first}_{last}": 5, "{f}.{last}": 8, "{last}.{first}": 5, "{first}.{l}": 6 };

export type DomainKind = "plain" | "catch_all" | "no_probe" | "gateway";
export const DOMAIN_KINDS: readonly DomainKind[] = ["plain", "catch_all", "no_probe", "gateway"];

export type WorldDomain = {
  name: string;
  company: string;
  kind: DomainKind;
  /** Who runs its MX for the no-probe kind. */
  provider: "self-hosted" | "microsoft" | "yahoo" | "forcepoint";
  mx: string;
  ip: string;
  /** One pattern, or two (a 70/30 mix). */
  patterns: { pattern: Pattern; weight: number }[];
  particles: "join" | "drop";
  hyphens: "keep" | "strip";
};

export type Role = "known" | "find_in_data" | "find_absent" | "find_gone";
export type WorldPerson = {
  i: number;
  domain: string;
  given: string;
  middle: string | null;
  family: string;
  full: string;
  /** The mailbox; for find_gone the address the pattern would give, which does not exist. */
  address: string;
  /** The real mailbox, or null (the person left: no mailbox). */
  truth: string | null;
  role: Role;
  /** The pattern of the address (the domain's first, or its second of a 70/30 mix). */
  pattern: Pattern;
  profnetId: number | null;
  /** What the finder is asked with. */
  query: Record<string, string>;
};

export type FinderWorld = { seed: number; domains: WorldDomain[]; people: WorldPerson[]; zone: Zone; mailboxes: Map<string, Set<string>> };

// Names as people write them: diacritics, hyphenated given names, particles, apostrophes, double-barrelled families.
const GIVEN = [
  "José", "María", "Zoë", "François", "Jürgen", "Søren", "Łukasz", "Ana-María", "Jean-Luc", "Hans-Peter", "Anne-Marie", "Björn", "Chloé", "Renée",
  "Núria", "Inês", "João", "Siobhán", "Małgorzata", "Ægir", "Andrés", "Ümit", "Çağla", "Miroslav", "Dmitri", "Agnès", "Hélène", "Mårten",
  "James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth", "William", "Barbara", "Richard", "Susan",
  "Thomas", "Jessica", "Daniel", "Sarah", "Matthew", "Karen", "Anthony", "Nancy", "Mark", "Lisa", "Paul", "Emily", "Steven", "Ashley",
  "Andrew", "Kimberly", "Joshua", "Michelle", "Kevin", "Amanda", "Brian", "Melissa", "George", "Stephanie", "Timothy", "Rebecca", "Ryan", "Laura",
  "Priya", "Arjun", "Wei", "Mei", "Hiroshi", "Yuki", "Olusegun", "Chiamaka", "Fatima", "Omar", "Lars", "Ingrid", "Pieter", "Annelies", "Mia-Sophie",
];
const MIDDLE = ["Ann", "Marie", "Lee", "James", "Elizabeth", "Louise", "Karl", "Ángel"];
const FAMILY = [
  "Núñez", "García", "Müller", "Schröder", "Øvergaard", "Kowalski", "Wiśniewski", "O'Brien", "van der Berg", "de la Cruz", "van Dijk", "de Vries",
  "von Stein", "da Silva", "dos Santos", "Le Roux", "Smith-Jones", "Gonçalves", "Čapek", "Dvořák", "Łuczak", "Åberg", "Ibáñez", "Grünewald",
  "Fernández", "López", "Pérez", "Sánchez", "Martínez", "Rodríguez", "Weiß", "Straße", "Jäger", "Bäcker", "D'Angelo", "McDonald", "MacLeod",
  "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson", "Anderson", "Taylor", "Thomas", "Moore", "Jackson", "Martin",
  "Lee", "Thompson", "White", "Harris", "Clark", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright", "Scott", "Green", "Baker",
  "Adams", "Nelson", "Hill", "Campbell", "Mitchell", "Roberts", "Carter", "Phillips", "Evans", "Turner", "Torres", "Parker", "Collins", "Edwards",
  "Patel", "Sharma", "Chen", "Wang", "Tanaka", "Suzuki", "Okafor", "Adeyemi", "Haddad", "Nilsson", "Johansson", "Jansen", "de Jong", "ter Horst",
];
const PARTICLES = new Set(["van", "der", "den", "de", "del", "della", "di", "da", "das", "dos", "du", "la", "le", "von", "zu", "ten", "ter"]);
const SPELLED: Record<string, string> = { ß: "ss", æ: "ae", œ: "oe", ø: "o", ł: "l", đ: "d", ð: "d", þ: "th", ı: "i" };
const SYLLABLES = ["vel", "or", "ant", "nor", "thi", "ka", "lum", "bra", "sen", "tor", "qui", "mar", "dex", "ro", "zen", "pha", "lo", "gri", "tek", "va", "sol", "mi", "cor", "ne"];
const TLDS = ["com", "com", "com", "com", "com", "de", "co.uk", "fr", "nl", "io", "es", "se"];
const LEGAL = ["Inc.", "GmbH", "Ltd", "S.A.", "B.V.", "AB", "LLC", "plc"];

/** A name as a mail administrator writes it in a local part: ASCII, lower case, no marks, no apostrophes. */
export function foldAscii(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[ßæœøłđðþı]/g, (c) => SPELLED[c] ?? c)
    .replace(/['’`]/g, "");
}

/** The given and family parts of a local part, as `d` writes them. */
function nameParts(d: Pick<WorldDomain, "particles" | "hyphens">, given: string, family: string): { first: string; last: string } {
  const hy = (s: string) => (d.hyphens === "keep" ? s : s.replace(/-/g, ""));
  const words = foldAscii(family).split(/\s+/).filter((w) => w !== "");
  const lastWords = d.particles === "join" ? words : words.filter((w, k) => k === words.length - 1 || !PARTICLES.has(w));
  const last = hy(lastWords.join("")).replace(/[^a-z0-9-]/g, "");
  const first = hy(foldAscii(given).split(/\s+/)[0]!).replace(/[^a-z0-9-]/g, "");
  return { first, last };
}

/** The local part a pattern gives. */
export function applyPattern(pattern: Pattern, first: string, last: string): string {
  return pattern.replace("{first}", first).replace("{last}", last).replace("{f}", first[0] ?? "").replace("{l}", last[0] ?? "");
}

/** The key the API matches names on (given name's first word, family's last non-particle word): unique per domain, so no search is ambiguous. */
function matchKey(given: string, family: string): string {
  const g = foldAscii(given).replace(/-/g, "");
  const f = foldAscii(family).split(/[\s-]+/).filter((w) => w !== "" && !PARTICLES.has(w));
  return `${g} ${f.at(-1) ?? ""}`;
}

function pickWeighted<T extends string>(r: () => number, weights: Record<T, number>, except?: T): T {
  const entries = (Object.entries(weights) as [T, number][]).filter(([k]) => k !== except);
  let x = r() * entries.reduce((s, [, w]) => s + w, 0);
  for (const [k, w] of entries) if ((x -= w) < 0) return k;
  return entries.at(-1)![0];
}

/** The labelled world for a seed: domains, their DNS, their people, every mailbox of each MX host. */
export function buildFinderWorld(opts: { seed: number; domains: number; people: number }): FinderWorld {
  const r = seededRandom(opts.seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const zone: Zone = {};
  const domains: WorldDomain[] = [];
  const used = new Set<string>();
  const yahooMx = "mta7.am0.yahoodns.net";
  const yahooIp = "127.30.0.1";
  zone[yahooMx] = { A: [yahooIp] };
  const noProbe = Math.max(2, Math.round(opts.domains * 0.15));
  const catchAll = Math.max(2, Math.round(opts.domains * 0.15));
  for (let i = 0; i < opts.domains; i++) {
    let name = "";
    while (name === "" || used.has(name) || isDisposableDomain(name) || isFreeProviderDomain(name)) {
      const word = Array.from({ length: 2 + Math.floor(r() * 2) }, () => pick(SYLLABLES)).join("");
      name = `${word}${r() < 0.2 ? `-${pick(["group", "labs", "systems", "partners"])}` : ""}.${pick(TLDS)}`;
    }
    used.add(name);
    const kind: DomainKind = i === 0 ? "gateway" : i <= noProbe ? "no_probe" : i <= noProbe + catchAll ? "catch_all" : "plain";
    const provider = kind === "gateway" ? "forcepoint" : kind === "no_probe" ? (i % 3 === 0 ? "yahoo" : "microsoft") : "self-hosted";
    const ip = provider === "yahoo" ? yahooIp : `127.20.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    const mx = provider === "forcepoint" ? RECEIVER_MX.forcepoint(name) : provider === "microsoft" ? RECEIVER_MX.eop(name) : provider === "yahoo" ? yahooMx : `mx${kind === "catch_all" ? "" : "1"}.${name}`;
    zone[name] = { MX: [{ preference: 10, exchange: mx }] };
    if (provider !== "yahoo") zone[mx] = { A: [ip] };
    const first = pickWeighted(r, PATTERN_WEIGHTS);
    const patterns = r() < 0.15 ? [{ pattern: first, weight: 0.7 }, { pattern: pickWeighted(r, PATTERN_WEIGHTS, first), weight: 0.3 }] : [{ pattern: first, weight: 1 }];
    const word = name.split(".")[0]!.replace(/-.*/, "");
    domains.push({ name, company: `${word[0]!.toUpperCase()}${word.slice(1)} ${pick(LEGAL)}`, kind, provider, mx, ip, patterns, particles: r() < 0.8 ? "join" : "drop", hyphens: r() < 0.7 ? "keep" : "strip" });
  }
  // Each MX host's mailboxes: the generic ones of each domain, then each person's.
  const mailboxes = new Map<string, Set<string>>();
  for (const d of domains) {
    const set = mailboxes.get(d.mx) ?? new Set<string>();
    for (const g of GENERIC_LOCAL_PARTS) set.add(`${g}@${d.name}`);
    mailboxes.set(d.mx, set);
  }
  // People to find per domain, by a skewed weight; the gateway gets enough for its defence to matter.
  const weights = domains.map((d) => (d.kind === "gateway" ? 0 : 0.3 + r() ** 2 * 3));
  const gatewayFinds = Math.max(20, Math.round(opts.people * 0.03));
  const totalWeight = weights.reduce((s, w) => s + w, 0);
  const finds = weights.map((w, k) => (domains[k]!.kind === "gateway" ? gatewayFinds : Math.max(2, Math.round((w / totalWeight) * (opts.people - gatewayFinds)))));
  const people: WorldPerson[] = [];
  let profnet = FIRST_PROFNET_ID;
  domains.forEach((d, k) => {
    const keys = new Set<string>();
    const addresses = mailboxes.get(d.mx)!;
    const known = r() < 0.1 ? Math.floor(r() * 2) : 2 + Math.floor(r() ** 1.5 * 40);
    const roles: Role[] = [...Array<Role>(known).fill("known")];
    for (let p = 0; p < finds[k]!; p++) {
      const x = r();
      roles.push(x < 0.5 ? "find_in_data" : x < 0.92 ? "find_absent" : "find_gone");
    }
    for (const role of roles) {
      for (let attempt = 0; attempt < 400; attempt++) {
        const given = pick(GIVEN);
        const family = pick(FAMILY);
        const middle = r() < 0.1 ? pick(MIDDLE) : null;
        const key = matchKey(given, family);
        const x = r();
        let acc = 0;
        const pattern = d.patterns.find((p) => (acc += p.weight) > x)?.pattern ?? d.patterns[0]!.pattern;
        const { first, last } = nameParts(d, given, family);
        const address = `${applyPattern(pattern, first, last)}@${d.name}`;
        if (keys.has(key) || addresses.has(address)) continue;
        keys.add(key);
        const truth = role === "find_gone" ? null : address;
        if (truth) addresses.add(truth);
        const full = `${given}${middle ? ` ${middle}` : ""} ${family}`;
        // How a customer writes the person and the company: mostly as given, sometimes without accents, or in two fields; the domain sometimes as a URL.
        const q = r();
        const nameQuery: Record<string, string> = q < 0.6 ? { full_name: full } : q < 0.8 ? { full_name: foldAscii(full).replace(/(^|[\s-])\p{L}/gu, (c) => c.toUpperCase()) } : { first_name: given, last_name: family };
        const dq = r();
        const domainQuery = dq < 0.85 ? d.name : dq < 0.95 ? `www.${d.name}` : `https://${d.name}/about`;
        const inData = role === "known" || role === "find_in_data";
        people.push({ i: people.length, domain: d.name, given, middle, family, full, address, truth, role, pattern, profnetId: inData ? profnet++ : null, query: { ...nameQuery, domain: domainQuery } });
        break;
      }
    }
  });
  return { seed: opts.seed, domains, people, zone, mailboxes };
}

/** The import file of the world: every person in our data with name, employment at the domain and work address. */
export function importLines(world: FinderWorld): string[] {
  const byName = new Map(world.domains.map((d) => [d.name, d]));
  return world.people
    .filter((p) => p.profnetId !== null)
    .map((p) => JSON.stringify({ profnet_id: p.profnetId, full_name: p.full, company: byName.get(p.domain)!.company, company_domain: p.domain, email_addresses: [p.address] }));
}

/** The world's mail servers: one fixture per MX host, on its own loopback address. */
type Servers = { fixtures: Map<string, { fixture: MtaFixture; domain: WorldDomain }>; close(): Promise<void> };

async function startServers(world: FinderWorld, delayMs: number): Promise<Servers> {
  const fixtures = new Map<string, { fixture: MtaFixture; domain: WorldDomain }>();
  try {
    for (const d of world.domains) {
      if (fixtures.has(d.mx)) continue;
      const catchAllDomains = world.domains.filter((x) => x.mx === d.mx && x.kind === "catch_all").map((x) => x.name);
      const fixture = await startMtaFixture({
        host: d.ip,
        port: 25,
        hostname: d.mx,
        banner: d.provider === "self-hosted" ? "ESMTP Postfix" : "ESMTP",
        delayMs,
        mailboxes: [...world.mailboxes.get(d.mx)!],
        catchAllDomains,
        clientKey: "helo",
        ...(d.kind === "gateway" ? { harvestDefence: FORCEPOINT_DEFENCE } : {}),
        ...(d.provider === "microsoft" ? { unknownUserReply: (a: string) => `550 5.4.1 Recipient address rejected: Access denied. AS(201806281) [${a}]` } : {}),
      });
      fixtures.set(d.mx, { fixture, domain: d });
    }
  } catch (err) {
    await Promise.all([...fixtures.values()].map((f) => f.fixture.close()));
    throw err;
  }
  return { fixtures, close: async () => void (await Promise.all([...fixtures.values()].map((f) => f.fixture.close()))) };
}

/** What the receivers counted, per domain kind. */
export type ReceiverTally = { connections: number; rcpts: number; unknownRcpts: number; blocks: number; blockedReplies: number };
const emptyTally = (): ReceiverTally => ({ connections: 0, rcpts: 0, unknownRcpts: 0, blocks: 0, blockedReplies: 0 });

function tallyServers(world: FinderWorld, servers: Servers): Record<DomainKind, ReceiverTally> {
  const out = Object.fromEntries(DOMAIN_KINDS.map((k) => [k, emptyTally()])) as Record<DomainKind, ReceiverTally>;
  const kindOf = new Map(world.domains.map((d) => [d.name, d.kind]));
  for (const [mx, { fixture, domain }] of servers.fixtures) {
    const boxes = world.mailboxes.get(mx)!;
    for (const c of fixture.connections) {
      const rcpts = c.commands.filter((x) => /^RCPT /i.test(x)).map((x) => (/<([^>]*)>/.exec(x)?.[1] ?? "").toLowerCase());
      // A connection is the first recipient's domain's (a shared MX, Yahoo's, serves several); one without RCPT the MX's own.
      const connKind = kindOf.get(rcpts[0]?.slice(rcpts[0].lastIndexOf("@") + 1) ?? "") ?? domain.kind;
      out[connKind].connections++;
      for (const a of rcpts) {
        const kind = kindOf.get(a.slice(a.lastIndexOf("@") + 1)) ?? domain.kind;
        out[kind].rcpts++;
        if (kind !== "catch_all" && !boxes.has(a)) out[kind].unknownRcpts++;
      }
    }
    out[domain.kind].blocks += fixture.harvest.blocks.length;
    out[domain.kind].blockedReplies += fixture.harvest.blockedReplies;
  }
  return out;
}

const sumTally = (t: Record<DomainKind, ReceiverTally>): ReceiverTally =>
  Object.values(t).reduce((a, b) => ({ connections: a.connections + b.connections, rcpts: a.rcpts + b.rcpts, unknownRcpts: a.unknownRcpts + b.unknownRcpts, blocks: a.blocks + b.blocks, blockedReplies: a.blockedReplies + b.blockedReplies }), emptyTally());

/** One find's outcome, whichever finder. */
export type Find = {
  person: number;
  kind: DomainKind;
  role: Role;
  status: number;
  email: string | null;
  method: string | null;
  confirmed: boolean | null;
  confidence: number | null;
  charged: boolean;
  correct: boolean;
  ms: number;
  pending: number;
  /** The reason of a 404/422, or the error. */
  reason: string | null;
};

const within = async <T>(items: T[], inFlight: number, each: (item: T) => Promise<void>) => {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < items.length) await each(items[next++]!);
  }));
};

/** The seeded order the people to find are asked in: domains interleaved, as a customer's list is. */
function findOrder(world: FinderWorld): WorldPerson[] {
  const r = seededRandom(world.seed + 1);
  const list = world.people.filter((p) => p.role !== "known");
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

/** Whether GET /v1/email_finder is routed by the Worker in this working tree: edge/app.ts mounts the route (edge/routes/email-finder.ts). */
export function finderRouteExists(): boolean {
  try {
    return /email[-_]finder/.test(readFileSync(join(root, "edge/app.ts"), "utf8")) && readdirSync(join(root, "edge/routes")).some((f) => readFileSync(join(root, "edge/routes", f), "utf8").includes("/v1/email_finder"));
  } catch {
    return false;
  }
}

/** Our finder: each person to find asked once through GET /v1/email_finder, 202s asked again until an answer. */
async function runOurs(world: FinderWorld, base: string, tokens: string[], log: (m: string) => void): Promise<Find[]> {
  const kindOf = new Map(world.domains.map((d) => [d.name, d.kind]));
  const order = findOrder(world);
  const finds: Find[] = [];
  let sent = 0;
  let done = 0;
  await within(order, FINDS_IN_FLIGHT, async (p) => {
    const started = performance.now();
    const qs = new URLSearchParams(p.query).toString();
    let pending = 0;
    let f: Find | null = null;
    while (f === null) {
      const res = await fetch(`${base}/v1/email_finder?${qs}`, { headers: { authorization: `Bearer ${tokens[sent++ % tokens.length]}` } }).catch((e: Error) => e);
      const ms = performance.now() - started;
      const base0 = { person: p.i, kind: kindOf.get(p.domain)!, role: p.role, ms, pending };
      if (res instanceof Error || res.status === 429) {
        if (res instanceof Response) await res.body?.cancel();
        if (ms > FIND_LIMIT_MS) f = { ...base0, status: 0, email: null, method: null, confirmed: null, confidence: null, charged: false, correct: false, reason: res instanceof Error ? res.message : "429 until the limit" };
        else await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      const body = (await res.json().catch(() => ({}))) as { email?: string; method?: string; confirmed?: boolean; confidence?: number; reason?: string; error?: string; retry_after_seconds?: number };
      if (res.status === 202 && ms < FIND_LIMIT_MS) {
        pending++;
        const after = Number(res.headers.get("retry-after") ?? body.retry_after_seconds ?? 1);
        await new Promise((r) => setTimeout(r, Math.max(250, Math.min(after, 10) * 1000)));
        continue;
      }
      const email = res.status === 200 && body.email ? body.email.toLowerCase() : null;
      f = {
        ...base0,
        status: res.status,
        email,
        method: body.method ?? null,
        confirmed: body.confirmed ?? null,
        confidence: body.confidence ?? null,
        charged: res.headers.get("x-credits-charged") === "1",
        correct: email !== null && email === p.truth,
        reason: res.status === 200 ? null : (body.reason ?? body.error ?? null),
      };
    }
    finds.push(f);
    if (++done % 200 === 0) log(`finder: ${done}/${order.length} asked`);
  });
  return finds.sort((a, b) => a.person - b.person);
}

/** A minimal SMTP client: one line-reply at a time, no pipelining. */
async function smtpSession(ip: string, port: number, helo: string, commands: AsyncGenerator<string | null, void, string>): Promise<void> {
  const socket = net.connect({ host: ip, port });
  socket.setEncoding("latin1");
  let buffered = "";
  const waiting: ((line: string) => void)[] = [];
  const replies: string[] = [];
  socket.on("data", (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf("\n")) !== -1) {
      const line = buffered.slice(0, nl).replace(/\r$/, "");
      buffered = buffered.slice(nl + 1);
      if (line[3] === "-") continue;
      const w = waiting.shift();
      if (w) w(line);
      else replies.push(line);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => {});
  const reply = () =>
    new Promise<string>((resolve) => {
      const ready = replies.shift();
      if (ready !== undefined) return resolve(ready);
      waiting.push(resolve);
      void closed.then(() => resolve("421 closed"));
    });
  try {
    const greeting = await reply();
    if (!greeting.startsWith("220")) return;
    socket.write(`EHLO ${helo}\r\n`);
    if (!(await reply()).startsWith("250")) return;
    socket.write(`MAIL FROM:<verify@${helo}>\r\n`);
    if (!(await reply()).startsWith("250")) return;
    let step = await commands.next("");
    while (!step.done && step.value !== null) {
      socket.write(`${step.value}\r\n`);
      step = await commands.next(await reply());
    }
    socket.write("QUIT\r\n");
    await Promise.race([reply(), closed]);
  } finally {
    socket.end();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 1_000))]);
    socket.destroy();
  }
}

/** The candidates a permutation tool tries, in its order: the eight patterns of a name folded the simple way. */
export function naiveCandidates(given: string, family: string, domain: string): string[] {
  const first = foldAscii(given).replace(/[^a-z0-9]/g, "");
  const last = foldAscii(family).replace(/[^a-z0-9]/g, "");
  return [...new Set(PATTERNS.map((p) => `${applyPattern(p, first, last)}@${domain}`))];
}

/** The naive permutation finder: per person one connection, RCPT each candidate until one is accepted, QUIT. */
async function runNaive(world: FinderWorld, port: number): Promise<Find[]> {
  const byName = new Map(world.domains.map((d) => [d.name, d]));
  const finds: Find[] = [];
  await within(findOrder(world), NAIVE_IN_FLIGHT, async (p) => {
    const d = byName.get(p.domain)!;
    const started = performance.now();
    let found: string | null = null;
    let reason: string | null = null;
    const candidates = naiveCandidates(p.given, p.family, p.domain);
    await smtpSession(d.ip, port, NAIVE_HELO, (async function* () {
      for (const c of candidates) {
        const answer = yield `RCPT TO:<${c}>`;
        if (answer.startsWith("250")) {
          found = c;
          return;
        }
        if (answer.startsWith("421")) {
          reason = answer;
          return;
        }
        if (/^5\d\d 5\.7\./.test(answer)) reason = answer;
      }
    })()).catch((e: Error) => void (reason = e.message));
    const email = found as string | null;
    finds.push({ person: p.i, kind: d.kind, role: p.role, status: email ? 200 : 404, email, method: email ? "smtp_permutation" : null, confirmed: email !== null, confidence: null, charged: email !== null, correct: email !== null && email === p.truth, ms: performance.now() - started, pending: 0, reason });
  });
  return finds.sort((a, b) => a.person - b.person);
}

/** The figures of one finder's run. */
export type FinderFigures = {
  finds: number;
  answered: number;
  correct: number;
  charged: number;
  chargedCorrect: number;
  free: number;
  freeCorrect: number;
  /** Answers for a person with no mailbox (always wrong). */
  answeredGone: number;
  gone: number;
  statuses: Record<string, number>;
  reasons: Record<string, number>;
  byMethod: Record<string, { answered: number; correct: number; charged: number; chargedCorrect: number; meanConfidenceRight: number | null; meanConfidenceWrong: number | null }>;
  byKind: Record<DomainKind, { finds: number; answered: number; correct: number; charged: number; chargedCorrect: number; free: number; freeCorrect: number } & ReceiverTally>;
  byRole: Record<Role, { finds: number; answered: number; correct: number }>;
  receivers: ReceiverTally;
  msMedian: number;
  msP95: number;
  wallMs: number;
  pendingAnswers: number;
  /** Answers confirmed but not charged (a repeat), and charged answers that said confirmed=false (neither should happen here). */
  confirmedNotCharged: number;
  chargedUnconfirmed: number;
  /** Finds not answered from our data (known_address): the ones that may need a RCPT. */
  notKnown: number;
  /** A few concrete wrong answers, charged first. */
  wrong: string[];
  /** A few people with a mailbox the finder did not answer for. */
  missed: string[];
  /** People with a mailbox not answered for, by what sets them apart: a hyphen in the local part, the domain's second pattern, neither. */
  missedBy: Record<string, number>;
  /** The slowest finds (202s first, or past 5 s): who, how it ended, how long, how many 202s. */
  slow: string[];
  msMean: number;
  msMax: number;
  /** Answers by domain kind and method: answered, right. */
  kindMethod: Record<string, { answered: number; correct: number; charged: number }>;
};

function figures(world: FinderWorld, finds: Find[], receivers: Record<DomainKind, ReceiverTally>, wallMs: number): FinderFigures {
  const people = world.people;
  const byKind = Object.fromEntries(DOMAIN_KINDS.map((k) => [k, { finds: 0, answered: 0, correct: 0, charged: 0, chargedCorrect: 0, free: 0, freeCorrect: 0, ...receivers[k] }])) as FinderFigures["byKind"];
  const byRole = Object.fromEntries((["find_in_data", "find_absent", "find_gone"] as Role[]).map((k) => [k, { finds: 0, answered: 0, correct: 0 }])) as FinderFigures["byRole"];
  const byMethod: FinderFigures["byMethod"] = {};
  const statuses: Record<string, number> = {};
  const reasons: Record<string, number> = {};
  const wrongCharged: string[] = [];
  const wrongFree: string[] = [];
  const missed: string[] = [];
  const missedBy: Record<string, number> = {};
  const kindMethod: FinderFigures["kindMethod"] = {};
  const byName = new Map(world.domains.map((d) => [d.name, d]));
  const describe = (p: WorldPerson) => {
    const d = byName.get(p.domain)!;
    return `${d.kind} ${p.domain} (${d.provider}, ${d.patterns.map((x) => `${x.pattern}${x.weight < 1 ? ` ${x.weight * 100}%` : ""}`).join(" + ")}, particles ${d.particles}, hyphens ${d.hyphens}): "${p.query.full_name ?? `${p.query.first_name} / ${p.query.last_name}`}" (${p.role})`;
  };
  for (const f of finds) {
    const p = people[f.person]!;
    statuses[f.status] = (statuses[f.status] ?? 0) + 1;
    if (f.reason) reasons[f.reason.slice(0, 60)] = (reasons[f.reason.slice(0, 60)] ?? 0) + 1;
    const k = byKind[f.kind];
    k.finds++;
    byRole[f.role].finds++;
    if (f.email === null) {
      if (p.truth === null) continue;
      const d = byName.get(p.domain)!;
      const cause = `${f.kind}: ${p.truth.slice(0, p.truth.indexOf("@")).includes("-") ? "a hyphen in the local part" : p.pattern !== d.patterns[0]!.pattern ? "the domain's second pattern (30%)" : "neither"}`;
      missedBy[cause] = (missedBy[cause] ?? 0) + 1;
      // A few of each cause.
      if (missedBy[cause]! <= 3 && missed.length < 15) missed.push(`${describe(p)} -> ${f.status}${f.reason ? ` ${f.reason}` : ""}; real: ${p.truth}`);
      continue;
    }
    const km = (kindMethod[`${f.kind} / ${f.method}`] ??= { answered: 0, correct: 0, charged: 0 });
    km.answered++;
    if (f.correct) km.correct++;
    if (f.charged) km.charged++;
    k.answered++;
    byRole[f.role].answered++;
    const m = (byMethod[f.method ?? "?"] ??= { answered: 0, correct: 0, charged: 0, chargedCorrect: 0, meanConfidenceRight: null, meanConfidenceWrong: null });
    m.answered++;
    if (f.correct) (k.correct++, m.correct++, byRole[f.role].correct++);
    if (f.charged) {
      k.charged++;
      m.charged++;
      if (f.correct) (k.chargedCorrect++, m.chargedCorrect++);
    } else if (f.confirmed === false) {
      k.free++;
      if (f.correct) k.freeCorrect++;
    }
    if (!f.correct) {
      const line = `${describe(p)} -> ${f.email} by ${f.method}${f.charged ? ", charged" : ""}; real: ${p.truth ?? "no mailbox"}`;
      (f.charged ? wrongCharged : wrongFree).push(line);
    }
  }
  for (const [method, m] of Object.entries(byMethod)) {
    const mean = (right: boolean) => {
      const v = finds.filter((f) => f.method === method && f.email !== null && f.correct === right && f.confidence !== null).map((f) => f.confidence!);
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
    };
    m.meanConfidenceRight = mean(true);
    m.meanConfidenceWrong = mean(false);
  }
  const ms = finds.map((f) => f.ms).sort((a, b) => a - b);
  const sum = (g: (f: Find) => boolean) => finds.filter(g).length;
  return {
    finds: finds.length,
    answered: sum((f) => f.email !== null),
    correct: sum((f) => f.correct),
    charged: sum((f) => f.email !== null && f.charged),
    chargedCorrect: sum((f) => f.charged && f.correct),
    free: sum((f) => f.email !== null && !f.charged && f.confirmed === false),
    freeCorrect: sum((f) => !f.charged && f.confirmed === false && f.correct),
    answeredGone: sum((f) => f.role === "find_gone" && f.email !== null),
    gone: sum((f) => f.role === "find_gone"),
    statuses,
    reasons,
    byMethod,
    byKind,
    byRole,
    receivers: sumTally(receivers),
    msMedian: ms.length ? median(ms) : 0,
    msP95: percentile(ms, 95),
    wallMs,
    pendingAnswers: sum((f) => f.pending > 0),
    confirmedNotCharged: sum((f) => f.email !== null && f.confirmed === true && !f.charged),
    chargedUnconfirmed: sum((f) => f.charged && f.confirmed === false),
    notKnown: sum((f) => f.method !== "known_address"),
    wrong: [...wrongCharged.slice(0, 12), ...wrongFree.slice(0, 8)],
    missed,
    missedBy,
    kindMethod,
    slow: finds
      .filter((f) => f.pending > 0 || f.ms > 5_000)
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 8)
      .map((f) => `${describe(people[f.person]!)} -> ${f.status}${f.email ? ` ${f.email}` : ""}${f.method ? ` by ${f.method}` : ""} after ${(f.ms / 1000).toFixed(1)} s and ${f.pending} × 202`),
    msMean: ms.length ? ms.reduce((a, b) => a + b, 0) / ms.length : 0,
    msMax: ms.at(-1) ?? 0,
  };
}

export type FinderResult = {
  seed: number;
  domains: Record<DomainKind, number>;
  twoPatternDomains: number;
  patternsUsed: Record<string, number>;
  known: number;
  toFind: Record<Role, number>;
  imported: number;
  importMs: number | null;
  delayMs: number;
  /** Null when GET /v1/email_finder is not routed in this tree. */
  ours: FinderFigures | null;
  oursSkipped: string | null;
  naive: FinderFigures;
};

export async function runFinderBench(opts: { seed: number; domains: number; people: number; delayMs: number; naiveOnly?: boolean; forceOurs?: boolean; log?: (m: string) => void }): Promise<FinderResult> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("The finder benchmark needs root: its mail servers listen on port 25, where the probe dials.");
  const world = buildFinderWorld(opts);
  const toFind = { known: 0, find_in_data: 0, find_absent: 0, find_gone: 0 } as Record<Role, number>;
  for (const p of world.people) toFind[p.role]++;
  const domains = Object.fromEntries(DOMAIN_KINDS.map((k) => [k, world.domains.filter((d) => d.kind === k).length])) as Record<DomainKind, number>;
  const patternsUsed: Record<string, number> = {};
  for (const d of world.domains) patternsUsed[d.patterns[0]!.pattern] = (patternsUsed[d.patterns[0]!.pattern] ?? 0) + 1;
  log(`finder: ${world.domains.length} domains (${JSON.stringify(domains)}), ${toFind.known} known people, ${world.people.length - toFind.known} to find (${toFind.find_in_data} in our data, ${toFind.find_absent} not, ${toFind.find_gone} with no mailbox)`);

  let ours: FinderFigures | null = null;
  let oursSkipped: string | null = null;
  let importMs: number | null = null;
  const lines = importLines(world);
  const routed = finderRouteExists();
  if (opts.naiveOnly) oursSkipped = "--naive-only";
  else if (!routed && !opts.forceOurs) oursSkipped = "GET /v1/email_finder is not mounted in edge/app.ts in this tree";
  if (oursSkipped === null) {
    const servers = await startServers(world, opts.delayMs);
    const dir = await mkdtemp(join(tmpdir(), "bench-finder-"));
    let stack: Awaited<ReturnType<typeof startJobsStack>> | undefined;
    try {
      stack = await startJobsStack({
        zone: world.zone,
        delayMs: opts.delayMs,
        edgePort: EDGE_PORT,
        probePort: PROBE_PORT,
        mtaArgs: null,
        // The base's own re-verification off (every RCPT counted is the finder's); the probe's harvest budgets as shipped.
        env: { EMAIL_REFRESH_BATCH: "0", PROBE_DESTINATION_UNKNOWN_RATIO: undefined, PROBE_DESTINATION_UNKNOWN_PER_HOUR: undefined },
      });
      const base = `http://127.0.0.1:${EDGE_PORT}`;
      const db = openDatabase(stack.database.url, stack.database.authToken);
      const file = join(dir, "finder-world.jsonl");
      await writeFile(file, `${lines.join("\n")}\n`);
      log(`finder: importing ${lines.length} people`);
      const importStarted = performance.now();
      const summary = await importPeople(db.$client, file, { source: "bench-finder-supplier" });
      importMs = performance.now() - importStarted;
      if (summary.rejected > 0) throw new Error(`the import rejected ${summary.rejected} lines: ${JSON.stringify(summary.rejections).slice(0, 2000)}`);
      const account = await createAccount(db, "bench finder", 100_000_000);
      const tokens: string[] = [];
      for (let k = 0; k < FINDER_KEYS; k++) tokens.push((await createApiKey(db, account.id)).token);
      db.$client.close();
      if (!routed) {
        // No finder to ask: at least show the probe reaches the world's servers (one check of a generic mailbox at a plain domain).
        const plain = world.domains.find((d) => d.kind === "plain")!;
        const res = await fetch(`${base}/v1/email_verifications?email_address=info@${plain.name}`, { headers: { authorization: `Bearer ${tokens[0]}` } });
        log(`finder: no route; GET /v1/email_verifications for info@${plain.name} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      }
      const before = tallyServers(world, servers);
      if (sumTally(before).rcpts > 0) log(`finder: ${sumTally(before).rcpts} RCPTs at the receivers before the first find (subtracted)`);
      log(`finder: asking GET /v1/email_finder for ${world.people.length - toFind.known} people, ${FINDS_IN_FLIGHT} at a time`);
      const started = performance.now();
      const finds = await runOurs(world, base, tokens, log);
      const wallMs = performance.now() - started;
      const after = tallyServers(world, servers);
      const delta = Object.fromEntries(DOMAIN_KINDS.map((k) => [k, { connections: after[k].connections - before[k].connections, rcpts: after[k].rcpts - before[k].rcpts, unknownRcpts: after[k].unknownRcpts - before[k].unknownRcpts, blocks: after[k].blocks - before[k].blocks, blockedReplies: after[k].blockedReplies - before[k].blockedReplies }])) as Record<DomainKind, ReceiverTally>;
      ours = figures(world, finds, delta, wallMs);
    } finally {
      await stack?.stop();
      await servers.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  // The naive finder, against fresh receivers (no memory of our finder's recipients).
  const servers = await startServers(world, opts.delayMs);
  try {
    log(`finder: the naive permutation finder, ${NAIVE_IN_FLIGHT} people at a time`);
    const started = performance.now();
    const finds = await runNaive(world, 25);
    const naive = figures(world, finds, tallyServers(world, servers), performance.now() - started);
    return {
      seed: opts.seed,
      domains,
      twoPatternDomains: world.domains.filter((d) => d.patterns.length > 1).length,
      patternsUsed,
      known: toFind.known,
      toFind,
      imported: lines.length,
      importMs,
      delayMs: opts.delayMs,
      ours,
      oursSkipped,
      naive,
    };
  } finally {
    await servers.close();
  }
}

const pct = (n: number, of: number) => (of === 0 ? "–" : `${((100 * n) / of).toFixed(1)}%`);
const per = (n: number, of: number) => (of === 0 ? "–" : (n / of).toFixed(2));

function headline(name: string, f: FinderFigures | null, skipped: string | null): string[] {
  if (!f) return [`| ${name} | not run: ${skipped} |`];
  return [
    `| ${name} | ${pct(f.answered, f.finds)} (${f.answered}/${f.finds}) | ${pct(f.correct, f.answered)} | ${pct(f.chargedCorrect, f.charged)} (${f.charged}) | ${pct(f.freeCorrect, f.free)} (${f.free}) | ${f.answeredGone}/${f.gone} | ${per(f.receivers.rcpts, f.finds)} | ${per(f.receivers.connections, f.finds)} | ${f.receivers.blocks} (${f.receivers.blockedReplies} refused) | ${pct(f.byKind.gateway.unknownRcpts, f.byKind.gateway.rcpts)} of ${f.byKind.gateway.rcpts} | ${Math.round(f.msMedian)} / ${Math.round(f.msP95)} ms |`,
  ];
}

function kindTable(f: FinderFigures): string {
  const rows = DOMAIN_KINDS.map((k) => {
    const x = f.byKind[k];
    return `| ${k} | ${x.finds} | ${pct(x.answered, x.finds)} | ${pct(x.correct, x.answered)} | ${x.charged} (${pct(x.chargedCorrect, x.charged)}) | ${x.free} (${pct(x.freeCorrect, x.free)}) | ${per(x.rcpts, x.finds)} | ${x.connections} | ${x.unknownRcpts} | ${x.blocks} |`;
  });
  return ["| Domain kind | Finds | Answered | Right | Charged (right) | Free (right) | RCPTs/find | Connections | Unknown RCPTs | Blocks |", "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|", ...rows].join("\n");
}

function methodTable(f: FinderFigures): string {
  const c = (v: number | null) => (v === null ? "–" : v.toFixed(0));
  const rows = Object.entries(f.byMethod).map(([m, x]) => `| ${m} | ${x.answered} | ${pct(x.correct, x.answered)} | ${x.charged} | ${pct(x.chargedCorrect, x.charged)} | ${c(x.meanConfidenceRight)} / ${c(x.meanConfidenceWrong)} |`);
  return ["| Method | Answers | Right | Charged | Charged right | Mean confidence: right / wrong answers |", "|---|--:|--:|--:|--:|--:|", ...rows].join("\n");
}

function kindMethodTable(f: FinderFigures): string {
  const rows = Object.entries(f.kindMethod).sort().map(([k, x]) => `| ${k} | ${x.answered} | ${pct(x.correct, x.answered)} | ${x.charged} |`);
  return ["| Kind / method | Answers | Right | Charged |", "|---|--:|--:|--:|", ...rows].join("\n");
}

function roleTable(f: FinderFigures): string {
  const names: Record<string, string> = { find_in_data: "in our data", find_absent: "not in our data (mailbox exists)", find_gone: "no mailbox (left)" };
  return ["| Person | Finds | Answered | Right |", "|---|--:|--:|--:|", ...Object.entries(f.byRole).map(([k, x]) => `| ${names[k]} | ${x.finds} | ${pct(x.answered, x.finds)} | ${pct(x.correct, x.finds)} of all |`)].join("\n");
}

/** One sentence for the report's headline. */
export function finderHeadline(r: FinderResult): string {
  const one = (f: FinderFigures) => `${pct(f.answered, f.finds)} answered, ${pct(f.chargedCorrect, f.charged)} of charged answers right, ${per(f.receivers.rcpts, f.finds)} RCPTs per find, ${f.receivers.blocks} blocks`;
  return `${r.ours ? `ours ${one(r.ours)}` : `ours not run (${r.oursSkipped})`}; a naive permutation finder ${one(r.naive)}`;
}

export function finderMarkdown(r: FinderResult): string {
  const parts = [
    `A labelled world (seed ${r.seed}): ${Object.values(r.domains).reduce((a, b) => a + b, 0)} domains (${r.domains.plain} plain, ${r.domains.catch_all} catch-all, ${r.domains.no_probe} no-probe: Microsoft 365 and Yahoo, ${r.domains.gateway} Forcepoint-style gateway), ${r.twoPatternDomains} of them with two patterns (70/30); main patterns ${Object.entries(r.patternsUsed).sort((a, b) => b[1] - a[1]).map(([p, n]) => `${p} ${n}`).join(", ")}. ${r.known} known people and ${r.toFind.find_in_data} people to find imported (name, employment, work address: ${r.imported} lines${r.importMs !== null ? ` in ${(r.importMs / 1000).toFixed(1)} s` : ""}); ${r.toFind.find_absent} people to find not in our data with a mailbox, ${r.toFind.find_gone} with none. Fixture mail servers (one per MX host on port 25, every reply after ${r.delayMs} ms) know every mailbox and count what they are sent.`,
    "",
    "| Finder | Answered | Right of answered | Charged right | Free right | Answers for no mailbox | RCPTs/find | Connections/find | Blocks | Unknown at the gateway | Time per find (median / p95) |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ...headline("Ours (GET /v1/email_finder)", r.ours, r.oursSkipped),
    ...headline("Naive permutation (8 patterns by SMTP)", r.naive, null),
    "",
    "Charged: X-Credits-Charged 1 (for the naive finder, every address a server accepted: it has nothing else to go by); free: answers with confirmed=false; right: the person's real mailbox (an answer for a person with no mailbox is always wrong). RCPTs, connections, unknown recipients and blocks are the receivers' own counts, catch-all tests included.",
  ];
  for (const [name, f] of [["Ours", r.ours], ["Naive permutation", r.naive]] as const) {
    if (!f) continue;
    parts.push("", `${name}: ${per(f.receivers.rcpts, f.notKnown)} RCPTs per find not answered from our data (${f.notKnown}); ${f.confirmedNotCharged} answers confirmed but not charged, ${f.chargedUnconfirmed} charged but not confirmed.`);
    parts.push("", `${name}, by domain kind (receivers' own counts; ${(f.wallMs / 1000).toFixed(1)} s in all${f.pendingAnswers ? `, ${f.pendingAnswers} finds answered 202 first` : ""}; statuses ${Object.entries(f.statuses).map(([s, n]) => `${s} × ${n}`).join(", ")}):`, "", kindTable(f), "", methodTable(f), "", kindMethodTable(f), "", roleTable(f));
    if (Object.keys(f.reasons).length) parts.push("", `Reasons: ${Object.entries(f.reasons).sort((a, b) => b[1] - a[1]).slice(0, 10).map(([k, n]) => `${k} × ${n}`).join("; ")}`);
    if (f.wrong.length) parts.push("", `Wrong answers (first few, charged first):`, "", ...f.wrong.map((w) => `- ${w}`));
    if (f.slow.length) parts.push("", `Slowest finds (mean ${Math.round(f.msMean)} ms, max ${(f.msMax / 1000).toFixed(1)} s):`, "", ...f.slow.map((w) => `- ${w}`));
    if (f.missed.length) parts.push("", `People with a mailbox not found: ${Object.entries(f.missedBy).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} × ${n}`).join("; ")}. The first few:`, "", ...f.missed.map((w) => `- ${w}`));
  }
  return parts.join("\n");
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      seed: { type: "string", default: "47" },
      domains: { type: "string" },
      people: { type: "string" },
      quick: { type: "boolean", default: false },
      "naive-only": { type: "boolean", default: false },
      /** Run our finder even when the route is not found in edge/ (to try the stack and the import). */
      "force-ours": { type: "boolean", default: false },
      "delay-ms": { type: "string", default: "5" },
      json: { type: "string" },
    },
  });
  const result = await runFinderBench({
    seed: Number(values.seed),
    domains: Number(values.domains ?? (values.quick ? 30 : 200)),
    people: Number(values.people ?? (values.quick ? 200 : 2000)),
    delayMs: Number(values["delay-ms"]),
    naiveOnly: values["naive-only"],
    forceOurs: values["force-ours"],
    log: (m) => process.stderr.write(`${m}\n`),
  });
  process.stdout.write(`${finderMarkdown(result)}\n`);
  const json = values.json ?? process.env.BENCH_JSON;
  if (json) await writeFile(json, JSON.stringify(result, null, 2));
}
