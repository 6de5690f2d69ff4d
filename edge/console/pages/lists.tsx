/**
 * Lists: drop a CSV or paste addresses, preview and pick the address column, see duplicates, malformed lines and the
 * cost, and what the API would refuse, before anything is sent (edge/console/browser/lists.ts, parsing in a Web
 * Worker); then the file itself, named, goes to POST /v1/email_verification_jobs, which keeps every column. Without
 * script the same form posts the file or the pasted text to /console/lists, which hands it to that same API operation
 * as it is (the API finds the address column by the same rule, or refuses the file naming its columns).
 * The lists by name, searched by it. A list's page: live progress, summary by classification and by reason, downloads
 * named after it, and cancel and delete, each confirmed first (edge/console/confirm.tsx).
 */
import type { Hono } from "hono";
import type { VerificationJob } from "../../../shared/jobs.ts";
import type { AccountInfo } from "../../../shared/api.ts";
import type { AppEnv } from "../../env.ts";
import { redirectWithNote, takeNote } from "../../identity/session-notes.ts";
import { apiCaller } from "../api.ts";
import { ConfirmDialog, ConfirmOpener, ConfirmSection, type Confirmation } from "../confirm.tsx";
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
      <progress max={Math.max(job.total, 1)} value={job.processed} aria-label={`Progress of ${job.name}`}></progress>
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

/** A list as people call it, with its id beside it (in a smaller type) to tell lists of one name apart. */
function ListName(props: { job: VerificationJob; link?: boolean }) {
  const { job } = props;
  return (
    <>
      {props.link ? <a href={`/console/lists/${job.id}`}>{job.name}</a> : job.name}
      {job.name !== job.id ? (
        <>
          <br />
          <small class="id">{job.id}</small>
        </>
      ) : null}
    </>
  );
}

/** Cancelling a list and deleting its results, asked before they are done. */
function listConfirmations(job: VerificationJob): { cancel: Confirmation; remove: Confirmation } {
  const base = `/console/lists/${encodeURIComponent(job.id)}`;
  const left = Math.max(0, job.total - job.processed);
  return {
    cancel: {
      id: `cancel-${job.id}`,
      title: `Cancel the list “${job.name}”?`,
      consequence: (
        <p>
          The {number(left)} lines not checked yet will not be checked. The {number(job.processed)} answered stay, and can be downloaded until the results are
          deleted. A cancelled list cannot be started again: upload the file once more to check the rest.
        </p>
      ),
      action: `${base}/cancel`,
      confirm: "Cancel the list",
      page: `${base}/cancel`,
      back: base,
    },
    remove: {
      id: `delete-${job.id}`,
      title: `Delete the results of “${job.name}” now?`,
      consequence: (
        <p>
          Every line of the list and its result ({number(job.total)} lines) are deleted now{job.status === "completed" || job.status === "cancelled" ? "" : ", and the list is cancelled"}; the counts and
          the summary stay. The downloads stop working. This cannot be undone.
        </p>
      ),
      action: `${base}/delete`,
      confirm: "Delete the results",
      page: `${base}/delete`,
      back: base,
    },
  };
}

