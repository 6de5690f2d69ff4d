/**
 * Seeding and request helpers for route tests. They run inside workerd and reach the same libSQL
 * server as the Worker, through the same admin operations the CLI uses.
 */
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { employerKey, foldName, nameKey, normaliseDomain, splitFullName } from "../../shared/people/names.ts";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createClient } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/libsql/web";
import { addCredits, createAccount, createApiKey, revokeApiKey, setAccountStatus } from "../../scripts/admin/accounts.ts";
import * as schema from "../../edge/db/schema.ts";
import type { Bindings } from "../../edge/env.ts";
import app from "../../edge/index.ts";
import { createApiClient, type ApiClient } from "../../client/index.ts";

const bindings = env as unknown as { DATABASE_URL: string; DATABASE_AUTH_TOKEN: string };

// The Worker's own default export, running in this isolate (vitest-pool-workers `main`).
const worker = (exports as unknown as { default: { fetch(request: Request): Promise<Response> } }).default;

export const db = drizzle(createClient({ url: bindings.DATABASE_URL, authToken: bindings.DATABASE_AUTH_TOKEN }), { schema });

/** The Hrana requests the libSQL server at `url` has served (its GET /stats, which needs the run's database token). */
export async function databaseRequestsServed(url: string): Promise<number> {
  const res = await fetch(`${url}/stats`, { headers: { authorization: `Bearer ${bindings.DATABASE_AUTH_TOKEN}` } });
  return ((await res.json()) as { requests: number }).requests;
}

/**
 * Ends every unfinished job in the test database. Bulk turns are shared by every account with due
 * lines (edge/jobs/fair-share.ts), so a job a test leaves with due lines would take turns meant for
 * the next test's job; the job files call this after each test (and run one file at a time).
 */
export async function cancelUnfinishedJobs(): Promise<void> {
  await db.run(sql`update verification_jobs set status = 'cancelled', completed_at = ${Date.now()} where status in ('queued', 'running')`);
}

export async function newAccount(credits = 100) {
  const account = await createAccount(db, "test account", credits);
  const key = await createApiKey(db, account.id);
  return { accountId: account.id, keyId: key.id, token: key.token };
}

export { addCredits, revokeApiKey, setAccountStatus };

type CallInit = RequestInit & { token?: string };

/**
 * Cloudflare sets CF-Connecting-IP on every request; here each test file gets an address of its own
 * (documentation range), so failed authentications in one file never count against another's.
 */
export const clientAddress = () =>
  `2001:db8:${Array.from(crypto.getRandomValues(new Uint16Array(3)), (n) => n.toString(16)).join(":")}::1`;
const fileAddress = clientAddress();

function apiRequest(path: string, init: CallInit): Request {
  const headers = new Headers(init.headers);
  if (init.token !== undefined) headers.set("Authorization", `Bearer ${init.token}`);
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", fileAddress);
  return new Request(`http://api.test${path}`, { ...init, headers });
}

export function call(path: string, init: CallInit = {}): Promise<Response> {
  return worker.fetch(apiRequest(path, init));
}

/** Any request, to any origin (the console's tests use http://localhost:8787), as the Worker receives it. */
export function send(request: Request): Promise<Response> {
  if (!request.headers.has("CF-Connecting-IP")) request.headers.set("CF-Connecting-IP", fileAddress);
  return worker.fetch(request);
}

/** The typed client (client/) over this isolate's Worker, as a user's code would call the API. */
export function apiClient(apiKey: string): ApiClient {
  return createApiClient({
    baseUrl: "http://api.test",
    apiKey,
    fetch: (request) => {
      const headers = new Headers(request.headers);
      if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", fileAddress);
      return worker.fetch(new Request(request, { headers }));
    },
  });
}

/**
 * The same Worker with some bindings changed for one request (a database behind the fault proxy,
 * a shorter timeout), run in this isolate as the runtime would run it.
 */
