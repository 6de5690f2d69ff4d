/**
 * Keys as a resource (docs/api.md "Keys and scopes"): create, roll, revoke and list, each change and its
 * audit event in one batch (one transaction), so neither is ever written without the other. Used by the
 * Worker's /v1/keys routes and by the admin CLI (actor "operator").
 */
import { sql, type SQL } from "drizzle-orm";
import type { CreditCap } from "../../caller.ts";
import { type Db, iso, utcDay } from "../../db/rows.ts";
import { MAX_KEYS_IN_OVERLAP, type ApiKey } from "../../../shared/keys.ts";
import { decodeScopes, encodeScopes, type Scope } from "../../../shared/scopes.ts";
import { generateToken, hashToken, newId } from "../tokens.ts";
import type * as schema from "../../db/schema.ts";
import { auditEvent } from "./audit.ts";

export type KeyRow = {
  id: string;
  account_id: string;
  token_hash: string;
  name: string;
  prefix: string;
  scopes: string;
  created_at: number;
  created_by: string;
  last_used_at: number | null;
  expires_at: number | null;
  revoked_at: number | null;
  daily_credit_cap: number | null;
  replaced_by: string | null;
  credit_caps: string;
};

const KEY_COLUMNS = sql.raw(
  "id, account_id, token_hash, name, prefix, scopes, created_at, created_by, last_used_at, expires_at, revoked_at, daily_credit_cap, replaced_by, credit_caps",
);

/** api_keys.credit_caps read back; anything malformed is treated as no caps only if it is not an array of caps at all. */
export function decodeCreditCaps(stored: string): CreditCap[] {
  const parsed: unknown = JSON.parse(stored);
  if (!Array.isArray(parsed)) return [];
  return parsed.filter((c): c is CreditCap => typeof c?.budget === "string" && Number.isSafeInteger(c?.cap));
}

export function keyJson(row: KeyRow, now: number): ApiKey {
  const expiresAt = row.expires_at === null ? null : Number(row.expires_at);
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: decodeScopes(row.scopes),
    created_at: iso(Number(row.created_at))!,
    created_by: row.created_by,
    last_used_at: iso(row.last_used_at === null ? null : Number(row.last_used_at)),
    expires_at: iso(expiresAt),
    revoked_at: iso(row.revoked_at === null ? null : Number(row.revoked_at)),
    daily_credit_cap: row.daily_credit_cap === null ? null : Number(row.daily_credit_cap),
    status: row.revoked_at !== null ? "revoked" : expiresAt !== null && expiresAt <= now ? "expired" : "active",
    replaced_by: row.replaced_by,
  };
}

/** The SQL condition "this account's keys that count against MAX_LIVE_KEYS at `now`". */
const liveKeys = (accountId: string, now: number, includeRolled: boolean) => sql`
  select count(*) from api_keys where account_id = ${accountId} and revoked_at is null
    and (expires_at is null or expires_at > ${now}) ${includeRolled ? sql`` : sql`and replaced_by is null`}`;

export type NewKey = {
  accountId: string;
  name: string;
  scopes: readonly Scope[];
  expiresAt: number | null;
  dailyCreditCap: number | null;
  /** The caps the maker's own charges count against: a child of a capped key spends its maker's cap too. */
  makerCaps: readonly CreditCap[];
  /** What must still hold when the key is written (the maker's authority, edge/identity/authority.ts); none for the operator. */
  onlyIf?: SQL;
  actor: string;
  requestId: string | null;
  now: number;
  /** MAX_LIVE_KEYS for the API; null for the operator (the admin CLI), who may give an account more, e.g. for a load test. */
  maxLiveKeys: number | null;
};

export type CreateOutcome = { created: true; key: KeyRow; token: string } | { created: false; reason: "no_account" | "too_many_keys" | "authority_lost" };

