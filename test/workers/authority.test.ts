/**
 * Over 400 lines on purpose: the security review's proofs of concept in one file, a describe per hole, so that the
 * held-out rerun of the review maps onto it case by case.
 *
 * Authority that cannot be escalated or outlived (docs/api.md "Who may grant what"): through every door that grants
 * (invite, role change, key creation, roll, revocation) nobody grants more than they hold; a daily credit cap holds for
 * a key's rolls and children; leaving (removal, demotion, revocation) voids the invites made with that authority;
 * removing a passkey ends the sessions it opened and adding one needs a fresh proof; the owner rule and the
 * signature counter hold under races; WebAuthn requires user verification; cookie requests another site started are
 * refused. Each case is a security review's proof of concept, in workerd against the real database with the
 * software authenticator.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { createApiKey } from "../../scripts/admin/accounts.ts";
import { ApiKeyWithToken } from "../../shared/keys.ts";
import { SCOPES, type Scope } from "../../shared/scopes.ts";
import { hashToken } from "../../edge/identity/tokens.ts";
import { base64url, SoftwareAuthenticator } from "../fixtures/software-authenticator.ts";
import { CONSOLE_ORIGIN, consoleCall, consoleCallsFrom, inviteToken, join, sessionCookieOf, signIn, type Joined } from "./console-session.ts";
import { call, clientAddress, db, insertPerson, newAccount, uniqueIds } from "./helpers.ts";

// Every test signs in often: each from an address of its own, so the per-address sign-in limit (60 a minute) is not what answers.
beforeEach(() => consoleCallsFrom(clientAddress()));
afterEach(() => {
  vi.useRealTimers();
  consoleCallsFrom(null);
});

const revokedAt = async (keyId: string) => (await db.all<{ revoked_at: number | null }>(sql`select revoked_at from api_keys where id = ${keyId}`))[0]!.revoked_at;

type Creation = Parameters<SoftwareAuthenticator["create"]>[0];
type Request = Parameters<SoftwareAuthenticator["get"]>[0];
const json = (body: unknown) => ({ headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const answer = async (res: Response) => [res.status, ((await res.json()) as { reason?: string }).reason];
const inOneHour = () => new Date(Date.now() + 3_600_000).toISOString();

function clockAt(ms: number) {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(ms);
}

async function keyOf(token: string, body: { name?: string; scopes: Scope[]; daily_credit_cap?: number; expires_at?: string }) {
  const res = await call("/v1/keys", { token, method: "POST", ...json({ name: "k", ...body }) });
  expect(res.status, await res.clone().text()).toBe(201);
  return ApiKeyWithToken.parse(await res.json());
}

/** Accepts an invite link's token with a fresh passkey: the response. */
async function accept(token: string, name = "Mallory", authenticator = new SoftwareAuthenticator()) {
  const options = await consoleCall("/v1/auth/invites/options", { json: { token } });
  if (options.status !== 200) return options;
  const credential = await authenticator.create((await options.json()) as Creation, CONSOLE_ORIGIN);
  return consoleCall("/v1/auth/invites/accept", { json: { token, name, credential } });
}

const linkToken = async (res: Response) => new URL(((await res.json()) as { url: string }).url).hash.slice(1);

