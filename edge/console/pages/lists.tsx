/**
 * Lists: drop a CSV or paste addresses, preview and pick the email column, see duplicates, malformed
 * lines and the cost before anything is sent (edge/console/browser/lists.ts, parsing in a Web Worker),
 * then the job through POST /v1/email_verification_jobs. Without script the same form posts the file
 * or the pasted text to /console/lists, which hands it to that same API operation unchanged.
 * A job's page: live progress, summary by classification and by reason, downloads, cancel, delete.
 */
import type { Hono } from "hono";
import type { VerificationJob } from "../../../shared/jobs.ts";
import type { AccountInfo } from "../../../shared/api.ts";
import type { AppEnv } from "../../env.ts";
import { redirectWithNote, takeNote } from "../../identity/session-notes.ts";
import { apiCaller } from "../api.ts";
import { DataTable, ErrorNote, NoteShown, page, When } from "../layout.tsx";
import { asMember, toSignIn } from "../session.tsx";
import { BarChart, reasonLabel } from "./charts.tsx";
import { EnrichSection, enrichReads } from "./enrich.tsx";

const RETENTION_CHOICES = [
  { days: 1, label: "1 day" },
  { days: 7, label: "7 days" },
  { days: 30, label: "30 days (the longest)" },
];

const number = (n: number) => n.toLocaleString("en");

function Progress(props: { job: VerificationJob }) {
  const { job } = props;
  const ended = job.status === "completed" || job.status === "cancelled";
  return (
    <div class="progress" data-job={ended ? undefined : job.id}>
      <progress max={Math.max(job.total, 1)} value={job.processed} aria-label={`Progress of ${job.id}`}></progress>
      <span class="progress-text">
        {number(job.processed)} of {number(job.total)} checked · {job.status}
        {job.queue.estimated_completion_at ? (
          <>
            {" "}
            · done around <When at={job.queue.estimated_completion_at} />
          </>
        ) : null}
      </span>
    </div>
  );
}