/** Creates a key unless the account already holds `maxLiveKeys` live keys (checked in the insert itself). */
export async function createKey(db: Db, k: NewKey): Promise<CreateOutcome> {
  const { token, displayPrefix } = generateToken();
  const id = newId("key");
  const tokenHash = await hashToken(token);
  const caps: CreditCap[] = [...k.makerCaps, ...(k.dailyCreditCap === null ? [] : [{ budget: id, cap: k.dailyCreditCap }])];
  const [inserted, , account, authority] = await db.batch([
    db.all<KeyRow>(sql`
      insert into api_keys (id, account_id, token_hash, prefix, name, scopes, created_by, created_at, expires_at, daily_credit_cap, credit_caps)
      select ${id}, id, ${tokenHash}, ${displayPrefix}, ${k.name}, ${encodeScopes(k.scopes)}, ${k.actor}, ${k.now}, ${k.expiresAt}, ${k.dailyCreditCap}, ${JSON.stringify(caps)}
      from accounts where id = ${k.accountId} ${k.maxLiveKeys === null ? sql`` : sql`and (${liveKeys(k.accountId, k.now, false)}) < ${k.maxLiveKeys}`}
        and ${k.onlyIf ?? sql`1`}
      returning ${KEY_COLUMNS}`),
    db.run(
      auditEvent(
        {
          accountId: k.accountId,
          action: "key.created",
          actor: k.actor,
          target: id,
          details: { name: k.name, prefix: displayPrefix, scopes: [...k.scopes], expires_at: k.expiresAt === null ? null : new Date(k.expiresAt).toISOString(), daily_credit_cap: k.dailyCreditCap },
          requestId: k.requestId,
          now: k.now,
        },
        sql`exists (select 1 from api_keys where id = ${id})`,
      ),
    ),
    db.all<{ id: string }>(sql`select id from accounts where id = ${k.accountId}`),
    db.all<{ held: number }>(sql`select ${k.onlyIf ?? sql`1`} as held`),
  ]);
  const key = inserted[0];
  if (key) return { created: true, key, token };
  if (!account.length) return { created: false, reason: "no_account" };
  return { created: false, reason: Number(authority[0]?.held) === 1 ? "too_many_keys" : "authority_lost" };
}

export type RollOutcome =
  | { rolled: true; key: KeyRow; token: string; old: KeyRow }
  | { rolled: false; reason: "not_found" | "revoked" | "expired" | "already_rolled" | "too_many_keys" | "authority_lost"; old?: KeyRow };

/**
 * Makes a new key with the old one's name, scopes, expiry, cap and cap budgets (so the day's spend carries over: a
 * roll is never a fresh day's budget); the old one keeps working for `overlapSeconds` (its expires_at moves no later
 * than that) and points at its replacement.
 */
