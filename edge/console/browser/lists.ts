/**
 * The Lists page's script (docs/console.md "Lists"): a file dropped or chosen, or addresses pasted, are parsed in a
 * Web Worker (list-worker.ts); the page shows the first rows, the address column the API would pick (changeable), the
 * counts and the cost, and refuses before upload what the API would refuse, in its words: not text, no column of
 * addresses (naming the columns), a line over its bounds, an empty file. On submit it uploads the file itself to POST
 * /v1/email_verification_jobs with the column picked (email_column) and the list's name, so the API keeps every
 * column; pasted addresses go as a JSON list. Then it opens the job's page. Without this script the form posts to
 * /console/lists instead, which hands the file to the same operation.
 */
import { JOB_LIMITS } from "../../../shared/job-limits.ts";
import type { Counted, Failed, Parsed, Request } from "./list-worker.ts";
import { onDroppedFile } from "./drop-zone.ts";

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
  const name = $<HTMLInputElement>("list-name");
  const maxLines = Number(form.dataset["maxLines"] ?? NaN);
  const usedLines = Number(form.dataset["usedLines"] ?? NaN);

  const worker = new Worker("/console/assets/list-worker.js", { type: "module" });
  let parsed: Parsed | null = null;
  let counted: Counted | null = null;
  let chosen: File | null = null;
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
  const columnName = (i: number) => (parsed?.choice.hasHeader !== false && parsed?.first[i]?.trim()) || `Column ${i + 1}`;

  function refuse(text: string) {
    start.disabled = true;
    start.textContent = "Start verifying";
    say(text, true);
  }

  async function load(input: { file?: File; text?: string }) {
    parsed = null;
    counted = null;
    chosen = input.file ?? null;
    start.disabled = true;
    if (input.file && name.value.trim() === "") name.value = input.file.name;
    say("Reading the list…");
    const answer = await ask({ type: "parse", ...input });
    if (answer.type === "failed") {
      preview.hidden = true;
      table.replaceChildren();
      figures.replaceChildren();
      return refuse(answer.message);
    }
    if (answer.type !== "parsed") return;
    parsed = answer;
    if (input.file && answer.columns > 1 && answer.choice.column === null) {
      // The API would refuse this file: say so, naming its columns; a column may still be picked by hand.
      column.replaceChildren(new Option("Pick the column that holds the addresses", "", true, true), ...columnOptions(answer, -1));
    } else column.replaceChildren(...columnOptions(answer, answer.choice.column ?? 0));
    column.disabled = answer.pasted;
    renderPreview(answer);
    preview.hidden = false;
    if (answer.choice.column === null) {
      figures.replaceChildren();
      return refuse(`${answer.noColumn}. Pick the column that holds them, or choose another file.`);
    }
    await recount();
  }

  function columnOptions(p: Parsed, selected: number): HTMLOptionElement[] {
    return Array.from({ length: Math.max(p.columns, 1) }, (_, i) => new Option(columnName(i), String(i), i === selected, i === selected));
  }

  function renderPreview(p: Parsed) {
    const t = document.createElement("table");
    const caption = t.createCaption();
    const lines = p.choice.hasHeader ? p.records - 1 : p.records;
    caption.textContent =
      lines === 0 ? "The file has a header row and no lines below it" : `The first ${n(p.preview.length)} of ${n(lines)} lines${p.choice.hasHeader ? ", below the header row" : ""}`;
    const head = t.createTHead().insertRow();
    for (let i = 0; i < p.columns; i++) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = columnName(i);
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
    if (!parsed || column.value === "") return;
    const picked = Number(column.value);
    const answer = await ask({ type: "count", column: picked });
    if (answer.type === "failed") return refuse(answer.message);
    if (answer.type !== "counted") return;
    counted = answer;
    const rows: [string, string][] = [
      ["Lines", n(answer.rows)],
      ["Distinct addresses to check", n(answer.distinct)],
      ["Duplicates (checked once, answered like the first)", n(answer.duplicates)],
      ["Malformed (answered invalid, not checked)", n(answer.malformed)],
      ["Empty cells (answered invalid)", n(answer.empty)],
      ["Columns kept with the results", parsed.pasted ? "none (pasted addresses)" : parsed.columns > 1 ? `all ${n(parsed.columns)}` : "the address alone"],
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
    if (answer.rows === 0) return refuse(parsed.pasted ? "Nothing was pasted yet." : "The file has a header row and no lines below it: there is nothing to check.");
    if (!parsed.pasted && answer.addressLike === 0) return refuse(`The column “${columnName(picked)}” holds no email addresses. Pick the column that holds them.`);
    // The jobs API's limits (shared/job-limits.ts), said before an upload it would refuse.
    if (answer.rows > MAX_ADDRESSES) return refuse(`This list has ${n(answer.rows)} lines; a list holds at most ${n(MAX_ADDRESSES)}. Split it.`);
    if (answer.firstTooLong !== null) return refuse(`Line ${n(answer.firstTooLong)} of the list: an address is at most ${JOB_LIMITS.maxLineBytes} bytes. Fix or remove that line.`);
    if (chosen && chosen.size > MAX_UPLOAD_BYTES) return refuse("This file is over 10 MB. Split it.");
    if (!Number.isNaN(maxLines) && usedLines + answer.rows > maxLines) return refuse(`This list is over what your account may send in 24 hours (${n(maxLines)} lines).`);
    start.disabled = false;
    start.textContent = `Start verifying ${n(answer.rows)} lines`;
    const where = parsed.pasted ? "" : `, addresses in the column “${columnName(picked)}”; every column comes back with the results`;
    say(`Ready: ${n(answer.rows)} lines, ${n(answer.distinct)} distinct addresses to check${where}.`);
  }

  file.addEventListener("change", () => {
    const picked = file.files?.[0];
    if (picked) void load({ file: picked });
  });
  // A file chosen (or text pasted) before this script ran, or kept by the browser on going back: read it now.
  const early = file.files?.[0];
  if (early) void load({ file: early });
  else if (paste.value.trim() !== "") void load({ text: paste.value });
  let typing: ReturnType<typeof setTimeout> | undefined;
  paste.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => void load({ text: paste.value }), 300);
  });
  column.addEventListener("change", () => void recount());
  onDroppedFile(drop, (file) => void load({ file }));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!counted || !parsed || start.disabled) return say("Choose a file or paste addresses first.", true);
    start.disabled = true;
    say("Uploading…");
    const listName = name.value.trim() || (chosen ? chosen.name : "Pasted addresses");
    const query = new URLSearchParams({ retention_seconds: String(Number(retention.value) * 86_400), name: listName });
    // The file as it is (the API keeps its every column), its address column by number; pasted lines as a JSON list.
    if (chosen) query.set("email_column", String(Number(column.value) + 1));
    const res = await fetch(`/v1/email_verification_jobs?${query.toString()}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": chosen ? "text/csv" : "application/json" },
      body: chosen ?? JSON.stringify({ email_addresses: counted.addresses }),
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
