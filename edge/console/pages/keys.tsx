/**
 * Keys: the account's API keys (GET /v1/keys) with name, scopes, last use and expiry; create with a
 * name, scopes and an expiry (POST /v1/keys), roll (POST /v1/keys/{id}/roll) and revoke (DELETE
 * /v1/keys/{id}: after a confirmation, a dialog or without script its page, edge/console/confirm.tsx). Every form
 * redirects to the list (POST-redirect-GET): a new secret travels to that page as
 * a one-time note held with the session (edge/identity/session-notes.ts), shown once with a copy button, so a
 * reload shows it no more and makes nothing. The API decides what a member may grant; the page only offers the
 * scopes the member's role holds.
 */
import type { Hono } from "hono";
import type { ApiKey, ApiKeyWithToken } from "../../../shared/keys.ts";
import { SCOPES, type Scope } from "../../../shared/scopes.ts";
import type { AppEnv } from "../../env.ts";
import { redirectWithNote, takeNote, type SessionNote } from "../../identity/session-notes.ts";
import { apiCaller } from "../api.ts";
import { ConfirmDialog, ConfirmOpener, ConfirmSection, type Confirmation } from "../confirm.tsx";
import { DataTable, ErrorNote, NoteShown, page, When } from "../layout.tsx";
import { asMember, type SignedIn, toSignIn } from "../session.tsx";

const SCOPE_WORDS: Record<Scope, string> = {
  "people:read": "Look up people (spends credits)",
  "verifications:write": "Verify single addresses",
  "jobs:write": "Create, cancel and delete list jobs",
  "jobs:read": "Read list jobs and their results",
  "account:read": "Read the account, usage and keys",
  "keys:write": "Create, roll and revoke keys",
  "members:write": "Invite and manage members",
  "audit:read": "Read the audit trail",
  "feedback:write": "Report bounces and deliveries (free)",
  "events:write": "Set where people events are sent",
};

const EXPIRY_CHOICES = [
  { value: "30", label: "In 30 days" },
  { value: "90", label: "In 90 days" },
  { value: "365", label: "In a year" },
  { value: "never", label: "Never" },
];

function SecretOnce(props: { heading: string; secret: string }) {
  return (
    <section aria-labelledby="secret" class="secret">
      <h2 id="secret">{props.heading}</h2>
      <p>This is the only time the secret is shown; only its hash is kept.</p>
      <label for="new-secret">Secret</label>
      <div class="copy-row">
        <input id="new-secret" readonly value={props.secret} spellcheck={false} autocomplete="off" />
        <button type="button" data-copy="new-secret">
          Copy
        </button>
      </div>
    </section>
  );
}


/** What revoking `key` does, asked before it is done. A key's cache in each Worker isolate lasts KNOWN_KEY_TTL_MS (60 s). */
function revokeConfirmation(key: ApiKey): Confirmation {
  const label = key.name || key.prefix;
  const path = `/console/keys/${encodeURIComponent(key.id)}/revoke`;
  return {
    id: `revoke-${key.id}`,
    title: `Revoke the key “${label}”?`,
    consequence: (
      <p>
        Integrations using key {label} (<code>{key.prefix}…</code>) stop within 60 seconds: from then on its requests are refused (401). This cannot be undone. To
        replace a key without a gap, roll it instead: the old one keeps working for 24 hours.
      </p>
    ),
    action: path,
    confirm: "Revoke the key",
    page: path,
    back: "/console/keys",
  };
}

const secretNote = (created: ApiKeyWithToken, verb: string, after = ""): SessionNote => ({
  kind: "secret",
  text: `Key ${created.name ? `“${created.name}” ` : ""}${verb}: copy its secret now.${after}`,
  secret: created.token,
});