export async function rollKey(
  db: Db,
  r: { accountId: string; keyId: string; overlapSeconds: number; actor: string; requestId: string | null; now: number; onlyIf?: SQL },
): Promise<RollOutcome> {
  const { token, displayPrefix } = generateToken();
  const id = newId("key");
  const tokenHash = await hashToken(token);
  const oldUntil = r.now + r.overlapSeconds * 1000;
  const created = sql`exists (select 1 from api_keys where id = ${id})`;
  const [inserted, , , oldRows, authority] = await db.batch([
    db.all<KeyRow>(sql`
      insert into api_keys (id, account_id, token_hash, prefix, name, scopes, created_by, created_at, expires_at, daily_credit_cap, credit_caps)
      select ${id}, account_id, ${tokenHash}, ${displayPrefix}, name, scopes, ${r.actor}, ${r.now}, expires_at, daily_credit_cap, credit_caps
      from api_keys where id = ${r.keyId} and account_id = ${r.accountId} and revoked_at is null and replaced_by is null
        and (expires_at is null or expires_at > ${r.now}) and (${liveKeys(r.accountId, r.now, true)}) < ${MAX_KEYS_IN_OVERLAP}
        and ${r.onlyIf ?? sql`1`}
      returning ${KEY_COLUMNS}`),
    db.run(sql`
      update api_keys set replaced_by = ${id}, expires_at = min(coalesce(expires_at, ${oldUntil}), ${oldUntil})
      where id = ${r.keyId} and ${created}`),
    db.run(
      auditEvent(
        {
          accountId: r.accountId,
          action: "key.rolled",
          actor: r.actor,
          target: r.keyId,
          details: { new_key_id: id, new_prefix: displayPrefix, overlap_seconds: r.overlapSeconds, old_key_expires_at: new Date(oldUntil).toISOString() },
          requestId: r.requestId,
          now: r.now,
        },
        created,
      ),
    ),
    db.all<KeyRow>(sql`select ${KEY_COLUMNS} from api_keys where id = ${r.keyId} and account_id = ${r.accountId}`),
    db.all<{ held: number }>(sql`select ${r.onlyIf ?? sql`1`} as held`),
  ]);
  const old = oldRows[0];
  const key = inserted[0];
  if (key && old) return { rolled: true, key, token, old };
  if (!old) return { rolled: false, reason: "not_found" };
  if (Number(authority[0]?.held) !== 1) return { rolled: false, reason: "authority_lost", old };
  if (old.revoked_at !== null) return { rolled: false, reason: "revoked", old };
  if (old.replaced_by !== null) return { rolled: false, reason: "already_rolled", old };
  if (old.expires_at !== null && Number(old.expires_at) <= r.now) return { rolled: false, reason: "expired", old };
  return { rolled: false, reason: "too_many_keys", old };
}

/**
 * The statements (for a batch) that revoke keys of the account (a revoked key is left as it is) and void the invites
 * each made that are still pending, with their audit events, if `onlyIf` holds: a revoked key's invites make nobody
 * a member. `then`: statements of the caller's that must see the keys revoked (the jobs they made stopped). The last
 * statement reads the keys back as they are after (a key id of no key of the account is left out).
 */
export function revokeKeysStatements(db: Db, r: { accountId: string; keyIds: readonly string[]; actor: string; requestId: string | null; now: number; onlyIf?: SQL; then?: readonly SQL[] }) {
  const ids = JSON.stringify(r.keyIds);
  const onlyIf = r.onlyIf ?? sql`1`;
  const revoking = sql`(select id from api_keys where id in (select value from json_each(${ids})) and account_id = ${r.accountId} and revoked_at is null)`;
  return [
    // The audits first, while "not yet revoked" still tells which keys this revocation changes.
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select account_id, 'key.revoked', ${r.actor}, id, '{}', ${r.requestId}, ${r.now} from api_keys where id in ${revoking} and ${onlyIf}`),
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, request_id, created_at)
      select account_id, 'member.invite_revoked', 'system', id, json_object('role', role, 'created_by', created_by, 'why', 'its key was revoked'), ${r.requestId}, ${r.now}
      from invites where created_by in ${revoking} and used_at is null and revoked_at is null and ${onlyIf}`),
    db.run(sql`update invites set revoked_at = ${r.now}, revoked_by = 'system' where created_by in ${revoking} and used_at is null and revoked_at is null and ${onlyIf}`),
    db.run(sql`update api_keys set revoked_at = ${r.now} where id in ${revoking} and ${onlyIf}`),
    ...(r.then ?? []).map((statement) => db.run(statement)),
    db.all<KeyRow>(sql`select ${KEY_COLUMNS} from api_keys where id in (select value from json_each(${ids})) and account_id = ${r.accountId} order by created_at, id`),
  ] as const;
}

/** Revokes keys of the account (revokeKeysStatements): the keys as they are after. */
export async function revokeKeys(db: Db, r: Parameters<typeof revokeKeysStatements>[1]): Promise<KeyRow[]> {
  if (r.keyIds.length === 0) return [];
  const results = await db.batch(revokeKeysStatements(db, r));
  return results.at(-1) as KeyRow[];
}

