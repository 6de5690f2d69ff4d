/**
 * Members and roles (docs/api.md "Members and roles") and a member's own passkeys ("Passkeys"), through
 * sessions made by the software authenticator: invites from the API, the owner rule, the last owner and
 * the last passkey kept, a removed member's sessions ended at once, and each change in the audit trail.
 */
import { describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { createApiKey } from "../../scripts/admin/accounts.ts";
import { MAX_PASSKEYS_PER_MEMBER } from "../../shared/members.ts";
import { SCOPES } from "../../shared/scopes.ts";
import { base64url, SoftwareAuthenticator } from "../fixtures/software-authenticator.ts";
import { CONSOLE_ORIGIN, consoleCall, join, sessionCookieOf } from "./console-session.ts";
import { db, newAccount } from "./helpers.ts";

type MemberJson = { id: string; name: string; role: string };
const body = async <T,>(res: Response) => (await res.json()) as T;
const reasonOf = async (res: Response) => [res.status, ((await res.json()) as { reason?: string }).reason];

describe("members", () => {
  it("lists the account's members, and a member of another account is 404", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner", "Olga");
    await join(accountId, "viewer", "Vic");
    const res = await consoleCall("/v1/members", { cookie: owner.cookie });
    expect(res.status).toBe(200);
    expect((await body<{ members: MemberJson[] }>(res)).members.map((m) => [m.name, m.role])).toEqual([
      ["Olga", "owner"],
      ["Vic", "viewer"],
    ]);
    const stranger = await join((await newAccount(0)).accountId, "viewer");
    expect((await consoleCall(`/v1/members/${stranger.memberId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(404);
  });

  it("an admin invites from the API; the link joins with that role; an owner invite takes an owner", async () => {
    const { accountId } = await newAccount(0);
    const admin = await join(accountId, "admin");
    const made = await consoleCall("/v1/invites", { cookie: admin.cookie, json: { role: "developer" } });
    expect(made.status).toBe(201);
    const invite = await body<{ id: string; role: string; url: string; expires_at: string }>(made);
    expect(invite.url).toMatch(new RegExp(`^${CONSOLE_ORIGIN}/console/invite#cvi_`));
    expect(Date.parse(invite.expires_at) - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
    const token = new URL(invite.url).hash.slice(1);
    const options = await body<Parameters<SoftwareAuthenticator["create"]>[0]>(await consoleCall("/v1/auth/invites/options", { json: { token } }));
    const accepted = await consoleCall("/v1/auth/invites/accept", { json: { token, name: "Dev", credential: await new SoftwareAuthenticator().create(options, CONSOLE_ORIGIN) } });
    expect((await body<{ member: MemberJson }>(accepted)).member.role).toBe("developer");
    expect(await reasonOf(await consoleCall("/v1/invites", { cookie: admin.cookie, json: { role: "owner" } }))).toEqual([403, "owner_required"]);
    const owner = await join(accountId, "owner");
    expect((await consoleCall("/v1/invites", { cookie: owner.cookie, json: { role: "owner" } })).status).toBe(201);
    const [event] = await db.all<{ actor: string; details: string }>(sql`select actor, details from audit_events where target = ${invite.id}`);
    expect([event!.actor, JSON.parse(event!.details).role]).toEqual([admin.memberId, "developer"]);
  });

  it("a developer or viewer cannot invite (403 missing_scope); a key holding every scope invites all but owners; bad role is 400", async () => {
    const { accountId } = await newAccount(0);
    for (const role of ["developer", "viewer"] as const) {
      const m = await join(accountId, role);
      expect(await body(await consoleCall("/v1/invites", { cookie: m.cookie, json: { role: "viewer" } }))).toEqual({
        error: `The member's role (${role}) lacks the scope members:write`,
        reason: "missing_scope",
        scope: "members:write",
      });
    }
    // A key invites to a role only if it holds all the role's scopes (docs/api.md "Who may grant what"): every scope, uncapped, unexpiring, for an admin.
    const { token } = await createApiKey(db, accountId, { name: "hr", scopes: [...SCOPES] });
    const bearer = { authorization: `Bearer ${token}` };
    expect((await consoleCall("/v1/invites", { headers: bearer, json: { role: "admin" } })).status).toBe(201);
    expect(await reasonOf(await consoleCall("/v1/invites", { headers: bearer, json: { role: "owner" } }))).toEqual([403, "owner_required"]);
    const bad = await consoleCall("/v1/invites", { headers: bearer, json: { role: "boss" } });
    expect([bad.status, (await body<{ error: string }>(bad)).error.startsWith("Invalid parameter role")]).toEqual([400, true]);
  });

  it("a role change applies to the member's session at once; owners are changed only by owners; the last owner stays", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const admin = await join(accountId, "admin");
    const dev = await join(accountId, "developer");
    const keyBody = { name: "k", scopes: ["account:read"] };
    expect((await consoleCall("/v1/keys", { cookie: dev.cookie, json: keyBody })).status).toBe(201);
    const patched = await consoleCall(`/v1/members/${dev.memberId}`, { method: "PATCH", cookie: admin.cookie, json: { role: "viewer" } });
    expect([patched.status, (await body<MemberJson>(patched)).role]).toEqual([200, "viewer"]);
    expect(await reasonOf(await consoleCall("/v1/keys", { cookie: dev.cookie, json: keyBody }))).toEqual([403, "missing_scope"]);

    expect(await reasonOf(await consoleCall(`/v1/members/${owner.memberId}`, { method: "PATCH", cookie: admin.cookie, json: { role: "viewer" } }))).toEqual([403, "owner_required"]);
    expect(await reasonOf(await consoleCall(`/v1/members/${admin.memberId}`, { method: "PATCH", cookie: admin.cookie, json: { role: "owner" } }))).toEqual([403, "owner_required"]);
    const last = await consoleCall(`/v1/members/${owner.memberId}`, { method: "PATCH", cookie: owner.cookie, json: { role: "admin" } });
    expect([last.status, await last.json()]).toEqual([409, { error: "An account keeps at least one owner: make another member owner first", reason: "last_owner" }]);
    expect((await consoleCall(`/v1/members/${admin.memberId}`, { method: "PATCH", cookie: owner.cookie, json: { role: "owner" } })).status).toBe(200);
    expect((await consoleCall(`/v1/members/${owner.memberId}`, { method: "PATCH", cookie: owner.cookie, json: { role: "admin" } })).status).toBe(200);
    const events = await db.all<{ target: string; details: string }>(sql`select target, details from audit_events where account_id = ${accountId} and action = 'member.role_changed' order by id`);
    expect(events.map((e) => [e.target, JSON.parse(e.details)])).toEqual([
      [dev.memberId, { from: "developer", to: "viewer" }],
      [admin.memberId, { from: "admin", to: "owner" }],
      [owner.memberId, { from: "owner", to: "admin" }],
    ]);
    const bad = await consoleCall(`/v1/members/${dev.memberId}`, { method: "PATCH", cookie: admin.cookie, json: {} });
    expect([bad.status, (await body<{ error: string }>(bad)).error.startsWith("Invalid parameter role")]).toEqual([400, true]);
  });

  it("removing a member deletes their passkeys and ends their sessions at once; the last owner cannot be removed", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const viewer = await join(accountId, "viewer", "Vic");
    expect((await consoleCall("/v1/account", { cookie: viewer.cookie })).status).toBe(200);
    expect((await consoleCall(`/v1/members/${viewer.memberId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    expect((await consoleCall("/v1/account", { cookie: viewer.cookie })).status).toBe(401);
    for (const table of ["members", "passkeys", "sessions"]) {
      const [n] = await db.all<{ n: number }>(sql`select count(*) as n from ${sql.raw(table)} where ${sql.raw(table === "members" ? "id" : "member_id")} = ${viewer.memberId}`);
      expect(Number(n!.n), table).toBe(0);
    }
    const [event] = await db.all<{ actor: string; details: string }>(sql`select actor, details from audit_events where action = 'member.removed' and target = ${viewer.memberId}`);
    expect([event!.actor, JSON.parse(event!.details)]).toEqual([owner.memberId, { name: "Vic", role: "viewer" }]);
    // Signing in with the removed member's passkey fails.
    const options = await body<{ challenge: string }>(await consoleCall("/v1/auth/sign-in/options", { method: "POST" }));
    expect((await consoleCall("/v1/auth/sign-in", { json: { credential: await viewer.authenticator.get(options, CONSOLE_ORIGIN) } })).status).toBe(401);

    const last = await consoleCall(`/v1/members/${owner.memberId}`, { method: "DELETE", cookie: owner.cookie });
    expect(last.status).toBe(409);
    expect((await consoleCall("/v1/account", { cookie: owner.cookie })).status).toBe(200);
  });
});

describe("a member's passkeys", () => {
  it("/v1/me shows the member, their scopes and passkeys; a key gets 403 session_required", async () => {
    const { accountId, token } = await newAccount(0);
    const m = await join(accountId, "viewer", "Vic");
    const res = await consoleCall("/v1/me", { cookie: m.cookie });
    const me = await body<{ member: MemberJson; account_id: string; scopes: string[]; passkeys: { name: string }[] }>(res);
    expect([me.member.id, me.member.role, me.account_id, me.scopes, me.passkeys.map((p) => p.name)]).toEqual([m.memberId, "viewer", accountId, ["account:read", "jobs:read"], ["Passkey"]]);
    expect(await reasonOf(await consoleCall("/v1/me", { headers: { authorization: `Bearer ${token}` } }))).toEqual([403, "session_required"]);
  });

  it("adds a second passkey that signs in, removes the first, and keeps the last (409)", async () => {
    const { accountId } = await newAccount(0);
    const m = await join(accountId, "developer");
    const phone = new SoftwareAuthenticator();
    const options = await body<Parameters<SoftwareAuthenticator["create"]>[0] & { excludeCredentials: { id: string }[] }>(
      await consoleCall("/v1/me/passkeys/options", { method: "POST", cookie: m.cookie }),
    );
    expect(options.excludeCredentials.map((c) => c.id)).toEqual(m.authenticator.credentials.map((c) => base64url(c.id)));
    const added = await consoleCall("/v1/me/passkeys", { cookie: m.cookie, json: { name: "Phone", credential: await phone.create(options, CONSOLE_ORIGIN) } });
    expect(added.status).toBe(201);
    const passkey = await body<{ id: string; name: string }>(added);
    expect(passkey.name).toBe("Phone");

    const request = await body<{ challenge: string }>(await consoleCall("/v1/auth/sign-in/options", { method: "POST" }));
    const signedIn = await consoleCall("/v1/auth/sign-in", { json: { credential: await phone.get(request, CONSOLE_ORIGIN) } });
    expect(signedIn.status).toBe(200);
    const phoneCookie = sessionCookieOf(signedIn)!;

    const me = await body<{ passkeys: { id: string; name: string }[] }>(await consoleCall("/v1/me", { cookie: phoneCookie }));
    const first = me.passkeys.find((p) => p.name === "Passkey")!;
    expect((await consoleCall(`/v1/me/passkeys/${first.id}`, { method: "DELETE", cookie: phoneCookie })).status).toBe(204);
    const lastOne = await consoleCall(`/v1/me/passkeys/${passkey.id}`, { method: "DELETE", cookie: phoneCookie });
    expect([lastOne.status, await lastOne.json()]).toEqual([409, { error: "A member keeps at least one passkey: add another before removing this one" }]);
    expect((await consoleCall(`/v1/me/passkeys/${first.id}`, { method: "DELETE", cookie: phoneCookie })).status).toBe(404);
    const actions = await db.all<{ action: string }>(sql`select action from audit_events where account_id = ${accountId} and action like 'passkey.%' order by id`);
    expect(actions.map((a) => a.action)).toEqual(["passkey.added", "passkey.added", "passkey.removed"]);
  });

  it("refuses another member's challenge, and more passkeys than the maximum", async () => {
    const { accountId } = await newAccount(0);
    const a = await join(accountId, "viewer");
    const b = await join(accountId, "viewer");
    const optionsForA = await body<Parameters<SoftwareAuthenticator["create"]>[0]>(await consoleCall("/v1/me/passkeys/options", { method: "POST", cookie: a.cookie }));
    const stolen = await consoleCall("/v1/me/passkeys", { cookie: b.cookie, json: { credential: await new SoftwareAuthenticator().create(optionsForA, CONSOLE_ORIGIN) } });
    expect(stolen.status).toBe(400);
    for (let i = 1; i < MAX_PASSKEYS_PER_MEMBER; i++) {
      const options = await body<Parameters<SoftwareAuthenticator["create"]>[0]>(await consoleCall("/v1/me/passkeys/options", { method: "POST", cookie: a.cookie }));
      expect((await consoleCall("/v1/me/passkeys", { cookie: a.cookie, json: { credential: await a.authenticator.create(options, CONSOLE_ORIGIN) } })).status).toBe(201);
    }
    const options = await body<Parameters<SoftwareAuthenticator["create"]>[0]>(await consoleCall("/v1/me/passkeys/options", { method: "POST", cookie: a.cookie }));
    const extra = await consoleCall("/v1/me/passkeys", { cookie: a.cookie, json: { credential: await a.authenticator.create(options, CONSOLE_ORIGIN) } });
    expect([extra.status, await extra.json()]).toEqual([409, { error: `A member holds at most ${MAX_PASSKEYS_PER_MEMBER} passkeys: remove one first` }]);
    const [n] = await db.all<{ n: number }>(sql`select count(*) as n from passkeys where member_id = ${a.memberId}`);
    expect(Number(n!.n)).toBe(MAX_PASSKEYS_PER_MEMBER);
  });
});
