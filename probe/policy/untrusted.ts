/**
 * Answers a receiver gave that can no longer be trusted (docs/probe.md "Receiver
 * policy"): a gateway that refused a random address and now accepts one, or that answered "too many
 * invalid recipients", has started accepting everything (Cisco's harvest defence accepts silently past
 * its threshold). Every `accepted` it gave since its last refusal may be such a silent accept, so the
 * probe names the domains it checked there in that time, and every batch answer carries the notices
 * of the last two hours: the Worker sends the `valid` lines of running jobs at those domains, answered
 * in that time, back for a recheck after the hour (the probe answers them catch-all meanwhile, so a
 * recheck is never `valid` on that answer alone).
 *
 * In memory, per probe: a notice concerns what this probe asked; another probe's answers are its own. When a
 * destination's answers stop being trusted is UntrustDetector's decision, below.
 */
import type { ReceiverPolicy, ReplyRule } from "../../shared/email/receivers.ts";
import { UNTRUSTED_NOTICE_WINDOW_MS } from "../../shared/probe-contract.ts";
import { countFamilyEvent } from "../counters.ts";

/** Wall-clock milliseconds: the Worker compares them with the times it wrote its answers. */
export type UntrustedNotice = { domains: string[]; sinceMs: number; untilMs: number };

/** How long a notice is repeated in every batch answer (the contract's window, which the Worker reads too). */
export const NOTICE_KEEP_MS = UNTRUSTED_NOTICE_WINDOW_MS;
/** Notices kept at most (the newest); each batch answer carries them all. */
export const MAX_NOTICES = 50;
/** Domains named in one notice at most (the most recently checked). */
export const MAX_NOTICE_DOMAINS = 500;

/** What a notice says of the answers in its span: not trusted (a silent accept), or refused (a block of our probe, not an answer). */
export type NoticeKind = "untrusted" | "refused";

export class UntrustedAnswers {
  readonly #notices: (UntrustedNotice & { notedAt: number; kind: NoticeKind })[] = [];

