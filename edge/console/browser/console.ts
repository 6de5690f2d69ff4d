/**
 * Small enhancements every console page may use: copy buttons (data-copy names the input to copy); confirmations
 * (edge/console/confirm.tsx: a link with data-dialog opens the named <dialog> as a modal instead of the confirmation's
 * page; focus goes to its Cancel, back to the link when it closes; Escape closes it, as a modal dialog does); and live
 * progress of unfinished lists (data-job), read from GET /v1/email_verification_jobs/{id} every two seconds; a list's
 * own page reloads when its list ends, to show the summary.
 */
export {};

for (const opener of document.querySelectorAll<HTMLAnchorElement>("a[data-dialog]")) {
  const dialog = document.getElementById(opener.dataset["dialog"] ?? "");
  // Without a dialog to open (or a browser without them), the link leads to the confirmation's page.
  if (!(dialog instanceof HTMLDialogElement) || typeof dialog.showModal !== "function") continue;
  opener.addEventListener("click", (event) => {
    event.preventDefault();
    dialog.showModal();
  });
  dialog.addEventListener("close", () => opener.focus());
}
for (const button of document.querySelectorAll<HTMLButtonElement>("dialog button[data-close]")) {
  button.addEventListener("click", () => button.closest("dialog")?.close());
}

for (const button of document.querySelectorAll<HTMLButtonElement>("button[data-copy]")) {
  button.addEventListener("click", async () => {
    const input = document.getElementById(button.dataset["copy"] ?? "") as HTMLInputElement | null;
    if (!input) return;
    input.select();
    try {
      await navigator.clipboard.writeText(input.value);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Selected: press Ctrl+C";
    }
  });
}

type Job = { status: string; processed: number; total: number; queue: { estimated_completion_at: string | null } };
const onJobPage = /^\/console\/lists\/job_/.test(location.pathname);

for (const box of document.querySelectorAll<HTMLElement>("[data-job]")) {
  const id = box.dataset["job"]!;
  const bar = box.querySelector("progress")!;
  const text = box.querySelector(".progress-text")!;
  const tick = async () => {
    const res = await fetch(`/v1/email_verification_jobs/${id}`, { credentials: "same-origin" });
    if (!res.ok) return;
    const job = (await res.json()) as Job;
    bar.max = Math.max(job.total, 1);
    bar.value = job.processed;
    const eta = job.queue.estimated_completion_at ? ` · done around ${job.queue.estimated_completion_at.slice(11, 19)} UTC` : "";
    text.textContent = `${job.processed.toLocaleString("en")} of ${job.total.toLocaleString("en")} checked · ${job.status}${eta}`;
    if (job.status === "completed" || job.status === "cancelled") {
      if (onJobPage) location.reload();
      return;
    }
    setTimeout(() => void tick(), 2000);
  };
  setTimeout(() => void tick(), 1000);
}
