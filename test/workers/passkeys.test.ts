/**
 * Joining by invite and signing in with a passkey (docs/api.md "Passkeys"), against a software
 * authenticator that builds real attestations and assertions (test/fixtures/software-authenticator.ts),
 * verified by the Worker in workerd with the real database: single-use, expiring invites; a challenge
 * used once; bad credentials refused with nothing written.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { createInvite } from "../../edge/identity/store/invites.ts";
import { hashToken } from "../../edge/identity/tokens.ts";
import { INVITE_LIFETIME_MS } from "../../shared/members.ts";
import { SoftwareAuthenticator } from "../fixtures/software-authenticator.ts";
import { CONSOLE_ORIGIN, consoleCall, inviteToken, join, sessionCookieOf, signIn } from "./console-session.ts";
import { db, newAccount, send } from "./helpers.ts";

afterEach(() => {
  vi.useRealTimers();
});

type Creation = Parameters<SoftwareAuthenticator["create"]>[0];
const options = async (token: string) => consoleCall("/v1/auth/invites/options", { json: { token } });
const count = async (table: string, where: ReturnType<typeof sql>) => Number((await db.all<{ n: number }>(sql`select count(*) as n from ${sql.raw(table)} where ${where}`))[0]!.n);

describe("joining by invite", () => {
  it("makes the member, their passkey and a session, sets an HttpOnly SameSite=Strict cookie, and records it all", async () => {
    const { accountId } = await newAccount(0);
    const token = await inviteToken(accountId, "developer");
    const res = await options(token);
    expect(res.status).toBe(200);
    const creation = (await res.json()) as Creation & { rp: { id: string; name: string }; authenticatorSelection: { residentKey: string } };
    expect(creation.rp.id).toBe("localhost");
    expect(creation.authenticatorSelection.residentKey).toBe("required");
    const authenticator = new SoftwareAuthenticator();
    const credential = await authenticator.create(creation, CONSOLE_ORIGIN);
    const accepted = await consoleCall("/v1/auth/invites/accept", { json: { token, name: "  Ada Lovelace ", credential } });
    expect(accepted.status).toBe(201);
    const { member } = (await accepted.json()) as { member: { id: string; name: string; role: string; last_sign_in_at: string | null } };
    expect(member).toMatchObject({ name: "Ada Lovelace", role: "developer" });
    expect(member.last_sign_in_at).not.toBeNull();
    const setCookie = accepted.headers.getSetCookie().join("\n");
    expect(setCookie).toMatch(/^session=cvs_[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; SameSite=Strict$/);
    const cookie = sessionCookieOf(accepted)!;

    // Only the hash of the session's secret is stored.
    const [session] = await db.all<{ token_hash: string; member_id: string }>(sql`select token_hash, member_id from sessions where member_id = ${member.id}`);
    expect(session).toEqual({ token_hash: await hashToken(cookie), member_id: member.id });
    expect(await count("passkeys", sql`member_id = ${member.id} and credential_id = ${credential.id}`)).toBe(1);
    expect(await count("invites", sql`account_id = ${accountId} and used_by = ${member.id}`)).toBe(1);
    const actions = await db.all<{ action: string; actor: string }>(sql`select action, actor from audit_events where account_id = ${accountId} and action not like 'key.%' order by id`);
    expect(actions).toEqual([
      { action: "member.invited", actor: "operator" },
      { action: "member.joined", actor: member.id },
      { action: "passkey.added", actor: member.id },
      { action: "session.signed_in", actor: member.id },
    ]);

    // The cookie authenticates the API with the role's scopes.
    expect((await consoleCall("/v1/account", { cookie })).status).toBe(200);
  });

  it("over https the relying party is the host and the cookie is __Host-session, Secure", async () => {
    const { accountId } = await newAccount(0);
    const token = await inviteToken(accountId, "viewer");
    const origin = "https://console.example.com";
    const post = (path: string, body?: unknown) =>
      send(new Request(`${origin}${path}`, { method: "POST", headers: { origin, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }));
    const creation = (await (await post("/v1/auth/invites/options", { token })).json()) as Creation & { rp: { id: string } };
    expect(creation.rp.id).toBe("console.example.com");
    const accepted = await post("/v1/auth/invites/accept", { token, name: "Ada", credential: await new SoftwareAuthenticator().create(creation, origin) });
    expect(accepted.status).toBe(201);
    const setCookie = accepted.headers.getSetCookie().join("\n");
    expect(setCookie).toMatch(/^__Host-session=cvs_[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    const cookie = /^__Host-session=([^;]+)/.exec(setCookie)![1]!;
    expect((await send(new Request(`${origin}/v1/me`, { headers: { cookie: `__Host-session=${cookie}` } }))).status).toBe(200);
    // The loopback name is not read over https.
    expect((await send(new Request(`${origin}/v1/me`, { headers: { cookie: `session=${cookie}` } }))).status).toBe(401);
  });

  it("is single use: once accepted, the link gets 410 invite_used", async () => {
    const { accountId } = await newAccount(0);
    const token = await inviteToken(accountId, "viewer");
    const first = (await (await options(token)).json()) as Creation;
    const second = (await (await options(token)).json()) as Creation;
    const a = new SoftwareAuthenticator();
    expect((await consoleCall("/v1/auth/invites/accept", { json: { token, name: "First", credential: await a.create(first, CONSOLE_ORIGIN) } })).status).toBe(201);
    const late = await consoleCall("/v1/auth/invites/accept", { json: { token, name: "Second", credential: await new SoftwareAuthenticator().create(second, CONSOLE_ORIGIN) } });
    expect([late.status, await late.json()]).toEqual([410, { error: "The invite was already used", reason: "invite_used" }]);
    const again = await options(token);
    expect([again.status, ((await again.json()) as { reason: string }).reason]).toEqual([410, "invite_used"]);
    expect(await count("members", sql`account_id = ${accountId}`)).toBe(1);
  });

  it("expires after 24 hours (fake clock): 410 invite_expired, and nothing is written", async () => {
    const { accountId } = await newAccount(0);
    const start = Date.now();
    const token = await inviteToken(accountId, "admin");
    const creation = (await (await options(token)).json()) as Creation;
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(start + INVITE_LIFETIME_MS - 60_000);
    expect((await options(token)).status).toBe(200);
    vi.setSystemTime(start + INVITE_LIFETIME_MS + 1);
    const late = await consoleCall("/v1/auth/invites/accept", { json: { token, name: "Late", credential: await new SoftwareAuthenticator().create(creation, CONSOLE_ORIGIN) } });
    expect([late.status, await late.json()]).toEqual([410, { error: "The invite has expired: ask for a new one", reason: "invite_expired" }]);
    expect(await count("members", sql`account_id = ${accountId}`)).toBe(0);
  });

  it("refuses an unknown link with 404 invite_invalid", async () => {
    const res = await options(`cvi_${"A".repeat(43)}`);
    expect([res.status, await res.json()]).toEqual([404, { error: "No such invite", reason: "invite_invalid" }]);
    expect((await options("not-a-token")).status).toBe(404);
  });

  it("refuses a credential made for another origin, or for a challenge it was not given, with 400 naming credential; the invite stays unused", async () => {
    const { accountId } = await newAccount(0);
    const token = await inviteToken(accountId, "viewer");
    const creation = (await (await options(token)).json()) as Creation;
    const phished = await new SoftwareAuthenticator().create(creation, "http://localhost:9999");
    const res = await consoleCall("/v1/auth/invites/accept", { json: { token, name: "Eve", credential: phished } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^Invalid parameter credential: .*origin/i);
    // The challenge served that one attempt: even a good credential for it is refused now.
    const retry = await consoleCall("/v1/auth/invites/accept", { json: { token, name: "Ada", credential: await new SoftwareAuthenticator().create(creation, CONSOLE_ORIGIN) } });
    expect([retry.status, ((await retry.json()) as { error: string }).error]).toEqual([400, "Invalid parameter credential: its challenge is unknown, used or expired (ask for new options)"]);
    const forged = await new SoftwareAuthenticator().create({ ...creation, challenge: "bm90LWdpdmVu" }, CONSOLE_ORIGIN);
    expect((await consoleCall("/v1/auth/invites/accept", { json: { token, name: "Ada", credential: forged } })).status).toBe(400);
    expect(await count("invites", sql`account_id = ${accountId} and used_at is null`)).toBe(1);
    expect(await count("members", sql`account_id = ${accountId}`)).toBe(0);
  });

  it("answers bad input with 400 naming the field", async () => {
    const { accountId } = await newAccount(0);
    const token = await inviteToken(accountId, "viewer");
    const creation = (await (await options(token)).json()) as Creation;
    const credential = await new SoftwareAuthenticator().create(creation, CONSOLE_ORIGIN);
    const cases: [unknown, string][] = [
      [{ credential }, "Invalid parameter name"],
      [{ name: "", credential }, "Invalid parameter name"],
      [{ name: "x".repeat(101), credential }, "Invalid parameter name"],
      [{ name: "Ada" }, "Invalid parameter credential"],
      [{ name: "Ada", credential: { ...credential, type: "password" } }, "Invalid parameter credential.type"],
      [{ name: "Ada", credential: { ...credential, response: { ...credential.response, attestationObject: "not base64url!" } } }, "Invalid parameter credential.response.attestationObject"],
    ];
    for (const [body, message] of cases) {
      const res = await consoleCall("/v1/auth/invites/accept", { json: { token, ...(body as object) } });
      expect([res.status, ((await res.json()) as { error: string }).error.startsWith(message)], JSON.stringify(body).slice(0, 80)).toEqual([400, true]);
    }
    expect(await count("invites", sql`account_id = ${accountId} and used_at is null`)).toBe(1);
  });

  it("an owner's invite made by the admin CLI's function points at the console, with the secret in the fragment", async () => {
    const { accountId } = await newAccount(0);
    const invite = await createInvite(db, { accountId, role: "owner", createdBy: "operator", origin: "https://console.example.com" });
    expect(invite!.url).toMatch(/^https:\/\/console\.example\.com\/console\/invite#cvi_[A-Za-z0-9_-]{43}$/);
    const [row] = await db.all<{ role: string; token_hash: string; expires_at: number; created_at: number }>(sql`select role, token_hash, expires_at, created_at from invites where id = ${invite!.id}`);
    expect(row!.role).toBe("owner");
    expect(row!.token_hash).toBe(await hashToken(invite!.token));
    expect(Number(row!.expires_at) - Number(row!.created_at)).toBe(INVITE_LIFETIME_MS);
    expect(await createInvite(db, { accountId: "acc_nope", role: "owner", createdBy: "operator", origin: CONSOLE_ORIGIN })).toBeNull();
  });
});

describe("signing in", () => {
  it("with a registered passkey: 200, a new session cookie, the counter and last use recorded", async () => {
    const { accountId } = await newAccount(0);
    const joined = await join(accountId, "viewer");
    const { res, cookie } = await signIn(joined.authenticator);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { member: { id: string } }).member.id).toBe(joined.memberId);
    expect(cookie).toMatch(/^cvs_/);
    expect(cookie).not.toBe(joined.cookie);
    expect((await consoleCall("/v1/account", { cookie })).status).toBe(200);
    const [passkey] = await db.all<{ counter: number; last_used_at: number | null }>(sql`select counter, last_used_at from passkeys where member_id = ${joined.memberId}`);
    expect(Number(passkey!.counter)).toBe(1);
    expect(passkey!.last_used_at).not.toBeNull();
    expect(await count("sessions", sql`member_id = ${joined.memberId}`)).toBe(2);
  });

  it("refuses a passkey it does not know, a replayed assertion and a bad signature with 401 sign_in_failed", async () => {
    const { accountId } = await newAccount(0);
    const joined = await join(accountId, "viewer");
    const stranger = new SoftwareAuthenticator();
    await stranger.create({ challenge: "AAAA", rp: { id: "localhost" }, user: { id: "dXNlcg" } }, CONSOLE_ORIGIN);
    const unknown = await signIn(stranger);
    expect([unknown.res.status, await unknown.res.json(), unknown.cookie]).toEqual([401, { error: "Sign-in failed: the passkey is not recognised or its signature did not verify", reason: "sign_in_failed" }, null]);

    const request = (await (await consoleCall("/v1/auth/sign-in/options", { method: "POST" })).json()) as Parameters<SoftwareAuthenticator["get"]>[0];
    const assertion = await joined.authenticator.get(request, CONSOLE_ORIGIN);
    const tampered = { ...assertion, response: { ...assertion.response, signature: assertion.response.signature.slice(0, -4) + "AAAA" } };
    expect((await consoleCall("/v1/auth/sign-in", { json: { credential: tampered } })).status).toBe(401);
    // The challenge went with the failed attempt: the genuine assertion for it is refused too.
    expect((await consoleCall("/v1/auth/sign-in", { json: { credential: assertion } })).status).toBe(401);
    const good = await signIn(joined.authenticator);
    expect(good.res.status).toBe(200);
    expect(await count("sessions", sql`member_id = ${joined.memberId}`)).toBe(2);
  });

  it("refuses sign-in calls from another origin (login CSRF) with 403 cross_site_request", async () => {
    const res = await consoleCall("/v1/auth/sign-in/options", { method: "POST", origin: "https://evil.example" });
    expect([res.status, ((await res.json()) as { reason: string }).reason]).toEqual([403, "cross_site_request"]);
  });
});