  note(notice: UntrustedNotice, kind: NoticeKind = "untrusted", now = Date.now()): void {
    if (notice.domains.length === 0) return;
    this.#notices.push({ ...notice, domains: notice.domains.slice(-MAX_NOTICE_DOMAINS), notedAt: now, kind });
    if (this.#notices.length > MAX_NOTICES) this.#notices.splice(0, this.#notices.length - MAX_NOTICES);
  }

  /** The notices of the last NOTICE_KEEP_MS, oldest first. */
  current(now = Date.now()): (UntrustedNotice & { kind: NoticeKind })[] {
    while (this.#notices.length > 0 && now - this.#notices[0]!.notedAt > NOTICE_KEEP_MS) this.#notices.shift();
    return this.#notices.map(({ domains, sinceMs, untilMs, kind }) => ({ domains, sinceMs, untilMs, kind }));
  }
}

/** The domains a destination checked, with when it last did (wall clock), bounded: the newest kept. */
export class DomainsSeen {
  readonly #seen = new Map<string, number>();

  constructor(private readonly max = MAX_NOTICE_DOMAINS) {}

  add(domain: string, now = Date.now()): void {
    this.#seen.delete(domain);
    this.#seen.set(domain, now);
    if (this.#seen.size > this.max) this.#seen.delete(this.#seen.keys().next().value!);
  }

  /** Those checked at `since` or later, oldest first. */
  since(since: number): string[] {
    return [...this.#seen].filter(([, at]) => at >= since).map(([d]) => d);
  }
}

/** What the detector keeps of an address in the probe's memory of it (qmgr/destination-memory.ts), so that forgetting an idle destination keeps it. */
type UntrustFacts = {
  /** When it last refused an unknown user: accepts since then may be silent. */
  refusedAt: number;
  /** When it last refused the catch-all test's random address: accepting one later is drift. */
  randomRefusedAt: number;
  /** The domains checked there lately. */
  domainsSeen: DomainsSeen;
};
export type UntrustMemory = {
  get<F extends keyof UntrustFacts>(fact: F, address: string): UntrustFacts[F] | undefined;
  set<F extends keyof UntrustFacts>(fact: F, address: string, value: UntrustFacts[F]): void;
};

/** What the detector needs of the destination it watches. */
export type UntrustContext = {
  /** The family's row as applied (policy/receivers.ts AppliedPolicy): `hourMs` is the hour under the time scale. */
  policy: Pick<ReceiverPolicy, "family" | "budgetKey"> & { hourMs: number };
  memory: UntrustMemory;
  /** The budget this address spends, now (policy/budget.ts): `stop` pauses it and alerts. */
  budget(): { pause(until: number, stop: boolean, now: number): void };
  /** What this address accepted in a span of time is not to be trusted: for the Worker (UntrustedAnswers). */
  untrust(notice: UntrustedNotice): void;
};

/**
 * When one destination's answers stop being trusted: a gateway that refused a random address within the hour and
 * now accepts one, or a reply whose rule says the accepts before it were silent ("too many invalid recipients").
 * Then every `accepted` it gave since its last refusal (at most an hour back) may be a silent accept, and the
 * domains checked there since then are named, never an address.
 */
export class UntrustDetector {
  constructor(
    readonly address: string,
    private readonly ctx: UntrustContext,
  ) {}

  /** A check for `domain` arrived at this address. */
  checked(domain: string, now: number): void {
    this.#domainsSeen().add(domain, now);
  }

  /**
   * A reply to a RCPT (`unknown`: refused as an unknown user) and the family's reply rule it matched, if any: a
   * rule that untrusts what was accepted ("too many invalid recipients") is no refusal to trust from.
   */
  replied(rule: Pick<ReplyRule, "untrustsAccepted"> | null, unknown: boolean, now: number): void {
    if (rule?.untrustsAccepted) this.#untrust(now);
    else if (unknown) this.ctx.memory.set("refusedAt", this.address, now);
  }

  /**
   * The catch-all test's answer. A gateway that refused a random address within the hour and now accepts one has
   * stopped telling the truth (Cisco's harvest defence accepts silently and drops past its threshold): the address
   * is stopped for the hour and an operator alerted. The accepted random address is kept as the catch-all answer,
   * so what this server accepts meanwhile is never reported valid on that alone.
   */
  catchAllAnswered(catchAll: boolean, now: number): void {
    const memory = this.ctx.memory;
    if (!catchAll) {
      memory.set("randomRefusedAt", this.address, now);
      memory.set("refusedAt", this.address, now);
      return;
    }
    const policy = this.ctx.policy;
    const randomRefusedAt = memory.get("randomRefusedAt", this.address) ?? -Infinity;
    if (policy.budgetKey !== "probe_ip_destination" || policy.family === "self-hosted" || now - randomRefusedAt > policy.hourMs) return;
    this.ctx.budget().pause(now + policy.hourMs, true, now);
    this.#untrust(now);
    countFamilyEvent(policy.family, "stop");
    console.warn(
      JSON.stringify({ level: "error", msg: "receiver accepts everything now", family: policy.family, destination: this.address, refused_random_ms_ago: now - randomRefusedAt, alert: true }),
    );
  }

  /**
   * The domains checked at this address within the hour (wall clock for the Worker), or null when none: what a block
   * of our probe found here is taken back (docs/probe.md "Blocks").
   */
  lately(now: number): UntrustedNotice | null {
    const since = now - this.ctx.policy.hourMs;
    const domains = this.#domainsSeen().since(since);
    if (domains.length === 0) return null;
    const wall = Date.now();
    return { domains, sinceMs: wall - (now - since), untilMs: wall };
  }

  /** Every `accepted` since this address's last refusal may have been a silent accept: the domains checked here since then are named to the Worker. */
  #untrust(now: number): void {
    // On the probe's clock (as the domains' times are), then in wall-clock time for the Worker.
    const since = Math.max(this.ctx.memory.get("refusedAt", this.address) ?? -Infinity, now - this.ctx.policy.hourMs);
    const domains = this.#domainsSeen().since(since);
    const wall = Date.now();
    this.ctx.untrust({ domains, sinceMs: wall - (now - since), untilMs: wall });
    console.warn(JSON.stringify({ level: "error", msg: "receiver answers untrusted", family: this.ctx.policy.family, destination: this.address, domains: domains.length, since_ms_ago: now - since, alert: true }));
  }

  /** The domains checked at this address lately. */
  #domainsSeen(): DomainsSeen {
    const seen = this.ctx.memory.get("domainsSeen", this.address) ?? new DomainsSeen();
    // Set again at each use: kept for an hour after the last.
    this.ctx.memory.set("domainsSeen", this.address, seen);
    return seen;
  }
}
