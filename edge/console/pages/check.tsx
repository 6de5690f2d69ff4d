/**
 * Check an address (GET /v1/email_verifications) and look up a person (GET /v1/people): a form, and
 * the API's answer in plain words. The lookup's cost (LOOKUP_COST, the setting the API charges by) is
 * stated before the button; the lookup is a POST so no link or prefetch can spend a credit.
 */
import type { Hono } from "hono";
import type { ContactInfo, EmailVerificationResult } from "../../../shared/api.ts";
import { loadConfig, type AppEnv } from "../../env.ts";
import { DataTable, ErrorNote, page } from "../layout.tsx";
import { redirectWithNote, takeNote } from "../../identity/session-notes.ts";
import { asMember, toSignIn } from "../session.tsx";
import { reasonLabel } from "./charts.tsx";
import { normaliseDomain } from "../../../shared/people/names.ts";

/** The answer's fields in the order a person reads them, with their names in words. */
const PERSON_FIELDS: [keyof ContactInfo, string][] = [
  ["work_email_addresses", "Work email"],
  ["personal_email_addresses", "Personal email"],
  ["email_addresses", "All email addresses"],
  ["phone_numbers", "Phone"],
  ["profnet_public_identifier", "Profnet identifier"],
  ["profnet_id", "Profnet id"],
  ["codehost_login", "Codehost login"],
  ["codehost_id", "Codehost id"],
  ["codehost_username", "Codehost name"],
  ["socialnet_username", "Social network name"],
  ["microblog_username", "Microblog name"],
];

const ADVICE: Record<string, string> = {
  valid: "Safe to send.",
  risky: "Send with care: the mailbox could not be confirmed. Keep it out of cold campaigns, or confirm it with the person (a double opt-in).",
  invalid: "Do not send: mail to this address will bounce or reach nobody.",
};

const yesNo = (v: boolean | null | undefined) => (v === true ? "yes" : v === false ? "no" : "not checked");

function Verdict(props: { result: EmailVerificationResult }) {
  const r = props.result;
  const d = r.details;
  return (
    <section aria-labelledby="verdict">
      <h2 id="verdict">
        {r.email}: {r.classification} (score {r.score} of 100)
      </h2>
      <p>{reasonLabel(r.reason ?? "")}. {ADVICE[r.classification]}</p>
      <DataTable label="Each check" captionShown>
        <tr><th scope="row">Well-formed address</th><td>{yesNo(r.checks.syntax)}</td></tr>
        <tr><th scope="row">The domain takes mail (MX)</th><td>{yesNo(r.checks.mx_record)}</td></tr>
        <tr><th scope="row">The mail server accepts the mailbox</th><td>{yesNo(r.checks.smtp_deliverable)}</td></tr>
        <tr><th scope="row">Accepts any address (catch-all)</th><td>{yesNo(r.checks.accepts_any_email)}</td></tr>
        <tr><th scope="row">Disposable address</th><td>{yesNo(r.checks.disposable)}</td></tr>
        <tr><th scope="row">Role address (info@, sales@…)</th><td>{yesNo(r.checks.role_account)}</td></tr>
        <tr><th scope="row">Free mail provider</th><td>{yesNo(r.checks.free_provider)}</td></tr>
        <tr><th scope="row">Did you mean</th><td>{r.checks.typo_suggestion ?? "no suggestion"}</td></tr>
        <tr><th scope="row">Mail provider</th><td>{d?.mx_provider ?? "not recognised"}</td></tr>
        <tr>
          <th scope="row">What the mail server said</th>
          <td>{d?.smtp_reply ? `${d.smtp_reply.code} ${d.smtp_reply.text}` : d?.smtp_outcome ? d.smtp_outcome.replace(/_/g, " ") : "no SMTP conversation"}</td>
        </tr>
      </DataTable>
      {r.warnings.length > 0 ? <p>Warnings: {r.warnings.join("; ")}</p> : null}
    </section>
  );
}

