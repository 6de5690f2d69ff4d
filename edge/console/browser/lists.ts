/**
 * The Lists page's script (docs/console.md "Lists"): a file dropped or chosen, or addresses pasted, are
 * parsed in a Web Worker (list-worker.ts); the page shows the first rows, a column picker (guessed
 * first), the counts and the cost, and on submit uploads the picked column to POST
 * /v1/email_verification_jobs with the session cookie, then opens the job's page. Without this
 * script the form posts to /console/lists instead.
 */
import { JOB_LIMITS } from "../../../shared/job-limits.ts";
import type { Counted, Failed, Parsed, Request } from "./list-worker.ts";

const MAX_ADDRESSES = JOB_LIMITS.maxAddresses;
const MAX_UPLOAD_BYTES = JOB_LIMITS.maxBodyBytes;

const form = document.querySelector<HTMLFormElement>("#list-form");
if (form) enhance(form);

function enhance(form: HTMLFormElement): void {
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  const file = $<HTMLInputElement>("file");
  const paste = $<HTMLTextAreaElement>("paste");
  const drop = $<HTMLDivElement>("drop");
  const preview = $<HTMLDivElement>("preview");
  const column = $<HTMLSelectElement>("column");
  const table = $<HTMLDivElement>("preview-table");
  const figures = $<HTMLDListElement>("figures");
  const status = $<HTMLParagraphElement>("list-status");
  const start = $<HTMLButtonElement>("start");
  const retention = $<HTMLSelectElement>("retention");
  const maxLines = Number(form.dataset["maxLines"] ?? NaN);
  const usedLines = Number(form.dataset["usedLines"] ?? NaN);

  const worker = new Worker("/console/assets/list-worker.js", { type: "module" });
  let parsed: Parsed | null = null;
  let counted: Counted | null = null;
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
  const n = (v: number) => v.toLocaleString("en");

  async function load(input: { file?: File; text?: string }) {
    parsed = null;
    counted = null;
    start.disabled = true;
    say("Reading the list…");
    const answer = await ask({ type: "parse", ...input });
    if (answer.type === "failed") return say(answer.message, true);
    if (answer.type !== "parsed") return;
    parsed = answer;
    column.replaceChildren(
      ...Array.from({ length: Math.max(answer.columns, 1) }, (_, i) => {
        const name = answer.header?.[i]?.trim() || `Column ${i + 1}`;
        const option = new Option(name, String(i), i === answer.guess, i === answer.guess);
        return option;
      }),
    );
    renderPreview(answer);
    preview.hidden = false;
    await recount();
  }

  function renderPreview(p: Parsed) {
    const t = document.createElement("table");
    const caption = t.createCaption();
    caption.textContent = `The first ${p.preview.length} of ${n(p.rows)} rows`;
    const head = t.createTHead().insertRow();
    for (let i = 0; i < p.columns; i++) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = p.header?.[i] ?? `Column ${i + 1}`;
      head.append(th);
    }
    const body = t.createTBody();
    for (const row of p.preview) {
      const tr = body.insertRow();
      for (let i = 0; i < p.columns; i++) tr.insertCell().textContent = row[i] ?? "";
    }
    table.replaceChildren(t);
  }

  async function recount() {
    if (!parsed) return;
    const answer = await ask({ type: "count", column: Number(column.value), hasHeader: parsed.header !== null });
    if (answer.type === "failed") return say(answer.message, true);
    if (answer.type !== "counted") return;
    counted = answer;
    const rows: [string, string][] = [
      ["Lines", n(answer.rows)],
      ["Distinct addresses to check", n(answer.distinct)],
      ["Duplicates (checked once, answered like the first)", n(answer.duplicates)],
      ["Malformed (answered invalid, not checked)", n(answer.malformed)],
      ["Empty cells (answered invalid)", n(answer.empty)],
      ["Cost", "no credits"],
    ];
    if (!Number.isNaN(maxLines)) rows.push(["Daily line allowance left after this list", n(Math.max(0, maxLines - usedLines - answer.rows))]);
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
    if (answer.rows === 0) return say("The list has no addresses in that column.", true);
    // The jobs API's limits (shared/jobs.ts JOB_LIMITS), said before an upload it would refuse.
    if (answer.rows > MAX_ADDRESSES) return say(`This list has ${n(answer.rows)} lines; a list holds at most ${n(MAX_ADDRESSES)}. Split it.`, true);
    if (answer.firstTooLong !== null) return say(`Row ${n(answer.firstTooLong)} of the list: an address is at most ${JOB_LIMITS.maxLineBytes} bytes. Fix or remove that row.`, true);
    if (answer.csv.size > MAX_UPLOAD_BYTES) return say("The addresses of this list come to more than 10 MB. Split it.", true);
    if (!Number.isNaN(maxLines) && usedLines + answer.rows > maxLines) return say(`This list is over what your account may send in 24 hours (${n(maxLines)} lines).`, true);
    start.disabled = false;
    start.textContent = `Start verifying ${n(answer.rows)} lines`;
    say(`Ready: ${n(answer.rows)} lines, ${n(answer.distinct)} distinct addresses to check.`);
  }

  file.addEventListener("change", () => {
    const chosen = file.files?.[0];
    if (chosen) void load({ file: chosen });
  });
  let typing: ReturnType<typeof setTimeout> | undefined;
  paste.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => void load({ text: paste.value }), 300);
  });
  column.addEventListener("change", () => void recount());
  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add("over");
    });
  }
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const dropped = (event as DragEvent).dataTransfer?.files[0];
    if (dropped) void load({ file: dropped });
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!counted) return say("Choose a file or paste addresses first.", true);
    start.disabled = true;
    say("Uploading…");
    const seconds = Number(retention.value) * 86_400;
    const res = await fetch(`/v1/email_verification_jobs?retention_seconds=${seconds}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "text/csv" },
      body: counted.csv,
    });
    const body = (await res.json().catch(() => ({}))) as { id?: string; error?: string };
    if (res.status === 202 && body.id) {
      location.assign(`/console/lists/${body.id}`);
      return;
    }
    start.disabled = false;
    say(res.status === 401 ? "Your session has ended: sign in again, then upload the list." : `The list was not accepted: ${body.error ?? `HTTP ${res.status}`}`, true);
  });
}