export function registerListPages(app: Hono<AppEnv>): void {
  app.get("/console/lists", asMember(app, async (c, api, me) => {
    const search = (c.req.query("name") ?? "").trim().slice(0, 200);
    const listsQuery = `/v1/email_verification_jobs?limit=50${search ? `&name=${encodeURIComponent(search)}` : ""}`;
    const [jobs, account, note, lookups] = await Promise.all([api<{ jobs: VerificationJob[] }>("GET", listsQuery), api<AccountInfo>("GET", "/v1/account"), takeNote(c), enrichReads(me.can, api)]);
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
                  Choose a file or drop it here. Every column of it comes back with the results. The addresses are taken from the column named like an address
                  (email, e-mail address…), else from the column that holds addresses; a file with neither is refused.
                </p>
              </div>
              <noscript>
                <p class="hint">
                  Without JavaScript there is no preview: the file is sent as it is, and the address column is found by the rule above. A file without one is
                  refused, naming its columns, and nothing is checked.
                </p>
              </noscript>
              <label for="paste">Or paste addresses, one per line</label>
              <textarea id="paste" name="paste" rows={5} spellcheck={false} autocomplete="off"></textarea>
              <label for="list-name">Name of the list</label>
              <input id="list-name" name="name" maxlength={200} autocomplete="off" aria-describedby="list-name-hint" />
              <p class="hint" id="list-name-hint">
                The file's name unless you give another. Downloads are named after it.
              </p>
              <div id="preview" hidden>
                <h3>Preview</h3>
                <label for="column">Email address column</label>
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
          <form method="get" action="/console/lists" class="inline search" role="search">
            <label for="list-search">Find a list by name</label>
            <input id="list-search" name="name" type="search" value={search} maxlength={200} autocomplete="off" />
            <button type="submit">Find</button>
            {search ? <a href="/console/lists">Show every list</a> : null}
          </form>
          <ErrorNote message={jobs.error?.error} />
          {jobs.ok && jobs.data.jobs.length === 0 ? <p>{search ? `No list's name holds “${search}”.` : "No lists yet."}</p> : null}
          {jobs.ok && jobs.data.jobs.length > 0 ? (
            <DataTable
              label={search ? `Lists whose name holds “${search}”, newest first` : "Your lists, newest first"}
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
                    <ListName job={job} link />
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

  // The form without script: the file goes to the API as it is (it keeps every column and finds the address column),
  // named by the form or after the file; pasted text is addresses one per line.
  app.post("/console/lists", async (c) => {
    const api = apiCaller(app, c);
    const form = await c.req.parseBody();
    const file = form["file"];
    const pasted = typeof form["paste"] === "string" ? form["paste"] : "";
    const days = Number(form["retention_days"] ?? 30);
    const retention = Number.isInteger(days) && days >= 1 && days <= 30 ? days * 86_400 : 2_592_000;
    const addresses = pasted.split(/\r?\n/).filter((line) => line.trim() !== "");
    const fileGiven = file instanceof File && file.size > 0;
    if (!fileGiven && addresses.length === 0) {
      const empty = file instanceof File && file.name !== "" ? "The file is empty: it has no lines." : "Choose a file or paste at least one address.";
      return redirectWithNote(c, "/console/lists", { kind: "error", text: empty });
    }
    const given = typeof form["name"] === "string" ? form["name"].trim() : "";
    const name = given || (fileGiven ? (file as File).name : "Pasted addresses");
    // The column picked in the preview (a number, 1-based), when the page's script filled the list of columns.
    const column = typeof form["column"] === "string" && /^[0-9]+$/.test(form["column"]) ? Number(form["column"]) + 1 : null;
    const query = new URLSearchParams({ retention_seconds: String(retention), name });
    if (fileGiven && column !== null) query.set("email_column", String(column));
    const body = fileGiven ? { csv: file as File } : { json: { email_addresses: addresses } };
    const created = await api<VerificationJob>("POST", `/v1/email_verification_jobs?${query.toString()}`, body);
    if (created.status === 401) return toSignIn(c);
    if (!created.ok) return redirectWithNote(c, "/console/lists", { kind: "error", text: `The list was not accepted: ${created.error?.error ?? "refused"}.` });
    return c.redirect(`/console/lists/${created.data.id}`, 303);
  });

  app.get("/console/lists/:id", asMember<"/console/lists/:id">(app, async (c, api, me) => {
    const id = c.req.param("id");
    const [answer, note] = await Promise.all([api<VerificationJob>("GET", `/v1/email_verification_jobs/${encodeURIComponent(id)}`), takeNote(c)]);
    if (!answer.ok) {
      return page(c, { title: "List not found", current: "/console/lists", member: me.member }, <ErrorNote message={`${answer.error?.error ?? "Not found"}. Go back to your lists.`} />);
    }
    const job = answer.data;
    const confirmations = listConfirmations(job);
    const ended = job.status === "completed" || job.status === "cancelled";
    // When the API deletes the results (its rule, callback included); null while the list runs or its callback is out.
    const deleteAt = job.results_delete_at;
    const results = `/v1/email_verification_jobs/${job.id}/results?format=csv`;
    const reasons = Object.entries(job.summary.reason)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]);
    return page(
      c,
      { title: `List “${job.name}”`, current: "/console/lists", member: me.member },
      <>
        <NoteShown note={note} />
        <dl class="about">
          <div>
            <dt>List id</dt>
            <dd>
              <code>{job.id}</code>
            </dd>
          </div>
          <div>
            <dt>Started</dt>
            <dd>
              <When at={job.created_at} />
            </dd>
          </div>
          <div>
            <dt>Addresses from</dt>
            <dd>{job.email_column ? `the column “${job.email_column}”` : "a list of addresses"}</dd>
          </div>
          <div>
            <dt>Columns kept with the results</dt>
            <dd>{job.columns.length > 0 ? job.columns.join(", ") : "none besides the address"}</dd>
          </div>
        </dl>
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
              <p>
                {job.columns.length > 0 ? "Each file holds your file's columns, then the verdict's, one row per line." : "Each file holds one row per line."} Files are
                named after the list.
              </p>
              <ul class="downloads">
                <li>
                  <a href={results} download>
                    All lines (CSV)
                  </a>
                </li>
                <li>
                  <a href={`${results}&classification=valid`} download>
                    Valid only (CSV)
                  </a>
                </li>
                <li>
                  <a href={`${results}&classification=risky`} download>
                    Risky only (CSV)
                  </a>
                </li>
                <li>
                  <a href={`${results}&classification=invalid`} download>
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
              {!ended ? <ConfirmOpener confirmation={confirmations.cancel} label="Cancel the list" /> : null}
              {!job.results_expired ? <ConfirmOpener confirmation={confirmations.remove} label="Delete the results now" /> : null}
            </div>
            {!ended ? <ConfirmDialog confirmation={confirmations.cancel} /> : null}
            {!job.results_expired ? <ConfirmDialog confirmation={confirmations.remove} /> : null}
          </section>
        ) : null}
      </>,
    );
  }));

  for (const [action, query, done] of [
    ["cancel", "", "The list was cancelled: lines not checked yet will not be."],
    ["delete", "?purge=true", "The results were deleted."],
  ] as const) {
    // The confirmation as a page, for a browser without script (with script it is a dialog on the list's page).
    app.get(`/console/lists/:id/${action}`, asMember<`/console/lists/:id/${typeof action}`>(app, async (c, api, me) => {
      const answer = await api<VerificationJob>("GET", `/v1/email_verification_jobs/${encodeURIComponent(c.req.param("id"))}`);
      const options = { title: action === "cancel" ? "Cancel a list" : "Delete a list's results", current: "/console/lists", member: me.member };
      if (!answer.ok) return page(c, options, <ErrorNote message={`${answer.error?.error ?? "Not found"}. Go back to your lists.`} />);
      const confirmations = listConfirmations(answer.data);
      return page(c, options, <ConfirmSection confirmation={action === "cancel" ? confirmations.cancel : confirmations.remove} />);
    }));
    app.post(`/console/lists/:id/${action}`, async (c) => {
      const api = apiCaller(app, c);
      const id = c.req.param("id");
      const answer = await api<VerificationJob>("DELETE", `/v1/email_verification_jobs/${encodeURIComponent(id)}${query}`);
      if (answer.status === 401) return toSignIn(c);
      return redirectWithNote(c, `/console/lists/${encodeURIComponent(id)}`, answer.ok ? { kind: "done", text: done } : { kind: "error", text: answer.error?.error ?? "Failed" });
    });
  }
}