export function registerCheckPages(app: Hono<AppEnv>): void {
  app.get("/console/check", asMember(app, async (c, api, me) => {
    const email = c.req.query("email")?.trim() ?? "";
    const answer = email && me.can("verifications:write") ? await api<EmailVerificationResult>("GET", `/v1/email_verifications?email_address=${encodeURIComponent(email)}`) : null;
    return page(
      c,
      { title: "Check an address", current: "/console/check", member: me.member },
      <>
        {me.can("verifications:write") ? (
          <form method="get" action="/console/check">
            <label for="email">Email address</label>
            <input id="email" name="email" type="email" required value={email} autocomplete="off" />
            <p class="hint">Free of credits; takes up to about ten seconds while the mail server is asked.</p>
            <button type="submit">Check</button>
          </form>
        ) : (
          <p>Your role cannot run checks.</p>
        )}
        <ErrorNote message={answer?.error?.error} />
        {answer?.ok ? <Verdict result={answer.data} /> : null}
      </>,
    );
  }));

  const peopleForm = (cost: number, error: string | null, result: ContactInfo | null) => (
    <>
      <form method="post" action="/console/people">
        <label for="identifier-kind">Look up by identifier</label>
        <select id="identifier-kind" name="kind">
          <option value="profnet_public_identifier">Profnet public identifier</option>
          <option value="profnet_id">Profnet id</option>
          <option value="codehost_login">Codehost login</option>
          <option value="codehost_id">Codehost id</option>
        </select>
        <label for="identifier">Identifier</label>
        <input id="identifier" name="value" autocomplete="off" />
        <fieldset>
          <legend>Or what you hold (any of them; everything given must fit one person)</legend>
          <label for="person-email">Email address</label>
          <input id="person-email" name="email" type="email" autocomplete="off" />
          <label for="person-phone">Phone</label>
          <input id="person-phone" name="phone" type="tel" autocomplete="off" aria-describedby="person-phone-hint" />
          <p id="person-phone-hint" class="hint">With its + and country code, or a national number with the country (two letters, such as GB).</p>
          <label for="person-country">Country of the phone</label>
          <input id="person-country" name="country" autocomplete="off" maxlength={2} />
          <label for="person-name">Full name</label>
          <input id="person-name" name="full_name" autocomplete="off" />
          <label for="person-company">Company, or its website</label>
          <input id="person-company" name="company" autocomplete="off" aria-describedby="person-company-hint" />
          <p id="person-company-hint" class="hint">A name needs its company: acme.com, or Acme Inc. Two people of one name there are never guessed between.</p>
        </fieldset>
        <p class="hint">
          A lookup that finds the person costs {cost} credit{cost === 1 ? "" : "s"}; one that finds nobody costs nothing.
        </p>
        <button type="submit">Look up</button>
      </form>
      <ErrorNote message={error} />
      {result ? (
        <section aria-labelledby="person">
          <h2 id="person">Answer</h2>
          <dl class="figures">
            {PERSON_FIELDS.map(([field, label]) => {
              const value = result[field];
              const text = Array.isArray(value) ? value.join(", ") : value;
              return text === null || text === undefined || text === "" ? null : (
                <div>
                  <dt>{label}</dt>
                  <dd>{String(text)}</dd>
                </div>
              );
            })}
          </dl>
          {result.name ? <p>Name: {result.name.full}</p> : null}
          {result.employment && result.employment.length > 0 ? (
            <DataTable
              label="Work history, current first"
              captionShown
              head={
                <>
                  <th scope="col">Employer</th>
                  <th scope="col">Title</th>
                  <th scope="col">Domains</th>
                  <th scope="col">From</th>
                  <th scope="col">To</th>
                </>
              }
            >
              {result.employment.map((e) => (
                <tr>
                  <td>{e.employer}</td>
                  <td>{e.title ?? ""}</td>
                  <td>{e.domains.join(", ")}</td>
                  <td>{e.start ?? ""}</td>
                  <td>{e.current ? "now" : (e.end ?? "")}</td>
                </tr>
              ))}
            </DataTable>
          ) : null}
          {result.email_details && result.email_details.length > 0 ? (
            <DataTable
              label="How far to trust each address"
              captionShown
              head={
                <>
                  <th scope="col">Address</th>
                  <th scope="col">Confidence</th>
                  <th scope="col">Sources</th>
                  <th scope="col">Last seen</th>
                  <th scope="col">Our last check</th>
                </>
              }
            >
              {result.email_details.map((d) => (
                <tr>
                  <td>{d.email}</td>
                  <td>
                    {d.confidence} of 100 ({d.confidence_label})
                  </td>
                  <td>{d.sources}</td>
                  <td>{d.last_seen_at.slice(0, 10)}</td>
                  <td>{d.verification ? `${d.verification.classification}, ${d.verification.checked_at.slice(0, 10)}` : "not yet"}</td>
                </tr>
              ))}
            </DataTable>
          ) : null}
          <p>
            Confidence is the chance in percent that mail to the address is delivered (how it is worked out: the API's
            documentation, "Confidence").
          </p>
          <p>
            {cost === 1 ? "One credit was" : `${cost} credits were`} spent. Delete what you keep of this person when the Erasures page lists them.
          </p>
        </section>
      ) : null}
    </>
  );

  app.get("/console/people", asMember(app, async (c, api, me) => {
    const cost = loadConfig(c.env).LOOKUP_COST;
    // What the form's POST found, handed over once (a reload shows the empty form and spends nothing).
    const note = await takeNote(c);
    const person = note?.kind === "person" ? note.person : null;
    const error = note?.kind === "error" ? note.text : null;
    return page(c, { title: "Look up a person", current: "/console/people", member: me.member }, me.can("people:read") ? peopleForm(cost, error, person) : <p>Your role cannot look people up.</p>);
  }));

  app.post("/console/people", asMember(app, async (c, api, me) => {
    const form = await c.req.parseBody();
    const kinds = ["profnet_public_identifier", "profnet_id", "codehost_login", "codehost_id"];
    const kind = kinds.includes(String(form["kind"])) ? String(form["kind"]) : kinds[0]!;
    const field = (name: string) => (typeof form[name] === "string" ? (form[name] as string).trim() : "");
    const query = new URLSearchParams();
    if (field("value") !== "") query.set(kind, field("value"));
    for (const name of ["email", "phone", "country", "full_name"]) if (field(name) !== "") query.set(name, field(name));
    // One box for the company: what reads as a domain (acme.com, https://www.acme.com) is its domain, else its name.
    const company = field("company");
    if (company !== "") query.set(normaliseDomain(company) !== null && !/\s/.test(company) ? "company_domain" : "company", company);
    if (!query.has("country") || !query.has("phone")) query.delete("country");
    if ([...query.keys()].length === 0) return redirectWithNote(c, "/console/people", { kind: "error", text: "Give an identifier, an email, a phone, or a name with its company." });
    query.set("include", "email_details,profile");
    const answer = await api<ContactInfo>("GET", `/v1/people?${query}`);
    // POST-redirect-GET (docs/console.md "Forms"): the answer goes to the page in a sealed one-time note, so that a
    // reload of that page shows nothing again and never looks (and charges) twice.
    if (answer.ok && answer.data) return redirectWithNote(c, "/console/people", { kind: "person", text: "", person: answer.data });
    const error =
      answer.error?.reason === "ambiguous_match"
        ? "More than one person fits: add an email, a phone or an identifier to say which. No credit was spent."
        : answer.status === 404
          ? "Nobody found: no credit was spent."
          : answer.status === 409
            ? "What you gave points at different people: check each field. No credit was spent."
            : `${answer.error?.error ?? "Refused"}.`;
    return redirectWithNote(c, "/console/people", { kind: "error", text: error });
  }));
}
