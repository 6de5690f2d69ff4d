/**
 * The admin CLI as an operator runs it: a child process against a real libSQL file database.
 * With --json, stdout must hold exactly one JSON object, errors included.
 */
import { createClient } from "@libsql/client";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken } from "../../edge/identity/tokens.ts";
import { sql } from "drizzle-orm";
import { applyMigrations, openDatabase, type NodeDatabase } from "../../scripts/lib/database.ts";
import { TEST_WEBHOOK_SECRET_KEY } from "../fixtures/secrets.ts";
import { SCOPES } from "../../shared/scopes.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const TOKEN_PATTERN = /^cv_[A-Za-z0-9_-]{43}$/;
// Each run starts a Node process with the TypeScript loader: 1-2 s apiece on an idle machine, several times that
// beside another test file. A hang guard, not a speed test: generous, whatever the load.
const CLI_TEST_TIMEOUT = 240_000;

let dir: string;
let databaseUrl: string;
let db: NodeDatabase;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "admin-cli-"));
  databaseUrl = `file:${join(dir, "admin.db")}`;
  db = openDatabase(databaseUrl);
  await applyMigrations(db);
});

afterAll(async () => {
  db.$client.close();
  await rm(dir, { recursive: true, force: true });
});

type Run = { status: number; stdout: string; stderr: string };