/** Revokes one key of the account (revokeKeys). Undefined: no such key. */
export async function revokeKey(
  db: Db,
  r: { accountId: string; keyId: string; actor: string; requestId: string | null; now: number; onlyIf?: SQL; then?: readonly SQL[] },
): Promise<KeyRow | undefined> {
  const { keyId, ...rest } = r;
  return (await revokeKeys(db, { ...rest, keyIds: [keyId] }))[0];
}

/**
 * The live keys a member made, and the keys those keys made, to any depth (what their removal should offer to
 * revoke with them), oldest first.
 */
export async function keysMadeBy(db: Db, accountId: string, memberId: string, now: number): Promise<KeyRow[]> {
  return db.all<KeyRow>(sql`
    with recursive made(id) as (
      select id from api_keys where account_id = ${accountId} and created_by = ${memberId}
      union select k.id from api_keys k join made on k.created_by = made.id where k.account_id = ${accountId}
    )
    select ${KEY_COLUMNS} from api_keys where id in (select id from made) and revoked_at is null and (expires_at is null or expires_at > ${now})
    order by created_at, id`);
}

export async function getKey(db: Db, accountId: string, keyId: string): Promise<KeyRow | undefined> {
  const [row] = await db.all<KeyRow>(sql`select ${KEY_COLUMNS} from api_keys where id = ${keyId} and account_id = ${accountId}`);
  return row;
}

/** Listed at most: the live keys (MAX_KEYS_IN_OVERLAP at most) and the newest others. */
export const MAX_LISTED_KEYS = 200;

/** The account's keys, live ones first, then the newest: at most `limit` (MAX_LISTED_KEYS for the API; the operator sees all). */
export async function listKeys(db: Db, accountId: string, now: number, limit = MAX_LISTED_KEYS): Promise<KeyRow[]> {
  return db.all<KeyRow>(sql`
    select ${KEY_COLUMNS} from api_keys where account_id = ${accountId}
    order by (revoked_at is null and (expires_at is null or expires_at > ${now})) desc, created_at desc, id desc
    limit ${limit}`);
}

/** The account a key belongs to, or null when there is no such key (the admin CLI's `keys revoke --key`). */
export async function accountOfKey(db: Db, keyId: string): Promise<string | null> {
  const [row] = await db.all<{ account_id: string }>(sql`select account_id from api_keys where id = ${keyId}`);
  return row?.account_id ?? null;
}

/**
 * For the cron: writes a key.expired event (actor "system") for each key that expired since and was
 * not revoked, once per key.
 */
export async function recordExpiredKeys(db: Db, now: number, limit = 1_000): Promise<number> {
  const due = sql`select id from api_keys where expires_at <= ${now} and expiry_recorded_at is null and expires_at is not null order by id limit ${limit}`;
  const [, updated] = await db.batch([
    db.run(sql`
      insert into audit_events (account_id, action, actor, target, details, created_at)
      select account_id, 'key.expired', 'system', id, json_object('expired_at', strftime('%Y-%m-%dT%H:%M:%fZ', expires_at / 1000.0, 'unixepoch')), ${now}
      from api_keys where id in (${due}) and revoked_at is null`),
    db.run(sql`update api_keys set expiry_recorded_at = ${now} where id in (${due})`),
  ]);
  return updated.rowsAffected;
}

/**
 * The SQL condition "charging `cost` now would take one of these cap budgets past its cap" (always false for a key
 * nothing caps), for the lookup's guarded charge (edge/credits.ts): read from key_cap_spend, which the ledger trigger
 * (0018 migration) keeps in the charge's own statement.
 */
export function capExceeded({ cost, now, creditCaps }: { cost: number; now: number; creditCaps: readonly CreditCap[] }): SQL {
  if (creditCaps.length === 0) return sql`0`;
  return sql`exists (select 1 from json_each(${JSON.stringify(creditCaps)}) j
    where coalesce((select credits_spent from key_cap_spend where budget_id = j.value ->> '$.budget' and day = ${utcDay(now)}), 0) + ${cost} > j.value ->> '$.cap')`;
}

