/**
 * The account's pages: overview (balance, this month's credits by day, rate limits, running lists,
 * keys about to expire), usage by day and by key with the API's own CSV export, erasure notices and the
 * audit trail. Each reads the API's operations with the member's session and renders what they said.
 */
import type { Hono } from "hono";
import type { AccountInfo, ErasuresPage } from "../../../shared/api.ts";
import type { VerificationJob } from "../../../shared/jobs.ts";
import type { ApiKey, AuditPage, UsageReport } from "../../../shared/keys.ts";
import type { AppEnv } from "../../env.ts";
import { DataTable, ErrorNote, page, When } from "../layout.tsx";
import { asMember, toSignIn } from "../session.tsx";
import { BarChart } from "./charts.tsx";

const number = (n: number) => n.toLocaleString("en");
const SOON_MS = 14 * 86_400_000;


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
                  <a href={`/console/lists/${j.id}`}>{j.id}</a>: {number(j.processed)} of {number(j.total)} checked
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
    const [byDay, byKey] = await Promise.all([api<UsageReport>("GET", "/v1/usage?group_by=day"), api<UsageReport>("GET", "/v1/usage?group_by=key")]);
    const columns = ["lookups_charged", "lookups_not_found", "verifications", "job_lines", "credits_spent"] as const;
    const table = (report: UsageReport, first: "day" | "key_id", caption: string) => (
      <DataTable
        label={caption}
        captionShown
        head={
          <>
            <th scope="col">{first === "day" ? "Day" : "Key"}</th>
            {columns.map((col) => (
              <th scope="col">{col.replace(/_/g, " ")}</th>
            ))}
          </>
        }
      >
        {report.rows.map((row) => (
          <tr>
            <th scope="row">{row[first]}</th>
            {columns.map((col) => (
              <td>{number(row[col])}</td>
            ))}
          </tr>
        ))}
        <tr>
          <th scope="row">Total</th>
          {columns.map((col) => (
            <td>{number(report.totals[col])}</td>
          ))}
        </tr>
      </DataTable>
    );
    return page(
      c,
      { title: "Usage", current: "/console/usage", member: me.member },
      <>
        <ErrorNote message={byDay.error?.error} />
        <p>The last 30 days. Download: <a href="/v1/usage?group_by=day&format=csv" download="usage-by-day.csv">by day (CSV)</a>, <a href="/v1/usage?group_by=key&format=csv" download="usage-by-key.csv">by key (CSV)</a>.</p>
        {byDay.ok ? table(byDay.data, "day", "By day") : null}
        {byKey.ok ? table(byKey.data, "key_id", "By key") : null}
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
    const audit = await api<AuditPage>("GET", "/v1/audit-events?limit=100");
    return page(
      c,
      { title: "Audit", current: "/console/audit", member: me.member },
      <>
        <ErrorNote message={audit.error ? `${audit.error.error}. Ask an owner or admin to read the audit trail.` : null} />
        {audit.ok ? (
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
                <td>{e.actor}</td>
                <td>{e.target ?? ""}</td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </>,
    );
  }));
}
