/**
 * Answers a receiver gave that can no longer be trusted (issue 26 item 5, docs/probe.md "Receiver
 * policy"): a gateway that refused a random address and now accepts one, or that answered "too many
 * invalid recipients", has started accepting everything (Cisco's harvest defence accepts silently past
 * its threshold). Every `accepted` it gave since its last refusal may be such a silent accept, so the
 * probe names the domains it checked there in that time, and every batch answer carries the notices
 * of the last two hours: the Worker sends the `valid` lines of running jobs at those domains, answered
 * in that time, back for a recheck after the hour (the probe answers them catch-all meanwhile, so a
 * recheck is never `valid` on that answer alone).
 *
 * In memory, per probe: a notice concerns what this probe asked; another probe's answers are its own.
 */

/** Wall-clock milliseconds: the Worker compares them with the times it wrote its answers. */
export type UntrustedNotice = { domains: string[]; sinceMs: number; untilMs: number };

/** How long a notice is repeated in every batch answer: longer than a job line's recheck takes to come round. */
export const NOTICE_KEEP_MS = 2 * 3_600_000;
/** Notices kept at most (the newest); each batch answer carries them all. */
export const MAX_NOTICES = 50;
/** Domains named in one notice at most (the most recently checked). */
export const MAX_NOTICE_DOMAINS = 500;

export class UntrustedAnswers {
  readonly #notices: (UntrustedNotice & { notedAt: number })[] = [];

  note(notice: UntrustedNotice, now = Date.now()): void {
    if (notice.domains.length === 0) return;
    this.#notices.push({ ...notice, domains: notice.domains.slice(-MAX_NOTICE_DOMAINS), notedAt: now });
    if (this.#notices.length > MAX_NOTICES) this.#notices.splice(0, this.#notices.length - MAX_NOTICES);
  }

  /** The notices of the last NOTICE_KEEP_MS, oldest first. */
  current(now = Date.now()): UntrustedNotice[] {
    while (this.#notices.length > 0 && now - this.#notices[0]!.notedAt > NOTICE_KEEP_MS) this.#notices.shift();
    return this.#notices.map(({ domains, sinceMs, untilMs }) => ({ domains, sinceMs, untilMs }));
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
