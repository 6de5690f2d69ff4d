/**
 * A find's inputs (docs/api.md "GET /v1/email_finder"), read by one set of rules and messages for the single call, the
 * batch's items and the console: a name (full_name, or first_name and last_name) and a domain or a company, bounded in
 * size before anything else reads them. A domain must be a registrable name (tldts, the Public Suffix List): not an
 * address, an IP or a public suffix. Pure.
 */
import { getDomain } from "tldts";
import { ERROR_MESSAGES, FINDER_LIMITS, type ErrorReason } from "../../shared/api.ts";
import { isDisposableDomain, isFreeProviderDomain } from "../../shared/email/lists.ts";
import { employerKey, FORBIDDEN_TEXT, nameKey, normaliseDomain, splitFullName, type NameParts } from "../../shared/people/names.ts";
import { nameTokens, type NameTokens } from "../../shared/people/patterns.ts";

export type FindQuery = {
  tokens: NameTokens;
  nameKey: string;
  firstName: string | null;
  lastName: string | null;
  /** The domain given, normalised; or null with `company` (an employer key) to resolve. */
  domain: string | null;
  company: string | null;
};

export type QueryProblem = { status: 400 | 422; error: string; reason?: ErrorReason };

const text = (v: unknown): string | undefined => (typeof v === "string" && v.trim() !== "" ? v.trim() : undefined);

/** The find a query asks for, or what is wrong with it (400: malformed; 422: a domain no address can be found at). */
export function readFindQuery(q: Readonly<Record<string, unknown>>): { ok: true; find: FindQuery } | { ok: false; problem: QueryProblem } {
  const bad = (error: string): { ok: false; problem: QueryProblem } => ({ ok: false, problem: { status: 400, error } });
  const full = text(q.full_name);
  const first = text(q.first_name);
  const last = text(q.last_name);
  for (const [name, value, max] of [["full_name", full, FINDER_LIMITS.maxFullName], ["first_name", first, FINDER_LIMITS.maxNamePart], ["last_name", last, FINDER_LIMITS.maxNamePart]] as const) {
    if (value !== undefined && [...value].length > max) return bad(`${name} must be at most ${max} characters`);
    if (value !== undefined && FORBIDDEN_TEXT.test(value)) return bad(`${name} holds control or invisible characters`);
  }
  let parts: NameParts;
  if (first !== undefined || last !== undefined) {
    if (first === undefined || last === undefined) return bad(ERROR_MESSAGES.finderNameRequired);
    parts = { given: first, family: last };
  } else if (full !== undefined) parts = splitFullName(full);
  else return bad(ERROR_MESSAGES.finderNameRequired);
  const key = nameKey(parts);
  const tokens = nameTokens(parts);
  if (key === null || tokens === null) return bad(ERROR_MESSAGES.finderNameRequired);

  const rawDomain = text(q.domain);
  const rawCompany = text(q.company);
  if (rawDomain === undefined && rawCompany === undefined) return bad(ERROR_MESSAGES.finderDomainRequired);
  let domain: string | null = null;
  let company: string | null = null;
  if (rawDomain !== undefined) {
    if (rawDomain.length > 2 * 253) return bad(ERROR_MESSAGES.finderDomainInvalid);
    domain = normaliseDomain(rawDomain);
    if (domain === null || getDomain(domain, { allowPrivateDomains: true }) === null) return bad(ERROR_MESSAGES.finderDomainInvalid);
    const refused = refusedDomain(domain);
    if (refused) return { ok: false, problem: refused };
  } else {
    if ([...rawCompany!].length > FINDER_LIMITS.maxCompany) return bad(`company must be at most ${FINDER_LIMITS.maxCompany} characters`);
    if (FORBIDDEN_TEXT.test(rawCompany!)) return bad("company holds control or invisible characters");
    company = employerKey(rawCompany!);
    if (company === null) return bad(ERROR_MESSAGES.finderDomainRequired);
  }
  return { ok: true, find: { tokens, nameKey: key, firstName: parts.given ?? null, lastName: parts.family ?? null, domain, company } };
}

/** A domain no work address can be found at by a name: a webmail or a disposable provider's (422). */
export function refusedDomain(domain: string): QueryProblem | null {
  if (isDisposableDomain(domain)) return { status: 422, error: ERROR_MESSAGES.finderDisposable, reason: "disposable_domain" };
  if (isFreeProviderDomain(domain)) return { status: 422, error: ERROR_MESSAGES.finderWebmail, reason: "webmail_domain" };
  return null;
}

/** `max_duration`: whole seconds 1..20, default 10. */
export function readMaxDuration(raw: unknown): number | null {
  if (raw === undefined || raw === null || (typeof raw === "string" && raw.trim() === "")) return FINDER_LIMITS.defaultDuration;
  const value = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw.trim() : "";
  if (!/^[0-9]{1,2}$/.test(value)) return null;
  const n = Number(value);
  return n >= 1 && n <= FINDER_LIMITS.maxDuration ? n : null;
}
