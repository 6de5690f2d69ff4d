/**
 * Members and my passkeys: the account's members (GET /v1/members), invites (POST /v1/invites, the link shown once;
 * GET /v1/invites and DELETE /v1/invites/{id} for the pending ones), role changes and removals (PATCH, DELETE
 * /v1/members/{id}: a removal first shows the keys the member made and offers to revoke them with it); the signed-in
 * member's passkeys (GET /v1/me), another one added by edge/console/browser/passkeys.ts, one removed; sign out
 * everywhere. Removing a member or a passkey and revoking an invite are confirmed first (edge/console/confirm.tsx: a
 * dialog, or without script the same confirmation as a page). Every form redirects (POST-redirect-GET) with a one-time
 * note held with the session. Who may do what is the API's rule (edge/identity/authority.ts); the page hides what the
 * role lacks.
 */
import type { Context, Hono } from "hono";
import type { ApiKey } from "../../../shared/keys.ts";
import type { Invite, Passkey, PendingInvite } from "../../../shared/members.ts";
import { ROLES } from "../../../shared/roles.ts";
import type { AppEnv } from "../../env.ts";
import { redirectWithNote, takeNote, type SessionNote } from "../../identity/session-notes.ts";
import { apiCaller, type CallApi } from "../api.ts";
import { ConfirmDialog, ConfirmOpener, ConfirmSection, type Confirmation } from "../confirm.tsx";
import { DataTable, ErrorNote, NoteShown, page, When } from "../layout.tsx";
import { asMember, type Member, type SignedIn, toSignIn } from "../session.tsx";

function InviteLink(props: { note: SessionNote & { kind: "secret" } }) {
  return (
    <section aria-labelledby="invite-link">
      <h2 id="invite-link">A new invite</h2>
      <p>{props.note.text}</p>
      <label for="invite-url">Invite link</label>
      <div class="copy-row">
        <input id="invite-url" readonly value={props.note.secret} />
        <button type="button" data-copy="invite-url">
          Copy
        </button>
      </div>
    </section>
  );
}

/** Who made an invite, in words: a member of the page's list by name; else the id (a key, the operator). */
const makerName = (id: string, members: Member[]) => members.find((m) => m.id === id)?.name ?? id;

function revokeInviteConfirmation(invite: PendingInvite, maker: string): Confirmation {
  const path = `/console/invites/${encodeURIComponent(invite.id)}/revoke`;
  return {
    id: `revoke-${invite.id}`,
    title: `Revoke the ${invite.role} invite made by ${maker}?`,
    consequence: <p>Its link stops working at once: whoever holds it can no longer join the account with it. Make a new invite if it is still wanted.</p>,
    action: path,
    confirm: "Revoke the invite",
    page: path,
    back: "/console/members",
  };
}

function InviteTable(props: { invites: PendingInvite[]; members: Member[]; manage: boolean }) {
  const pending = props.invites.filter((i) => i.status === "pending");
  if (pending.length === 0) return <p>No invite is waiting to be accepted.</p>;
  return (
    <>
      <DataTable
        label="Invites waiting to be accepted"
        head={
          <>
            <th scope="col">Role</th>
            <th scope="col">Made by</th>
            <th scope="col">Works until</th>
            {props.manage ? <th scope="col">Actions</th> : null}
          </>
        }
      >
        {pending.map((i) => (
          <tr>
            <th scope="row">{i.role}</th>
            <td>{makerName(i.created_by, props.members)}</td>
            <td>
              <When at={i.expires_at} />
            </td>
            {props.manage ? (
              <td>
                <ConfirmOpener
                  confirmation={revokeInviteConfirmation(i, makerName(i.created_by, props.members))}
                  label="Revoke"
                  accessibleName={`Revoke the ${i.role} invite made by ${makerName(i.created_by, props.members)}`}
                />
              </td>
            ) : null}
          </tr>
        ))}
      </DataTable>
      {props.manage ? pending.map((i) => <ConfirmDialog confirmation={revokeInviteConfirmation(i, makerName(i.created_by, props.members))} />) : null}
    </>
  );
}

