/**
 * Find an address (GET /v1/email_finder) from a person's name and their company, and what the domain's addresses look
 * like (GET /v1/domains/{domain}, free). The form is a POST, so no link or prefetch can spend a credit; its answer goes
 * to the page in a sealed one-time note (POST-redirect-GET, docs/console.md "Forms"), so a reload finds nothing again.
 */
import type { Hono } from "hono";
import type { DomainSearchResult, EmailFinderResult } from "../../../shared/api.ts";

type FinderPending = { status: "pending"; retry_after_seconds: number };
import { normaliseDomain } from "../../../shared/people/names.ts";
import { loadConfig, type AppEnv } from "../../env.ts";
import { redirectWithNote, takeNote, type FindNote } from "../../identity/session-notes.ts";
import { DataTable, ErrorNote, page, When } from "../layout.tsx";
import { asMember } from "../session.tsx";

/** How the address was found, in words (EmailFinderResult.method). */
export const METHOD_WORDS: Record<EmailFinderResult["method"], string> = {
  known_address: "Known to us: an address we hold for this person at the domain",
  receiver_accepted: "Accepted by the mail server, which refuses addresses it does not know",
  pattern: "Made from the domain's pattern, not confirmed by its mail server",
};

const FEEDBACK_WORDS: Record<EmailFinderResult["evidence"]["feedback"], string> = {
  none: "no delivery reports",
  delivered: "reported delivered",
  bounced: "reported bounced",
};

const yesNoUnknown = (v: boolean | null, unknown = "not known") => (v === true ? "yes" : v === false ? "no" : unknown);
const percent = (share: number) => `${Math.round(share * 100)} %`;
const credits = (n: number) => `${n} credit${n === 1 ? "" : "s"}`;

/** What the find cost, in words: from X-Credits-Charged, and why nothing when nothing. */
function costWords(result: EmailFinderResult, charged: number): string {
  if (charged > 0) return `charged ${credits(charged)}`;
  if (result.repeat) return "free: you were charged for this find in the past 30 days";
  return "free: not confirmed, so not charged";
}

/** Whether the company box reads as a domain (acme.com, https://www.acme.com/): a dot and no space; else a company name. */
export function readsAsDomain(company: string): boolean {
  return company.includes(".") && !/\s/.test(company);
}

