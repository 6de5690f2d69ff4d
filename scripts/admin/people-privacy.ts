/**
 * Erasure and access requests (docs/operations.md "Personal data"): `people erase` deletes a person and
 * suppresses their identifiers, handles, phones and addresses by keyed hash, so that no import brings them back,
 * and leaves an erasure notice for each account that received them (GET /v1/people/erasures); `people
 * access-report` says what we hold about a person and who received it.
 *
 * Suppression hashes are HMAC-SHA256 under SUPPRESSION_KEY of "<kind>:<value>": text identifiers and handles
 * lower-cased the way the database compares them (ASCII letters), phones in E.164, and each address twice, as
 * written (lower-cased the same way) and in its canonical form (shared/email/canonical-address.ts), so that an
 * equivalent spelling is refused too. The plain value is never stored. The key must stay the same for the life of
 * the database: the first erasure stores a check value made with it, and erase and import refuse any other key.
 */
import type { Client } from "@libsql/client";
import { createHmac } from "node:crypto";
import { AdminError } from "./accounts.ts";
import { iso, type RawRow } from "../../edge/db/rows.ts";
import type { people, personEmails, personEmployment, personNames, personPhones } from "../../edge/db/schema.ts";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { addressHasher } from "../../shared/people/address-hash.ts";
import { sqliteLower } from "../../shared/sqlite-lower.ts";
import { HANDLE_FIELDS, IDENTIFIER_FIELDS, type HandleField, type IdentifierField, type PersonRecord } from "./people-record.ts";

export type SuppressionKind = IdentifierField | HandleField | "phone" | "email";

export const FEEDBACK_KEY_MISSING =
  "FEEDBACK_HASH_KEY is not set: this database holds bounce feedback, which names addresses by hashes under that key, so a person's reports could not all be found (the Worker's key, always; see docs/operations.md \"Personal data\")";

/**
 * The names under which bounce feedback knows these addresses (shared/people/address-hash.ts): each address's hash under
 * FEEDBACK_HASH_KEY, and the names stored rows already carry. Without the key, fails when there is any feedback at all
 * (whose reports are whose could not be told), and answers the stored names otherwise.
 */
export async function feedbackNames(client: Client, feedbackKey: string | undefined, emails: string[], storedNames: (string | null)[]): Promise<string[]> {
  const names = new Set(storedNames.filter((n): n is string => n !== null));
  if (!feedbackKey) {
    const any = await client.execute("select 1 from email_feedback limit 1");
    if (any.rows.length > 0) throw new AdminError(FEEDBACK_KEY_MISSING);
    return [...names];
  }
  const hash = await addressHasher(feedbackKey);
  for (const email of emails) names.add(await hash(email));
  return [...names];
}

export const SUPPRESSION_KEY_MESSAGES = {
  format: "SUPPRESSION_KEY must be 32 bytes in base64 (make one with `openssl rand -base64 32`)",
  missing: "SUPPRESSION_KEY is not set: erasures and imports into this database need it (the same key, always; see docs/operations.md \"Personal data\")",
  mismatch:
    "SUPPRESSION_KEY is not the key this database's erasures were made with (its check value differs): under it no erased person would be recognised, so nothing was done. Use the original key (docs/operations.md \"Personal data\")",
} as const;

export function suppressionHash(key: string, kind: SuppressionKind, value: string | number): string {
  const normal = typeof value === "number" ? String(value) : sqliteLower(value.trim());
  return createHmac("sha256", Buffer.from(key, "base64")).update(`${kind}:${normal}`).digest("hex");
}

/** An address's hashes: as written, and its canonical form (the same hash when the two agree). */
export function emailHashes(key: string, email: string): string[] {
  return [...new Set([suppressionHash(key, "email", email), suppressionHash(key, "email", canonicalAddress(email))])];
}

/**
 * The check value of a key, kept in the suppressions table under a fixed name at the first erasure: it tells the
 * key the erasures were made with from any other without holding the key itself.
 */
export const KEY_CHECK_ROW = "suppression-key-check";
export const keyCheckValue = (key: string) => createHmac("sha256", Buffer.from(key, "base64")).update("suppression-key-check").digest("hex");

/** Throws when this database's erasures were made with another key; nothing is checked before the first erasure. */
export async function checkSuppressionKey(client: Client, key: string): Promise<void> {
  const found = await client.execute({ sql: "select reason from suppressions where hash = ?", args: [KEY_CHECK_ROW] });
  const stored = found.rows[0]?.reason;
  if (stored !== undefined && String(stored) !== keyCheckValue(key)) throw new AdminError(SUPPRESSION_KEY_MESSAGES.mismatch);
}

