import { afterEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { AccountInfo } from "../../shared/api.ts";
import { FAILED_AUTHENTICATION_LIMIT, RATE_LIMITS } from "../../edge/rate-limits.ts";
import { accountQuery } from "../../edge/money/account.ts";
import { cancelUnfinishedJobs, call, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

async function account(token: string) {
  const res = await call("/v1/account", { token });
  expect(res.status).toBe(200);
  expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  return AccountInfo.strict().parse(await res.json());
}

describe("GET /v1/account", () => {
  it("describes the calling key's account, the limits that apply to it, and no usage yet", async () => {
    const { token, accountId } = await newAccount(10);
    const now = new Date();
    expect(await account(token)).toEqual({
      account_id: accountId,
      name: "test account",
      status: "active",
      credit_balance: 10,
      rate_limits: {
        verification: { limit: RATE_LIMITS.verification.limit, period_seconds: RATE_LIMITS.verification.periodSeconds, per: "key" },
        lookup: { limit: RATE_LIMITS.lookup.limit, period_seconds: RATE_LIMITS.lookup.periodSeconds, per: "key" },
        bulk_lookup: { limit: RATE_LIMITS.bulk_lookup.limit, period_seconds: RATE_LIMITS.bulk_lookup.periodSeconds, per: "key" },
        account: { limit: RATE_LIMITS.account.limit, period_seconds: RATE_LIMITS.account.periodSeconds, per: "key" },
        job_creation: { limit: RATE_LIMITS.job_creation.limit, period_seconds: RATE_LIMITS.job_creation.periodSeconds, per: "key" },
        job_reads: { limit: RATE_LIMITS.job_reads.limit, period_seconds: RATE_LIMITS.job_reads.periodSeconds, per: "key" },
        feedback: { limit: RATE_LIMITS.feedback.limit, period_seconds: RATE_LIMITS.feedback.periodSeconds, per: "key" },
        failed_authentication: { limit: FAILED_AUTHENTICATION_LIMIT.limit, period_seconds: FAILED_AUTHENTICATION_LIMIT.periodSeconds, per: "client_address" },
      },
      usage: {
        today: { since: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString(), lookups_charged: 0, credits_spent: 0 },
        this_month: { since: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(), lookups_charged: 0, credits_spent: 0 },
      },
      jobs: { max_running: 3, running: 0, max_lines_per_24h: 1_000_000, lines_last_24h: 0 },
    });
  });

  it("says where the account stands against the job limits: jobs running, lines submitted in 24 hours", async () => {
    const { token } = await newAccount(0);
    const post = (addresses: string[]) =>
      call("/v1/email_verification_jobs", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ email_addresses: addresses }) });
    const running = (await (await post(["a@slow.test", "b@slow.test"])).json()) as { id: string };
    await post(["x", "y", "z"]);
    expect((await account(token)).jobs).toEqual({ max_running: 3, running: 1, max_lines_per_24h: 1_000_000, lines_last_24h: 5 });
    await call(`/v1/email_verification_jobs/${running.id}`, { method: "DELETE", token });
    expect((await account(token)).jobs).toMatchObject({ running: 0, lines_last_24h: 5 });
  });

  it("counts charged lookups and credits spent from the ledger: today, this month, never grants, misses or last month", async () => {
    const { token, accountId } = await newAccount(10);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id });
    for (const id of [ids.profnet_id, ids.profnet_id, uniqueIds().profnet_id]) await call(`/v1/people?profnet_id=${id}`, { token });
    // Charges dated earlier this month (unless today is the 1st) and last month, as the ledger would hold them.
    const now = new Date();
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const earlierThisMonth = now.getUTCDate() > 1 ? monthStart + 1 : null;
    for (const createdAt of [monthStart - 1, ...(earlierThisMonth ? [earlierThisMonth] : [])]) {
      await db.run(sql`insert into credit_ledger (account_id, delta, balance_after, reason, request_id, created_at)
        select id, -2, credit_balance - 2, 'lookup', 'earlier', ${createdAt} from accounts where id = ${accountId}`);
    }

    const info = await account(token);
    expect(info.credit_balance).toBe(earlierThisMonth ? 4 : 6);
    expect(info.usage.today).toMatchObject({ lookups_charged: 2, credits_spent: 2 });
    expect(info.usage.this_month).toMatchObject(earlierThisMonth ? { lookups_charged: 3, credits_spent: 4 } : { lookups_charged: 2, credits_spent: 2 });
  });

  it("reads the ledger by account, reason and date: only this month's charges, never the account's whole history", async () => {
    const { accountId } = await newAccount(10);
    const plan = await db.all<{ detail: string }>(sql`explain query plan ${accountQuery(accountId, new Date())}`);
    const ledger = plan.map((p) => p.detail).filter((d) => d.includes("credit_ledger"));
    expect(ledger).toEqual([expect.stringContaining("USING INDEX credit_ledger_account_reason_created_idx (account_id=? AND reason=? AND created_at>?)")]);
  });

  it("is in the OpenAPI document with the shared error answers", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    const route = doc.paths["/v1/account"].get;
    expect(Object.keys(route.responses).sort()).toEqual(["200", "401", "403", "429", "503"]);
    expect(route.security).toEqual([{ bearerAuth: ["account:read"] }, { sessionCookie: ["account:read"] }]);
    expect(Object.keys(doc.components.schemas.Account.properties)).toEqual(
      expect.arrayContaining(["account_id", "name", "status", "credit_balance", "rate_limits", "usage", "jobs"]),
    );
  });
});