/** What removing `member` does; `made` are the keys they made that still work, offered for revocation with them. */
function removeMemberConfirmation(member: Member, made: ApiKey[]): Confirmation {
  const path = `/console/members/${encodeURIComponent(member.id)}/remove`;
  const box = `remove-${member.id}-revoke-keys`;
  return {
    id: `remove-${member.id}`,
    title: `Remove ${member.name}?`,
    consequence: (
      <p>
        {member.name} ({member.role}) loses access at once: their passkeys are deleted, every session they hold ends within 30 seconds, and the invites they made
        stop working.{made.length === 0 ? " They made no key that still works." : ""}
      </p>
    ),
    action: path,
    confirm: `Remove ${member.name}`,
    page: path,
    back: "/console/members",
    fields:
      made.length > 0 ? (
        <fieldset>
          <legend>
            {member.name} made {made.length === 1 ? "one key that still works" : `${made.length} keys that still work`}
          </legend>
          <ul>
            {made.map((k) => (
              <li>
                {k.name || k.prefix} ({k.prefix}…), {k.scopes.join(", ")}
              </li>
            ))}
          </ul>
          <div class="check">
            <input type="checkbox" id={box} name="revoke_keys" value="true" checked />
            <label for={box}>Revoke {made.length === 1 ? "this key" : "these keys"} too (integrations using them stop within 60 seconds)</label>
          </div>
        </fieldset>
      ) : undefined,
  };
}

function removePasskeyConfirmation(passkey: Passkey): Confirmation {
  const label = passkey.name || "Passkey";
  const path = `/console/members/passkeys/${encodeURIComponent(passkey.id)}/remove`;
  return {
    id: `remove-${passkey.id}`,
    title: `Remove the passkey “${label}”?`,
    consequence: (
      <p>
        You can no longer sign in with it, and the sessions it opened end now: this one too, if you signed in with it. Your other passkeys keep working.
      </p>
    ),
    action: path,
    confirm: "Remove the passkey",
    page: path,
    back: "/console/members",
  };
}

function membersBody(me: SignedIn, members: Member[], invites: PendingInvite[], keys: ApiKey[], note: SessionNote | null, error: string | null) {
  const manage = me.can("members:write");
  return (
    <>
      <NoteShown note={note} />
      <ErrorNote message={error} />
      {note?.kind === "secret" ? <InviteLink note={note} /> : null}
      <section aria-labelledby="member-list">
        <h2 id="member-list">Members</h2>
        <DataTable
          label="The account's members"
          head={
            <>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Last signed in</th>
              {manage ? <th scope="col">Actions</th> : null}
            </>
          }
        >
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
                      <ConfirmOpener confirmation={removeMemberConfirmation(m, keysMadeBy(keys, m.id))} label="Remove" accessibleName={`Remove ${m.name}`} />
                    </div>
                  ) : (
                    "you"
                  )}
                </td>
              ) : null}
            </tr>
          ))}
        </DataTable>
        {manage ? members.filter((m) => m.id !== me.member.id).map((m) => <ConfirmDialog confirmation={removeMemberConfirmation(m, keysMadeBy(keys, m.id))} />) : null}
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
      <section aria-labelledby="invites">
        <h2 id="invites">Invites</h2>
        <InviteTable invites={invites} members={members} manage={manage} />
      </section>
      <section aria-labelledby="my-passkeys">
        <h2 id="my-passkeys">My passkeys</h2>
        <ul>
          {me.passkeys.map((p) => (
            <li>
              {p.name || "Passkey"}, added <When at={p.created_at} />, last used <When at={p.last_used_at} />
              {me.passkeys.length > 1 ? (
                <>
                  {" "}
                  <ConfirmOpener confirmation={removePasskeyConfirmation(p)} label="Remove" accessibleName={`Remove passkey ${p.name || p.id}`} />
                </>
              ) : null}
            </li>
          ))}
        </ul>
        {me.passkeys.length > 1 ? me.passkeys.map((p) => <ConfirmDialog confirmation={removePasskeyConfirmation(p)} />) : null}
        <form id="add-passkey" method="post" action="/console/members/passkeys" class="inline">
          <label for="passkey-name">Name for a new passkey</label>
          <input id="passkey-name" name="name" maxlength={100} autocomplete="off" />
          <button type="submit">Add a passkey on this device</button>
          <p class="hint">You confirm with a passkey you already hold first.</p>
          <p id="passkey-status" role="status" aria-live="polite"></p>
        </form>
        <form method="post" action="/console/sign-out-everywhere">
          <button type="submit">Sign out everywhere</button>
        </form>
      </section>
    </>
  );
}