async function admin(...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: databaseUrl, WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY },
    });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== "number") throw error;
    return { status: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** Runs with --json and returns the one JSON object stdout must hold. */
async function adminJson(...args: string[]): Promise<Run & { json: Record<string, unknown> }> {
  const run = await admin(...args, "--json");
  const lines = run.stdout.split("\n").filter((line) => line !== "");
  expect(lines, `stdout of ${args.join(" ")}: ${run.stdout}`).toHaveLength(1);
  const json = JSON.parse(lines[0] ?? "") as unknown;
  expect(json).toBeTypeOf("object");
  expect(Array.isArray(json)).toBe(false);
  return { ...run, json: json as Record<string, unknown> };
}

describe("beside a running stack", () => {
  it(
    "waits its turn for a write lock another process holds longer than the old 5 s, instead of failing with database is locked",
    async () => {
      const holder = createClient({ url: databaseUrl });
      const tx = await holder.transaction("write");
      await tx.execute("insert into accounts (id, name) values ('acc_lockholder', 'Holds the lock')");
      const released = new Promise<void>((resolve) => setTimeout(() => void tx.commit().then(resolve), 12_000));
      try {
        const created = await adminJson("accounts", "create", "--name", "Waits its turn", "--credits", "1");
        expect(created.status, created.stderr).toBe(0);
        expect(String(created.json.id)).toMatch(/^acc_/);
      } finally {
        await released;
        holder.close();
      }
    },
    CLI_TEST_TIMEOUT,
  );
});

describe("account lifecycle", () => {
  it(
    "create account -> create key -> show -> add credits -> revoke key -> disable -> enable",
    async () => {
      const created = await adminJson("accounts", "create", "--name", "Acme Ltd", "--credits", "100");
      expect(created.status).toBe(0);
      const accountId = String(created.json.id);
      expect(accountId).toMatch(/^acc_/);
      expect(Object.keys(created.json)).toEqual(["id"]);

      const key = await adminJson("keys", "create", "--account", accountId);
      expect(key.status).toBe(0);
      const token = String(key.json.token);
      const keyId = String(key.json.id);
      expect(token).toMatch(TOKEN_PATTERN);
      expect(keyId).toMatch(/^key_/);
      // Only the hash is stored, and it is the hash of this token.
      const stored = await db.$client.execute({ sql: "select token_hash from api_keys where id = ?", args: [keyId] });
      expect(stored.rows[0]?.token_hash).toBe(await hashToken(token));

      const shown = await adminJson("accounts", "show", accountId);
      expect(shown.status).toBe(0);
      expect(shown.json).toMatchObject({ id: accountId, name: "Acme Ltd", status: "active", balance: 100 });
      expect(shown.json.keys).toEqual([
        {
          id: keyId,
          name: "",
          prefix: token.slice(0, 10),
          scopes: [...SCOPES],
          created_at: expect.any(Number),
          last_used_at: null,
          expires_at: null,
          revoked_at: null,
          daily_credit_cap: null,
        },
      ]);
      expect(shown.json.recent_ledger).toEqual([
        expect.objectContaining({ delta: 100, balance_after: 100, reason: "grant", request_id: null }),
      ]);
      expect(shown.stdout).not.toContain(token);

      const humanShow = await admin("accounts", "show", accountId);
      expect(humanShow.status).toBe(0);
      expect(humanShow.stdout).toContain(token.slice(0, 10));
      expect(humanShow.stdout).not.toContain(token);

      const credited = await adminJson("credits", "add", "--account", accountId, "--amount", "50");
      expect(credited).toMatchObject({ status: 0, json: { account: accountId, balance: 150 } });
      const debited = await adminJson("credits", "add", "--account", accountId, "--amount=-30");
      expect(debited).toMatchObject({ status: 0, json: { account: accountId, balance: 120 } });

      const revoked = await adminJson("keys", "revoke", "--key", keyId);
      expect(revoked).toMatchObject({ status: 0, json: { id: keyId, revoked_at: expect.any(Number) } });

      const disabled = await adminJson("accounts", "disable", accountId);
      expect(disabled).toMatchObject({ status: 0, json: { id: accountId, status: "disabled" } });

      const after = await adminJson("accounts", "show", accountId);
      expect(after.json).toMatchObject({ status: "disabled", balance: 120 });
      expect(after.json.keys).toEqual([expect.objectContaining({ id: keyId, revoked_at: revoked.json.revoked_at })]);
      expect((after.json.recent_ledger as { delta: number }[]).map((entry) => entry.delta)).toEqual([-30, 50, 100]);

      const enabled = await adminJson("accounts", "enable", accountId);
      expect(enabled).toMatchObject({ status: 0, json: { id: accountId, status: "active" } });
      // The operator's actions are in the account's audit trail, once each (enabling an enabled account changes nothing).
      expect((await adminJson("accounts", "enable", accountId)).status).toBe(0);
      const audited = await db.all<{ action: string; actor: string; target: string }>(sql`select action, actor, target from audit_events where account_id = ${accountId} and action like 'account.%' order by id`);
      expect(audited).toEqual([
        { action: "account.disabled", actor: "operator", target: accountId },
        { action: "account.enabled", actor: "operator", target: accountId },
      ]);
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "accounts webhook-secret shows the same whsec_ secret until --rotate replaces it",
    async () => {
      const { json } = await adminJson("accounts", "create", "--name", "Hooks", "--credits", "0");
      const accountId = String(json.id);
      const first = await adminJson("accounts", "webhook-secret", "--account", accountId);
      expect(first.status).toBe(0);
      expect(Object.keys(first.json)).toEqual(["secret"]);
      const secret = String(first.json.secret);
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(atob(secret.slice("whsec_".length))).toHaveLength(32);
      expect((await adminJson("accounts", "webhook-secret", "--account", accountId)).json.secret).toBe(secret);
      const rotated = await adminJson("accounts", "webhook-secret", "--account", accountId, "--rotate");
      expect(rotated.json.secret).not.toBe(secret);
      const audited = await db.all<{ action: string; actor: string; details: string }>(sql`select action, actor, details from audit_events where account_id = ${accountId}`);
      expect(audited).toEqual([{ action: "account.webhook_secret_rotated", actor: "operator", details: "{}" }]);
      expect((await adminJson("accounts", "webhook-secret", "--account", accountId)).json.secret).toBe(rotated.json.secret);
      // Stored sealed, never as the secret itself.
      const [stored] = await db.all<{ webhook_secret: string }>(sql`select webhook_secret from accounts where id = ${accountId}`);
      expect(stored!.webhook_secret).toMatch(/^v1\./);
      expect(stored!.webhook_secret).not.toContain(String(rotated.json.secret).slice("whsec_".length));
      const missing = await adminJson("accounts", "webhook-secret", "--account", "acc_nope");
      expect(missing).toMatchObject({ status: 1, json: { error: "No account acc_nope" } });
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "prints a short human-readable result without --json, the token included only at key creation",
    async () => {
      const created = await admin("accounts", "create", "--name", "Plain", "--credits", "0");
      expect(created.status).toBe(0);
      const accountId = /Created account (acc_\S+)/.exec(created.stdout)?.[1];
      expect(accountId).toBeDefined();

      const key = await admin("keys", "create", "--account", accountId ?? "");
      expect(key.status).toBe(0);
      expect(key.stdout).toMatch(/shown only this once/);
      expect(key.stdout.match(/cv_[A-Za-z0-9_-]{43}/)).not.toBeNull();
      expect(key.stderr).toBe("");
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "keys create takes a name, scopes, an expiry and a daily credit cap, and audits the creation as the operator",
    async () => {
      const created = await adminJson("accounts", "create", "--name", "Scoped", "--credits", "1");
      const accountId = String(created.json.id);
      const key = await adminJson(
        "keys", "create", "--account", accountId, "--name", "CRM sync", "--scopes", "people:read, account:read",
        "--expires", "2031-01-01T00:00:00Z", "--daily-credit-cap", "25",
      );
      expect(key.status).toBe(0);
      const shown = await adminJson("accounts", "show", accountId);
      expect(shown.json.keys).toEqual([
        expect.objectContaining({ id: key.json.id, name: "CRM sync", scopes: ["people:read", "account:read"], expires_at: Date.parse("2031-01-01T00:00:00Z"), daily_credit_cap: 25 }),
      ]);
      const human = await admin("accounts", "show", accountId);
      expect(human.stdout).toContain('"CRM sync"  people:read,account:read');
      expect(human.stdout).toContain("cap 25/day");
      const audit = await db.$client.execute({ sql: "select action, actor, target from audit_events where account_id = ?", args: [accountId] });
      expect(audit.rows.map((r) => [r.action, r.actor, r.target])).toEqual([["key.created", "operator", key.json.id]]);
    },
    CLI_TEST_TIMEOUT,
  );
});

describe("accounts invite", () => {
  it(
    "prints a one-time link to the console, with the secret in the fragment, stored hashed and audited as the operator",
    async () => {
      const created = await adminJson("accounts", "create", "--name", "Invited", "--credits", "0");
      const accountId = String(created.json.id);
      const run = await adminJson("accounts", "invite", "--account", accountId, "--role", "owner");
      expect(run.status).toBe(0);
      expect(run.json).toEqual({ id: expect.stringMatching(/^inv_/), role: "owner", url: expect.stringMatching(/^http:\/\/localhost:8787\/console\/invite#cvi_[A-Za-z0-9_-]{43}$/), expires_at: expect.any(String) });
      const token = new URL(String(run.json.url)).hash.slice(1);
      const stored = await db.$client.execute({ sql: "select role, token_hash, expires_at - created_at as lifetime from invites where id = ?", args: [String(run.json.id)] });
      expect(stored.rows.map((r) => [r.role, r.token_hash, Number(r.lifetime)])).toEqual([["owner", await hashToken(token), 86_400_000]]);
      const audit = await db.$client.execute({ sql: "select action, actor from audit_events where account_id = ?", args: [accountId] });
      expect(audit.rows.map((r) => [r.action, r.actor])).toEqual([["member.invited", "operator"]]);
      const human = await admin("accounts", "invite", "--account", accountId, "--role", "viewer", "--origin", "https://console.example.com");
      expect(human.stdout).toMatch(/^One-time viewer invite to acc_\S+, good until \S+:\nhttps:\/\/console\.example\.com\/console\/invite#cvi_/);
    },
    CLI_TEST_TIMEOUT,
  );
});

// Independent processes: run them side by side.
describe.concurrent("errors", () => {
  it.each([
    [["accounts", "create", "--name", "X", "--credits=-1"], /--credits must be a non-negative integer/],
    [["accounts", "create", "--name", "X", "--credits", "-1"], /--credits/],
    [["accounts", "create", "--name", "X", "--credits", "abc"], /--credits must be a non-negative integer/],
    [["accounts", "create", "--name", "X", "--credits", "1.5"], /--credits must be a non-negative integer/],
    [["accounts", "create", "--credits", "5"], /--name is required/],
    [["accounts", "create", "--name", "X"], /--credits is required/],
    [["accounts", "frobnicate"], /Unknown command "accounts frobnicate"/],
    [["launch"], /Unknown command "launch"/],
    [[], /No command given/],
    [["accounts", "show"], /accounts show needs ID/],
    [["accounts", "show", "acc_x", "--name", "X"], /Unknown option '--name'/],
    [["people", "import", "f.jsonl", "--batch-size", "0"], /--batch-size must be an integer from 1 to/],
    [["keys", "create", "--account", "acc_x", "--scopes", "people:write"], /--scopes: unknown scope "people:write"/],
    [["keys", "create", "--account", "acc_x", "--scopes", ","], /--scopes must name at least one scope/],
    [["keys", "create", "--account", "acc_x", "--expires", "next week"], /--expires must be an RFC 3339 date-time/],
    [["keys", "create", "--account", "acc_x", "--daily-credit-cap", "0"], /--daily-credit-cap must be an integer from 1/],
    [["keys", "create", "--account", "acc_x", "--name", " "], /--name must be 1 to 100 characters/],
    [["accounts", "invite", "--account", "acc_x"], /--role is required/],
    [["accounts", "invite", "--account", "acc_x", "--role", "boss"], /--role must be one of owner, admin, developer, viewer/],
    [["accounts", "invite", "--account", "acc_x", "--role", "owner", "--origin", "http://localhost:8787/console"], /--origin must be an origin/],
  ])(
    "%j is a usage error: status 2, a message on stderr, a JSON error on stdout",
    async (args, message) => {
      const run = await adminJson(...args);
      expect(run.status).toBe(2);
      expect(run.json).toEqual({ error: expect.stringMatching(message) });
      expect(run.stderr).toMatch(message);
    },
    CLI_TEST_TIMEOUT,
  );

  it.each([
    [["accounts", "show", "acc_missing"], "No account acc_missing"],
    [["credits", "add", "--account", "acc_missing", "--amount", "5"], "No account acc_missing"],
    [["keys", "create", "--account", "acc_missing"], "No account acc_missing"],
    [["keys", "revoke", "--key", "key_missing"], "No key key_missing"],
    [["accounts", "invite", "--account", "acc_missing", "--role", "owner"], "No account acc_missing"],
    [["people", "import", "/nonexistent/people.jsonl"], "Cannot read /nonexistent/people.jsonl"],
  ])(
    "%j fails: status 1 and a JSON error",
    async (args, message) => {
      const run = await adminJson(...args);
      expect(run.status).toBe(1);
      expect(String(run.json.error)).toContain(message);
      expect(run.stderr).toContain(message);
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "refuses to overdraw with status 1",
    async () => {
      const created = await adminJson("accounts", "create", "--name", "Small", "--credits", "5");
      const run = await adminJson("credits", "add", "--account", String(created.json.id), "--amount=-6");
      expect(run).toMatchObject({ status: 1, json: { error: "The balance cannot go below zero" } });
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "without --json, an error leaves stdout empty",
    async () => {
      const run = await admin("accounts", "show", "acc_missing");
      expect(run).toMatchObject({ status: 1, stdout: "" });
      expect(run.stderr).toContain("No account acc_missing");
    },
    CLI_TEST_TIMEOUT,
  );
});

describe.concurrent("help", () => {
  it(
    "--help prints the usage and exits 0, also after a command",
    async () => {
      const run = await admin("accounts", "create", "--help");
      expect(run.status).toBe(0);
      expect(run.stdout).toContain("Usage: npm run admin -- <command>");
      expect(run.stdout).toContain("people import FILE");
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    "--help --json puts the usage in one JSON object",
    async () => {
      const run = await adminJson("--help");
      expect(run).toMatchObject({ status: 0, json: { usage: expect.stringContaining("Usage:") } });
    },
    CLI_TEST_TIMEOUT,
  );
});
