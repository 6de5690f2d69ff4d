/**
 * Enrich a list (docs/console.md "Enrich a list"), a section of the Lists page and a page per lookup job: drop a CSV or
 * JSON Lines file, see the identifier columns guessed (and change them), the repeats, the invalid lines and the most it
 * can cost before anything is sent (edge/console/browser/enrich.ts, parsing in a Web Worker with the API's own rules),
 * then the job through POST /v1/lookup_jobs. Without script the same form posts the file to /console/lists/enrich, which
 * hands it to that same API operation unchanged. A job's page: live progress, why it is paused, counts, credits,
 * downloads, cancel, delete.
 */
import type { Hono } from "hono";
import type { AccountInfo } from "../../../shared/api.ts";
import { LOOKUP_FIELDS } from "../../../shared/identifiers.ts";
import { LOOKUP_JOB_LIMITS, LOOKUP_JOBS_PATH, type LookupJob } from "../../../shared/lookup-jobs.ts";
import type { AppEnv } from "../../env.ts";
import { redirectWithNote, takeNote } from "../../identity/session-notes.ts";
import { apiCaller, type ApiAnswer } from "../api.ts";
import { DataTable, ErrorNote, NoteShown, page, When } from "../layout.tsx";
import { asMember, toSignIn } from "../session.tsx";

const number = (n: number) => n.toLocaleString("en");
const RETENTION_DAYS = [1, 7, 30];

/** What the Lists page needs of the lookup jobs: read alongside its own calls. */
export const enrichReads = (can: (scope: "people:read") => boolean, api: <T>(method: string, path: string) => Promise<ApiAnswer<T>>) =>
  can("people:read") ? api<{ jobs: LookupJob[] }>("GET", `${LOOKUP_JOBS_PATH}?limit=50`) : Promise.resolve(null);

function statusText(job: LookupJob): string {
  if (job.status === "paused" && job.pause) return `paused: ${job.pause.message}`;
  if (job.verification?.state === "verifying") return "verifying the addresses found";
  return job.status;
}

function Progress(props: { job: LookupJob }) {
  const { job } = props;
  const ended = job.status === "completed" || job.status === "cancelled";
  return (
    <div class="progress" data-lookup-job={ended ? undefined : job.id}>
      <progress max={Math.max(job.total, 1)} value={job.processed} aria-label={`Progress of ${job.id}`}></progress>
      <span class="progress-text">
        {number(job.processed)} of {number(job.total)} looked up · {statusText(job)}
      </span>
    </div>
  );
}

