/**
 * Bounce feedback (POST /v1/email_feedback, docs/api.md): a member pastes, or uploads, what their mail to addresses did,
 * one report a line: `address,outcome,occurred_at[,smtp reply]`, a header line allowed. The page sends them to the API as
 * one call, which checks every report before it stores any, and redirects back (POST-redirect-GET) with what it said:
 * how many were received, or the first thing wrong, named by its line.
 */
import type { Hono } from "hono";
import type { AppEnv } from "../../env.ts";
import { redirectWithNote, takeNote } from "../../identity/session-notes.ts";
import { NoteShown, page } from "../layout.tsx";
import { asMember, toSignIn } from "../session.tsx";

const OUTCOMES = "hard_bounce, soft_bounce, delivered, replied or complaint";

/** One line of CSV, split at commas outside double quotes. */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === '"') {
      if (quoted && line[i + 1] === '"') (cell += '"'), i++;
      else quoted = !quoted;
    } else if (ch === "," && !quoted) out.push(cell.trim()), (cell = "");
    else cell += ch;
  }
  out.push(cell.trim());
  return out;
}

type Parsed = { reports: Record<string, string>[]; lines: number[] };

/** The reports of the text, each with its line number; a first line naming the columns is a header. */
export function parseFeedbackText(text: string): Parsed {
  const reports: Record<string, string>[] = [];
  const lines: number[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    const [email_address = "", outcome = "", occurred_at = "", ...reply] = cells(line);
    if (reports.length === 0 && lines.length === 0 && /^e-?mail/i.test(email_address) && !email_address.includes("@")) return;
    const report: Record<string, string> = { email_address, outcome, occurred_at };
    if (reply.length > 0 && reply.join(",") !== "") report["smtp_reply"] = reply.join(",");
    reports.push(report);
    lines.push(i + 1);
  });
  return { reports, lines };
}

export function registerFeedbackPages(app: Hono<AppEnv>): void {
  app.get("/console/feedback", asMember(app, async (c, _api, me) => {
    const note = await takeNote(c);
    return page(
      c,
      { title: "Bounce feedback", current: "/console/feedback", member: me.member },
      <>
        <NoteShown note={note} />
        <p>
          Tell us what your mail to addresses did: a hard bounce moves the address to the front of our re-verification, and
          deliveries settle addresses a catch-all server cannot. Free. No single account's reports change what others see.
        </p>
        {me.can("feedback:write") ? (
          <form method="post" action="/console/feedback" enctype="multipart/form-data">
            <label for="feedback-file">CSV file</label>
            <input type="file" id="feedback-file" name="file" accept=".csv,.txt,text/csv,text/plain" aria-describedby="feedback-hint" />
            <label for="feedback-paste">Or paste reports, one per line</label>
            <textarea id="feedback-paste" name="paste" rows={6} spellcheck={false} autocomplete="off" aria-describedby="feedback-hint"></textarea>
            <p id="feedback-hint" class="hint">
              Each line: address, outcome ({OUTCOMES}), when it happened (such as 2026-11-26T14:03:00Z), and the server's reply if you
              have it. Up to 1,000 lines; a first line of column names is skipped. Nothing is stored unless every line is right.
            </p>
            <button type="submit">Send feedback</button>
          </form>
        ) : (
          <p>Your role cannot send feedback.</p>
        )}
      </>,
    );
  }));

  app.post("/console/feedback", asMember(app, async (c, api) => {
    const form = await c.req.parseBody();
    const file = form["file"];
    const text = file instanceof File && file.size > 0 ? await file.text() : typeof form["paste"] === "string" ? form["paste"] : "";
    const { reports, lines } = parseFeedbackText(text);
    if (reports.length === 0) return redirectWithNote(c, "/console/feedback", { kind: "error", text: "Choose a file or paste at least one report." });
    const sent = await api<{ received: number }>("POST", "/v1/email_feedback", { json: { feedback: reports } });
    if (sent.status === 401) return toSignIn(c);
    if (!sent.ok) {
      // The API names a report by its place in the list: say which line of what was given it is.
      const said = (sent.error?.error ?? "The feedback was not accepted").replace(/^feedback\[(\d+)\](\.?)/, (_, i: string, dot: string) => `Line ${lines[Number(i)] ?? Number(i) + 1}${dot ? "," : ""} `).replace(/  +/g, " ");
      return redirectWithNote(c, "/console/feedback", { kind: "error", text: `${said}. Nothing was stored.` });
    }
    const n = sent.data.received;
    return redirectWithNote(c, "/console/feedback", { kind: "done", text: `${n} report${n === 1 ? "" : "s"} received. Thank you.` });
  }));
}
