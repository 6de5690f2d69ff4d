/**
 * Whether a confidence band means what it says (docs/api.md "Confidence"): a labelled world, where each address's fate is
 * known, scored by the one confidence function (shared/people/confidence.ts; test/workers/confidence.test.ts holds the
 * lookup's SQL to the same answer for every combination of inputs), and the share of each band's addresses that turn out
 * deliverable set beside the band's mean score. The goal: each band within 10 points.
 *
 *   npx tsx bench/confidence-world.ts [--addresses 50000] [--seed 39]
 *
 * The world is a simulation, made from a generative model that is not the table: an address is a real mailbox of the
 * person or a supplier's wrong guess; each of up to four suppliers reports a real address more often than a wrong one;
 * a real mailbox dies at a steady monthly rate from when it was last seen alive; our probe sees the truth at the time of
 * its check, except at catch-all servers and servers that will not say, and errs rarely; customers' mail to an address
 * bounces or is delivered as the mailbox is at the time, and one account reports live addresses as bounced (poisoning).
 * Its rates come from the same published anchors as the table (docs/api.md), so the bench tests how the table's additive
 * points combine against a multiplicative world, not whether the anchors are right: no real-world labelled set exists here.
 */
import { parseArgs } from "node:util";
import { confidence, confidenceLabel, feedbackVerdict, type ConfidenceInputs, type FeedbackTally, type OurCheck, INDEPENDENT_ACCOUNTS } from "../shared/people/confidence.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

/** The world's rates, each with where it comes from. */
export const WORLD = {
  /**
   * Four suppliers; each reports a real address with one chance and a wrong one with another, and an address is in our
   * data when at least one did. The prior share of real addresses is what makes one report right 80% of the time
   * (agencies quote 75-85% per source): prior * real / (prior * real + (1 - prior) * wrong) = 0.8.
   */
  suppliers: 4,
  supplierReportsReal: 0.5,
  supplierReportsWrong: 0.1,
  reportAccuracy: 0.8,
  /** A mailbox dies at about 2% a month (B2B lists lose a fifth to a quarter a year). */
  monthlyDeath: 0.02,
  /** Domains: a catch-all server (accepts any address), one that will not say (blocks, greylists), an ordinary one. */
  catchAllShare: 0.2,
  silentShare: 0.1,
  /** Our probe's error on an ordinary server: a dead mailbox answered as existing (FullEnrich: 2% of DELIVERABLE bounce). */
  falseValid: 0.015,
  falseInvalid: 0.01,
  /** Share of addresses we have checked; the age of that check. */
  checkedShare: 0.6,
  /** Customers sending to an address: the chance any do, and how many accounts. */
  mailedShare: 0.35,
  maxSenders: 5,
  /** One account reports this many live addresses as bounced. */
  poisoned: 100,
} as const;

/** A seeded PRNG (mulberry32): the same world for the same seed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: () => number, weighted: [T, number][]): T => {
  let x = r() * weighted.reduce((s, [, w]) => s + w, 0);
  for (const [v, w] of weighted) if ((x -= w) < 0) return v;
  return weighted.at(-1)![0];
};

/** A customer's report of its mail to an address: which sender (0-based, one account each), what happened, how long ago (ms). */
export type WorldReport = { sender: number; outcome: "hard_bounce" | "delivered"; agoMs: number };

/**
 * One address of the world, with the truth behind what we know of it: which suppliers reported it and when any last
 * did, its server, whether and when we checked it and what that check found, whether its mailbox lives now, and the
 * customers' reports. bench/confidence-smtp.ts builds the same world out of fixture mail servers, imports and reports.
 */
export type WorldAddress = {
  inputs: ConfidenceInputs;
  deliverable: boolean;
  /** Indices (0..WORLD.suppliers - 1) of the suppliers that reported it. */
  suppliers: number[];
  server: "ordinary" | "catch_all" | "silent";
  checked: boolean;
  reports: WorldReport[];
};

/** Options of the generator: `seenAge` maps the drawn days since the last sighting to the days used (import dates). */
export type WorldOptions = { seenAge?: (days: number) => number };