/** The Lists page's section: the form with its preview, and the account's lookup jobs. */
export function EnrichSection(props: { jobs: ApiAnswer<{ jobs: LookupJob[] }> | null; account: AccountInfo | null; cost: number }) {
  const { jobs, account } = props;
  return (
    <>
      <section aria-labelledby="enrich">
        <h2 id="enrich">Enrich a list</h2>
        <form id="enrich-form" method="post" action="/console/lists/enrich" enctype="multipart/form-data" data-cost={String(props.cost)} data-balance={account ? String(account.credit_balance) : undefined}>
          <div class="drop" id="enrich-drop">
            <label for="enrich-file">CSV or JSON Lines file of people (up to 32 MiB, 100,000 lines)</label>
            <input type="file" id="enrich-file" name="file" accept=".csv,.jsonl,.ndjson,.txt,text/csv,application/jsonl" aria-describedby="enrich-hint" />
            <p id="enrich-hint" class="hint">
              A header row naming a column profnet_id, profnet_public_identifier, codehost_id or codehost_login is read for it, and so are a CRM's columns: an email, a phone (with its
              country), and a name (full, or first and last) with a company or its website. Change the columns in the preview. Your other columns come back in the results.
            </p>
          </div>
          <div id="enrich-preview" hidden>
            <h3>Preview</h3>
            <fieldset>
              <legend>Columns read</legend>
              {LOOKUP_FIELDS.map((name) => (
                <div>
                  <label for={`enrich-column-${name}`}>{name}</label>
                  <select id={`enrich-column-${name}`} data-identifier={name}></select>
                </div>
              ))}
            </fieldset>
            <div class="table-wrap" id="enrich-table" tabindex={0} role="region" aria-label="Preview of the first lines of the list to enrich"></div>
            <dl class="figures" id="enrich-figures" aria-live="polite"></dl>
          </div>
          <div class="check">
            <input type="checkbox" id="enrich-verify" name="verify_emails" value="true" />
            <label for="enrich-verify">Also verify each address found (a verification of ours from the last week is used as it is)</label>
          </div>
          <label for="enrich-retention">Keep the results for</label>
          <select id="enrich-retention" name="retention_days">
            {RETENTION_DAYS.map((days) => (
              <option value={String(days)} selected={days === 30}>
                {days === 1 ? "1 day" : `${days} days`}
              </option>
            ))}
          </select>
          <p class="hint" id="enrich-cost">
            Each line that finds someone costs {props.cost === 1 ? "1 credit" : `${props.cost} credits`}, a person once per list; lines that find nobody cost nothing.
            {account ? ` Your balance: ${number(account.credit_balance)} credits.` : ""} When the credits run out the list pauses, and goes on by itself once credits are added.
          </p>
          <p id="enrich-status" role="status" aria-live="polite"></p>
          <button type="submit" id="enrich-start">
            Start enriching
          </button>
        </form>
      </section>
      <section aria-labelledby="your-enrichments">
        <h2 id="your-enrichments">Your enriched lists</h2>
        <ErrorNote message={jobs?.error?.error} />
        {jobs?.ok && jobs.data.jobs.length === 0 ? <p>No enriched lists yet.</p> : null}
        {jobs?.ok && jobs.data.jobs.length > 0 ? (
          <DataTable
            label="Your enriched lists, newest first"
            head={
              <>
                <th scope="col">List</th>
                <th scope="col">Started</th>
                <th scope="col">Progress</th>
                <th scope="col">Found</th>
                <th scope="col">Not found</th>
                <th scope="col">Credits</th>
              </>
            }
          >
            {jobs.data.jobs.map((job) => (
              <tr>
                <th scope="row">
                  <a href={`/console/enrichments/${job.id}`}>{job.id}</a>
                </th>
                <td>
                  <When at={job.created_at} />
                </td>
                <td>
                  <Progress job={job} />
                </td>
                <td>{number(job.counts.found)}</td>
                <td>{number(job.counts.not_found)}</td>
                <td>{number(job.credits.charged)}</td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </section>
    </>
  );
}

const FORMAT_BY_NAME = (name: string) => (/\.(jsonl|ndjson)$/i.test(name) ? "application/jsonl" : "text/csv");

export function registerEnrichPages(app: Hono<AppEnv>): void {
  // The form without script: the file goes to the API as it is, the columns guessed there.
  app.post("/console/lists/enrich", async (c) => {
    const api = apiCaller(app, c);
    const form = await c.req.parseBody();
    const file = form["file"];
    if (!(file instanceof File) || file.size === 0) return redirectWithNote(c, "/console/lists", { kind: "error", text: "Choose a file of people to enrich." });
    const days = Number(form["retention_days"] ?? 30);
    const query = new URLSearchParams({ retention_seconds: String(RETENTION_DAYS.includes(days) ? days * 86_400 : 2_592_000) });
    if (form["verify_emails"] === "true") query.set("verify_emails", "true");
    const created = await api<LookupJob>("POST", `${LOOKUP_JOBS_PATH}?${query}`, { file: await file.text(), type: FORMAT_BY_NAME(file.name) });
    if (created.status === 401) return toSignIn(c);
    if (!created.ok) return redirectWithNote(c, "/console/lists", { kind: "error", text: created.error?.error ?? "The list was not accepted" });
    return c.redirect(`/console/enrichments/${created.data.id}`, 303);
  });

  app.get("/console/enrichments/:id", asMember<"/console/enrichments/:id">(app, async (c, api, me) => {
    const id = c.req.param("id");
    const [answer, note] = await Promise.all([api<LookupJob>("GET", `${LOOKUP_JOBS_PATH}/${encodeURIComponent(id)}`), takeNote(c)]);
    if (!answer.ok) {
      return page(c, { title: "Enriched list not found", current: "/console/lists", member: me.member }, <ErrorNote message={`${answer.error?.error ?? "Not found"}. Go back to your lists.`} />);
    }
    const job = answer.data;
    const ended = job.status === "completed" || job.status === "cancelled";
    const results = `${LOOKUP_JOBS_PATH}/${job.id}/results`;
    const counts: [string, number][] = [
      ["Found", job.counts.found],
      ["Not found", job.counts.not_found],
      ["Invalid lines", job.counts.invalid],
      ["Waiting for credits", job.counts.refused],
      ["Erased since", job.counts.erased],
    ];
    return page(
      c,
      { title: `Enriched list ${job.id}`, current: "/console/lists", member: me.member, scripts: ["enrich.js"] },
      <>
        <NoteShown note={note} />
        <Progress job={job} />
        {job.pause ? (
          <p role="status" class="error">
            Paused since <When at={job.pause.since} />: {job.pause.message}
          </p>
        ) : null}
        <section aria-labelledby="lookup-counts">
          <h2 id="lookup-counts">Counts</h2>
          <DataTable label="Lines by outcome" captionShown head={<><th scope="col">Outcome</th><th scope="col">Lines</th></>}>
            {counts.map(([label, n]) => (
              <tr>
                <th scope="row">{label}</th>
                <td>{number(n)}</td>
              </tr>
            ))}
          </DataTable>
          <p>
            Credits charged: {number(job.credits.charged)} of at most {number(job.credits.max)} ({job.credits.cost_per_line} per person found).
            {job.verification ? ` Addresses verified: ${job.verification.state}${job.verification.stored_verdicts_used ? `, ${number(job.verification.stored_verdicts_used)} from a recent verification of ours` : ""}.` : ""}
          </p>
        </section>
        <section aria-labelledby="lookup-downloads">
          <h2 id="lookup-downloads">Download</h2>
          {job.results_expired ? (
            <p>The results were deleted; the counts above stay.</p>
          ) : (
            <ul class="downloads">
              <li>
                <a href={`${results}?format=csv`} download={`${job.id}-all.csv`}>
                  All lines, your columns first (CSV)
                </a>
              </li>
              <li>
                <a href={`${results}?format=csv&status=found`} download={`${job.id}-found.csv`}>
                  Found only (CSV)
                </a>
              </li>
              <li>
                <a href={`${results}?format=csv&status=not_found,invalid`} download={`${job.id}-not-found.csv`}>
                  Not found or invalid (CSV)
                </a>
              </li>
              <li>
                <a href={`${results}?format=jsonl`} download={`${job.id}.jsonl`}>
                  All lines (JSON Lines)
                </a>
              </li>
            </ul>
          )}
        </section>
        {me.can("people:read") ? (
          <section aria-labelledby="lookup-actions">
            <h2 id="lookup-actions">Actions</h2>
            <div class="actions">
              {!ended ? (
                <form method="post" action={`/console/enrichments/${job.id}/cancel`}>
                  <button type="submit">Cancel the list</button>
                </form>
              ) : null}
              {!job.results_expired ? (
                <form method="post" action={`/console/enrichments/${job.id}/delete`}>
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
    ["cancel", "", "The list was cancelled: nothing more is looked up or charged."],
    ["delete", "?purge=true", "The results were deleted."],
  ] as const) {
    app.post(`/console/enrichments/:id/${action}`, async (c) => {
      const api = apiCaller(app, c);
      const id = c.req.param("id");
      const answer = await api<LookupJob>("DELETE", `${LOOKUP_JOBS_PATH}/${encodeURIComponent(id)}${query}`);
      if (answer.status === 401) return toSignIn(c);
      return redirectWithNote(c, `/console/enrichments/${encodeURIComponent(id)}`, answer.ok ? { kind: "done", text: done } : { kind: "error", text: answer.error?.error ?? "Failed" });
    });
  }
}

/** The Lists form's body bound for the enrich form: the lookup jobs API's, and a few fields. */
export const ENRICH_FORM_MAX_BYTES = LOOKUP_JOB_LIMITS.maxBodyBytes + 64 * 1024;
