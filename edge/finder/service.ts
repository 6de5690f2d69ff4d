/**
 * One find against the real world (edge/finder/find.ts's `io`): our data in one round trip with DNS beside it, the
 * candidates' facts in a second, and the probe. The single call and the batch both run finds through here.
 */
import { addressHasher } from "../../shared/people/address-hash.ts";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { mxProvider, receiverFamily } from "../../shared/email/receivers.ts";
import type { EdgeConfig } from "../env.ts";
import type { Database } from "../db/client.ts";
import { callProbe } from "../verification/probe-call.ts";
import { probeTenant } from "../verification/probe-ranking.ts";
import { probeHostsFor, resolveDomain } from "../verification/verify.ts";
import type { MailHostResolution } from "../verification/mx.ts";
import { FINDER_CHECK_DAYS, findEmail, type FindOutcome } from "./find.ts";
import type { FindQuery } from "./query.ts";
import {
  candidateFactsQueries,
  claimCheck,
  companyDomainQuery,
  domainFactsQuery,
  domainPairsQuery,
  knownAtDomainQuery,
  recordCheckQuery,
  recordDomainFactsQuery,
  releaseCheckQuery,
  type DomainFactsRow,
  type KnownAddressRow,
  type PairRow,
} from "../people/finder-store.ts";

const DAY_MS = 86_400_000;
/** The probe's deadline for a finder's check (it goes on after a 202). */
export const FINDER_SMTP_DEADLINE_MS = 15_000;
/** How long a check under way holds its mark. */
const CLAIM_MS = FINDER_SMTP_DEADLINE_MS + 5_000;

/** One hasher per isolate and key: importing the key is the costly part. */
let hasher: { key: string; hash: Promise<(email: string) => Promise<string>> } | undefined;
export function finderHasher(key: string | undefined): Promise<(email: string) => Promise<string>> {
  if (!key) throw new Error("FEEDBACK_HASH_KEY is not set: the finder cannot name the addresses it checks (docs/operations.md \"Configuration\")");
  if (hasher?.key !== key) hasher = { key, hash: addressHasher(key) };
  return hasher.hash;
}

export type FinderContext = { db: Database; config: EdgeConfig; accountId: string; requestId: string; now: number };

/** The domain a company resolves to (the one our data ties its employer key to most), or null. */
export async function companyDomain(db: Database, employer: string): Promise<string | null> {
  const [row] = await companyDomainQuery(db, employer);
  return row?.domain ?? null;
}

/** Resolves the domain's mail (the isolate's DNS cache). */
export const domainMail = (domain: string, config: EdgeConfig): Promise<MailHostResolution> => resolveDomain(domain, config.DOH_URL);

/** Whether DNS says the domain receives no mail at all (a 422, free). */
export const receivesNoMail = (dns: MailHostResolution): boolean => dns.status === "nxdomain" || dns.status === "null_mx" || dns.status === "no_mail";

/** The statements that read what a find starts from (the person's own addresses at the domain, its pairs, its facts), for the caller's batch. */
export const findDataStatements = (db: Database, find: FindQuery & { domain: string }, now: number) =>
  [knownAtDomainQuery(db, find.nameKey, find.domain, now), domainPairsQuery(db, find.domain, now), domainFactsQuery(db, find.domain)] as const;

export type FindData = { known: KnownAddressRow[]; pairs: PairRow[]; facts: DomainFactsRow[] };

/** Runs one find for a parsed query whose domain is known, given the domain's DNS and what findDataStatements read. */
export async function runFind(ctx: FinderContext, find: FindQuery & { domain: string }, dns: MailHostResolution, minConfidence: number | null, data: FindData): Promise<FindOutcome> {
  const { db, config, now } = ctx;
  const hash = await finderHasher(config.FEEDBACK_HASH_KEY);
  const { known, pairs, facts } = data;
  const mx = probeHostsFor(dns);
  const provider = mxProvider(dns.hosts);
  const family = mx ? receiverFamily(mx) : null;
  let tenant: string | undefined;
  return findEmail(
    { tokens: find.tokens, nameKey: find.nameKey, firstName: find.firstName, lastName: find.lastName, domain: find.domain, minConfidence },
    {
      now,
      accountId: ctx.accountId,
      known,
      pairs,
      facts: facts[0],
      dns,
      hash,
      async candidateFacts(hashes, emails) {
        const [held, checks, erased, reports] = await db.batch(candidateFactsQueries(db, hashes, now - FINDER_CHECK_DAYS * DAY_MS, emails.map((e) => canonicalAddress(e))));
        const heldBy = new Map<string, string | null>();
        for (const row of held) if (!heldBy.has(row.address_key) || row.name_key === find.nameKey) heldBy.set(row.address_key, row.name_key);
        return { checks, erased: new Set(erased.map((r) => r.address_hash)), reports, heldByOthers: new Set(emails.filter((e) => heldBy.has(canonicalAddress(e)) && heldBy.get(canonicalAddress(e)) !== find.nameKey)) };
      },
      async probe(email, addressHash, catchAllCheck) {
        if (!mx) return null;
        if (!(await claimCheck(db, addressHash, Date.now(), Date.now() + CLAIM_MS))) return null;
        tenant ??= await probeTenant(ctx.accountId);
        return callProbe(config.PROBE_URL, config.PROBE_SECRET, { email, mx, deadline_ms: FINDER_SMTP_DEADLINE_MS, catch_all_check: catchAllCheck, tenant }, ctx.requestId);
      },
      async record(addressHash, check, acceptAll) {
        const statements = [
          check === null ? releaseCheckQuery(db, addressHash) : recordCheckQuery(db, addressHash, check),
          recordDomainFactsQuery(db, find.domain, { acceptAll, checkedAt: Date.now(), mxProvider: provider, receiverFamily: family }),
        ] as const;
        await db.batch(statements);
      },
    },
  );
}