/**
 * How many charges of `cost` the cap budgets still allow today, as an SQL expression (null for a key nothing caps), for
 * the bulk lookups' guarded charge (edge/credits.ts chargeRankedQuery): the least room of any budget, read from
 * key_cap_spend before the charge's own rows move it. `cost` must be above 0.
 */
export function capRoom({ cost, now, creditCaps }: { cost: number; now: number; creditCaps: readonly CreditCap[] }): SQL | null {
  if (creditCaps.length === 0) return null;
  return sql`(select min(max(0, (j.value ->> '$.cap') - coalesce((select credits_spent from key_cap_spend where budget_id = j.value ->> '$.budget' and day = ${utcDay(now)}), 0)) / ${cost})
    from json_each(${JSON.stringify(creditCaps)}) j)`;
}

/** The statement that moves a key's last_used_at forward to `usedAt` (never back, whichever isolate writes last). */
export function lastUsedStatement(keyId: string, usedAt: number): SQL {
  return sql`update api_keys set last_used_at = ${usedAt} where id = ${keyId} and (last_used_at is null or last_used_at < ${usedAt})`;
}

export type KeyForAuthentication = {
  keyId: string;
  accountId: string;
  scopes: string;
  expiresAt: number | null;
  dailyCreditCap: number | null;
  creditCaps: string;
  revokedAt: number | null;
  accountActive: boolean;
};

/** The key with this token hash, with its account's status, for authentication (one read). */
export async function findKeyByTokenHash(db: Db, tokenHash: string): Promise<KeyForAuthentication | undefined> {
  const [row] = await db.all<{ id: string; account_id: string; scopes: string; expires_at: number | null; daily_credit_cap: number | null; credit_caps: string; revoked_at: number | null; status: string }>(sql`
    select k.id, k.account_id, k.scopes, k.expires_at, k.daily_credit_cap, k.credit_caps, k.revoked_at, a.status
    from api_keys k join accounts a on a.id = k.account_id where k.token_hash = ${tokenHash} limit 1`);
  if (!row) return undefined;
  const num = (v: number | null) => (v === null ? null : Number(v));
  return {
    keyId: row.id,
    accountId: row.account_id,
    scopes: row.scopes,
    expiresAt: num(row.expires_at),
    dailyCreditCap: num(row.daily_credit_cap),
    creditCaps: row.credit_caps,
    revokedAt: num(row.revoked_at),
    accountActive: row.status === "active",
  };
}

/**
 * "Whoever made this work can still act", as an SQL condition on `actor` (an SQL expression: a key's id, or a member's
 * for a session): for jobs, which go on for minutes or days after the request that made them (docs/api.md "Keys and
 * scopes"). A member still of the account; or a key not revoked whose own expiry has not come, or that a roll replaced
 * by one that is (following replaced_by: a roll hands its maker's work on to the new key; a revocation anywhere on the
 * way stops it).
 */
export const actorLive = (actor: SQL, now: number): SQL => sql`(exists (select 1 from members m where m.id = ${actor})
  or exists (with recursive chain(id) as (
      select k.id from api_keys k where k.id = ${actor} and k.revoked_at is null
      union select n.id from chain c join api_keys o on o.id = c.id join api_keys n on n.id = o.replaced_by where n.revoked_at is null)
    select 1 from chain c join api_keys k on k.id = c.id where k.expires_at is null or k.expires_at > ${now}))`;

/** Why `actor` can no longer act (for a job it made, once actorLive says no): key_revoked, key_expired or member_removed. */
export const actorGoneReason = (actor: SQL): SQL => sql`(case
  when not exists (select 1 from api_keys k where k.id = ${actor}) then 'member_removed'
  when exists (with recursive chain(id) as (
      select ${actor} union select o.replaced_by from chain c join api_keys o on o.id = c.id where o.replaced_by is not null)
    select 1 from chain c join api_keys k on k.id = c.id where k.revoked_at is not null) then 'key_revoked'
  else 'key_expired' end)`;