describe("no door grants more than its holder has", () => {
  it("a members:write key, capped and expiring, can invite nobody and promote nobody (the proof of concept: it made itself an admin)", async () => {
    const { accountId } = await newAccount(10);
    const hr = await createApiKey(db, accountId, { name: "hr", scopes: ["members:write"], dailyCreditCap: 1, expiresAt: Date.now() + 3_600_000 });
    for (const role of ["admin", "developer", "viewer"]) {
      expect(await answer(await consoleCall("/v1/invites", { headers: bearer(hr.token), json: { role } })), role).toEqual([403, "stronger_than_caller"]);
    }
    const dev = await join(accountId, "developer");
    expect(await answer(await consoleCall(`/v1/members/${dev.memberId}`, { method: "PATCH", headers: bearer(hr.token), json: { role: "admin" } }))).toEqual([403, "stronger_than_caller"]);
    const [member] = await db.all<{ role: string }>(sql`select role from members where id = ${dev.memberId}`);
    expect(member!.role).toBe("developer");
    expect(Number((await db.all<{ n: number }>(sql`select count(*) as n from invites where account_id = ${accountId}`))[0]!.n)).toBe(1);
  });

  it("a key invites to a role only when it holds every scope of it with no cap and no expiry", async () => {
    const { accountId } = await newAccount(0);
    const readers = await createApiKey(db, accountId, { scopes: ["members:write", "account:read", "jobs:read"] });
    expect((await consoleCall("/v1/invites", { headers: bearer(readers.token), json: { role: "viewer" } })).status).toBe(201);
    const dev = await consoleCall("/v1/invites", { headers: bearer(readers.token), json: { role: "developer" } });
    expect([dev.status, ((await dev.json()) as { error: string }).error]).toEqual([
      403,
      "A key or member can only grant, change or take away what it holds itself: the role developer holds the scope people:read, which the caller lacks",
    ]);
    const expiring = await createApiKey(db, accountId, { scopes: [...SCOPES], expiresAt: Date.now() + 3_600_000 });
    expect(await answer(await consoleCall("/v1/invites", { headers: bearer(expiring.token), json: { role: "viewer" } }))).toEqual([403, "stronger_than_caller"]);
    const everything = await createApiKey(db, accountId, { scopes: [...SCOPES] });
    expect((await consoleCall("/v1/invites", { headers: bearer(everything.token), json: { role: "admin" } })).status).toBe(201);
  });

  it("a member changes or removes only roles they could grant: an admin neither touches an owner nor does a key without the role's scopes touch an admin", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const admin = await join(accountId, "admin");
    const viewer = await join(accountId, "viewer");
    const narrow = await createApiKey(db, accountId, { scopes: ["members:write", "account:read", "jobs:read"] });
    expect(await answer(await consoleCall(`/v1/members/${admin.memberId}`, { method: "DELETE", headers: bearer(narrow.token) }))).toEqual([403, "stronger_than_caller"]);
    expect(await answer(await consoleCall(`/v1/members/${admin.memberId}`, { method: "PATCH", headers: bearer(narrow.token), json: { role: "viewer" } }))).toEqual([403, "stronger_than_caller"]);
    expect(await answer(await consoleCall(`/v1/members/${owner.memberId}`, { method: "DELETE", cookie: admin.cookie }))).toEqual([403, "owner_required"]);
    // What the narrow key may grant, it may also take away.
    expect((await consoleCall(`/v1/members/${viewer.memberId}`, { method: "DELETE", headers: bearer(narrow.token) })).status).toBe(200);
  });

  it("keys:write revokes or rolls only itself or keys it dominates, the owner's keys included", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const ownerKey = await consoleCall("/v1/keys", { cookie: owner.cookie, json: { name: "owner's", scopes: [...SCOPES] } });
    const strong = ApiKeyWithToken.parse(await ownerKey.json());
    const dev = await join(accountId, "developer");
    expect(await answer(await consoleCall(`/v1/keys/${strong.id}`, { method: "DELETE", cookie: dev.cookie }))).toEqual([403, "stronger_than_caller"]);
    const capped = await createApiKey(db, accountId, { scopes: ["keys:write", "people:read"], dailyCreditCap: 5 });
    const uncapped = await createApiKey(db, accountId, { scopes: ["people:read"] });
    expect(await answer(await call(`/v1/keys/${uncapped.id}`, { token: capped.token, method: "DELETE" }))).toEqual([403, "stronger_than_caller"]);
    expect(await answer(await call(`/v1/keys/${uncapped.id}/roll`, { token: capped.token, method: "POST", ...json({ overlap_seconds: 0 }) }))).toEqual([403, "stronger_than_caller"]);
    expect(await revokedAt(uncapped.id)).toBeNull();
    // A key may always revoke itself.
    expect((await call(`/v1/keys/${capped.id}`, { token: capped.token, method: "DELETE" })).status).toBe(200);
    expect(await answer(await call("/v1/account", { token: capped.token }))).toEqual([401, "key_revoked"]);
  });

  it("a revoked key's pending invites are void: the link is refused 410 invite_revoked and listed as revoked", async () => {
    const { accountId, token: owner } = await newAccount(0);
    const maker = await createApiKey(db, accountId, { scopes: [...SCOPES] });
    const made = await consoleCall("/v1/invites", { headers: bearer(maker.token), json: { role: "admin" } });
    const link = await linkToken(made);
    expect((await call(`/v1/keys/${maker.id}`, { token: owner, method: "DELETE" })).status).toBe(200);
    expect(await answer(await accept(link))).toEqual([410, "invite_revoked"]);
    const listed = (await (await call("/v1/invites", { token: owner })).json()) as { invites: { created_by: string; status: string; revoked_by: string | null }[] };
    expect(listed.invites.filter((i) => i.created_by === maker.id).map((i) => [i.status, i.revoked_by])).toEqual([["revoked", "system"]]);
    expect(Number((await db.all<{ n: number }>(sql`select count(*) as n from members where account_id = ${accountId}`))[0]!.n)).toBe(0);
  });

  it("an invite whose maker's key was revoked behind the API's back (another isolate, the database) is refused at accept", async () => {
    const { accountId } = await newAccount(0);
    const maker = await createApiKey(db, accountId, { scopes: [...SCOPES] });
    const link = await linkToken(await consoleCall("/v1/invites", { headers: bearer(maker.token), json: { role: "viewer" } }));
    await db.run(sql`update api_keys set revoked_at = ${Date.now()} where id = ${maker.id}`);
    expect(await answer(await accept(link))).toEqual([410, "invite_revoked"]);
  });
});

