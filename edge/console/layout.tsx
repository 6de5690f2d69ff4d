/**
 * The console's page frame: one stylesheet, one small script (edge/console/browser/console.ts) and the icon, all
 * from Workers static assets; every <script> carries the request's CSP nonce. A skip link, one <main>
 * and one <h1> per page, and the navigation as a list of links (only the pages the member's role can use),
 * so a keyboard or screen reader user finds the same structure on every page.
 */
import type { SessionNote } from "../identity/session-notes.ts";
import { ROLE_SCOPES, type Role } from "../../shared/roles.ts";
import type { Scope } from "../../shared/scopes.ts";
import type { Child } from "hono/jsx";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";

/** A page of the menu, and the scope its page's reads need (none: every member's, as their own passkeys are). */
export type NavItem = { href: string; label: string; scope: Scope | null };

export const NAV: NavItem[] = [
  { href: "/console", label: "Overview", scope: "account:read" },
  { href: "/console/lists", label: "Lists", scope: "jobs:read" },
  { href: "/console/check", label: "Check an address", scope: "verifications:write" },
  { href: "/console/find", label: "Find an address", scope: "people:read" },
  { href: "/console/people", label: "Look up a person", scope: "people:read" },
  { href: "/console/feedback", label: "Bounce feedback", scope: "feedback:write" },
  { href: "/console/keys", label: "Keys", scope: "account:read" },
  { href: "/console/members", label: "Members", scope: null },
  { href: "/console/usage", label: "Usage", scope: "account:read" },
  { href: "/console/erasures", label: "Erasures", scope: "people:read" },
  { href: "/console/audit", label: "Audit", scope: "audit:read" },
];

/** The menu a role sees: the pages it can use (shared/roles.ts, the table the API checks a session against). */
export function navFor(role: Role): NavItem[] {
  const scopes = ROLE_SCOPES[role];
  return NAV.filter((item) => item.scope === null || scopes.includes(item.scope));
}

export type PageOptions = {
  title: string;
  /** The path of the nav item this page belongs to; none for pages outside the signed-in console. */
  current?: string;
  /** Who is signed in, shown in the header with the sign-out button; their role decides the menu. */
  member?: { name: string; role: Role };
  /** Extra scripts (module files under /console/assets/). */
  scripts?: string[];
};

export function nonceOf(c: Context<AppEnv>): string {
  return (c.get("secureHeadersNonce" as never) as string | undefined) ?? "";
}

export function page(c: Context<AppEnv>, options: PageOptions, body: Child) {
  const nonce = nonceOf(c);
  const scripts = ["console.js", ...(options.scripts ?? [])];
  return c.html(
    "<!doctype html>" +
      (
        <html lang="en">
          <head>
            <meta charset="utf-8" />
            <meta name="viewport" content="width=device-width, initial-scale=1" />
            <title>{`${options.title} · Console`}</title>
            <link rel="stylesheet" href="/console/assets/console.css" />
            <link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml" />
            {scripts.map((name) => (
              <script type="module" src={`/console/assets/${name}`} nonce={nonce}></script>
            ))}
          </head>
          <body>
            <a class="skip" href="#main">
              Skip to content
            </a>
            <header class="top">
              <a class="brand" href="/console">
                Contact verify
              </a>
              {options.member ? (
                <form method="post" action="/console/sign-out" class="who">
                  <span>
                    {options.member.name} ({options.member.role})
                  </span>
                  <button type="submit" class="link">
                    Sign out
                  </button>
                </form>
              ) : null}
            </header>
            {options.current !== undefined ? (
              <nav aria-label="Console">
                <ul>
                  {(options.member ? navFor(options.member.role) : NAV).map((item) => (
                    <li>
                      <a href={item.href} aria-current={item.href === options.current ? "page" : undefined}>
                        {item.label}
                      </a>
                    </li>
                  ))}
                </ul>
              </nav>
            ) : null}
            <main id="main" tabindex={-1}>
              <h1>{options.title}</h1>
              {body}
            </main>
          </body>
        </html>
      ).toString(),
  );
}

/** An error the API gave, in words that say what to do; rendered as an alert. */
export function ErrorNote(props: { message: string | null | undefined }) {
  if (!props.message) return null;
  return (
    <p role="alert" class="error">
      {props.message}
    </p>
  );
}

export function Notice(props: { message: string | null | undefined }) {
  if (!props.message) return null;
  return (
    <p role="status" class="notice">
      {props.message}
    </p>
  );
}

/** What a form left for the page it redirected to (edge/identity/session-notes.ts): a notice or an error; a secret is the keys page's own. */
export function NoteShown(props: { note: SessionNote | null }) {
  const { note } = props;
  if (note === null || note.kind === "secret" || note.kind === "person" || note.kind === "find") return null;
  return note.kind === "done" ? <Notice message={note.text} /> : <ErrorNote message={note.text} />;
}

/**
 * A table as every console page shows one: in a region that scrolls sideways on a narrow screen and that a keyboard
 * can reach (tabindex 0) and a screen reader names (aria-label), with a caption of the same name, hidden unless
 * `captionShown`; `head` is the header row's cells, `children` the body's rows. The accessibility rule lives here once.
 */
export function DataTable(props: { label: string; captionShown?: boolean; head?: Child; children: Child }) {
  return (
    <div class="table-wrap" tabindex={0} role="region" aria-label={props.label}>
      <table>
        <caption class={props.captionShown ? undefined : "sr-only"}>{props.label}</caption>
        {props.head ? (
          <thead>
            <tr>{props.head}</tr>
          </thead>
        ) : null}
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A UTC timestamp as people read it, with the machine form in <time>. */
export function When(props: { at: string | null | undefined; empty?: string }) {
  if (!props.at) return <>{props.empty ?? "never"}</>;
  const text = props.at.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC");
  return <time datetime={props.at}>{text}</time>;
}