/** The hashes of everything of an import row that can be suppressed. */
export function recordHashes(key: string, record: PersonRecord): string[] {
  const hashes: string[] = [];
  for (const field of [...IDENTIFIER_FIELDS, ...HANDLE_FIELDS]) {
    const value = record[field];
    if (value !== undefined) hashes.push(suppressionHash(key, field, value));
  }
  for (const phone of record.phone_numbers) hashes.push(suppressionHash(key, "phone", phone));
  for (const email of record.email_addresses) hashes.push(...emailHashes(key, email));
  return hashes;
}

/**
 * For an import batch: which of these hashes are suppressed. Without a key, fails when anything at all is
 * suppressed (the import cannot tell whose), and answers none otherwise.
 */
export async function suppressedAmong(client: Client, key: string | undefined, hashes: string[]): Promise<Set<string>> {
  if (!key) {
    const any = await client.execute("select 1 from suppressions limit 1");
    if (any.rows.length > 0) throw new AdminError(SUPPRESSION_KEY_MESSAGES.missing);
    return new Set();
  }
  if (hashes.length === 0) return new Set();
  const found = await client.execute({ sql: "select hash from suppressions where hash in (select value from json_each(?))", args: [JSON.stringify(hashes)] });
  return new Set(found.rows.map((r) => String(r.hash)));
}

export type PersonSelector =
  | { kind: "profnet_id" | "codehost_id"; value: number }
  | { kind: "profnet_public_identifier" | "codehost_login" | "email"; value: string };

export type StoredAddress = Pick<RawRow<typeof personEmails.$inferSelect>, "id" | "person_id" | "email" | "address_hash">;

const STORED_ADDRESS_COLUMNS = "select id, person_id, email, address_hash from person_emails";
/** A Gmail row's local part as its canonical form has it: lower-cased (ASCII, as valid Gmail addresses are), before any +, without dots. */
const GMAIL_LOCAL = (() => {
  const local = "lower(substr(email, 1, instr(email, '@') - 1))";
  return `replace(case when instr(${local}, '+') > 0 then substr(${local}, 1, instr(${local}, '+') - 1) else ${local} end, '.', '')`;
})();

/**
 * Every stored address row, anyone's, that is one of these addresses in any spelling (the same canonical form).
 * SQL narrows to the candidates, then the canonical forms are compared here: a plain ASCII address's canonical form
 * is its lower-cased self (the lower(email) index finds it); a Gmail one is looked for among the addresses that
 * start with its first letter (the same index), on its local part without dots and +tag; the rare addresses with
 * quotes or non-ASCII text (a byte length apart from the character length) are all taken, in one pass.
 */
export async function storedAddressesEquivalentTo(client: Client, emails: string[]): Promise<StoredAddress[]> {
  if (emails.length === 0) return [];
  const wanted = new Set(emails.map(canonicalAddress));
  const gmailLocals = [...wanted].filter((c) => c.endsWith("@gmail.com") && c.length > "@gmail.com".length).map((c) => c.slice(0, c.lastIndexOf("@")));
  const queries = [
    { sql: `${STORED_ADDRESS_COLUMNS} where lower(email) in (select value from json_each(?))`, args: [JSON.stringify([...wanted])] },
    ...gmailLocals.map((local) => ({
      sql: `${STORED_ADDRESS_COLUMNS} where lower(email) >= ?1 and lower(email) < ?2
        and (email like '%@gmail.com' or email like '%@googlemail.com') and ${GMAIL_LOCAL} = ?3`,
      args: [local[0]!, String.fromCodePoint(local.codePointAt(0)! + 1), local],
    })),
    { sql: `${STORED_ADDRESS_COLUMNS} where length(email) != length(cast(email as blob)) or instr(email, '"') > 0`, args: [] },
  ];
  const results = await client.batch(queries, "read");
  const rows = new Map<number, StoredAddress>();
  for (const result of results) {
    for (const r of result.rows) rows.set(Number(r.id), { id: Number(r.id), person_id: Number(r.person_id), email: String(r.email), address_hash: r.address_hash === null ? null : String(r.address_hash) });
  }
  return [...rows.values()].filter((row) => wanted.has(canonicalAddress(row.email))).sort((a, b) => a.id - b.id);
}

/** The ids of the people a selector names (an address, in any spelling, may be stored for several people). */
export async function peopleMatching(client: Client, selector: PersonSelector): Promise<number[]> {
  if (selector.kind === "email") {
    const rows = await storedAddressesEquivalentTo(client, [selector.value]);
    return [...new Set(rows.map((r) => r.person_id))].sort((a, b) => a - b);
  }
  const where: Record<Exclude<PersonSelector["kind"], "email">, string> = {
    profnet_id: "select id from people where profnet_id = ?",
    codehost_id: "select id from people where codehost_id = ?",
    profnet_public_identifier: "select id from people where lower(profnet_public_identifier) = lower(?)",
    codehost_login: "select id from people where lower(codehost_login) = lower(?)",
  };
  const found = await client.execute({ sql: `${where[selector.kind]} order by id`, args: [selector.value] });
  return found.rows.map((r) => Number(r.id));
}

