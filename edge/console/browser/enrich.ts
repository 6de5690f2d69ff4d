/**
 * "Enrich a list" (docs/console.md): a file chosen or dropped is parsed in a Web Worker (enrich-worker.ts); the page
 * shows its first rows, the identifier columns guessed (one picker per identifier, to change them), the lines, the
 * invalid and repeated ones and the most the list can cost against the balance; on submit the file goes as it is to
 * POST /v1/lookup_jobs with the session cookie (the columns named when they were changed), then the job's page opens.
 * Without this script the form posts to /console/lists/enrich. Also: live progress of unfinished lookup jobs
 * (data-lookup-job), read from GET /v1/lookup_jobs/{id} every two seconds; a job's page reloads when it ends.
 */
import { LOOKUP_FIELDS, type LookupField } from "../../../shared/identifiers.ts";
import { LOOKUP_JOB_LIMITS } from "../../../shared/lookup-job-limits.ts";
import type { Columns, Counted, Failed, Parsed, Request } from "./enrich-worker.ts";
import { onDroppedFile } from "./drop-zone.ts";

type Job = { status: string; processed: number; total: number; pause: { message: string } | null; verification: { state: string } | null };
const n = (v: number) => v.toLocaleString("en");

const onJobPage = /^\/console\/enrichments\/lkj_/.test(location.pathname);
for (const box of document.querySelectorAll<HTMLElement>("[data-lookup-job]")) {
  const id = box.dataset["lookupJob"]!;
  const bar = box.querySelector("progress")!;
  const text = box.querySelector(".progress-text")!;
  const tick = async () => {
    const res = await fetch(`/v1/lookup_jobs/${id}`, { credentials: "same-origin" });
    if (!res.ok) return;
    const job = (await res.json()) as Job;
    bar.max = Math.max(job.total, 1);
    bar.value = job.processed;
    const state = job.pause ? `paused: ${job.pause.message}` : job.verification?.state === "verifying" ? "verifying the addresses found" : job.status;
    text.textContent = `${n(job.processed)} of ${n(job.total)} looked up · ${state}`;
    if (job.status === "completed" || job.status === "cancelled") {
      if (onJobPage) location.reload();
      return;
    }
    setTimeout(() => void tick(), 2000);
  };
  setTimeout(() => void tick(), 1000);
}

const form = document.querySelector<HTMLFormElement>("#enrich-form");
if (form) enhance(form);

