/**
 * The account's webhook signing secret in the database: what every webhook is signed with (send.ts) and the admin CLI
 * shows or rotates (scripts/admin/accounts.ts); and what a webhook needs of its account. Sealing itself is signing.ts.
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import type { Db, RawRow } from "../db/rows.ts";
import { accounts } from "../db/schema.ts";
import { generateWebhookSecret, isSealed, openWebhookSecret, sealWebhookSecret } from "./signing.ts";

/**
 * The account's webhook signing secret ("whsec_" + base64), made on first use; with `rotate`, a new
 * one replaces it (callbacks already queued are signed with the new one when they go out). Stored
 * sealed under WEBHOOK_SECRET_KEY (`keyBase64`); one stored plain before sealing existed is sealed
 * now, in place. Null when there is no such account.
 */
export async function accountWebhookSecret(db: Db, accountId: string, keyBase64: string | undefined, rotate = false): Promise<string | null> {
  const fresh = generateWebhookSecret();
  const sealed = await sealWebhookSecret(fresh, accountId, keyBase64);
  // Set only when missing (or rotating): two first uses at once keep one secret, not two.
  await db
    .update(accounts)
    .set({ webhookSecret: sealed })
    .where(rotate ? eq(accounts.id, accountId) : and(eq(accounts.id, accountId), isNull(accounts.webhookSecret)));
  const [row] = await db.select({ stored: accounts.webhookSecret }).from(accounts).where(eq(accounts.id, accountId));
  if (!row?.stored) return null;
  const secret = await openWebhookSecret(row.stored, accountId, keyBase64);
  if (!isSealed(row.stored)) {
    // Guarded by the old value: a rotation meanwhile wins.
    await db
      .update(accounts)
      .set({ webhookSecret: await sealWebhookSecret(secret, accountId, keyBase64) })
      .where(and(eq(accounts.id, accountId), eq(accounts.webhookSecret, row.stored)));
  }
  return secret;
}

/** What a webhook needs of its account: whether it is active, and its stored (sealed) secret; null when there is no such account. */
export async function callbackAccount(db: Db, accountId: string): Promise<{ active: boolean; storedSecret: string | null } | null> {
  const [row] = await db.all<Pick<RawRow<typeof accounts.$inferSelect>, "status" | "webhook_secret">>(sql`select status, webhook_secret from accounts where id = ${accountId}`);
  return row ? { active: row.status === "active", storedSecret: row.webhook_secret } : null;
}