/** The keys `memberId` made, and the keys those made, still live: what removing them should offer to revoke. */
function keysMadeBy(keys: ApiKey[], memberId: string): ApiKey[] {
  const makers = new Set([memberId]);
  const made: ApiKey[] = [];
  // Keys list newest first; a key's maker is older than it, so walking oldest first finds every generation in one pass.
  for (const key of [...keys].sort((a, b) => a.created_at.localeCompare(b.created_at))) {
    if (!makers.has(key.created_by)) continue;
    makers.add(key.id);
    if (key.status === "active") made.push(key);
  }
  return made;
}

async function membersPage(c: Context<AppEnv>, api: CallApi, me: SignedIn) {
  // The keys, for who made which: a removal's confirmation lists them (only those who may remove need it).
  const [members, invites, keys, note] = await Promise.all([
    api<{ members: Member[] }>("GET", "/v1/members"),
    api<{ invites: PendingInvite[] }>("GET", "/v1/invites"),
    me.can("members:write") ? api<{ keys: ApiKey[] }>("GET", "/v1/keys") : null,
    takeNote(c),
  ]);
  return page(
    c,
    { title: "Members", current: "/console/members", member: me.member, scripts: ["passkeys.js"] },
    membersBody(me, members.ok ? members.data.members : [], invites.ok ? invites.data.invites : [], keys?.ok ? keys.data.keys : [], note, members.error?.error ?? null),
  );
}

