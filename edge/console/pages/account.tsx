/**
 * The account's pages: overview (balance, this month's credits by day, rate limits, running lists,
 * keys about to expire), usage by day and by key with the API's own CSV export, erasure notices and the
 * audit trail. Each reads the API's operations with the member's session and renders what they said: people and keys
 * by the names the API gives (key_name, actor_name, target_name), their ids beside in a smaller type, and usage and
 * the trail narrowed to one key or member by the API's own filters.
 */
import type { Hono } from "hono";
import type { AccountInfo, ErasuresPage } from "../../../shared/api.ts";
import type { VerificationJob } from "../../../shared/jobs.ts";
import type { ApiKey, AuditPage, UsageReport } from "../../../shared/keys.ts";
import type { Member } from "../../../shared/members.ts";
import type { AppEnv } from "../../env.ts";
import { DataTable, ErrorNote, page, When } from "../layout.tsx";
import { asMember, toSignIn } from "../session.tsx";
import { BarChart } from "./charts.tsx";

const number = (n: number) => n.toLocaleString("en");
const SOON_MS = 14 * 86_400_000;

/** What an id is, for a person: a key, a member, the admin CLI, the cron, a session, an invite, the account. */
function kindOf(id: string): string {
  if (id === "operator") return "the operator (admin CLI)";
  if (id === "system") return "the system (cron)";
  const prefix = id.slice(0, id.indexOf("_"));
  return { key: "key", mem: "member", pk: "passkey", ses: "session", inv: "invite", acc: "account" }[prefix] ?? "id";
}

/** Someone or something by name, the id beside it in a smaller type; without a name, what it is. */
function Who(props: { id: string | null; name: string | null | undefined; fallback?: string }) {
  if (props.id === null) return <>–</>;
  const kind = kindOf(props.id);
  if (props.id === "operator" || props.id === "system") return <>{kind[0]!.toUpperCase() + kind.slice(1)}</>;
  return (
    <>
      {props.name ?? props.fallback ?? (kind === "key" ? "A key without a name" : `A ${kind}`)}
      <br />
      <small class="id">
        {kind} {props.id}
      </small>
    </>
  );
}

/** A select of keys and members to narrow a page to one of them ("" for all), with a button; a GET form. */
function WhoFilter(props: { action: string; name: string; label: string; chosen: string; options: { id: string; name: string }[] }) {
  return (
    <form method="get" action={props.action} class="inline search">
      <label for="who-filter">{props.label}</label>
      <select id="who-filter" name={props.name}>
        <option value="" selected={props.chosen === ""}>
          Everyone
        </option>
        {props.options.map((o) => (
          <option value={o.id} selected={o.id === props.chosen}>
            {`${o.name} (${kindOf(o.id)} ${o.id})`}
          </option>
        ))}
      </select>
      <button type="submit">Show</button>
    </form>
  );
}


