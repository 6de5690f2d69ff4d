/**
 * Charts as server-rendered SVG with their numbers in a table beside them: the picture is decoration
 * for sighted readers (aria-hidden), the table is the content; every bar also carries its label and
 * number in text, so colour is never the only signal.
 */
import type { VerificationReason } from "../../../shared/api.ts";

export type Bar = { label: string; value: number; tone?: "good" | "warn" | "bad" };

const BAR_HEIGHT = 22;
const LABEL_WIDTH = 110;
const WIDTH = 360;

export function BarChart(props: { label: string; rows: Bar[]; unit?: string }) {
  const max = Math.max(1, ...props.rows.map((r) => r.value));
  const height = props.rows.length * (BAR_HEIGHT + 6);
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${height}`} width="100%" role="presentation" aria-hidden="true" focusable="false">
        {props.rows.map((row, i) => {
          const y = i * (BAR_HEIGHT + 6);
          const w = Math.round(((WIDTH - LABEL_WIDTH - 60) * row.value) / max);
          return (
            <g>
              <text x={0} y={y + 16} class="chart-label">
                {row.label}
              </text>
              <rect x={LABEL_WIDTH} y={y} width={Math.max(w, row.value > 0 ? 2 : 0)} height={BAR_HEIGHT} class={`bar ${row.tone ?? ""}`} />
              <text x={LABEL_WIDTH + w + 6} y={y + 16} class="chart-label">
                {row.value.toLocaleString("en")}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption>
        <table>
          <caption>{props.label}</caption>
          <tbody>
            {props.rows.map((row) => (
              <tr>
                <th scope="row">{row.label}</th>
                <td>
                  {row.value.toLocaleString("en")}
                  {props.unit ? ` ${props.unit}` : ""}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </figcaption>
    </figure>
  );
}

/** Each reason in plain words (the API's vocabulary, docs/api.md "Reasons"). */
const REASON_WORDS: Record<VerificationReason, string> = {
  syntax: "Not a well-formed address",
  no_mail_domain: "The domain takes no mail",
  mailbox_not_found: "The mailbox does not exist",
  typo: "Looks like a typo of a known domain",
  disposable: "A disposable address",
  catch_all: "The domain accepts every address (catch-all)",
  policy_block: "The mail server refused to say (policy)",
  probe_refused: "Not asked: the mail server refused our checking server",
  temporary_failure: "The mail server answered 'try later'",
  mailbox_full: "The mailbox is full",
  connection_failed: "The mail server could not be reached",
  smtp_inconclusive: "The mail server's answer settled nothing",
  receiver_budget_spent: "Not asked: the receiver's budget was spent",
  provider_forbids_probing: "Not asked: the provider forbids probing",
  dns_failure: "DNS did not answer",
  no_smtp_check: "No mail server check was made",
  deliverable: "The mailbox exists",
};

export function reasonLabel(reason: string): string {
  return REASON_WORDS[reason as VerificationReason] ?? reason;
}
