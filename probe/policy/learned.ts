/**
 * What receivers taught us by punishing us (issue 36 item 2, docs/probe.md "What is learned"): a budget key (a family
 * that counts by our IP, or a family and one destination address) that ever blocked us keeps a harvest rule (the 60 s
 * share and a lower hourly cap) from then on, and one that ever throttled us a lower RCPT rate. Only ever stricter:
 * nothing here loosens with time. Persisted in PROBE_STATE_FILE and said in every batch answer, so the Worker hands a
 * rule learned by one probe to every other (docs/probe.md "What is learned": how the rules travel).
 *
 * And what a destination shows that earns it looser limits than its row: a self-hosted server whose greeting names
 * software that counts errors per session (PER_SESSION_COUNTING_BANNERS) needs no 60 s share, unless it ever blocked us.
 *
 * Pure: no I/O; times are passed in (wall-clock ms for what travels, so that another probe can read it).
 */
import {
  LEARNED_HARVEST_RULE,
  LEARNED_MIN_RATE_FACTOR,
  LEARNED_THROTTLE_FACTOR,
  PER_SESSION_COUNTING_BANNERS,
  PER_SESSION_COUNTING_EHLO,
  POSTFIX_EHLO_ORDER,
  POSTFIX_EHLO_REQUIRED,
  type ReceiverPolicy,
} from "../../shared/email/receivers.ts";

/** One key's lesson. */
export type LearnedRule = {
  /** It blocked us (probe/policy/block.ts): the harvest rule holds there for good. */
  harvest: boolean;
  /** Its RCPT rate is this share of the row's (1: as the row; halved per throttle, down to LEARNED_MIN_RATE_FACTOR). */
  rateFactor: number;
  blocks: number;
  throttles: number;
  /** When it was last taught (wall-clock ms). */
  at: number;
};

/** The budget limits a key applies, before the warm-up scales the cap. */
export type KeyLimits = { unknownRatio: number; windowSeconds: number; minSample: number; unknownFloor: number; unknownPerHour: number };

/**
 * The limits of one key: its row's, made stricter by what it taught us (never looser), or looser when the destination
 * showed it counts per session and never blocked us (the 60 s share dropped; the hourly cap and session rotation stay).
 */
export function keyLimits(
  row: Pick<ReceiverPolicy, "unknownRatio" | "windowSeconds" | "minSample" | "unknownFloor" | "unknownPerHour" | "budgetKey" | "family">,
  learned: LearnedRule | undefined,
  perSessionCounting: boolean,
): KeyLimits {
  const limits: KeyLimits = { unknownRatio: row.unknownRatio, windowSeconds: row.windowSeconds, minSample: row.minSample, unknownFloor: row.unknownFloor, unknownPerHour: row.unknownPerHour };
  if (learned?.harvest) {
    const h = LEARNED_HARVEST_RULE;
    limits.unknownRatio = Math.min(limits.unknownRatio, h.unknownRatio);
    limits.minSample = Math.min(limits.minSample, h.minSample);
    limits.unknownFloor = Math.min(limits.unknownFloor, h.unknownFloor);
    // A gateway or a server: Cisco's tight cap. A family keyed by our IP (Google, EOP): half its cap per block.
    const cap = row.budgetKey === "probe_ip_destination" ? h.unknownPerHour : Math.max(h.unknownPerHour, Math.floor(row.unknownPerHour / 2 ** learned.blocks));
    if (limits.unknownPerHour > 0) limits.unknownPerHour = Math.min(limits.unknownPerHour, cap);
    return limits;
  }
  if (perSessionCounting && row.family === "self-hosted") limits.unknownRatio = 1;
  return limits;
}

/**
 * Whether a server shows mail server software that counts errors per session (a self-hosted server's evidence): its
 * greeting names it, or where the greeting names nothing, its EHLO extensions are that software's
 * (shared/email/receivers.ts POSTFIX_EHLO_ORDER, PER_SESSION_COUNTING_EHLO).
 */
export function countsPerSession(greeting: string, ehloKeywords: readonly string[] = []): boolean {
  if (PER_SESSION_COUNTING_BANNERS.some((re) => re.test(greeting))) return true;
  if (ehloKeywords.some((k) => PER_SESSION_COUNTING_EHLO.includes(k))) return true;
  return postfixEhlo(ehloKeywords);
}

/** Postfix's EHLO: every extension one Postfix writes, in its order, its defaults ETRN, ENHANCEDSTATUSCODES and DSN among them. */
function postfixEhlo(keywords: readonly string[]): boolean {
  if (!POSTFIX_EHLO_REQUIRED.every((k) => keywords.includes(k))) return false;
  let last = -1;
  for (const k of keywords) {
    const i = POSTFIX_EHLO_ORDER.indexOf(k);
    if (i <= last) return false;
    last = i;
  }
  return true;
}

/** The stricter of two lessons about one key (a probe's own and one another probe learned). */
export function stricter(a: LearnedRule | undefined, b: LearnedRule): LearnedRule {
  if (!a) return { ...b };
  return {
    harvest: a.harvest || b.harvest,
    rateFactor: Math.min(a.rateFactor, b.rateFactor),
    blocks: Math.max(a.blocks, b.blocks),
    throttles: Math.max(a.throttles, b.throttles),
    at: Math.max(a.at, b.at),
  };
}

/** Keys kept at most (the most recently taught): a stream of new servers that block us cannot grow the state. */
export const MAX_LEARNED = 10_000;

/** Every key's lesson, by budget key (policy/receivers.ts keyOf). */
export class LearnedRules {
  readonly #rules = new Map<string, LearnedRule>();

  get(key: string): LearnedRule | undefined {
    return this.#rules.get(key);
  }

  get size(): number {
    return this.#rules.size;
  }

  /** It blocked us: the harvest rule from now on. */
  block(key: string, wallNow: number): LearnedRule {
    const r = this.#rules.get(key);
    return this.#put(key, { harvest: true, rateFactor: r?.rateFactor ?? 1, blocks: (r?.blocks ?? 0) + 1, throttles: r?.throttles ?? 0, at: wallNow });
  }

  /** It throttled us: half the rate from now on. */
  throttle(key: string, wallNow: number): LearnedRule {
    const r = this.#rules.get(key);
    const rateFactor = Math.max(LEARNED_MIN_RATE_FACTOR, (r?.rateFactor ?? 1) * LEARNED_THROTTLE_FACTOR);
    return this.#put(key, { harvest: r?.harvest ?? false, rateFactor, blocks: r?.blocks ?? 0, throttles: (r?.throttles ?? 0) + 1, at: wallNow });
  }

  /** A lesson from elsewhere (a restart's file, another probe through the Worker): kept if stricter. Returns whether anything changed. */
  merge(key: string, rule: LearnedRule): boolean {
    const before = this.#rules.get(key);
    const after = stricter(before, rule);
    if (before && before.harvest === after.harvest && before.rateFactor === after.rateFactor && before.blocks === after.blocks && before.throttles === after.throttles) return false;
    this.#put(key, after);
    return true;
  }

  entries(): [string, LearnedRule][] {
    return [...this.#rules];
  }

  #put(key: string, rule: LearnedRule): LearnedRule {
    this.#rules.delete(key);
    this.#rules.set(key, rule);
    if (this.#rules.size > MAX_LEARNED) this.#rules.delete(this.#rules.keys().next().value!);
    return rule;
  }
}
