/**
 * The account's webhook signing secret in the database: what the queue consumer signs callbacks with and the admin
 * CLI shows or rotates (scripts/admin/accounts.ts). Sealing itself is edge/jobs/webhook.ts.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Db } from "../db/rows.ts";
import { accounts } from "../db/schema.ts";
import { generateWebhookSecret, isSealed, openWebhookSecret, sealWebhookSecret } from "./webhook.ts";

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