function enhance(form: HTMLFormElement): void {
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  const file = $<HTMLInputElement>("enrich-file");
  const drop = $<HTMLDivElement>("enrich-drop");
  const preview = $<HTMLDivElement>("enrich-preview");
  const table = $<HTMLDivElement>("enrich-table");
  const figures = $<HTMLDListElement>("enrich-figures");
  const status = $<HTMLParagraphElement>("enrich-status");
  const start = $<HTMLButtonElement>("enrich-start");
  const verify = $<HTMLInputElement>("enrich-verify");
  const retention = $<HTMLSelectElement>("enrich-retention");
  const pickers = new Map(LOOKUP_FIELDS.map((name) => [name, $<HTMLSelectElement>(`enrich-column-${name}`)]));
  const cost = Number(form.dataset["cost"] ?? 1);
  const balance = Number(form.dataset["balance"] ?? NaN);

  const worker = new Worker("/console/assets/enrich-worker.js", { type: "module" });
  let chosen: File | null = null;
  let parsed: Parsed | null = null;
  let counted: Counted | null = null;
  let changed = false;
  let pending: ((m: Parsed | Counted | Failed) => void) | null = null;
  worker.onmessage = (event: MessageEvent<Parsed | Counted | Failed>) => pending?.(event.data);
  const ask = (request: Request) =>
    new Promise<Parsed | Counted | Failed>((resolve) => {
      pending = resolve;
      worker.postMessage(request);
    });
  const say = (text: string, isError = false) => {
    status.textContent = text;
    status.className = isError ? "error" : "";
  };
  const picked = (): Columns => {
    const columns: Columns = {};
    for (const [name, select] of pickers) if (select.value !== "") columns[name] = Number(select.value);
    return columns;
  };

  async function load(input: File) {
    chosen = input;
    parsed = null;
    counted = null;
    changed = false;
    start.disabled = true;
    if (input.size > LOOKUP_JOB_LIMITS.maxBodyBytes) return say(`This file is ${n(Math.ceil(input.size / 1024 / 1024))} MiB; a list is at most 32 MiB. Split it.`, true);
    say("Reading the list…");
    const answer = await ask({ type: "parse", file: input });
    if (answer.type === "failed") return say(answer.message, true);
    if (answer.type !== "parsed") return;
    parsed = answer;
    for (const [name, select] of pickers) {
      const guess = answer.guess[name];
      select.replaceChildren(new Option("(not read)", "", guess === undefined, guess === undefined), ...answer.columns.map((column, i) => new Option(column || `Column ${i + 1}`, String(i), i === guess, i === guess)));
    }
    renderPreview(answer);
    preview.hidden = false;
    await recount();
  }

  function renderPreview(p: Parsed) {
    const t = document.createElement("table");
    t.createCaption().textContent = `The first ${p.preview.length} of ${n(p.rows)} lines`;
    const head = t.createTHead().insertRow();
    for (const [i, column] of p.columns.entries()) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = column || `Column ${i + 1}`;
      head.append(th);
    }
    const body = t.createTBody();
    for (const row of p.preview) {
      const tr = body.insertRow();
      for (let i = 0; i < p.columns.length; i++) tr.insertCell().textContent = row[i] ?? "";
    }
    table.replaceChildren(t);
  }

  async function recount() {
    if (!parsed) return;
    start.disabled = true;
    const columns = picked();
    if (Object.keys(columns).length === 0) return say("Pick at least one identifier column: the list has none the API would read.", true);
    const answer = await ask({ type: "count", columns });
    if (answer.type !== "counted") return say(answer.type === "failed" ? answer.message : "", true);
    counted = answer;
    const most = (answer.wellFormed - answer.repeated) * cost;
    const rows: [string, string][] = [
      ["Lines", n(answer.lines)],
      ["Repeats (a person is charged once per list)", n(answer.repeated)],
      ["Invalid (answered, never charged)", n(answer.invalid)],
      ["The most it can cost", `${n(most)} credits`],
    ];
    if (!Number.isNaN(balance)) rows.push(["Your balance", `${n(balance)} credits`]);
    figures.replaceChildren(
      ...rows.map(([term, value]) => {
        const div = document.createElement("div");
        const dt = document.createElement("dt");
        dt.textContent = term;
        const dd = document.createElement("dd");
        dd.textContent = value;
        div.append(dt, dd);
        return div;
      }),
    );
    if (answer.lines === 0) return say("The list has no lines.", true);
    if (answer.lines > LOOKUP_JOB_LIMITS.maxLines) return say(`This list has ${n(answer.lines)} lines; a list holds at most ${n(LOOKUP_JOB_LIMITS.maxLines)}. Split it.`, true);
    start.disabled = false;
    const lines = `${n(answer.lines)} line${answer.lines === 1 ? "" : "s"}`;
    start.textContent = `Start enriching ${lines}`;
    const short = !Number.isNaN(balance) && most > balance ? ` Your balance covers ${n(balance)}: the list pauses there until credits are added.` : "";
    say(`Ready: ${lines}, at most ${n(most)} credit${most === 1 ? "" : "s"}.${short}`);
  }

  file.addEventListener("change", () => {
    const one = file.files?.[0];
    if (one) void load(one);
  });
  // A file chosen before this script ran (a slow connection, a form the browser restored) is read as if just chosen.
  const early = file.files?.[0];
  if (early) void load(early);
  for (const select of pickers.values()) {
    select.addEventListener("change", () => {
      changed = true;
      void recount();
    });
  }
  onDroppedFile(drop, (file) => void load(file));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!chosen || !parsed || !counted) return say("Choose a file of people first.", true);
    start.disabled = true;
    say("Uploading…");
    const query = new URLSearchParams({ retention_seconds: String(Number(retention.value) * 86_400) });
    if (verify.checked) query.set("verify_emails", "true");
    // Named only when changed: otherwise the API guesses them as the preview did.
    if (changed) for (const [name, index] of Object.entries(picked()) as [LookupField, number][]) query.set(`${name}_column`, parsed.columns[index]!);
    const res = await fetch(`/v1/lookup_jobs?${query}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": parsed.format === "csv" ? "text/csv" : "application/jsonl" },
      body: chosen,
    });
    const body = (await res.json().catch(() => ({}))) as { id?: string; error?: string };
    if (res.status === 202 && body.id) {
      location.assign(`/console/enrichments/${body.id}`);
      return;
    }
    start.disabled = false;
    say(res.status === 401 ? "Your session has ended: sign in again, then upload the list." : `The list was not accepted: ${body.error ?? `HTTP ${res.status}`}`, true);
  });
}