function Found(props: { result: EmailFinderResult; charged: number }) {
  const r = props.result;
  const e = r.evidence;
  const v = r.verification;
  return (
    <section aria-labelledby="found">
      <h2 id="found">{r.email}</h2>
      <p>
        Confidence {r.confidence} of 100 ({r.confidence_label}). {METHOD_WORDS[r.method]}. This find {costWords(r, props.charged)}.
      </p>
      <DataTable label="How it was found" captionShown>
        <tr><th scope="row">Confidence</th><td>{r.confidence} of 100 ({r.confidence_label})</td></tr>
        <tr><th scope="row">How</th><td>{METHOD_WORDS[r.method]}</td></tr>
        <tr><th scope="row">Confirmed</th><td>{r.confirmed ? "yes" : "no"}</td></tr>
        <tr><th scope="row">Cost</th><td>{costWords(r, props.charged)}</td></tr>
        <tr><th scope="row">The domain accepts any address (catch-all)</th><td>{yesNoUnknown(r.accept_all)}</td></tr>
        <tr><th scope="row">Pattern</th><td>{e.pattern ?? "none: an address we hold"}</td></tr>
        <tr><th scope="row">Share of the domain's known addresses with a pattern</th><td>{e.share === null ? "not known" : percent(e.share)}</td></tr>
        <tr><th scope="row">Known addresses that follow it</th><td>{e.count} of {e.known_at_domain} read at the domain</td></tr>
        <tr><th scope="row">Delivery reports</th><td>{FEEDBACK_WORDS[e.feedback]}</td></tr>
        <tr>
          <th scope="row">Our verification</th>
          <td>
            {v.status === null ? "not checked" : <>{v.status}{v.reason ? ` (${v.reason.replace(/_/g, " ")})` : ""}, <When at={v.date} empty="date not known" /></>}
          </td>
        </tr>
        {r.sources ? (
          <tr>
            <th scope="row">Sources</th>
            <td>
              {r.sources.count} source{r.sources.count === 1 ? "" : "s"}, last seen <When at={r.sources.last_seen_at} />
            </td>
          </tr>
        ) : null}
        <tr><th scope="row">Mail provider</th><td>{r.mx_provider ?? "not recognised"}</td></tr>
      </DataTable>
      <p>
        Confidence is the chance in percent that mail to the address is delivered (how it is worked out: the API's documentation, "How the finder
        grades").
      </p>
    </section>
  );
}

/** The 202: the mail server is still being asked; the same find again later gets the answer at no new check. */
function Pending(props: { asked: FindNote["asked"]; retryAfter: number }) {
  return (
    <section aria-labelledby="pending">
      <h2 id="pending">Still checking</h2>
      <p>The mail server has not answered yet: try again in a few seconds ({props.retryAfter} or so). Nothing was charged.</p>
      <form method="post" action="/console/find">
        <input type="hidden" name="full_name" value={props.asked.full_name} />
        <input type="hidden" name="company" value={props.asked.company} />
        <input type="hidden" name="min_confidence" value={props.asked.min_confidence} />
        <button type="submit">Try again</button>
      </form>
    </section>
  );
}

/** GET /v1/domains/{domain}'s free facts, when we know something of the domain. */
function DomainPanel(props: { facts: DomainSearchResult }) {
  const f = props.facts;
  return (
    <section aria-labelledby="domain-facts">
      <h2 id="domain-facts">What {f.domain} looks like</h2>
      <dl class="figures">
        <div>
          <dt>Known addresses</dt>
          <dd>
            {f.known_addresses.total} ({f.known_addresses.personal} of people, {f.known_addresses.generic} role addresses)
          </dd>
        </div>
        <div>
          <dt>Accepts any address</dt>
          <dd>
            {yesNoUnknown(f.accept_all, "never tested")}
            {f.accept_all_checked_at ? <> (tested <When at={f.accept_all_checked_at} />)</> : null}
          </dd>
        </div>
        <div>
          <dt>Mail provider</dt>
          <dd>{f.mx_provider ?? "not recognised"}</dd>
        </div>
      </dl>
      {f.patterns.length > 0 ? (
        <DataTable
          label={`Address patterns at ${f.domain}`}
          captionShown
          head={
            <>
              <th scope="col">Pattern</th>
              <th scope="col">Share</th>
              <th scope="col">Addresses</th>
            </>
          }
        >
          {f.patterns.map((p) => (
            <tr>
              <td>{p.pattern}</td>
              <td>{percent(p.share)}</td>
              <td>{p.count}</td>
            </tr>
          ))}
        </DataTable>
      ) : (
        <p>No pattern known: too few addresses of people at the domain.</p>
      )}
      <p class="hint">Free: reading what a domain looks like costs no credit.</p>
    </section>
  );
}

export function registerFindPages(app: Hono<AppEnv>): void {
  app.get("/console/find", asMember(app, async (c, api, me) => {
    const cost = loadConfig(c.env).LOOKUP_COST;
    const note = await takeNote(c);
    const find = note?.kind === "find" ? note.find : null;
    const asked = find?.asked ?? { full_name: "", company: "", min_confidence: "" };
    const domain = find?.domain ?? null;
    const facts = domain !== null && me.can("people:read") ? await api<DomainSearchResult>("GET", `/v1/domains/${encodeURIComponent(domain)}`) : null;
    const known = facts?.ok && (facts.data.known_addresses.total > 0 || facts.data.patterns.length > 0 || facts.data.accept_all !== null) ? facts.data : null;
    const outcome = find?.outcome ?? null;
    return page(
      c,
      { title: "Find an address", current: "/console/find", member: me.member },
      me.can("people:read") ? (
        <>
          <form method="post" action="/console/find">
            <label for="find-name">Full name</label>
            <input id="find-name" name="full_name" required autocomplete="off" value={asked.full_name} />
            <label for="find-company">Company, or its website</label>
            <input id="find-company" name="company" required autocomplete="off" value={asked.company} aria-describedby="find-company-hint" />
            <p id="find-company-hint" class="hint">acme.com (what holds a dot is read as the domain), or the company's name: Acme Inc.</p>
            <label for="find-min">Minimum confidence (optional)</label>
            <input id="find-min" name="min_confidence" type="number" min={0} max={100} step={1} inputmode="numeric" value={asked.min_confidence} aria-describedby="find-min-hint" />
            <p id="find-min-hint" class="hint">0 to 100: an address we hold below it is not a confirmed answer.</p>
            <p class="hint">
              A confirmed address costs {credits(cost)}; an address made from the pattern and not confirmed, a miss, and the same find again within 30 days
              cost nothing. It takes up to about ten seconds while the mail server is asked.
            </p>
            <button type="submit">Find</button>
          </form>
          <div id="find-result" aria-live="polite">
            {outcome?.kind === "error" ? <ErrorNote message={outcome.message} /> : null}
            {outcome?.kind === "found" ? <Found result={outcome.result} charged={outcome.charged} /> : null}
            {outcome?.kind === "pending" ? <Pending asked={asked} retryAfter={outcome.retryAfter} /> : null}
          </div>
          {known ? <DomainPanel facts={known} /> : null}
        </>
      ) : (
        <p>Your role cannot find addresses.</p>
      ),
    );
  }));

  app.post("/console/find", asMember(app, async (c, api) => {
    const form = await c.req.parseBody();
    const field = (name: string) => (typeof form[name] === "string" ? (form[name] as string).trim() : "");
    const asked = { full_name: field("full_name"), company: field("company"), min_confidence: field("min_confidence") };
    const query = new URLSearchParams();
    if (asked.full_name !== "") query.set("full_name", asked.full_name);
    const byDomain = readsAsDomain(asked.company);
    if (asked.company !== "") query.set(byDomain ? "domain" : "company", asked.company);
    if (asked.min_confidence !== "") query.set("min_confidence", asked.min_confidence);
    const answer = await api<EmailFinderResult | FinderPending>("GET", `/v1/email_finder?${query}`);
    const given = byDomain ? normaliseDomain(asked.company) : null;
    let outcome: FindNote["outcome"];
    if (answer.status === 200) outcome = { kind: "found", result: answer.data as EmailFinderResult, charged: answer.creditsCharged ?? 0 };
    else if (answer.status === 202) outcome = { kind: "pending", retryAfter: (answer.data as FinderPending).retry_after_seconds };
    else {
      const said = answer.error?.error ?? `Refused (HTTP ${answer.status})`;
      const wait = answer.status === 429 && answer.retryAfter ? ` Try again in ${answer.retryAfter} seconds.` : "";
      outcome = { kind: "error", status: answer.status, message: `${said}${/[.!?]$/.test(said) ? "" : "."}${wait}` };
    }
    // The domain panel is for the domain the find was about; a refused domain (400, 422) has nothing to show.
    const domain = outcome.kind === "found" ? outcome.result.domain : outcome.kind === "pending" || (outcome.status === 404 && given !== null) ? given : null;
    return redirectWithNote(c, "/console/find", { kind: "find", text: "", find: { asked, domain, outcome } });
  }));
}
