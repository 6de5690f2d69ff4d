/**
 * Which probe asks for an address (docs/probe.md "Several probes"): the rendezvous ranking of the fleet by the
 * address's key, what each probe last said of its own reputation (a degraded one goes last), and the opaque tenant
 * each probe shares its mail servers and receivers' budgets by. The single call (probe-call.ts) and a job's batches
 * (edge/jobs/verification/check-lines.ts, probe-batch.ts) both rank by it.
 */
import { PROBE_REPUTATION_HEADER } from "../../shared/probe-contract.ts";
import { TtlCache } from "../../shared/ttl-cache.ts";
import { receiverFamily, receiverPolicy } from "../../shared/email/receivers.ts";
import { domainOf } from "../../shared/email/syntax.ts";
import { writeLog } from "../log.ts";

/**
 * The probes in the order to ask them for one key (a domain, or at a fleetSpread family an address:
 * rankingKey), by rendezvous (highest random weight) hashing: each probe gets a score from a hash of
 * (probe, key) and the highest score goes first. A domain's catch-all cache, warm SMTP sessions and
 * per-destination limits therefore live on one probe, the fleet shares the domains evenly, and adding
 * or removing a probe moves only the keys whose first choice it is or becomes; the others keep their
 * probe. The rest of the order is where the key fails over to, and is just as stable.
 */
export function probeOrder(urls: readonly string[], key: string): string[] {
  if (urls.length <= 1) return [...urls];
  const scored = urls.map((url) => ({ url, score: rendezvousScore(url, key), degraded: degradedProbes.get(url) === true }));
  // A probe whose self-audit says receivers may refuse it goes last (still used when all are);
  // among the others, and among the degraded ones, the rendezvous order stands.
  scored.sort((a, b) => Number(a.degraded) - Number(b.degraded) || b.score - a.score || (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
  return scored.map((s) => s.url);
}

/**
 * What an address is ranked by (docs/probe.md "Several probes"): its domain, so a domain's warm
 * sessions, catch-all answer and per-destination budget live on one probe; or, at a family that
 * counts by our sending IP (fleetSpread: google, microsoft-eop), the address itself, so one big
 * domain's addresses spread over the healthy probes and N probes carry N budgets' worth of it.
 */
export function rankingKey(email: string, mx: readonly { host: string; preference: number }[]): string {
  return receiverPolicy(receiverFamily(mx)).fleetSpread ? email.toLowerCase() : domainOf(email);
}

/** The opaque tenant the probe shares each mail server and each receiver's budget by: a digest of the account, not its id. */
export async function probeTenant(accountId: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`tenant:${accountId}`)));
  return [...digest.slice(0, 12)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * What each probe's answers last said of its reputation (the PROBE_REPUTATION_HEADER it sends on every
 * answer; the probe audits itself every 15 minutes by default), kept per isolate for as long: a
 * probe not heard from since counts as healthy again. True: degraded.
 */
const degradedProbes = new TtlCache<string, boolean>(256);
const REPUTATION_MEMORY_MS = 15 * 60_000;

/** Notes the reputation a probe's answer carried (any answer, an error status too); a missing header changes nothing. */
export function noteProbeReputation(probeUrl: string, headers: Headers): void {
  const status = headers.get(PROBE_REPUTATION_HEADER);
  if (status !== "ok" && status !== "degraded") return;
  const degraded = status === "degraded";
  if (degraded && degradedProbes.get(probeUrl) !== true) writeLog("warn", { event: "probe_reputation_degraded", probe: new URL(probeUrl).origin });
  degradedProbes.set(probeUrl, degraded, REPUTATION_MEMORY_MS);
}

/** Forgets what probes said of their reputation (tests). */
export function forgetProbeReputations(): void {
  degradedProbes.clear();
}

/** FNV-1a over "probe\nkey", then murmur3's 32-bit finalizer so that similar inputs spread. */
function rendezvousScore(url: string, key: string): number {
  const input = `${url}\n${key}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < input.length; i++) h = Math.imul(h ^ input.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