describe("a daily credit cap holds for a key's rolls and children", () => {
  const lookups = async (accountCredits: number) => {
    const owner = await newAccount(accountCredits);
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["cap@example.org"] });
    return { owner, look: (token: string) => call(`/v1/people?profnet_id=${ids.profnet_id}`, { token }) };
  };

  it("rolls with overlap 0 carry the day's spend: 10 rolls of a 1-credit key spend 1 credit", async () => {
    clockAt(Date.UTC(2031, 4, 6, 12));
    const { owner, look } = await lookups(20);
    let key = await keyOf(owner.token, { scopes: ["keys:write", "people:read"], daily_credit_cap: 1 });
    let charged = 0;
    for (let i = 0; i < 10; i++) {
      if ((await look(key.token)).status === 200) charged += 1;
      const rolled = await call(`/v1/keys/${key.id}/roll`, { token: key.token, method: "POST", ...json({ overlap_seconds: 0 }) });
      expect(rolled.status).toBe(201);
      key = ApiKeyWithToken.parse(await rolled.json());
    }
    expect(charged).toBe(1);
    expect(await answer(await look(key.token))).toEqual([402, "daily_credit_cap"]);
    clockAt(Date.UTC(2031, 4, 7, 12));
    expect((await look(key.token)).status).toBe(200);
  });

  it("children spend their maker's cap: made, spent and revoked, 10 children of a 1-credit key spend 1 credit", async () => {
    clockAt(Date.UTC(2031, 4, 6, 12));
    const { owner, look } = await lookups(20);
    const parent = await keyOf(owner.token, { scopes: ["keys:write", "people:read"], daily_credit_cap: 1 });
    let charged = 0;
    for (let i = 0; i < 10; i++) {
      const child = await keyOf(parent.token, { scopes: ["people:read"], daily_credit_cap: 1 });
      if ((await look(child.token)).status === 200) charged += 1;
      expect((await call(`/v1/keys/${child.id}`, { token: parent.token, method: "DELETE" })).status).toBe(200);
    }
    expect(charged).toBe(1);
    expect(await answer(await look(parent.token))).toEqual([402, "daily_credit_cap"]);
    const [ledger] = await db.all<{ n: number }>(sql`select coalesce(sum(-delta), 0) as n from credit_ledger where account_id = ${owner.accountId} and reason = 'lookup'`);
    expect(Number(ledger!.n)).toBe(1);
  });

  it("a child's own lower cap still binds it alone, and concurrent children never overrun the parent's", async () => {
    clockAt(Date.UTC(2031, 4, 6, 12));
    const { owner, look } = await lookups(50);
    const parent = await keyOf(owner.token, { scopes: ["keys:write", "people:read"], daily_credit_cap: 4 });
    const small = await keyOf(parent.token, { scopes: ["people:read"], daily_credit_cap: 1 });
    expect((await look(small.token)).status).toBe(200);
    expect(await answer(await look(small.token))).toEqual([402, "daily_credit_cap"]);
    const kids = await Promise.all([1, 2, 3].map(() => keyOf(parent.token, { scopes: ["people:read"], daily_credit_cap: 4 })));
    const answers = await Promise.all(kids.flatMap((k) => [look(k.token), look(k.token), look(k.token)]));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(3);
  });
});

