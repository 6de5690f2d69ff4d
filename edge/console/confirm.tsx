/**
 * Care on destructive actions (docs/console.md "Confirmations"): revoking a key or an invite, deleting a list's results,
 * cancelling a list, removing a member or a passkey first says what will happen, and only a second, deliberate action
 * does it. One confirmation, two forms of it:
 *
 * - with script, a modal <dialog> (edge/console/browser/console.ts opens it with showModal): labelled by its heading and
 *   described by what will happen, focus on Cancel (the harmless choice) when it opens and back on the button that
 *   opened it when it closes, Escape closes it; the page behind is inert while it is open;
 * - without script, the opener is a link to the same confirmation as a page (GET), whose form does the action (POST,
 *   then a redirect with a one-time note, as every console form).
 */
import type { Child } from "hono/jsx";

export type Confirmation = {
  /** The dialog's id, unique on its page; the opener names it in data-dialog. */
  id: string;
  /** The question, e.g. "Revoke the key “CRM sync”?". */
  title: string;
  /** What will happen, in a sentence or two: the dialog's description. */
  consequence: Child;
  /** Where the action is posted. */
  action: string;
  /** The confirming button's words, e.g. "Revoke the key". */
  confirm: string;
  /** The same confirmation as a page, for a browser without script (GET). */
  page: string;
  /** Where that page's Cancel leads. */
  back: string;
  /** Form fields that go with the action (a choice to make on the way), their ids prefixed with `id`. */
  fields?: Child;
};

/** The button that asks: a link to the confirmation's page, which the script turns into opening its dialog. */
export function ConfirmOpener(props: { confirmation: Confirmation; label: string; accessibleName?: string }) {
  const c = props.confirmation;
  return (
    <a class="button danger" href={c.page} data-dialog={c.id} aria-haspopup="dialog" aria-label={props.accessibleName}>
      {props.label}
    </a>
  );
}

/** The confirmation as a modal dialog, closed until its opener is used. */
export function ConfirmDialog(props: { confirmation: Confirmation }) {
  const c = props.confirmation;
  return (
    <dialog id={c.id} class="confirm" aria-labelledby={`${c.id}-title`} aria-describedby={`${c.id}-what`}>
      <h2 id={`${c.id}-title`}>{c.title}</h2>
      <div id={`${c.id}-what`}>{c.consequence}</div>
      <form method="post" action={c.action}>
        {c.fields}
        <div class="actions">
          <button type="button" data-close autofocus>
            Cancel
          </button>
          <button type="submit" class="danger">
            {c.confirm}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** The confirmation as a page's content, for a browser without script. */
export function ConfirmSection(props: { confirmation: Confirmation }) {
  const c = props.confirmation;
  return (
    <section aria-labelledby={`${c.id}-title`}>
      <h2 id={`${c.id}-title`}>{c.title}</h2>
      <div id={`${c.id}-what`}>{c.consequence}</div>
      <form method="post" action={c.action}>
        {c.fields}
        <div class="actions">
          <button type="submit" class="danger">
            {c.confirm}
          </button>
          <a class="button secondary" href={c.back}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}
