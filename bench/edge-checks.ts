/**
 * The Worker's cheap, I/O-free checks per address: syntax (with IDN), disposable, free provider, role,
 * typo suggestion and the verdict. `npx tsx bench/edge-checks.ts [addresses] [rounds]` (default 2000
 * addresses, 30 rounds). Prints microseconds per address (min / median / max over the rounds) and the
 * median per stage. Target: under 50 µs per address.
 */
import { readFileSync } from "node:fs";
import disposableDomains from "disposable-email-domains-js/dist/dict/disposable_email_blocklist.json" with { type: "json" };
import { isDisposableDomain, isFreeProviderDomain, isRoleAccount } from "../shared/email/lists.ts";
import { parseEmailAddress } from "../shared/email/syntax.ts";
import { suggestTypo } from "../shared/email/typo.ts";
import { buildVerificationResult, syntaxFailureFacts, type MxFact, type SmtpFact, type VerificationFacts } from "../shared/email/verdict.ts";
import { seededRandom } from "./stats.ts";

const addressCount = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 30);

const random = seededRandom(20261122);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const FIRST_NAMES = ["ana", "ben", "chloe", "david", "emma", "farid", "grace", "hiro", "ines", "jonas", "kofi", "lena", "mateo", "nina", "oscar", "priya", "quentin", "rosa", "sven", "yuki"];
const LAST_NAMES = ["smith", "garcia", "muller", "rossi", "nguyen", "kim", "silva", "dubois", "kowalski", "tanaka", "okafor", "larsen"];
const FREE_PROVIDERS = ["gmail.com", "gmail.com", "gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com", "aol.com", "gmx.de", "web.de", "mail.ru", "yandex.ru", "qq.com", "orange.fr", "libero.it", "proton.me"];
const COMPANY_DOMAINS = ["acme-corp.com", "example.org", "globex.io", "initech.co.uk", "umbrella.de", "stark-industries.com", "wayne.enterprises", "hooli.xyz", "piedpiper.net", "contoso.fr"];
const INTERNATIONAL = ["josé@bücher.de", "müller@straße.de", "用户@例子.广告", "коля@пример.рф", "δοκιμή@παράδειγμα.δοκιμή", "ユーザー@例え.jp", "अजय@डाटा.भारत"];
const INVALID = ["ana", "ana@", "@example.com", "ana..b@example.com", "Ana <ana@example.com>", "ana@[192.0.2.1]", "ana@example", "ana@exa_mple.com", "ana(work)@example.com", `${"a".repeat(70)}@example.com`];
const ROLES = ["info", "sales", "support", "contact", "admin", "hr", "billing"];
const TYPOS = readFileSync(new URL("../test/fixtures/typo/misspellings.tsv", import.meta.url), "utf8")
  .split("\n")
  .filter((line) => line !== "" && !line.startsWith("#"))
  .map((line) => line.split("\t")[0]!);

function personLocal(): string {
  const first = pick(FIRST_NAMES);
  const last = pick(LAST_NAMES);
  const style = random();
  if (style < 0.4) return `${first}.${last}`;
  if (style < 0.7) return `${first}${last}${Math.floor(random() * 100)}`;
  if (style < 0.85) return `${first[0]}${last}`;
  return `${first}+news`;
}

/** Roughly what a verification API sees: mostly free providers and companies, some mistakes and junk. */
function realisticAddress(): string {
  const kind = random();
  if (kind < 0.45) return `${personLocal()}@${pick(FREE_PROVIDERS)}`;
  if (kind < 0.7) return `${personLocal()}@${pick(COMPANY_DOMAINS)}`;
  if (kind < 0.78) return `${personLocal()}@${pick(TYPOS)}`;
  if (kind < 0.83) return `${personLocal()}@${pick(disposableDomains)}`;
  if (kind < 0.88) return pick(INTERNATIONAL);
  if (kind < 0.9) return `"${pick(FIRST_NAMES)} ${pick(LAST_NAMES)}"@${pick(COMPANY_DOMAINS)}`;
  if (kind < 0.95) return pick(INVALID);
  return `${pick(ROLES)}@${pick(COMPANY_DOMAINS)}`;
}

const MX_OUTCOMES: MxFact[] = ["verified", "verified", "verified", "implicit", "assumed", "nxdomain"];
const SMTP_OUTCOMES: SmtpFact[] = [
  { status: "deliverable", catchAll: false },
  { status: "deliverable", catchAll: true },
  { status: "not_checked", catchAll: null },
  { status: "assumed", catchAll: null },
];
const addresses = Array.from({ length: addressCount }, realisticAddress);
const networkFacts = addresses.map(() => ({ mx: pick(MX_OUTCOMES), smtp: pick(SMTP_OUTCOMES) }));

const stageNanos = { syntax: 0, lists: 0, typo: 0, verdict: 0 };
let timeStages = false;
const now = () => performance.now();

/** Everything edge/verification/verify.ts does before the first network call, plus the verdict on given DNS/SMTP facts. */
function checkAddress(input: string, network: { mx: MxFact; smtp: SmtpFact }): unknown {
  let started = timeStages ? now() : 0;
  const lap = (stage: keyof typeof stageNanos) => {
    if (!timeStages) return;
    const at = now();
    stageNanos[stage] += (at - started) * 1e6;
    started = at;
  };
  const parsed = parseEmailAddress(input);
  lap("syntax");
  if (!parsed.ok) {
    const facts = syntaxFailureFacts(parsed.email, parsed.error);
    const result = buildVerificationResult(facts);
    lap("verdict");
    return result;
  }
  const disposable = isDisposableDomain(parsed.domain);
  const freeProvider = isFreeProviderDomain(parsed.domain);
  const roleAccount = isRoleAccount(parsed.local);
  lap("lists");
  const typoSuggestion = suggestTypo(parsed.local, parsed.domain);
  lap("typo");
  const result = buildVerificationResult({
    email: parsed.email,
    syntax: { ok: true, quotedLocal: parsed.quotedLocal, nonAsciiLocal: parsed.nonAsciiLocal },
    disposable,
    freeProvider,
    roleAccount,
    typoSuggestion,
    mx: network.mx,
    smtp: network.smtp,
  });
  lap("verdict");
  return result;
}

function runRound(): number {
  const started = now();
  for (let i = 0; i < addresses.length; i++) checkAddress(addresses[i]!, networkFacts[i]!);
  return ((now() - started) * 1000) / addresses.length;
}

for (let i = 0; i < 5; i++) runRound();
const perAddress = Array.from({ length: rounds }, runRound).sort((a, b) => a - b);
const median = (values: number[]) => values[Math.floor(values.length / 2)]!;

timeStages = true;
runRound();
const stageMicros = Object.fromEntries(
  Object.entries(stageNanos).map(([stage, nanos]) => [stage, (nanos / 1000 / addresses.length).toFixed(2)]),
);

const accepted = addresses.filter((address) => parseEmailAddress(address).ok).length;
const suggested = addresses.filter((address) => {
  const parsed = parseEmailAddress(address);
  return parsed.ok && suggestTypo(parsed.local, parsed.domain) !== null;
}).length;
console.log(`${addresses.length} addresses (${accepted} syntactically valid, ${suggested} with a typo suggestion), ${rounds} rounds, Node ${process.version}`);
console.log(
  `µs per address: min ${perAddress[0]!.toFixed(2)}  median ${median(perAddress).toFixed(2)}  max ${perAddress.at(-1)!.toFixed(2)}  (target < 50)`,
);
console.log("µs per address by stage (one timed round, timer overhead included):", stageMicros);
