/**
 * Members and my passkeys: the account's members (GET /v1/members), invites (POST /v1/invites, the link
 * shown once), role changes and removals (PATCH, DELETE /v1/members/{id}); the signed-in member's
 * passkeys (GET /v1/me), another one added by edge/console/browser/passkeys.ts, one removed; sign out
 * everywhere. Who may do what is the API's rule (shared/roles.ts); the page hides what the role lacks.
 */
import type { Hono } from "hono";
import { ROLES } from "../../../shared/roles.ts";
import type { AppEnv } from "../../env.ts";
import { apiCaller } from "../api.ts";
import { ErrorNote, Notice, page, When } from "../layout.tsx";
import { asMember, type Member, type SignedIn, toSignIn } from "../session.tsx";

type Invite = { id: string; role: string; url: string; expires_at: string };

function membersBody(me: SignedIn, members: Member[], note: { done?: string | undefined; error?: string | null | undefined }, invite: Invite | null) {
  const manage = me.can("members:write");
  return (
    <>
      <Notice message={note.done} />
      <ErrorNote message={note.error} />
      {invite ? (
        <section aria-labelledby="invite-link">
          <h2 id="invite-link">Invite link for a new {invite.role}</h2>
          <p>
            Send this link to the person you invite; it works once, until <When at={invite.expires_at} />.
          </p>
          <label for="invite-url">Invite link</label>
          <div class="copy-row">
            <input id="invite-url" readonly value={invite.url} />
            <button type="button" data-copy="invite-url">
              Copy
            </button>
          </div>
        </section>
      ) : null}
      <section aria-labelledby="member-list">
        <h2 id="member-list">Members</h2>
        <div class="table-wrap" tabindex={0} role="region" aria-label="The account's members">
          <table>
            <caption class="sr-only">The account's members</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Last signed in</th>
                {manage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {members.map((m) => (
                <tr>
                  <th scope="row">{m.name}</th>
                  <td>{m.role}</td>
                  <td>
                    <When at={m.last_sign_in_at} />
                  </td>
                  {manage ? (
                    <td>
                      {m.id !== me.member.id ? (
                        <div class="actions">
                          <form method="post" action={`/console/members/${m.id}/role`}>
                            <label for={`role-${m.id}`} class="sr-only">{`Role of ${m.name}`}</label>
                            <select id={`role-${m.id}`} name="role">
                              {ROLES.map((r) => (
                                <option value={r} selected={r === m.role}>
                                  {r}
                                </option>
                              ))}
                            </select>
                            <button type="submit">Change role</button>
                          </form>
                          <form method="post" action={`/console/members/${m.id}/remove`}>
                            <button type="submit" class="danger" aria-label={`Remove ${m.name}`}>
                              Remove
                            </button>
                          </form>
                        </div>
                      ) : (
                        "you"
                      )}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {manage ? (
          <form method="post" action="/console/members/invite" class="inline">
            <label for="invite-role">Invite someone as</label>
            <select id="invite-role" name="role">
              {ROLES.map((r) => (
                <option value={r} selected={r === "developer"}>
                  {r}
                </option>
              ))}
            </select>
            <button type="submit">Make an invite link</button>
          </form>
        ) : null}
      </section>
      <section aria-labelledby="my-passkeys">
        <h2 id="my-passkeys">My passkeys</h2>
        <ul>
          {me.passkeys.map((p) => (
            <li>
              {p.name || "Passkey"}, added <When at={p.created_at} />, last used <When at={p.last_used_at} />
              {me.passkeys.length > 1 ? (
                <form method="post" action={`/console/members/passkeys/${p.id}/remove`} class="inline">
                  <button type="submit" class="danger" aria-label={`Remove passkey ${p.name || p.id}`}>
                    Remove
                  </button>
                </form>
              ) : null}
            </li>
          ))}
        </ul>
        <form id="add-passkey" method="post" action="/console/members/passkeys" class="inline">
          <label for="passkey-name">Name for a new passkey</label>
          <input id="passkey-name" name="name" maxlength={100} autocomplete="off" />
          <button type="submit">Add a passkey on this device</button>
          <p id="passkey-status" role="status" aria-live="polite"></p>
        </form>
        <form method="post" action="/console/sign-out-everywhere">
          <button type="submit">Sign out everywhere</button>
        </form>
      </section>
    </>
  );
}

export function registerMemberPages(app: Hono<AppEnv>): void {
  app.get("/console/members", asMember(app, async (c, api, me) => {
    const members = await api<{ members: Member[] }>("GET", "/v1/members");
    return page(
      c,
      { title: "Members", current: "/console/members", member: me.member, scripts: ["passkeys.js"] },
      membersBody(me, members.ok ? members.data.members : [], { done: c.req.query("done"), error: members.error?.error ?? c.req.query("error") }, null),
    );
  }));

  app.post("/console/members/invite", asMember(app, async (c, api, me) => {
    const form = await c.req.parseBody();
    const invite = await api<Invite>("POST", "/v1/invites", { json: { role: String(form["role"] ?? "") } });
    const members = await api<{ members: Member[] }>("GET", "/v1/members");
    return page(
      c,
      { title: "Members", current: "/console/members", member: me.member, scripts: ["passkeys.js"] },
      membersBody(me, members.ok ? members.data.members : [], { error: invite.ok ? null : `No invite was made: ${invite.error?.error ?? "refused"}.` }, invite.ok ? invite.data : null),
    );
  }));

  const act = (path: string, call: (id: string, form: Record<string, unknown>) => { method: string; url: string; json?: unknown }, done: string) =>
    app.post(path, async (c) => {
      const api = apiCaller(app, c);
      const form = await c.req.parseBody();
      const request = call(c.req.param("id") ?? "", form);
      const answer = await api(request.method, request.url, request.json === undefined ? undefined : { json: request.json });
      if (answer.status === 401) return toSignIn(c);
      const note = answer.ok ? `done=${encodeURIComponent(done)}` : `error=${encodeURIComponent(answer.error?.error ?? "Refused")}`;
      return c.redirect(`/console/members?${note}`, 303);
    });
  act("/console/members/:id/role", (id, form) => ({ method: "PATCH", url: `/v1/members/${encodeURIComponent(id)}`, json: { role: String(form["role"] ?? "") } }), "The role was changed.");
  act("/console/members/:id/remove", (id) => ({ method: "DELETE", url: `/v1/members/${encodeURIComponent(id)}` }), "The member was removed and signed out.");
  act("/console/members/passkeys/:id/remove", (id) => ({ method: "DELETE", url: `/v1/me/passkeys/${encodeURIComponent(id)}` }), "The passkey was removed.");

  app.post("/console/sign-out-everywhere", async (c) => {
    const api = apiCaller(app, c);
    const answer = await api("POST", "/v1/auth/sign-out-everywhere");
    for (const cookie of answer.setCookies) c.header("Set-Cookie", cookie, { append: true });
    return c.redirect("/console/sign-in", 303);
  });
}