/** One source's report of an address, phone or handle: the supplier's name and when it first and last gave it. */
export type HeldSource = { source: string; first_seen_at: number; last_seen_at: number };

/** A name held of a person (person_names), with every source that reported it. */
export type HeldName = Omit<RawRow<typeof personNames.$inferSelect>, "person_id"> & { sources: HeldSource[] };
/** An employment entry held of a person (person_employment, without its entry key: made again from the row), with its domains and sources. */
export type HeldEmployment = Omit<RawRow<typeof personEmployment.$inferSelect>, "person_id" | "entry_key"> & { domains: string[]; sources: HeldSource[] };

/**
 * A person as loadPerson reads them: the row, their addresses, phones, names and employment (oldest first), each with
 * every source. A merge's snapshot taken before names were imported has no `names` or `employment`.
 */
export type HeldPerson = RawRow<typeof people.$inferSelect> & {
  emails: (Omit<RawRow<typeof personEmails.$inferSelect>, "person_id" | "not_found_at" | "next_check_at"> & { sources: HeldSource[] })[];
  phones: (Omit<RawRow<typeof personPhones.$inferSelect>, "person_id"> & { sources: HeldSource[] })[];
  handles: ({ field: string; value: string } & HeldSource)[];
  names: HeldName[];
  employment: HeldEmployment[];
};

/** The sources of a row as a JSON array, for loadPerson's one statement. */
const SOURCES_OF = (table: string, column: string, id: string) =>
  `json((select json_group_array(json_object('source', source, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at))
    from (select * from ${table} where ${column} = ${id} order by first_seen_at, source)))`;

export async function loadPerson(client: Client, id: number): Promise<HeldPerson | null> {
  const found = await client.execute({
    sql: `select json_object('id', id, 'profnet_id', profnet_id, 'profnet_public_identifier', profnet_public_identifier,
        'codehost_id', codehost_id, 'codehost_login', codehost_login, 'codehost_username', codehost_username,
        'socialnet_username', socialnet_username, 'microblog_username', microblog_username, 'created_at', created_at, 'updated_at', updated_at,
        'emails', (select json_group_array(json_object('id', id, 'email', email, 'address_hash', address_hash, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at,
            'classification', classification, 'smtp_outcome', smtp_outcome, 'reason', reason, 'checked_at', checked_at, 'undeliverable_at', undeliverable_at,
            'sources', ${SOURCES_OF("person_email_sources", "email_id", "e.id")}))
          from (select * from person_emails where person_id = people.id order by first_seen_at, id) e),
        'phones', (select json_group_array(json_object('id', id, 'phone', phone, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at,
            'sources', ${SOURCES_OF("person_phone_sources", "phone_id", "p.id")}))
          from (select * from person_phones where person_id = people.id order by first_seen_at, id) p),
        'handles', (select json_group_array(json_object('field', field, 'value', value, 'source', source, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at))
          from (select * from person_handle_sources where person_id = people.id order by field, first_seen_at, source)),
        'names', (select json_group_array(json_object('id', id, 'full', full, 'given', given, 'middle', middle, 'family', family, 'folded', folded,
            'name_key', name_key, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at, 'sources', ${SOURCES_OF("person_name_sources", "name_id", "n.id")}))
          from (select * from person_names where person_id = people.id order by first_seen_at, id) n),
        'employment', (select json_group_array(json_object('id', id, 'employer', employer, 'employer_key', employer_key, 'title', title,
            'start_date', start_date, 'end_date', end_date, 'current', current, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at,
            'domains', json((select json_group_array(domain) from (select domain from person_employment_domains where employment_id = w.id order by domain))),
            'sources', ${SOURCES_OF("person_employment_sources", "employment_id", "w.id")}))
          from (select * from person_employment where person_id = people.id order by first_seen_at, id) w)) as person
      from people where id = ?`,
    args: [id],
  });
  const raw = found.rows[0]?.person;
  return raw ? (JSON.parse(String(raw)) as HeldPerson) : null;
}