function keysPage(me: SignedIn, keys: ApiKey[], error: string | null, extra: unknown) {
  const mayWrite = me.can("keys:write");
  const grantable = SCOPES.filter((s) => me.can(s));
  return (
    <>
      {extra}
      <ErrorNote message={error} />
      {mayWrite ? (
        <section aria-labelledby="create">
          <h2 id="create">Create a key</h2>
          <form method="post" action="/console/keys">
            <label for="key-name">Name</label>
            <input id="key-name" name="name" required maxlength={100} autocomplete="off" aria-describedby="key-name-hint" />
            <p class="hint" id="key-name-hint">
              Say where it is used, e.g. “CRM sync”.
            </p>
            <fieldset>
              <legend>What it may do</legend>
              {grantable.map((scope) => (
                <div class="check">
                  <input type="checkbox" id={`scope-${scope}`} name="scopes" value={scope} />
                  <label for={`scope-${scope}`}>
                    {SCOPE_WORDS[scope]} <code>{scope}</code>
                  </label>
                </div>
              ))}
            </fieldset>
            <label for="key-expiry">Expires</label>
            <select id="key-expiry" name="expires">
              {EXPIRY_CHOICES.map((c) => (
                <option value={c.value} selected={c.value === "90"}>
                  {c.label}
                </option>
              ))}
            </select>
            <button type="submit">Create key</button>
          </form>
        </section>
      ) : (
        <p>Your role can read keys but not create, roll or revoke them.</p>
      )}
      <section aria-labelledby="key-list">
        <h2 id="key-list">Keys</h2>
        {keys.length === 0 ? <p>No keys yet.</p> : null}
        {keys.length > 0 ? (
          <DataTable
            label="The account's keys, live first"
            head={
              <>
                <th scope="col">Name</th>
                <th scope="col">Starts with</th>
                <th scope="col">Scopes</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Status</th>
                {mayWrite ? <th scope="col">Actions</th> : null}
              </>
            }
          >
            {keys.map((key) => (
              <tr>
                <th scope="row">
                  {key.name || "(no name)"}
                  <br />
                  <small class="id">{key.id}</small>
                </th>
                <td>
                  <code>{key.prefix}…</code>
                </td>
                <td>{key.scopes.join(", ")}</td>
                <td>
                  <When at={key.last_used_at} />
                </td>
                <td>
                  <When at={key.expires_at} empty="never" />
                </td>
                <td>{key.status}</td>
                {mayWrite ? (
                  <td>
                    {key.status === "active" ? (
                      <div class="actions">
                        <form method="post" action={`/console/keys/${key.id}/roll`}>
                          <button type="submit" aria-label={`Roll ${key.name || key.prefix}`}>
                            Roll
                          </button>
                        </form>
                        <ConfirmOpener confirmation={revokeConfirmation(key)} label="Revoke" accessibleName={`Revoke ${key.name || key.prefix}`} />
                      </div>
                    ) : null}
                  </td>
                ) : null}
              </tr>
            ))}
          </DataTable>
        ) : null}
        {mayWrite ? keys.filter((key) => key.status === "active").map((key) => <ConfirmDialog confirmation={revokeConfirmation(key)} />) : null}
      </section>
    </>
  );
}

export function registerKeyPages(app: Hono<AppEnv>): void {
  app.get("/console/keys", asMember(app, async (c, api, me) => {
    const [keys, note] = await Promise.all([api<{ keys: ApiKey[] }>("GET", "/v1/keys"), takeNote(c)]);
    return page(
      c,
      { title: "Keys", current: "/console/keys", member: me.member },
      keysPage(me, keys.ok ? keys.data.keys : [], keys.error?.error ?? null, note?.kind === "secret" ? <SecretOnce heading={note.text} secret={note.secret} /> : <NoteShown note={note} />),
    );
  }));

  app.post("/console/keys", asMember(app, async (c, api) => {
    const form = await c.req.parseBody({ all: true });
    const scopes = ([] as unknown[]).concat(form["scopes"] ?? []).filter((s): s is string => typeof s === "string");
    const expires = String(form["expires"] ?? "never");
    const days = Number(expires);
    const body = {
      name: String(form["name"] ?? ""),
      scopes,
      ...(Number.isInteger(days) && days > 0 ? { expires_at: new Date(Date.now() + days * 86_400_000).toISOString() } : {}),
    };
    const created = await api<ApiKeyWithToken>("POST", "/v1/keys", { json: body });
    if (created.ok) return redirectWithNote(c, "/console/keys", secretNote(created.data, "created"));
    const hint = scopes.length === 0 ? " Tick at least one thing it may do." : "";
    return redirectWithNote(c, "/console/keys", { kind: "error", text: `The key was not created: ${created.error?.error ?? "refused"}.${hint}` });
  }));

  app.post("/console/keys/:id/roll", asMember<"/console/keys/:id/roll">(app, async (c, api) => {
    const rolled = await api<ApiKeyWithToken>("POST", `/v1/keys/${encodeURIComponent(c.req.param("id"))}/roll`, { json: {} });
    if (rolled.ok) return redirectWithNote(c, "/console/keys", secretNote(rolled.data, "rolled", " The old key keeps working for 24 hours, so you can put the new one in place."));
    return redirectWithNote(c, "/console/keys", { kind: "error", text: `The key was not rolled: ${rolled.error?.error ?? "refused"}.` });
  }));

  // The revocation's confirmation as a page, for a browser without script (with script it is a dialog on the list).
  app.get("/console/keys/:id/revoke", asMember<"/console/keys/:id/revoke">(app, async (c, api, me) => {
    const keys = await api<{ keys: ApiKey[] }>("GET", "/v1/keys");
    const key = keys.ok ? keys.data.keys.find((k) => k.id === c.req.param("id") && k.status === "active") : undefined;
    const options = { title: "Revoke a key", current: "/console/keys", member: me.member };
    if (!key) return page(c, options, <ErrorNote message={keys.error?.error ?? "No such key works now. Go back to Keys."} />);
    return page(c, options, <ConfirmSection confirmation={revokeConfirmation(key)} />);
  }));

  app.post("/console/keys/:id/revoke", async (c) => {
    const api = apiCaller(app, c);
    const revoked = await api<ApiKey>("DELETE", `/v1/keys/${encodeURIComponent(c.req.param("id"))}`);
    if (revoked.status === 401) return toSignIn(c);
    const note: SessionNote = revoked.ok
      ? { kind: "done", text: `Key ${revoked.data.name || revoked.data.prefix} revoked: it no longer works.` }
      : { kind: "error", text: revoked.error?.error ?? "Failed" };
    return redirectWithNote(c, "/console/keys", note);
  });
}