export async function callWith(bindings: Partial<Bindings>, path: string, init: CallInit = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(apiRequest(path, init), { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

// One random base per test file (2^32 of them, 2^20 apart, all below 2^53), then a counter. Not the
// clock: under a frozen Date.now() two tests' ids differed only by Math.random()'s 0-999 and collided.
const personBase = (crypto.getRandomValues(new Uint32Array(1))[0]! + 1) * 2 ** 20;
let personSeq = 0;
/** Unique identifiers per test so tests sharing one database never collide. */
export function uniqueIds() {
  personSeq += 8;
  const n = personBase + personSeq;
  return { profnet_id: n, profnet_public_identifier: `pn-${n}`, codehost_id: n + 7, codehost_login: `Login${n}` };
}

export async function insertPerson(p: {
  profnet_id?: number | null;
  profnet_public_identifier?: string | null;
  codehost_id?: number | null;
  codehost_login?: string | null;
  codehost_username?: string | null;
  socialnet_username?: string | null;
  microblog_username?: string | null;
  emails?: string[];
  phones?: string[];
  /** The sources that reported each address (default one, "test"). */
  sources?: string[];
  /** Names as the import stores them (keyed by shared/people/names.ts). */
  names?: { full?: string; given?: string; family?: string; middle?: string }[];
  employment?: { employer: string; domains?: string[]; title?: string; start?: string; end?: string; current?: boolean }[];
}): Promise<number> {
  const [row] = await db
    .insert(schema.people)
    .values({
      profnetId: p.profnet_id ?? null,
      profnetPublicIdentifier: p.profnet_public_identifier ?? null,
      codehostId: p.codehost_id ?? null,
      codehostLogin: p.codehost_login ?? null,
      codehostUsername: p.codehost_username ?? null,
      socialnetUsername: p.socialnet_username ?? null,
      microblogUsername: p.microblog_username ?? null,
    })
    .returning({ id: schema.people.id });
  const personId = row!.id;
  const now = Date.now();
  for (const [i, email] of (p.emails ?? []).entries()) {
    const [added] = await db
      .insert(schema.personEmails)
      .values({ personId, email, firstSeenAt: 1_000 + i, lastSeenAt: now, addressKey: canonicalAddress(email) })
      .returning({ id: schema.personEmails.id });
    for (const source of p.sources ?? ["test"]) await db.insert(schema.personEmailSources).values({ emailId: added!.id, source, firstSeenAt: 1_000 + i, lastSeenAt: now });
  }
  for (const [i, phone] of (p.phones ?? []).entries()) {
    const [added] = await db.insert(schema.personPhones).values({ personId, phone, firstSeenAt: 1_000 + i, lastSeenAt: now }).returning({ id: schema.personPhones.id });
    await db.insert(schema.personPhoneSources).values({ phoneId: added!.id, source: "test", firstSeenAt: 1_000 + i, lastSeenAt: now });
  }
  for (const [i, name] of (p.names ?? []).entries()) {
    const parts = name.given !== undefined || name.family !== undefined ? name : splitFullName(name.full ?? "");
    const full = name.full ?? [name.given, name.middle, name.family].filter(Boolean).join(" ");
    await db.insert(schema.personNames).values({
      personId,
      full,
      given: parts.given ?? null,
      family: parts.family ?? null,
      middle: parts.middle ?? null,
      folded: foldName(full),
      nameKey: nameKey(parts),
      firstSeenAt: 1_000 + i,
      lastSeenAt: now + i,
    });
  }
  for (const [i, job] of (p.employment ?? []).entries()) {
    const key = employerKey(job.employer)!;
    const [added] = await db
      .insert(schema.personEmployment)
      .values({
        personId,
        employer: job.employer,
        employerKey: key,
        title: job.title ?? null,
        startDate: job.start ?? null,
        endDate: job.end ?? null,
        current: job.current === undefined ? null : job.current ? 1 : 0,
        entryKey: `${key}\u0000${foldName(job.title ?? "")}\u0000${job.start ?? ""}`,
        firstSeenAt: 1_000 + i,
        lastSeenAt: now,
      })
      .returning({ id: schema.personEmployment.id });
    for (const domain of job.domains ?? []) await db.insert(schema.personEmploymentDomains).values({ employmentId: added!.id, personId, domain: normaliseDomain(domain)! });
  }
  return personId;
}