/** One address of the world: its truth, what we know of it, and its fate now. */
export function worldAddress(r: () => number, poisoned: boolean, options: WorldOptions = {}): WorldAddress {
  const { supplierReportsReal: a, supplierReportsWrong: b, reportAccuracy: p } = WORLD;
  const prior = (p * b) / (a * (1 - p) + p * b);
  let real = false;
  let suppliers: number[] = [];
  while (suppliers.length === 0) {
    real = r() < prior;
    suppliers = [];
    for (let s = 0; s < WORLD.suppliers; s++) if (r() < (real ? a : b)) suppliers.push(s);
  }
  const sources = suppliers.length;
  // Days since any supplier last saw it: most recently, a tail of old lists.
  const drawnSeenAgeDays = Math.floor(pick(r, [[r() * 90, 50], [91 + r() * 274, 30], [366 + r() * 364, 15], [731 + r() * 700, 5]]));
  const seenAgeDays = options.seenAge?.(drawnSeenAgeDays) ?? drawnSeenAgeDays;
  const survives = (days: number) => r() < Math.pow(1 - WORLD.monthlyDeath, days / 30);
  // Alive when last seen is what "real" means; since then it may have died.
  const aliveAtSeen = real;
  const server = pick<"ordinary" | "catch_all" | "silent">(r, [["catch_all", WORLD.catchAllShare], ["silent", WORLD.silentShare], ["ordinary", 1 - WORLD.catchAllShare - WORLD.silentShare]]);

  const checked = r() < WORLD.checkedShare;
  const checkAgeDays = checked ? Math.floor(pick(r, [[r() * 30, 50], [31 + r() * 59, 30], [91 + r() * 200, 20]])) : 0;
  // The mailbox's life: alive at the last sighting (if real), then at the check (if later than the sighting), then now.
  const checkAfterSeen = checked && checkAgeDays < seenAgeDays;
  const aliveAtCheck = aliveAtSeen && (!checkAfterSeen || survives(seenAgeDays - checkAgeDays));
  const aliveNow = checked ? aliveAtCheck && survives(checkAfterSeen ? checkAgeDays : seenAgeDays) : aliveAtSeen && survives(seenAgeDays);

  let check: OurCheck = "never";
  if (checked) {
    if (server === "catch_all") check = "catch_all";
    else if (server === "silent") check = "unknown";
    else if (aliveAtCheck) check = r() < WORLD.falseInvalid ? "invalid" : "valid";
    else check = r() < WORLD.falseValid ? "valid" : "invalid";
  }

  // Customers' mail, in the last 90 days: each sender's report follows the mailbox as it is now.
  const senders = r() < WORLD.mailedShare ? 1 + Math.floor(r() * WORLD.maxSenders) : 0;
  const reports: WorldReport[] = [];
  for (let s = 0; s < senders; s++) reports.push({ sender: s, outcome: aliveNow ? "delivered" : "hard_bounce", agoMs: s });
  // The poisoner: one account more, reporting a live address as bounced.
  if (poisoned) reports.push({ sender: WORLD.maxSenders, outcome: "hard_bounce", agoMs: 0 });
  return { inputs: { check, checkAgeDays, sources, seenAgeDays, feedback: feedbackVerdict(tallyOf(reports)) }, deliverable: aliveNow, suppliers, server, checked, reports };
}

/** What reports add up to (shared/people/confidence.ts FeedbackTally), each sender an account of its own. */
export function tallyOf(reports: WorldReport[], now = 1_000): FeedbackTally {
  const tally = { bounceAccounts: 0, lastBounceAt: null as number | null, deliveredAccounts: 0, lastDeliveredAt: null as number | null };
  for (const { outcome, agoMs } of reports) {
    const at = now - agoMs;
    if (outcome === "delivered") tally.deliveredAccounts++, (tally.lastDeliveredAt = Math.max(tally.lastDeliveredAt ?? at, at));
    else tally.bounceAccounts++, (tally.lastBounceAt = Math.max(tally.lastBounceAt ?? at, at));
  }
  return tally;
}

/** A seeded source of randomness for a world (mulberry32). */
export const worldRandom = rng;