export function registerListPages(app: Hono<AppEnv>): void {
  app.get("/console/lists", asMember(app, async (c, api, me) => {
    const [jobs, account, note, lookups] = await Promise.all([api<{ jobs: VerificationJob[] }>("GET", "/v1/email_verification_jobs?limit=50"), api<AccountInfo>("GET", "/v1/account"), takeNote(c), enrichReads(me.can, api)]);
    const limits = account.ok ? account.data.jobs : null;
    return page(
      c,
      { title: "Lists", current: "/console/lists", member: me.member, scripts: [...(me.can("jobs:write") ? ["lists.js"] : []), ...(me.can("people:read") ? ["enrich.js"] : [])] },
      <>
        <NoteShown note={note} />
        {me.can("jobs:write") ? (
          <section aria-labelledby="new-list">
            <h2 id="new-list">Clean a list</h2>
            <form id="list-form" method="post" action="/console/lists" enctype="multipart/form-data" data-max-lines={limits ? limits.max_lines_per_24h : undefined} data-used-lines={limits ? limits.lines_last_24h : undefined}>
              <div class="drop" id="drop">
                <label for="file">CSV file (up to 10 MB, 100,000 addresses)</label>
                <input type="file" id="file" name="file" accept=".csv,.txt,text/csv,text/plain" aria-describedby="drop-hint" />
                <p id="drop-hint" class="hint">
                  Choose a file or drop it here. The first row may be a header; a column named email is used unless you pick another.
                </p>
              </div>
              <label for="paste">Or paste addresses, one per line</label>
              <textarea id="paste" name="paste" rows={5} spellcheck={false} autocomplete="off"></textarea>
              <div id="preview" hidden>
                <h3>Preview</h3>
                <label for="column">Email column</label>
                <select id="column" name="column"></select>
                <div class="table-wrap" id="preview-table" tabindex={0} role="region" aria-label="Preview of the first rows"></div>
                <dl class="figures" id="figures" aria-live="polite"></dl>
              </div>
              <label for="retention">Keep the results for</label>
              <select id="retention" name="retention_days">
                {RETENTION_CHOICES.map((choice) => (
                  <option value={String(choice.days)} selected={choice.days === 30}>
                    {choice.label}
                  </option>
                ))}
              </select>
              <p class="hint" id="cost">
                Verifying costs no credits.{" "}
                {limits
                  ? `Your account may send ${number(limits.max_lines_per_24h)} lines per 24 hours; ${number(limits.lines_last_24h)} were sent in the last 24 hours. ${limits.running} of ${limits.max_running} jobs may run at once.`
                  : null}
              </p>
              <p id="list-status" role="status" aria-live="polite"></p>
              <button type="submit" id="start">
                Start verifying
              </button>
            </form>
          </section>
        ) : null}
        <section aria-labelledby="your-lists">
          <h2 id="your-lists">Your lists</h2>
          <ErrorNote message={jobs.error?.error} />
          {jobs.ok && jobs.data.jobs.length === 0 ? <p>No lists yet.</p> : null}
          {jobs.ok && jobs.data.jobs.length > 0 ? (
            <DataTable
              label="Your lists, newest first"
              head={
                <>
                  <th scope="col">List</th>
                  <th scope="col">Started</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Valid</th>
                  <th scope="col">Risky</th>
                  <th scope="col">Invalid</th>
                </>
              }
            >
              {jobs.data.jobs.map((job) => (
                <tr>
                  <th scope="row">
                    <a href={`/console/lists/${job.id}`}>{job.id}</a>
                  </th>
                  <td>
                    <When at={job.created_at} />
                  </td>
                  <td>
                    <Progress job={job} />
                  </td>
                  <td>{number(job.counts.valid)}</td>
                  <td>{number(job.counts.risky)}</td>
                  <td>{number(job.counts.invalid)}</td>
                </tr>
              ))}
            </DataTable>
          ) : null}
        </section>
        {lookups ? <EnrichSection jobs={lookups} account={account.ok ? account.data : null} cost={c.get("config").LOOKUP_COST} /> : null}
      </>,
    );
  }));

  // The form without script: the file (or the pasted text) goes to the API as it is.
  app.post("/console/lists", async (c) => {
    const api = apiCaller(app, c);
    const form = await c.req.parseBody();
    const file = form["file"];
    const pasted = typeof form["paste"] === "string" ? form["paste"] : "";
    const days = Number(form["retention_days"] ?? 30);
    const retention = Number.isInteger(days) && days >= 1 && days <= 30 ? days * 86_400 : 2_592_000;
    // A file goes as the CSV it is; pasted text is addresses one per line, every line one.
    const addresses = pasted.split(/\r?\n/).filter((line) => line.trim() !== "");
    const fileGiven = file instanceof File && file.size > 0;
    if (!fileGiven && addresses.length === 0) return redirectWithNote(c, "/console/lists", { kind: "error", text: "Choose a file or paste at least one address." });
    const body = fileGiven ? { csv: await (file as File).text() } : { json: { email_addresses: addresses } };
    const created = await api<VerificationJob>("POST", `/v1/email_verification_jobs?retention_seconds=${retention}`, body);
    if (created.status === 401) return toSignIn(c);
    if (!created.ok) return redirectWithNote(c, "/console/lists", { kind: "error", text: created.error?.error ?? "The list was not accepted" });
    return c.redirect(`/console/lists/${created.data.id}`, 303);
  });

  app.get("/console/lists/:id", asMember<"/console/lists/:id">(app, async (c, api, me) => {
    const id = c.req.param("id");
    const [answer, note] = await Promise.all([api<VerificationJob>("GET", `/v1/email_verification_jobs/${encodeURIComponent(id)}`), takeNote(c)]);
    if (!answer.ok) {
      return page(c, { title: "List not found", current: "/console/lists", member: me.member }, <ErrorNote message={`${answer.error?.error ?? "Not found"}. Go back to your lists.`} />);
    }
    const job = answer.data;
    const ended = job.status === "completed" || job.status === "cancelled";
    // When the API deletes the results (its rule, callback included); null while the list runs or its callback is out.
    const deleteAt = job.results_delete_at;
    const results = `/v1/email_verification_jobs/${job.id}/results?format=csv`;
    const reasons = Object.entries(job.summary.reason)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]);
    return page(
      c,
      { title: `List ${job.id}`, current: "/console/lists", member: me.member },
      <>
        <NoteShown note={note} />
        <Progress job={job} />
        <section aria-labelledby="summary">
          <h2 id="summary">Summary</h2>
          <BarChart
            label="Answered lines by classification"
            rows={[
              { label: "Valid", value: job.summary.classification.valid, tone: "good" },
              { label: "Risky", value: job.summary.classification.risky, tone: "warn" },
              { label: "Invalid", value: job.summary.classification.invalid, tone: "bad" },
            ]}
          />
          <DataTable
            label="By reason"
            captionShown
            head={
              <>
                <th scope="col">Reason</th>
                <th scope="col">Lines</th>
              </>
            }
          >
            {reasons.length === 0 ? (
              <tr>
                <td colspan={2}>Nothing answered yet.</td>
              </tr>
            ) : (
              reasons.map(([reason, n]) => (
                <tr>
                  <th scope="row">{reasonLabel(reason)}</th>
                  <td>{number(n)}</td>
                </tr>
              ))
            )}
          </DataTable>
        </section>
        <section aria-labelledby="downloads">
          <h2 id="downloads">Download</h2>
          {job.results_expired ? (
            <p>The results were deleted; the counts above stay.</p>
          ) : (
            <>
              <ul class="downloads">
                <li>
                  <a href={results} download={`${job.id}-all.csv`}>
                    All lines (CSV)
                  </a>
                </li>
                <li>
                  <a href={`${results}&classification=valid`} download={`${job.id}-valid.csv`}>
                    Valid only (CSV)
                  </a>
                </li>
                <li>
                  <a href={`${results}&classification=risky`} download={`${job.id}-risky.csv`}>
                    Risky only (CSV)
                  </a>
                </li>
                <li>
                  <a href={`${results}&classification=invalid`} download={`${job.id}-invalid.csv`}>
                    Invalid only (CSV)
                  </a>
                </li>
              </ul>
              <p>{deleteAt ? <>The results will be deleted on <When at={deleteAt} />.</> : "The results are kept until the list is done, then for the time you chose."}</p>
            </>
          )}
        </section>
        {me.can("jobs:write") ? (
          <section aria-labelledby="actions">
            <h2 id="actions">Actions</h2>
            <div class="actions">
              {!ended ? (
                <form method="post" action={`/console/lists/${job.id}/cancel`}>
                  <button type="submit">Cancel the list</button>
                </form>
              ) : null}
              {!job.results_expired ? (
                <form method="post" action={`/console/lists/${job.id}/delete`}>
                  <button type="submit" class="danger">
                    Delete the results now
                  </button>
                </form>
              ) : null}
            </div>
          </section>
        ) : null}
      </>,
    );
  }));

  for (const [action, query, done] of [
    ["cancel", "", "The list was cancelled: lines not checked yet will not be."],
    ["delete", "?purge=true", "The results were deleted."],
  ] as const) {
    app.post(`/console/lists/:id/${action}`, async (c) => {
      const api = apiCaller(app, c);
      const id = c.req.param("id");
      const answer = await api<VerificationJob>("DELETE", `/v1/email_verification_jobs/${encodeURIComponent(id)}${query}`);
      if (answer.status === 401) return toSignIn(c);
      return redirectWithNote(c, `/console/lists/${encodeURIComponent(id)}`, answer.ok ? { kind: "done", text: done } : { kind: "error", text: answer.error?.error ?? "Failed" });
    });
  }
}