export function registerAccountPages(app: Hono<AppEnv>): void {
  app.get("/console", asMember(app, async (c, api, me) => {
    const monthStart = new Date().toISOString().slice(0, 8) + "01";
    const [account, usage, jobs, keys] = await Promise.all([
      api<AccountInfo>("GET", "/v1/account"),
      api<UsageReport>("GET", `/v1/usage?from=${monthStart}&group_by=day`),
      api<{ jobs: VerificationJob[] }>("GET", "/v1/email_verification_jobs?limit=20"),
      api<{ keys: ApiKey[] }>("GET", "/v1/keys"),
    ]);
    const running = jobs.ok ? jobs.data.jobs.filter((j) => j.status === "queued" || j.status === "running") : [];
    const expiring = keys.ok ? keys.data.keys.filter((k) => k.status === "active" && k.expires_at && Date.parse(k.expires_at) - Date.now() < SOON_MS) : [];
    return page(
      c,
      { title: "Overview", current: "/console", member: me.member },
      <>
        <ErrorNote message={account.error?.error} />
        {account.ok ? (
          <dl class="figures">
            <div>
              <dt>Credit balance</dt>
              <dd>{number(account.data.credit_balance)}</dd>
            </div>
            <div>
              <dt>Credits spent this month</dt>
              <dd>{number(account.data.usage.this_month.credits_spent)}</dd>
            </div>
            <div>
              <dt>Lists running</dt>
              <dd>
                {account.data.jobs.running} of {account.data.jobs.max_running}
              </dd>
            </div>
          </dl>
        ) : null}
        <section aria-labelledby="spent">
          <h2 id="spent">Credits spent this month, by day</h2>
          {usage.ok && usage.data.rows.length > 0 ? (
            <BarChart label="Credits spent by day" unit="credits" rows={usage.data.rows.map((r) => ({ label: r.day ?? "", value: r.credits_spent }))} />
          ) : (
            <p>No credits spent this month.</p>
          )}
        </section>
        <section aria-labelledby="running">
          <h2 id="running">Lists running</h2>
          {running.length === 0 ? (
            <p>None.</p>
          ) : (
            <ul>
              {running.map((j) => (
                <li>
                  <a href={`/console/lists/${j.id}`}>{j.name}</a>: {number(j.processed)} of {number(j.total)} checked
                </li>
              ))}
            </ul>
          )}
        </section>
        <section aria-labelledby="expiring">
          <h2 id="expiring">Keys expiring within 14 days</h2>
          {expiring.length === 0 ? (
            <p>None.</p>
          ) : (
            <ul>
              {expiring.map((k) => (
                <li>
                  {k.name || k.prefix}: <When at={k.expires_at} />
                </li>
              ))}
            </ul>
          )}
        </section>
        {account.ok ? (
          <section aria-labelledby="limits">
            <h2 id="limits">Rate limits</h2>
            <DataTable
              label="Requests allowed per period"
              head={
                <>
                  <th scope="col">Kind</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Per</th>
                </>
              }
            >
              {Object.entries(account.data.rate_limits).map(([kind, limit]) => (
                <tr>
                  <th scope="row">{kind.replace(/_/g, " ")}</th>
                  <td>{number(limit.limit)}</td>
                  <td>{limit.period_seconds} s</td>
                </tr>
              ))}
            </DataTable>
          </section>
        ) : null}
      </>,
    );
  }));

  app.get("/console/usage", asMember(app, async (c, api, me) => {
    const chosen = (c.req.query("key") ?? "").trim();
    const only = /^[A-Za-z0-9_-]{1,80}$/.test(chosen) ? chosen : "";
    const filter = only ? `&key_id=${encodeURIComponent(only)}` : "";
    const [byDay, byKey] = await Promise.all([api<UsageReport>("GET", `/v1/usage?group_by=day${filter}`), api<UsageReport>("GET", "/v1/usage?group_by=key")]);
    const columns = ["lookups_charged", "lookups_not_found", "verifications", "job_lines", "credits_spent"] as const;
    const keyRows = byKey.ok ? byKey.data.rows : [];
    const shownKeys = only ? keyRows.filter((r) => r.key_id === only) : keyRows;
    const chosenName = only ? (keyRows.find((r) => r.key_id === only)?.key_name ?? only) : null;
    const table = (rows: UsageReport["rows"], totals: UsageReport["totals"] | null, first: "day" | "key_id", caption: string) => (
      <DataTable
        label={caption}
        captionShown
        head={
          <>
            <th scope="col">{first === "day" ? "Day" : "Key or member"}</th>
            {columns.map((col) => (
              <th scope="col">{col.replace(/_/g, " ")}</th>
            ))}
          </>
        }
      >
        {rows.map((row) => (
          <tr>
            <th scope="row">{first === "day" ? row.day : <Who id={row.key_id ?? null} name={row.key_name} />}</th>
            {columns.map((col) => (
              <td>{number(row[col])}</td>
            ))}
          </tr>
        ))}
        {totals ? (
          <tr>
            <th scope="row">Total</th>
            {columns.map((col) => (
              <td>{number(totals[col])}</td>
            ))}
          </tr>
        ) : null}
      </DataTable>
    );
    return page(
      c,
      { title: "Usage", current: "/console/usage", member: me.member },
      <>
        <ErrorNote message={byDay.error?.error} />
        <WhoFilter
          action="/console/usage"
          name="key"
          label="Usage of"
          chosen={only}
          options={keyRows.map((r) => ({ id: r.key_id ?? "", name: r.key_name ?? (kindOf(r.key_id ?? "") === "key" ? "A key without a name" : "A member") }))}
        />
        <p>
          The last 30 days{chosenName ? `, of ${chosenName} alone` : ""}. Download:{" "}
          <a href={`/v1/usage?group_by=day&format=csv${filter}`} download="usage-by-day.csv">
            by day (CSV)
          </a>
          ,{" "}
          <a href="/v1/usage?group_by=key&format=csv" download="usage-by-key.csv">
            by key (CSV)
          </a>
          .
        </p>
        {byDay.ok ? table(byDay.data.rows, byDay.data.totals, "day", chosenName ? `By day, ${chosenName}` : "By day") : null}
        {byKey.ok ? table(shownKeys, only ? null : byKey.data.totals, "key_id", "By key or member") : null}
      </>,
    );
  }));

  app.get("/console/erasures", asMember(app, async (c, api, me) => {
    const feed = await api<ErasuresPage>("GET", "/v1/people/erasures?limit=100");
    return page(
      c,
      { title: "Erasures", current: "/console/erasures", member: me.member },
      <>
        <p>People you received from a lookup who have since been erased: delete what you keep about them.</p>
        <ErrorNote message={feed.error ? `${feed.error.error}. Reading this feed needs the people:read permission.` : null} />
        {feed.ok && feed.data.erasures.length === 0 ? <p>No erasures.</p> : null}
        {feed.ok && feed.data.erasures.length > 0 ? (
          <DataTable
            label="Erasure notices"
            head={
              <>
                <th scope="col">Erased</th>
                <th scope="col">Identifiers you received</th>
              </>
            }
          >
            {feed.data.erasures.map((e) => (
              <tr>
                <th scope="row">
                  <When at={e.erased_at} />
                </th>
                <td>{[e.profnet_id, e.profnet_public_identifier, e.codehost_id, e.codehost_login].filter((v) => v !== null).join(", ")}</td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </>,
    );
  }));

  app.get("/console/audit", asMember(app, async (c, api, me) => {
    const chosen = (c.req.query("actor") ?? "").trim();
    const actor = /^[A-Za-z0-9_-]{1,80}$/.test(chosen) ? chosen : "";
    const [audit, keys, members] = await Promise.all([
      api<AuditPage>("GET", `/v1/audit-events?limit=100${actor ? `&actor=${encodeURIComponent(actor)}` : ""}`),
      api<{ keys: ApiKey[] }>("GET", "/v1/keys"),
      api<{ members: Member[] }>("GET", "/v1/members"),
    ]);
    // Who may be picked: the members and the keys as their lists name them, then the operator and the cron.
    const options = [
      ...(members.ok ? members.data.members.map((m) => ({ id: m.id, name: m.name })) : []),
      ...(keys.ok ? keys.data.keys.map((k) => ({ id: k.id, name: k.name || `A key without a name (${k.prefix}…)` })) : []),
      { id: "operator", name: "Operator" },
      { id: "system", name: "System" },
    ];
    const target = (e: AuditPage["events"][number]) => {
      if (e.target === null) return null;
      // An invite has no name: its role says which.
      const role = typeof e.details["role"] === "string" ? e.details["role"] : null;
      return <Who id={e.target} name={e.target_name} fallback={kindOf(e.target) === "invite" && role ? `A ${role} invite` : undefined} />;
    };
    return page(
      c,
      { title: "Audit", current: "/console/audit", member: me.member },
      <>
        <ErrorNote message={audit.error ? `${audit.error.error}. Ask an owner or admin to read the audit trail.` : null} />
        {audit.ok ? <WhoFilter action="/console/audit" name="actor" label="What was done by" chosen={actor} options={options} /> : null}
        {audit.ok && audit.data.events.length === 0 ? <p>Nothing was done{actor ? " by them" : ""} in the trail kept (a year).</p> : null}
        {audit.ok && audit.data.events.length > 0 ? (
          <DataTable
            label="Audit events, newest first"
            head={
              <>
                <th scope="col">When</th>
                <th scope="col">What</th>
                <th scope="col">Who</th>
                <th scope="col">On</th>
              </>
            }
          >
            {audit.data.events.map((e) => (
              <tr>
                <th scope="row">
                  <When at={e.created_at} />
                </th>
                <td>{e.action}</td>
                <td>
                  <Who id={e.actor} name={e.actor_name} />
                </td>
                <td>{target(e)}</td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </>,
    );
  }));
}