export type Band = { band: string; addresses: number; meanConfidence: number; deliverablePercent: number; difference: number; within10: boolean };
export type ConfidenceWorldResult = { addresses: number; seed: number; labels: Band[]; deciles: Band[]; poisonedChanged: number; poisoned: number };

export function bands(scored: { score: number; deliverable: boolean }[], of: (score: number) => string, order: string[]): Band[] {
  const groups = new Map<string, { n: number; sum: number; ok: number }>();
  for (const { score, deliverable } of scored) {
    const g = groups.get(of(score)) ?? { n: 0, sum: 0, ok: 0 };
    g.n++, (g.sum += score), (g.ok += deliverable ? 1 : 0);
    groups.set(of(score), g);
  }
  return order
    .filter((band) => groups.has(band))
    .map((band) => {
      const g = groups.get(band)!;
      const meanConfidence = g.sum / g.n;
      const deliverablePercent = (100 * g.ok) / g.n;
      return { band, addresses: g.n, meanConfidence, deliverablePercent, difference: deliverablePercent - meanConfidence, within10: Math.abs(deliverablePercent - meanConfidence) <= 10 };
    });
}

export function runConfidenceWorld({ addresses = 50_000, seed = 39 }: { addresses?: number; seed?: number } = {}): ConfidenceWorldResult {
  const r = rng(seed);
  const scored: { score: number; deliverable: boolean }[] = [];
  let poisonedChanged = 0;
  let poisoned = 0;
  for (let i = 0; i < addresses; i++) {
    const a = worldAddress(r, false);
    scored.push({ score: confidence(a.inputs), deliverable: a.deliverable });
  }
  // The poisoning rule on this world: the same live addresses, and one account reporting each as bounced.
  const pr = rng(seed + 1);
  while (poisoned < WORLD.poisoned) {
    const state = pr() * 2 ** 32;
    const clean = worldAddress(rng(state), false);
    if (!clean.deliverable) continue;
    const dirty = worldAddress(rng(state), true);
    poisoned++;
    if (confidence(dirty.inputs) !== confidence(clean.inputs)) poisonedChanged++;
  }
  return { addresses, seed, ...reliability(scored), poisonedChanged, poisoned };
}

const row = (b: Band) =>
  `| ${b.band} | ${b.addresses.toLocaleString("en")} | ${b.meanConfidence.toFixed(1)} | ${b.deliverablePercent.toFixed(1)}% | ${b.difference >= 0 ? "+" : ""}${b.difference.toFixed(1)} | ${b.within10 ? "yes" : "**no**"} |`;

/** The two tables of a reliability result: by label, and by ten points of confidence. */
export function bandTables(labels: Band[], deciles: Band[]): string {
  const head = "| Band | Addresses | Mean confidence | Deliverable | Difference (points) | Within 10 |\n|---|---:|---:|---:|---:|:-:|";
  return `By label:

${head}
${labels.map(row).join("\n")}

By ten points of confidence:

${head}
${deciles.map(row).join("\n")}`;
}

/** Labels and deciles of scored addresses. */
export function reliability(scored: { score: number; deliverable: boolean }[]): { labels: Band[]; deciles: Band[] } {
  const deciles = Array.from({ length: 10 }, (_, i) => `${i * 10}-${i === 9 ? 100 : i * 10 + 9}`);
  return { labels: bands(scored, confidenceLabel, ["high", "medium", "low"]), deciles: bands(scored, (s) => deciles[Math.min(9, Math.floor(s / 10))]!, deciles) };
}

export function confidenceWorldMarkdown(r: ConfidenceWorldResult): string {
  return `${bandTables(r.labels, r.deciles)}

The poisoning rule on the same world: ${r.poisoned} live addresses, each also reported as bounced by one account (fewer
than ${INDEPENDENT_ACCOUNTS} independent accounts): the confidence changed for ${r.poisonedChanged} of them.`;
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({ options: { addresses: { type: "string", default: "50000" }, seed: { type: "string", default: "39" } } });
  const result = runConfidenceWorld({ addresses: Number(values.addresses), seed: Number(values.seed) });
  process.stdout.write(`${confidenceWorldMarkdown(result)}\n`);
}
