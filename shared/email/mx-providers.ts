/**
 * Who runs an address's mail: a short name for the mailbox provider or security gateway behind the MX hosts
 * (`details.mx_provider`, docs/api.md "details"), from a table of MX host suffixes kept as data. A suffix matches
 * the host itself or any name below it (`google.com` matches `aspmx.l.google.com`); the most preferred MX host
 * that matches decides. null when no host matches.
 *
 * Sources: each provider's published MX names (its setup guide for custom domains, or the MX records of its own
 * consumer domains). Add a row when a provider is missing; the longest suffix wins, so a narrower row may refine
 * a broader one.
 */
export const MX_PROVIDER_SUFFIXES: readonly (readonly [suffix: string, provider: string])[] = [
  // Mailbox providers
  ["google.com", "google"],
  ["googlemail.com", "google"],
  ["smtp.goog", "google"],
  ["protection.outlook.com", "microsoft"],
  ["outlook.com", "microsoft"],
  ["hotmail.com", "microsoft"],
  ["yahoodns.net", "yahoo"],
  ["yahoo.com", "yahoo"],
  ["icloud.com", "apple"],
  ["me.com", "apple"],
  ["zoho.com", "zoho"],
  ["zoho.eu", "zoho"],
  ["zoho.in", "zoho"],
  ["zoho.com.au", "zoho"],
  ["zohomail.com", "zoho"],
  ["messagingengine.com", "fastmail"],
  ["fastmail.com", "fastmail"],
  ["protonmail.ch", "proton"],
  ["proton.me", "proton"],
  ["yandex.net", "yandex"],
  ["yandex.ru", "yandex"],
  ["mail.ru", "mailru"],
  ["gmx.net", "gmx"],
  ["gmx.com", "gmx"],
  ["web.de", "webde"],
  ["kundenserver.de", "ionos"],
  ["ionos.com", "ionos"],
  ["ionos.de", "ionos"],
  ["ionos.co.uk", "ionos"],
  ["ionos.fr", "ionos"],
  ["ionos.es", "ionos"],
  ["1and1.com", "ionos"],
  ["ovh.net", "ovh"],
  ["ovh.ca", "ovh"],
  ["secureserver.net", "godaddy"],
  ["emailsrvr.com", "rackspace"],
  ["privateemail.com", "namecheap"],
  ["registrar-servers.com", "namecheap"],
  ["tutanota.de", "tuta"],
  ["qq.com", "qq"],
  ["163.com", "netease"],
  ["naver.com", "naver"],
  ["seznam.cz", "seznam"],
  ["gandi.net", "gandi"],
  ["amazonaws.com", "amazon"],
  ["awsapps.com", "amazon"],
  // Security gateways in front of the mailboxes
  ["pphosted.com", "proofpoint"],
  ["ppe-hosted.com", "proofpoint"],
  ["mimecast.com", "mimecast"],
  ["mimecast.co.za", "mimecast"],
  ["mimecast-offshore.com", "mimecast"],
  ["barracudanetworks.com", "barracuda"],
  ["barracuda.com", "barracuda"],
  ["iphmx.com", "cisco"],
  ["trendmicro.com", "trendmicro"],
  ["trendmicro.eu", "trendmicro"],
  ["messagelabs.com", "symantec"],
  ["mailcontrol.com", "forcepoint"],
  ["sophos.com", "sophos"],
  ["hornetsecurity.com", "hornetsecurity"],
  ["spamh.com", "spamhero"],
  ["mailgun.org", "mailgun"],
  ["sendgrid.net", "sendgrid"],
];

const BY_SUFFIX = new Map(MX_PROVIDER_SUFFIXES.map(([suffix, provider]) => [suffix, provider]));

/** The provider of one host name: its longest matching suffix's, or null. */
export function providerOfHost(host: string): string | null {
  const labels = host.toLowerCase().replace(/\.$/, "").split(".");
  // From the whole name down to its last two labels: the first hit is the longest suffix.
  for (let i = 0; i < labels.length - 1; i++) {
    const hit = BY_SUFFIX.get(labels.slice(i).join("."));
    if (hit) return hit;
  }
  return null;
}

/** The provider behind a domain's MX hosts: the most preferred host that matches decides; null when none does. */
export function mxProvider(hosts: readonly { host: string; preference: number }[]): string | null {
  for (const { host } of [...hosts].sort((a, b) => a.preference - b.preference)) {
    const provider = providerOfHost(host);
    if (provider) return provider;
  }
  return null;
}

/**
 * Providers whose servers accept every recipient at RCPT time (Yahoo; most Microsoft 365 tenants, which refuse
 * unknown users only after the message, by bounce, unless Directory-Based Edge Blocking is on): an accepted
 * RCPT there proves nothing, and only the catch-all test (a random address) tells an accepting tenant apart.
 */
export const ACCEPTS_AT_RCPT_PROVIDERS: ReadonlySet<string> = new Set(["yahoo", "microsoft"]);