export function registerMemberPages(app: Hono<AppEnv>): void {
  app.get("/console/members", asMember(app, membersPage));

  app.post("/console/members/invite", asMember(app, async (c, api) => {
    const form = await c.req.parseBody();
    const invite = await api<Invite>("POST", "/v1/invites", { json: { role: String(form["role"] ?? "") } });
    if (!invite.ok) return redirectWithNote(c, "/console/members", { kind: "error", text: `No invite was made: ${invite.error?.error ?? "refused"}.` });
    const until = invite.data.expires_at.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC");
    return redirectWithNote(c, "/console/members", {
      kind: "secret",
      text: `Send this link to the person you invite as ${invite.data.role}; it works once, until ${until}, and is shown only now.`,
      secret: invite.data.url,
    });
  }));

  // The confirmations as pages, for a browser without script (with script they are dialogs on the Members page).
  app.get("/console/members/:id/remove", asMember<"/console/members/:id/remove">(app, async (c, api, me) => {
    const id = c.req.param("id");
    const [members, keys] = await Promise.all([api<{ members: Member[] }>("GET", "/v1/members"), api<{ keys: ApiKey[] }>("GET", "/v1/keys")]);
    const member = members.ok ? members.data.members.find((m) => m.id === id) : undefined;
    if (!member) return page(c, { title: "No such member", current: "/console/members", member: me.member }, <ErrorNote message="No such member. Go back to Members." />);
    const made = keys.ok ? keysMadeBy(keys.data.keys, id) : [];
    return page(c, { title: `Remove ${member.name}`, current: "/console/members", member: me.member }, <ConfirmSection confirmation={removeMemberConfirmation(member, made)} />);
  }));

  app.get("/console/invites/:id/revoke", asMember<"/console/invites/:id/revoke">(app, async (c, api, me) => {
    const [invites, members] = await Promise.all([api<{ invites: PendingInvite[] }>("GET", "/v1/invites"), api<{ members: Member[] }>("GET", "/v1/members")]);
    const invite = invites.ok ? invites.data.invites.find((i) => i.id === c.req.param("id") && i.status === "pending") : undefined;
    const options = { title: "Revoke an invite", current: "/console/members", member: me.member };
    if (!invite) return page(c, options, <ErrorNote message={invites.error?.error ?? "No such invite is waiting. Go back to Members."} />);
    return page(c, options, <ConfirmSection confirmation={revokeInviteConfirmation(invite, makerName(invite.created_by, members.ok ? members.data.members : []))} />);
  }));

  app.get("/console/members/passkeys/:id/remove", asMember<"/console/members/passkeys/:id/remove">(app, async (c, _api, me) => {
    const passkey = me.passkeys.find((p) => p.id === c.req.param("id"));
    const options = { title: "Remove a passkey", current: "/console/members", member: me.member };
    if (!passkey) return page(c, options, <ErrorNote message="No such passkey of yours. Go back to Members." />);
    return page(c, options, <ConfirmSection confirmation={removePasskeyConfirmation(passkey)} />);
  }));

  const act = (path: string, call: (id: string, form: Record<string, unknown>) => { method: string; url: string; json?: unknown }, done: (data: unknown) => string) =>
    app.post(path, async (c) => {
      const api = apiCaller(app, c);
      const form = await c.req.parseBody();
      const request = call(c.req.param("id") ?? "", form);
      const answer = await api(request.method, request.url, request.json === undefined ? undefined : { json: request.json });
      if (answer.status === 401) return toSignIn(c);
      return redirectWithNote(c, "/console/members", answer.ok ? { kind: "done", text: done(answer.data) } : { kind: "error", text: answer.error?.error ?? "Refused" });
    });
  act("/console/members/:id/role", (id, form) => ({ method: "PATCH", url: `/v1/members/${encodeURIComponent(id)}`, json: { role: String(form["role"] ?? "") } }), () => "The role was changed.");
  act(
    "/console/members/:id/remove",
    (id, form) => ({ method: "DELETE", url: `/v1/members/${encodeURIComponent(id)}${form["revoke_keys"] === "true" ? "?revoke_keys=true" : ""}` }),
    (data) => {
      const keys = (data as { keys: ApiKey[] }).keys;
      const revoked = keys.filter((k) => k.status === "revoked").length;
      const kept = keys.length - revoked;
      return `The member was removed and signed out.${revoked ? ` ${revoked === 1 ? "One key they made was" : `${revoked} keys they made were`} revoked.` : ""}${kept ? ` ${kept === 1 ? "One key they made still works" : `${kept} keys they made still work`}: revoke ${kept === 1 ? "it" : "them"} on the Keys page if no longer needed.` : ""}`;
    },
  );
  act("/console/invites/:id/revoke", (id) => ({ method: "DELETE", url: `/v1/invites/${encodeURIComponent(id)}` }), () => "The invite was revoked: its link no longer works.");
  act("/console/members/passkeys/:id/remove", (id) => ({ method: "DELETE", url: `/v1/me/passkeys/${encodeURIComponent(id)}` }), () => "The passkey was removed, and the sessions it opened were ended.");

  app.post("/console/sign-out-everywhere", async (c) => {
    const api = apiCaller(app, c);
    const answer = await api("POST", "/v1/auth/sign-out-everywhere");
    for (const cookie of answer.setCookies) c.header("Set-Cookie", cookie, { append: true });
    return c.redirect("/console/sign-in", 303);
  });
}
