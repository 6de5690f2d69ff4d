/**
 * Webhook secrets at rest (edge/webhooks/signing.ts, scripts/admin/accounts.ts; docs/jobs.md "Callbacks"): sealed with
 * AES-256-GCM under WEBHOOK_SECRET_KEY and bound to their account, on a real libSQL file database.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, webhookSecret } from "../../scripts/admin/accounts.ts";
import { openWebhookSecret, sealWebhookSecret, WebhookKeyError } from "../../edge/webhooks/signing.ts";
import { applyMigrations, openDatabase, type NodeDatabase } from "../../scripts/lib/database.ts";
import { TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";

const OTHER_KEY = "5M6k0s3Zg9Jd2rWqL1vN8bYc4tHxE7uAoPfKiRzT0Qw=";
let dir: string;
let db: NodeDatabase;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "webhook-secrets-"));
  db = openDatabase(`file:${join(dir, "test.db")}`);
  await applyMigrations(db);
});

afterAll(async () => {
  db.$client.close();
  await rm(dir, { recursive: true, force: true });
});

const stored = async (accountId: string) =>
  (await db.all<{ webhook_secret: string | null }>(sql`select webhook_secret from accounts where id = ${accountId}`))[0]!.webhook_secret;

describe("sealing", () => {
  it("opens what it sealed, for the same account and key only", async () => {
    const sealed = await sealWebhookSecret("whsec_abc", "acc_1", TEST_WEBHOOK_SECRET_KEY);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/);
    expect(sealed).not.toContain("whsec_");
    expect(await openWebhookSecret(sealed, "acc_1", TEST_WEBHOOK_SECRET_KEY)).toBe("whsec_abc");
    await expect(openWebhookSecret(sealed, "acc_2", TEST_WEBHOOK_SECRET_KEY)).rejects.toThrow(WebhookKeyError);
    await expect(openWebhookSecret(sealed, "acc_1", OTHER_KEY)).rejects.toThrow(WebhookKeyError);
  });

  it("refuses to work without a key, or with one that is not 32 bytes of base64", async () => {
    await expect(sealWebhookSecret("whsec_abc", "acc_1", undefined)).rejects.toThrow(/WEBHOOK_SECRET_KEY is not set/);
    await expect(sealWebhookSecret("whsec_abc", "acc_1", "c2hvcnQ=")).rejects.toThrow(/must be 32 bytes/);
  });
});

describe("webhookSecret", () => {
  it("stores the secret sealed and gives it back in the clear; rotation seals a new one", async () => {
    const account = await createAccount(db, "hooks", 0);
    const { secret } = await webhookSecret(db, account.id, TEST_WEBHOOK_SECRET_KEY);
    expect(secret).toMatch(/^whsec_/);
    const row = await stored(account.id);
    expect(row).toMatch(/^v1\./);
    expect(row).not.toContain(secret.slice("whsec_".length));
    expect((await webhookSecret(db, account.id, TEST_WEBHOOK_SECRET_KEY)).secret).toBe(secret);
    const rotated = await webhookSecret(db, account.id, TEST_WEBHOOK_SECRET_KEY, true);
    expect(rotated.secret).not.toBe(secret);
    expect(await stored(account.id)).toMatch(/^v1\./);
  });

  it("a secret stored in the clear before sealing keeps working, and is sealed on its next use", async () => {
    const account = await createAccount(db, "legacy", 0);
    const legacy = "whsec_" + btoa("a legacy secret of 32 bytes long");
    await db.run(sql`update accounts set webhook_secret = ${legacy} where id = ${account.id}`);
    expect((await webhookSecret(db, account.id, TEST_WEBHOOK_SECRET_KEY)).secret).toBe(legacy);
    const row = await stored(account.id);
    expect(row).toMatch(/^v1\./);
    expect(await openWebhookSecret(row!, account.id, TEST_WEBHOOK_SECRET_KEY)).toBe(legacy);
  });
});