export type AccessReport = {
  person: Record<string, unknown> | null;
  /**
   * Every access-log row of the person, oldest first: who received them, when, how (`lookup` or `people_event`) and
   * what found them (`matched_by`: an identifier's name, email, phone or name; null for rows logged before 0028 and for
   * people events).
   */
  accesses: { account_id: string; received_at: string; via: "lookup" | "people_event"; matched_by: string | null }[];
  /** `lookups`: 200 lookups; `events`: people events that sent an address (docs/api.md "People events"). */
  recipients: { account_id: string; account_name: string; first_received_at: string; last_received_at: string; lookups: number; events: number }[];
};

/** What customers reported of these addresses (bounce feedback, by its names for them): how many reports, of what, from how many accounts. */
async function feedbackHeld(client: Client, names: string[]) {
  const found = await client.execute({
    sql: "select outcome, count(*) as reports, count(distinct account_id) as accounts, min(occurred_at) as first_at, max(occurred_at) as last_at from email_feedback where address_hash in (select value from json_each(?)) group by outcome order by outcome",
    args: [JSON.stringify(names)],
  });
  return found.rows.map((r) => ({ outcome: String(r.outcome), reports: Number(r.reports), accounts: Number(r.accounts), first_at: iso(Number(r.first_at)), last_at: iso(Number(r.last_at)) }));
}

/** What we hold about the person a selector names, and which accounts received it (from the access log). */
export async function accessReport(client: Client, selector: PersonSelector, feedbackKey?: string): Promise<AccessReport & { matches: number }> {
  const ids = await peopleMatching(client, selector);
  const person = ids[0] === undefined ? null : await loadPerson(client, ids[0]);
  if (!person) return { person: null, recipients: [], accesses: [], matches: 0 };
  const names = await feedbackNames(client, feedbackKey, person.emails.map((e) => e.email), person.emails.map((e) => e.address_hash));
  const recipients = await client.execute({
    sql: `select l.account_id, a.name as account_name, min(l.created_at) as first_at, max(l.created_at) as last_at,
        sum(l.key_id <> 'people_event') as lookups, sum(l.key_id = 'people_event') as events
      from person_access_log l left join accounts a on a.id = l.account_id where l.person_id = ? group by l.account_id order by first_at`,
    args: [person.id],
  });
  const accesses = await client.execute({
    sql: "select account_id, created_at, key_id, matched_by from person_access_log where person_id = ? order by created_at, id",
    args: [person.id],
  });
  const { id: _id, emails, handles, names: heldNames, employment, created_at, updated_at, ...fields } = person;
  const sources = (list: HeldSource[]) => list.map((s) => ({ source: s.source, first_seen_at: iso(s.first_seen_at), last_seen_at: iso(s.last_seen_at) }));
  return {
    matches: ids.length,
    person: {
      ...fields,
      created_at: iso(created_at),
      updated_at: iso(updated_at),
      email_details: emails.map((e) => ({
        email: e.email,
        first_seen_at: iso(e.first_seen_at),
        last_seen_at: iso(e.last_seen_at),
        sources: sources(e.sources),
        undeliverable_since: iso(e.undeliverable_at),
        verification: e.classification === null ? null : { classification: e.classification, smtp_outcome: e.smtp_outcome, reason: e.reason, checked_at: iso(e.checked_at) },
      })),
      phones: person.phones.map((p) => ({ phone: p.phone, first_seen_at: iso(p.first_seen_at), last_seen_at: iso(p.last_seen_at), sources: sources(p.sources) })),
      handle_sources: handles.map((h) => ({ field: h.field, value: h.value, source: h.source, first_seen_at: iso(h.first_seen_at), last_seen_at: iso(h.last_seen_at) })),
      names: heldNames.map((n) => ({ full: n.full, given: n.given, middle: n.middle, family: n.family, first_seen_at: iso(n.first_seen_at), last_seen_at: iso(n.last_seen_at), sources: sources(n.sources) })),
      employment: employment.map((w) => ({
        employer: w.employer,
        domains: w.domains,
        title: w.title,
        start: w.start_date,
        end: w.end_date,
        current: w.current === null ? null : w.current === 1,
        first_seen_at: iso(w.first_seen_at),
        last_seen_at: iso(w.last_seen_at),
        sources: sources(w.sources),
      })),
      feedback: await feedbackHeld(client, names),
    },
    recipients: recipients.rows.map((r) => ({
      account_id: String(r.account_id),
      account_name: r.account_name === null ? "(deleted account)" : String(r.account_name),
      first_received_at: iso(Number(r.first_at)),
      last_received_at: iso(Number(r.last_at)),
      lookups: Number(r.lookups),
      events: Number(r.events),
    })),
    accesses: accesses.rows.map((r) => ({
      account_id: String(r.account_id),
      received_at: iso(Number(r.created_at)),
      via: r.key_id === "people_event" ? "people_event" : "lookup",
      matched_by: r.matched_by === null ? null : String(r.matched_by),
    })),
  };
}