describe("leaving ends access", () => {
  it("a removed admin's pending invites are void, in the same transaction as the removal", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const admin = await join(accountId, "admin");
    const link = await linkToken(await consoleCall("/v1/invites", { cookie: admin.cookie, json: { role: "admin" } }));
    expect((await consoleCall(`/v1/members/${admin.memberId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    expect(await answer(await accept(link))).toEqual([410, "invite_revoked"]);
    const [event] = await db.all<{ actor: string; details: string }>(sql`select actor, details from audit_events where account_id = ${accountId} and action = 'member.invite_revoked'`);
    expect([event!.actor, JSON.parse(event!.details)]).toEqual(["system", { role: "admin", created_by: admin.memberId, why: "its maker was removed" }]);
  });

  it("a demoted admin's invites to roles the new role cannot grant are void", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const admin = await join(accountId, "admin");
    const link = await linkToken(await consoleCall("/v1/invites", { cookie: admin.cookie, json: { role: "admin" } }));
    expect((await consoleCall(`/v1/members/${admin.memberId}`, { method: "PATCH", cookie: owner.cookie, json: { role: "developer" } })).status).toBe(200);
    expect(await answer(await accept(link))).toEqual([410, "invite_revoked"]);
    const listed = (await (await consoleCall("/v1/invites", { cookie: owner.cookie })).json()) as { invites: { status: string }[] };
    expect(listed.invites.map((i) => i.status)).toContain("revoked");
  });

  it("pending invites are listed (never their secret) and revoked by id; an owner's invite only by an owner", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const admin = await join(accountId, "admin");
    const made = (await (await consoleCall("/v1/invites", { cookie: owner.cookie, json: { role: "owner" } })).json()) as { id: string; url: string };
    const link = new URL(made.url).hash.slice(1);
    const listed = await consoleCall("/v1/invites", { cookie: admin.cookie });
    const text = await listed.text();
    expect(text).not.toContain(link);
    expect((JSON.parse(text) as { invites: { id: string; status: string; role: string; created_by: string }[] }).invites).toContainEqual(
      expect.objectContaining({ id: made.id, status: "pending", role: "owner", created_by: owner.memberId }),
    );
    expect(await answer(await consoleCall(`/v1/invites/${made.id}`, { method: "DELETE", cookie: admin.cookie }))).toEqual([403, "owner_required"]);
    const revoked = await consoleCall(`/v1/invites/${made.id}`, { method: "DELETE", cookie: owner.cookie });
    expect([revoked.status, ((await revoked.json()) as { status: string }).status]).toEqual([200, "revoked"]);
    expect(await answer(await accept(link))).toEqual([410, "invite_revoked"]);
    expect((await consoleCall("/v1/invites/inv_none", { method: "DELETE", cookie: owner.cookie })).status).toBe(404);
  });

  it("removing a member says which keys they made (and those keys made), and revokes them in the same step when asked", async () => {
    const { accountId } = await newAccount(5);
    const owner = await join(accountId, "owner");
    const dev = await join(accountId, "developer");
    const made = ApiKeyWithToken.parse(await (await consoleCall("/v1/keys", { cookie: dev.cookie, json: { name: "dev's", scopes: ["people:read", "keys:write"] } })).json());
    const grandchild = await keyOf(made.token, { name: "child", scopes: ["people:read"] });
    const other = await join(accountId, "developer", "Other");
    const kept = ApiKeyWithToken.parse(await (await consoleCall("/v1/keys", { cookie: other.cookie, json: { name: "other's", scopes: ["people:read"] } })).json());
    const removed = await consoleCall(`/v1/members/${dev.memberId}?revoke_keys=true`, { method: "DELETE", cookie: owner.cookie });
    expect(removed.status).toBe(200);
    const body = (await removed.json()) as { member: { id: string }; keys: { id: string; status: string }[] };
    expect(body.member.id).toBe(dev.memberId);
    expect(body.keys.map((k) => [k.id, k.status])).toEqual([
      [made.id, "revoked"],
      [grandchild.id, "revoked"],
    ]);
    for (const token of [made.token, grandchild.token]) expect(await answer(await call("/v1/keys", { token, method: "POST", ...json({}) }))).toEqual([401, "key_revoked"]);
    expect(await revokedAt(kept.id)).toBeNull();

    const third = await join(accountId, "developer", "Third");
    const theirs = ApiKeyWithToken.parse(await (await consoleCall("/v1/keys", { cookie: third.cookie, json: { name: "third's", scopes: ["people:read"] } })).json());
    const listed = (await (await consoleCall(`/v1/members/${third.memberId}`, { method: "DELETE", cookie: owner.cookie })).json()) as { keys: { id: string; status: string }[] };
    expect(listed.keys.map((k) => [k.id, k.status])).toEqual([[theirs.id, "active"]]);
    expect(await revokedAt(theirs.id)).toBeNull();
  });
});

describe("a lost device is cut off", () => {
  /** A member with a second passkey on another device, and a session opened there. */
  async function withPhone(): Promise<{ laptop: Joined; phone: SoftwareAuthenticator; phoneCookie: string; accountId: string }> {
    const { accountId } = await newAccount(0);
    const laptop = await join(accountId, "admin");
    const phone = new SoftwareAuthenticator();
    const options = (await (await consoleCall("/v1/me/passkeys/options", { method: "POST", cookie: laptop.cookie })).json()) as Creation;
    expect((await consoleCall("/v1/me/passkeys", { cookie: laptop.cookie, json: { name: "Phone", credential: await phone.create(options, CONSOLE_ORIGIN) } })).status).toBe(201);
    const signedIn = await signIn(phone);
    return { laptop, phone, phoneCookie: signedIn.cookie!, accountId };
  }

  it("removing a passkey ends every session it opened, and only those", async () => {
    const { laptop, phoneCookie } = await withPhone();
    expect((await consoleCall("/v1/me", { cookie: phoneCookie })).status).toBe(200);
    const me = (await (await consoleCall("/v1/me", { cookie: laptop.cookie })).json()) as { passkeys: { id: string; name: string }[] };
    const phoneKey = me.passkeys.find((p) => p.name === "Phone")!;
    expect((await consoleCall(`/v1/me/passkeys/${phoneKey.id}`, { method: "DELETE", cookie: laptop.cookie })).status).toBe(204);
    expect((await consoleCall("/v1/me", { cookie: phoneCookie })).status).toBe(401);
    expect((await consoleCall("/v1/me", { cookie: laptop.cookie })).status).toBe(200);
  });

  it("adding a passkey needs a proof of presence from the last five minutes: a stale session gets 403 step_up_required until it steps up", async () => {
    const { laptop, phone, phoneCookie } = await withPhone();
    clockAt(Date.now() + 6 * 60_000);
    const intruder = new SoftwareAuthenticator();
    expect(await answer(await consoleCall("/v1/me/passkeys/options", { method: "POST", cookie: phoneCookie }))).toEqual([403, "step_up_required"]);
    // Options taken while fresh do not help once stale: the add itself checks.
    const stepUpOptions = (await (await consoleCall("/v1/auth/step-up/options", { method: "POST", cookie: phoneCookie })).json()) as Request & { allowCredentials: { id: string }[] };
    expect(stepUpOptions.allowCredentials).toHaveLength(2);
    // Another member's passkey, or none of this member's, does not step up.
    const stranger = await join((await newAccount(0)).accountId, "viewer");
    expect(await answer(await consoleCall("/v1/auth/step-up", { cookie: phoneCookie, json: { credential: await stranger.authenticator.get(stepUpOptions, CONSOLE_ORIGIN) } }))).toEqual([401, "sign_in_failed"]);
    const again = (await (await consoleCall("/v1/auth/step-up/options", { method: "POST", cookie: phoneCookie })).json()) as Request;
    expect((await consoleCall("/v1/auth/step-up", { cookie: phoneCookie, json: { credential: await phone.get(again, CONSOLE_ORIGIN) } })).status).toBe(204);
    const options = (await (await consoleCall("/v1/me/passkeys/options", { method: "POST", cookie: phoneCookie })).json()) as Creation;
    expect((await consoleCall("/v1/me/passkeys", { cookie: phoneCookie, json: { credential: await intruder.create(options, CONSOLE_ORIGIN) } })).status).toBe(201);
    expect((await consoleCall("/v1/me", { cookie: laptop.cookie })).status).toBe(200);
  });

  it("a session's record names the passkey that opened it", async () => {
    const { phoneCookie, phone } = await withPhone();
    const [row] = await db.all<{ credential_id: string }>(sql`
      select p.credential_id from sessions s join passkeys p on p.id = s.passkey_id where s.token_hash = ${await hashToken(phoneCookie)}`);
    expect(row!.credential_id).toBe(base64url(phone.credentials[0]!.id));
  });
});

describe("races and ceremonies", () => {
  it("an admin's demotion racing an owner's promotion never leaves the audit's from wrong (10 rounds)", async () => {
    const { accountId } = await newAccount(0);
    const owner = await join(accountId, "owner");
    const admin = await join(accountId, "admin");
    for (let round = 0; round < 10; round++) {
      const target = await join(accountId, "admin", `Target ${round}`);
      const answers = await Promise.all([
        consoleCall(`/v1/members/${target.memberId}`, { method: "PATCH", cookie: admin.cookie, json: { role: "viewer" } }),
        consoleCall(`/v1/members/${target.memberId}`, { method: "PATCH", cookie: owner.cookie, json: { role: "owner" } }),
      ]);
      const events = await db.all<{ details: string }>(sql`select details from audit_events where action = 'member.role_changed' and target = ${target.memberId} order by id`);
      const chain = events.map((e) => JSON.parse(e.details) as { from: string; to: string });
      const [final] = await db.all<{ role: string }>(sql`select role from members where id = ${target.memberId}`);
      // Every recorded change starts where the one before ended, and the last one is the member's role now.
      expect(chain[0]?.from, `round ${round}`).toBe("admin");
      for (let i = 1; i < chain.length; i++) expect(chain[i]!.from, `round ${round}`).toBe(chain[i - 1]!.to);
      expect(final!.role, `round ${round}`).toBe(chain.at(-1)!.to);
      expect(answers.filter((r) => r.status === 200).length, `round ${round}`).toBe(chain.length);
      // The loser read the member before the winner's change (409 role_changed), or after it, when the member was an owner already (403).
      for (const r of answers.filter((r) => r.status !== 200)) expect([[409, "role_changed"], [403, "owner_required"]]).toContainEqual(await answer(r));
    }
  });

  it("two raced sign-ins with one passkey never move its signature counter backwards: the older assertion fails", async () => {
    const { accountId } = await newAccount(0);
    const m = await join(accountId, "viewer");
    for (let round = 0; round < 5; round++) {
      const [o1, o2] = await Promise.all([1, 2].map(async () => (await (await consoleCall("/v1/auth/sign-in/options", { method: "POST" })).json()) as Request));
      const older = await m.authenticator.get(o1!, CONSOLE_ORIGIN);
      const newer = await m.authenticator.get(o2!, CONSOLE_ORIGIN);
      const [n, o] = await Promise.all([consoleCall("/v1/auth/sign-in", { json: { credential: newer } }), consoleCall("/v1/auth/sign-in", { json: { credential: older } })]);
      const [row] = await db.all<{ counter: number }>(sql`select counter from passkeys where member_id = ${m.memberId}`);
      const highest = m.authenticator.credentials[0]!.counter;
      expect(Number(row!.counter), `round ${round}`).toBe(highest);
      expect(n.status, `round ${round}`).toBe(200);
      if (o.status !== 200) expect(await answer(o)).toEqual([401, "sign_in_failed"]);
    }
  });

  it("requires user verification to join, to sign in and to step up: a touch alone is refused", async () => {
    const { accountId } = await newAccount(0);
    const touchOnly = new SoftwareAuthenticator({ userVerified: false });
    const joined = await accept(await inviteToken(accountId, "viewer"), "Touch", touchOnly);
    expect([joined.status, ((await joined.json()) as { error: string }).error]).toEqual([400, expect.stringMatching(/^Invalid parameter credential: .*verif/i)]);
    const m = await join(accountId, "viewer");
    const options = (await (await consoleCall("/v1/auth/sign-in/options", { method: "POST" })).json()) as Request & { userVerification: string };
    expect(options.userVerification).toBe("required");
    // The same credential, asserted without the UV flag.
    const lazy = new SoftwareAuthenticator({ userVerified: false });
    lazy.credentials.push(...m.authenticator.credentials);
    expect(await answer(await consoleCall("/v1/auth/sign-in", { json: { credential: await lazy.get(options, CONSOLE_ORIGIN) } }))).toEqual([401, "sign_in_failed"]);
  });
});

describe("cookie requests another site started", () => {
  it.each(["same-site", "cross-site"])("a GET with Sec-Fetch-Site: %s is refused before it spends a credit or discloses anyone", async (site) => {
    const { accountId } = await newAccount(5);
    const m = await join(accountId, "developer");
    const ids = uniqueIds();
    await insertPerson({ profnet_id: ids.profnet_id, emails: ["img@example.org"] });
    const res = await consoleCall(`/v1/people?profnet_id=${ids.profnet_id}`, { cookie: m.cookie, origin: null, headers: { "sec-fetch-site": site, "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" } });
    expect(await answer(res)).toEqual([403, "cross_site_request"]);
    const [balance] = await db.all<{ credit_balance: number }>(sql`select credit_balance from accounts where id = ${accountId}`);
    expect(Number(balance!.credit_balance)).toBe(5);
    expect(Number((await db.all<{ n: number }>(sql`select count(*) as n from person_access_log where account_id = ${accountId}`))[0]!.n)).toBe(0);
    // The console's own page, opened by the member, still works.
    const own = await consoleCall(`/v1/people?profnet_id=${ids.profnet_id}`, { cookie: m.cookie, origin: null, headers: { "sec-fetch-site": "same-origin" } });
    expect(own.status).toBe(200);
  });

  it("a console page another site opened calls nothing and offers a link to itself", async () => {
    const { accountId } = await newAccount(5);
    const m = await join(accountId, "developer");
    const res = await consoleCall("/console/check?email=someone%40example.org", { cookie: m.cookie, origin: null, headers: { "sec-fetch-site": "same-site", "sec-fetch-mode": "navigate" } });
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(html).toContain("Continue to this page of the console");
    expect(html).toContain('href="/console/check?email=someone%40example.org"');
  });
});

describe("also", () => {
  it("the invite's secret never travels in a URL: the old path is gone and the document has no token parameter", async () => {
    const { accountId } = await newAccount(0);
    const token = await inviteToken(accountId, "viewer");
    expect((await consoleCall(`/v1/auth/invites/${token}/options`, { method: "POST" })).status).toBe(404);
    const doc = JSON.stringify(await (await call("/v1/openapi.json")).json());
    expect(doc).not.toContain("{token}");
  });

  it("accepting an invite while signed in ends the earlier session", async () => {
    const { accountId } = await newAccount(0);
    const first = await join(accountId, "viewer", "Old self");
    const token = await inviteToken(accountId, "developer");
    const options = (await (await consoleCall("/v1/auth/invites/options", { json: { token } })).json()) as Creation;
    const credential = await new SoftwareAuthenticator().create(options, CONSOLE_ORIGIN);
    const accepted = await consoleCall("/v1/auth/invites/accept", { cookie: first.cookie, json: { token, name: "New self", credential } });
    expect(accepted.status).toBe(201);
    expect(sessionCookieOf(accepted)).not.toBe(first.cookie);
    expect((await consoleCall("/v1/me", { cookie: first.cookie })).status).toBe(401);
  });

  it("a failed sign-in with a known passkey is an audit event", async () => {
    const { accountId } = await newAccount(0);
    const m = await join(accountId, "viewer");
    const options = (await (await consoleCall("/v1/auth/sign-in/options", { method: "POST" })).json()) as Request;
    const credential = await m.authenticator.get(options, "http://localhost:9999");
    expect(await answer(await consoleCall("/v1/auth/sign-in", { json: { credential } }))).toEqual([401, "sign_in_failed"]);
    const [event] = await db.all<{ actor: string; target: string }>(sql`select actor, target from audit_events where account_id = ${accountId} and action = 'session.sign_in_failed'`);
    expect(event!.actor).toBe(m.memberId);
  });

  it.each([
    ["a bidirectional override", "Payroll\u202Egnp.exe"],
    ["a control character", "CRM\u0007sync"],
    ["a first-strong isolate", "\u2068key"],
  ])("key names refuse %s, as member names do", async (_, name) => {
    const { token } = await newAccount(0);
    const res = await call("/v1/keys", { token, method: "POST", ...json({ name, scopes: ["people:read"] }) });
    expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([400, expect.stringMatching(/^Invalid parameter name: must not contain (bidirectional )?control characters$/)]);
  });
});
