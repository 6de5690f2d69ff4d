/** GET /v1/domains/{domain} (docs/api.md, the section of that name). */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { getDomain } from "tldts";
import { DomainSearchQuery, DomainSearchResult, ERROR_MESSAGES } from "../../shared/api.ts";
import { isDisposableDomain, isFreeProviderDomain, isRoleAccount } from "../../shared/email/lists.ts";
import { mxProvider, receiverFamily } from "../../shared/email/receivers.ts";
import { normaliseDomain } from "../../shared/people/names.ts";
import { learnPatterns } from "../../shared/people/patterns.ts";
import { requestDatabase } from "../db/client.ts";
import { iso } from "../db/rows.ts";
import type { AppEnv } from "../env.ts";
import { pairsFromRows } from "../finder/find.ts";
import { domainMail, receivesNoMail } from "../finder/service.ts";
import { domainAddressCountQuery, domainFactsQuery, domainPairsQuery, domainPeopleQuery, listPeopleStatements } from "../people/finder-store.ts";
import { ApiError } from "../lib/errors.ts";
import { balanceQuery } from "../money/credits.ts";
import { access } from "./access.ts";
import { authenticatedErrorResponses, creditHeaders, errorResponse } from "./responses.ts";

export const domainSearchRoute = createRoute({
  method: "get",
  path: "/v1/domains/{domain}",
  operationId: "searchDomain",
  tags: ["People"],
  summary: "What a domain's addresses look like: patterns, catch-all, who runs its mail, how many we know",
  description:
    "Free: the address patterns of the addresses we hold at the domain, with shares and counts, whether its receiver accepts every address and when we last tested it, its mail provider, " +
    "disposable and webmail flags and counts by type. include=people also lists the people we hold there, LOOKUP_COST credits per person listed, each recorded as a lookup is (docs/api.md \"GET /v1/domains/{domain}\").",
  ...access({ who: { scope: "people:read" }, limits: ["lookup"] }),
  request: { params: z.object({ domain: z.string().openapi({ example: "acme.com" }) }), query: DomainSearchQuery },
  responses: {
    200: { description: "The domain's facts", content: { "application/json": { schema: DomainSearchResult } }, headers: creditHeaders },
    400: errorResponse(`${ERROR_MESSAGES.finderDomainInvalid}; an unknown include; or ${ERROR_MESSAGES.domainLimitRange}`, creditHeaders),
    402: errorResponse(`${ERROR_MESSAGES.insufficientCredits}: include=people needs credits for at least one person`, creditHeaders),
    422: errorResponse(`${ERROR_MESSAGES.finderNoMail} (domain_has_no_mail)`, creditHeaders),
    ...authenticatedErrorResponses,
  },
});

export function registerDomainRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(domainSearchRoute, async (c) => {
    const config = c.get("config");
    const { accountId, actor: keyId, creditCaps } = c.get("auth");
    const db = requestDatabase(c);
    const fail = async (status: 400 | 402 | 422, error: string, reason?: "domain_has_no_mail"): Promise<never> => {
      const balance = Number((await balanceQuery(db, accountId))[0]?.credit_balance ?? 0);
      throw new ApiError(status, error, { "X-Credits-Charged": "0", "X-Credits-Remaining": String(balance) }, reason ? { reason } : {});
    };
    const raw = c.req.valid("param").domain;
    const domain = raw.length > 506 ? null : normaliseDomain(decodeURIComponent(raw));
    if (domain === null || getDomain(domain, { allowPrivateDomains: true }) === null) return fail(400, ERROR_MESSAGES.finderDomainInvalid);
    const { include, limit: rawLimit } = c.req.valid("query");
    const includes = (include ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
    const unknown = includes.find((s) => s !== "people");
    if (unknown !== undefined) return fail(400, `Unknown include "${unknown.slice(0, 40)}": expected people`);
    const listPeople = includes.includes("people");
    let limit = 10;
    if (rawLimit !== undefined && rawLimit.trim() !== "") {
      if (!/^[0-9]{1,3}$/.test(rawLimit.trim()) || Number(rawLimit) < 1 || Number(rawLimit) > 100) return fail(400, ERROR_MESSAGES.domainLimitRange);
      limit = Number(rawLimit);
    }
    const now = Date.now();
    const [dns, [pairs, counted, facts]] = await Promise.all([
      domainMail(domain, config),
      db.batch([domainPairsQuery(db, domain, now), domainAddressCountQuery(db, domain), domainFactsQuery(db, domain)]),
    ]);
    if (receivesNoMail(dns)) return fail(422, ERROR_MESSAGES.finderNoMail, "domain_has_no_mail");
    const learned = learnPatterns(pairsFromRows(pairs));
    const total = Number(counted[0]?.total ?? 0);
    const generic = pairs.filter((p) => isRoleAccount(p.email.slice(0, p.email.lastIndexOf("@")))).length;
    const hosts = dns.hosts.filter((h) => h.addresses.length > 0);
    const fact = facts[0];
    const body = {
      domain,
      disposable: isDisposableDomain(domain),
      webmail: isFreeProviderDomain(domain),
      accept_all: fact?.accept_all == null ? null : Number(fact.accept_all) === 1,
      accept_all_checked_at: fact?.accept_all_checked_at == null ? null : iso(Number(fact.accept_all_checked_at)),
      mx_provider: mxProvider(dns.hosts),
      receiver_family: hosts.length ? receiverFamily(hosts) : null,
      mx_hosts: dns.hosts.map((h) => ({ host: h.host, preference: h.preference })),
      patterns: learned.patterns.map((p) => ({ pattern: p.pattern, share: p.share, count: p.count })),
      // Role accounts are counted among the addresses read (the newest PAIRS_READ); the rest of the total are people's.
      known_addresses: { total, personal: total - generic, generic },
    };
    if (!listPeople) {
      const balance = Number((await balanceQuery(db, accountId))[0]?.credit_balance ?? 0);
      return c.json(body, 200, { "X-Credits-Charged": "0", "X-Credits-Remaining": String(balance) });
    }
    // The people listed are charged as lookups, one ledger row each in rank order, as far as the balance and the key's
    // caps cover; those not covered are not listed. Each listed person is recorded in the access log.
    const cost = config.LOOKUP_COST;
    const requestId = c.get("requestId");
    const listed = await domainPeopleQuery(db, domain, now, limit);
    const charge = { accountId, keyId, cost, now, creditCaps };
    const [charged, , balanceRows] = await db.batch(listPeopleStatements(db, charge, requestId, listed.map((p) => Number(p.person_id))));
    const served = cost === 0 ? listed.length : charged.length;
    if (served === 0 && listed.length > 0) return fail(402, ERROR_MESSAGES.insufficientCredits);
    const people = listed.slice(0, served);
    const balance = Number(balanceRows[0]?.credit_balance ?? 0);
    c.get("accessLog").people_listed = people.length;
    return c.json(
      {
        ...body,
        people: people.map((p) => ({ full_name: p.full, first_name: p.given, last_name: p.family, title: p.title, email: p.email, confidence: Number(p.confidence) })),
      },
      200,
      { "X-Credits-Charged": String(served * cost), "X-Credits-Remaining": String(balance) },
    );
  });
}
