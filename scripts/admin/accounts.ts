/**
 * Account, key and credit operations behind the admin CLI (and the tests' seeding). They take a
 * Drizzle database so they run the same against a local file, the local libSQL server, or Turso.
 */
import { desc, eq, sql } from "drizzle-orm";
import { accountWebhookSecret } from "../../edge/webhooks/secret.ts";
import { isInternalAccount } from "../../edge/identity/internal-accounts.ts";
import { decodeScopes, SCOPES, type Scope } from "../../shared/scopes.ts";
import { newId } from "../../edge/identity/tokens.ts";
import { auditEvent } from "../../edge/identity/store/audit.ts";
import { accountOfKey, createKey, listKeys, revokeKey } from "../../edge/identity/store/keys.ts";
import { stopJobsOfGoneMakers } from "../../edge/jobs/makers.ts";
import { accounts, creditLedger } from "../../edge/db/schema.ts";
import type * as schema from "../../edge/db/schema.ts";
import { type Db } from "../../edge/db/rows.ts";

export class AdminError extends Error {
  override name = "AdminError";
}

/** Internal accounts' jobs hold every stored address: nobody gets a key to one, and credits mean nothing there. */
function refuseInternalAccount(accountId: string, what: string): void {
  if (isInternalAccount(accountId)) throw new AdminError(`${accountId} is an internal account of the service: it cannot be given ${what}`);
}

export async function createAccount(db: Db, name: string, credits: number): Promise<{ id: string }> {
  if (!name.trim()) throw new AdminError("--name must not be empty");
  if (!Number.isSafeInteger(credits) || credits < 0) throw new AdminError("--credits must be a non-negative integer");
  const id = newId("acc");
  // The account and its opening grant land together or not at all.
  await db.batch([
    db.insert(accounts).values({ id, name: name.trim() }),
    db.insert(creditLedger).values({ accountId: id, delta: credits, balanceAfter: credits, reason: "grant" }),
  ]);
  return { id };
}

export async function addCredits(db: Db, accountId: string, amount: number): Promise<{ balance: number }> {
  if (!Number.isSafeInteger(amount) || amount === 0) throw new AdminError("--amount must be a non-zero integer");
  refuseInternalAccount(accountId, "credits");
  const rows = await db.all<{ balance_after: number }>(sql`
    insert into credit_ledger (account_id, delta, balance_after, reason)
    select id, ${amount}, credit_balance + ${amount}, 'grant' from accounts
    where id = ${accountId} and credit_balance + ${amount} >= 0
    returning balance_after`);
  const row = rows[0];
  if (!row) {
    const exists = await db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId));
    throw new AdminError(exists.length ? "The balance cannot go below zero" : `No account ${accountId}`);
  }
  return { balance: Number(row.balance_after) };
}

export type KeyOptions = { name?: string; scopes?: readonly Scope[]; expiresAt?: number | null; dailyCreditCap?: number | null };

/** A key made by the operator: every scope unless named, no expiry or cap unless given (audited as "operator"). */
export async function createApiKey(db: Db, accountId: string, options: KeyOptions = {}): Promise<{ id: string; token: string; prefix: string }> {
  refuseInternalAccount(accountId, "API keys");
  const now = Date.now();
  if (options.expiresAt != null && options.expiresAt <= now) throw new AdminError("--expires must be in the future");
  const outcome = await createKey(db, {
    accountId,
    name: options.name ?? "",
    scopes: options.scopes ?? SCOPES,
    expiresAt: options.expiresAt ?? null,
    dailyCreditCap: options.dailyCreditCap ?? null,
    makerCaps: [],
    actor: "operator",
    requestId: null,
    now,
    // The bound is on self-service (a leaked keys:write key); the operator may give an account more.
    maxLiveKeys: null,
  });
  if (!outcome.created) throw new AdminError(`No account ${accountId}`);
  return { id: outcome.key.id, token: outcome.token, prefix: outcome.key.prefix };
}

export async function revokeApiKey(db: Db, keyId: string): Promise<{ id: string; revoked_at: number }> {
  const accountId = await accountOfKey(db, keyId);
  if (accountId === null) throw new AdminError(`No key ${keyId}`);
  const now = Date.now();
  // As the API's revocation: the jobs the key made stop in the same transaction.
  const row = await revokeKey(db, { accountId, keyId, actor: "operator", requestId: null, now, then: stopJobsOfGoneMakers(accountId, now) });
  return { id: keyId, revoked_at: Number(row!.revoked_at) };
}

/** Disables or enables the account, with its audit event (actor "operator") in the same transaction when the status changed. */
export async function setAccountStatus(db: Db, accountId: string, status: "active" | "disabled"): Promise<{ id: string; status: string }> {
  const now = Date.now();
  const [, rows] = await db.batch([
    db.run(
      auditEvent(
        { accountId, action: status === "disabled" ? "account.disabled" : "account.enabled", actor: "operator", target: accountId, details: {}, requestId: null, now },
        sql`exists (select 1 from accounts where id = ${accountId} and status != ${status})`,
      ),
    ),
    db.update(accounts).set({ status }).where(eq(accounts.id, accountId)).returning({ id: accounts.id }),
  ]);
  if (!rows[0]) throw new AdminError(`No account ${accountId}`);
  return { id: accountId, status };
}

export async function showAccount(db: Db, accountId: string, ledgerLimit = 20) {
  const [account] = await db.select().from(accounts).where(eq(accounts.id, accountId));
  if (!account) throw new AdminError(`No account ${accountId}`);
  const [keys, ledger] = await Promise.all([
    listKeys(db, accountId, Date.now(), Number.MAX_SAFE_INTEGER).then((rows) =>
      rows
        .sort((a, b) => Number(a.created_at) - Number(b.created_at))
        .map((k) => ({
          id: k.id,
          name: k.name,
          prefix: k.prefix,
          scopes: decodeScopes(k.scopes),
          created_at: Number(k.created_at),
          last_used_at: k.last_used_at === null ? null : Number(k.last_used_at),
          expires_at: k.expires_at === null ? null : Number(k.expires_at),
          revoked_at: k.revoked_at === null ? null : Number(k.revoked_at),
          daily_credit_cap: k.daily_credit_cap === null ? null : Number(k.daily_credit_cap),
        })),
    ),
    db
      .select({
        id: creditLedger.id,
        delta: creditLedger.delta,
        balance_after: creditLedger.balanceAfter,
        reason: creditLedger.reason,
        request_id: creditLedger.requestId,
        created_at: creditLedger.createdAt,
      })
      .from(creditLedger)
      .where(eq(creditLedger.accountId, accountId))
      .orderBy(desc(creditLedger.id))
      .limit(ledgerLimit),
  ]);
  return {
    id: account.id,
    name: account.name,
    status: account.status,
    balance: account.creditBalance,
    created_at: account.createdAt,
    keys,
    recent_ledger: ledger,
  };
}

/** The account's webhook signing secret (edge/webhooks/secret.ts), made on first use; with `rotate`, a new one. */
export async function webhookSecret(db: Db, accountId: string, keyBase64: string | undefined, rotate = false): Promise<{ secret: string }> {
  const secret = await accountWebhookSecret(db, accountId, keyBase64, rotate);
  if (secret === null) throw new AdminError(`No account ${accountId}`);
  // The secret itself never: only that it changed, and who changed it.
  if (rotate) {
    await db.run(auditEvent({ accountId, action: "account.webhook_secret_rotated", actor: "operator", target: accountId, details: {}, requestId: null, now: Date.now() }));
  }
  return { secret };
}
