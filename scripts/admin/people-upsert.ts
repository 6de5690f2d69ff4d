/**
 * Longer than 400 lines on purpose: the batch's plan (matching, conflicts, sources) and the few statements that write
 * it are read together, each statement beside the part of the plan it carries out.
 *
 * Upserting one batch of validated import rows in a fixed number of statements whatever the batch
 * size: load every person any row's identifiers point at, replay the rows in file order against
 * that in-memory state (matching, conflicts, what changed), then write the final state with a
 * handful of set-based statements (each takes its rows as one JSON argument).
 *
 * No lock is held across network round trips, so lookups never wait on an import's planning: the
 * load is a plain read, and the writes go in one batch, which the database runs as one write
 * transaction within one request. The batch opens with a guard that loads the same people again
 * and fails the batch when anything the plan relied on changed in between (another writer); the
 * batch is then planned again from a fresh load.
 *
 * Matching rules:
 * - A row matches a person by any of its identifiers: profnet_id, profnet_public_identifier
 *   (case-insensitive), codehost_id, codehost_login (case-insensitive).
 * - No match: a new person. One match: that person is updated with the fields the row gives;
 *   fields the row leaves out are kept. Emails (by canonical form) and phones are added; ones already
 *   known keep first_seen_at and get last_seen_at bumped.
 * - Every email, phone and handle the row gives is recorded against the row's source (its own `source`, else the
 *   file's): a source new to it gets a row with its own first and last seen; a source that reported it before gets
 *   its last seen moved (person_email_sources, person_phone_sources, person_handle_sources).
 * - Identifiers that match different people, or a profnet_id/codehost_id that differs from the
 *   matched person's (those are immutable account ids, so a different one is a different account),
 *   reject the row: it is a conflict, never merged.
 * - A public identifier or login that differs only in letter case is the same value, so the first
 *   spelling stays and re-importing a file is a no-op even when its rows disagree on case.
 * - A line's name is kept per person by its folded form (person_names, unique (person_id, folded)): a spelling that
 *   folds the same is the name already held (its first spelling stays); its name_key is nameKey of the parts. Each
 *   employment entry is kept by its entry key (employer key, folded title, start: person_employment.entry_key): a known
 *   one gains the domains it lacked and takes the end and `current` the line gives. Both keep every source, as
 *   addresses do (person_name_sources, person_employment_sources).
 * - A name or an employer never matches a line to a person: two lines with the same name at the same company and
 *   different identifiers are two people (a false merge would disclose one person's contacts as another's).
 * - "updated" means a field, email, phone, name or employment changed, or a source reported one for the first time;
 *   otherwise the row is "unchanged", though last_seen_at still records that this import saw the data.
 */
import type { Client, InStatement } from "@libsql/client";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { employerKey, employmentEntryKey, foldName, nameKey } from "../../shared/people/names.ts";
import { sqliteLower } from "../../shared/sqlite-lower.ts";
import { HANDLE_FIELDS, IDENTIFIER_FIELDS, PERSON_FIELDS, type EmploymentRecord, type IdentifierField, type PersonField, type PersonRecord } from "./people-record.ts";

/** A line and the source it is recorded against when it names none itself (the file's). */
export type BatchRow = { line: number; record: PersonRecord };

export type RowOutcome =
  | { line: number; outcome: "inserted" | "updated" | "unchanged" }
  /** `mergeCandidate`: the line's identifiers point at two different people, and it is kept for an operator (people-merge.ts). */
  | { line: number; outcome: "rejected"; reason: string; mergeCandidate?: true };

type PersonFields = Record<PersonField, string | number | null>;

type KnownPerson = {
  /** null while the person exists only in this batch. */
  id: number | null;
  /** Line of the row that created the person in this batch, to name it in a conflict. */
  createdByLine: number | null;
  fields: PersonFields;
  fieldsChanged: boolean;
  /** An identifier column differs from the database; see writePlan for why that matters. */
  identifiersChanged: boolean;
  /** Keyed by the canonical address (shared/email/canonical-address.ts); id null for addresses new in this batch. */
  emails: Map<string, { id: number | null; email: string; sources: Set<string> }>;
  /** Keyed by the E.164 number. */
  phones: Map<string, { id: number | null; sources: Set<string> }>;
  /** The handle values each source gave: `field \0 value \0 source`. */
  handleSources: Set<string>;
  /** Keyed by the folded full name (person_names.folded). */
  names: Map<string, KnownName>;
  /** Keyed by the entry key (shared/people/names.ts employmentEntryKey). */
  employment: Map<string, KnownEmployment>;
};

type KnownName = { id: number | null; full: string; given: string | null; middle: string | null; family: string | null; sources: Set<string> };
type KnownEmployment = {
  id: number | null;
  employer: string;
  title: string | null;
  start: string | null;
  end: string | null;
  current: number | null;
  domains: Set<string>;
  /** Domains this batch adds (all of a new entry's). */
  newDomains: Set<string>;
  /** A known entry whose end or current this batch changes. */
  changed: boolean;
  sources: Set<string>;
};

/** A line's employment entries (absent when it gives none, as in a merge candidate recorded before names were imported). */
const employmentOf = (record: PersonRecord): EmploymentRecord[] => record.employment ?? [];
const currentColumn = (current: boolean | undefined): number | null => (current === undefined ? null : current ? 1 : 0);

/** A (thing, source) pair this batch saw: inserted when the source is new to it, else its last seen moved. */
type SourceSeen<T> = { person: KnownPerson; item: T; source: string };

const IMMUTABLE_ID_FIELDS = ["profnet_id", "codehost_id"] as const satisfies readonly IdentifierField[];
const TEXT_IDENTIFIER_FIELDS: ReadonlySet<PersonField> = new Set(["profnet_public_identifier", "codehost_login"]);

function identityKey(field: IdentifierField, value: string | number): string {
  return `${field}\u0000${TEXT_IDENTIFIER_FIELDS.has(field) ? sqliteLower(String(value)) : value}`;
}

function isSameValue(field: PersonField, a: string | number, b: string | number | null): boolean {
  if (b === null || !TEXT_IDENTIFIER_FIELDS.has(field)) return a === b;
  return sqliteLower(String(a)) === sqliteLower(String(b));
}

function describeIdentifier(field: IdentifierField, value: string | number): string {
  return `${field} ${JSON.stringify(value)}`;
}

function describePerson(person: KnownPerson): string {
  return person.id !== null ? `person ${person.id}` : `the person from line ${person.createdByLine}`;
}

function emptyFields(): PersonFields {
  return Object.fromEntries(PERSON_FIELDS.map((field) => [field, null])) as PersonFields;
}

/** The batch's people in memory, indexed by identity, with the rows applied in file order. */
class BatchPlan {
  readonly people: KnownPerson[] = [];
  readonly seenEmailIds = new Set<number>();
  readonly seenPhoneIds = new Set<number>();
  readonly seenNameIds = new Set<number>();
  readonly seenEmploymentIds = new Set<number>();
  /** Keyed so that one (thing, source) is written once however many rows carry it. */
  readonly emailSources = new Map<string, SourceSeen<{ key: string }>>();
  readonly phoneSources = new Map<string, SourceSeen<{ phone: string }>>();
  readonly handleSources = new Map<string, SourceSeen<{ field: string; value: string }>>();
  readonly nameSources = new Map<string, SourceSeen<{ folded: string }>>();
  readonly employmentSources = new Map<string, SourceSeen<{ key: string }>>();
  /** Lines rejected because their identifiers point at two different people: kept as merge candidates. */
  readonly mergeCandidates: { line: number; record: PersonRecord; reason: string; people: KnownPerson[] }[] = [];
  private readonly byIdentity = new Map<string, KnownPerson>();
  /** Each person's place in the plan, to key what the batch saw of them. */
  private readonly seq = new Map<KnownPerson, number>();

  constructor(
    existing: KnownPerson[],
    private readonly fileSource: string,
  ) {
    for (const person of existing) this.track(person);
  }

  personWithIdentity(field: IdentifierField, value: string | number): KnownPerson | undefined {
    return this.byIdentity.get(identityKey(field, value));
  }

  apply({ line, record }: BatchRow): RowOutcome {
    const matches = new Map<KnownPerson, string[]>();
    for (const field of IDENTIFIER_FIELDS) {
      const value = record[field];
      if (value === undefined) continue;
      const person = this.personWithIdentity(field, value);
      if (person) matches.set(person, [...(matches.get(person) ?? []), describeIdentifier(field, value)]);
    }

    if (matches.size > 1) {
      const owners = [...matches].map(([person, identifiers]) => `${identifiers.join(" and ")}: ${describePerson(person)}`);
      const reason = `conflict: identifiers belong to different people (${owners.join("; ")})`;
      this.mergeCandidates.push({ line, record: { ...record, source: record.source ?? this.fileSource }, reason, people: [...matches.keys()] });
      return { line, outcome: "rejected", reason, mergeCandidate: true };
    }

    const [match] = matches;
    if (!match) {
      const person = this.newPerson(line, record);
      this.track(person);
      this.addSources(person, record);
      return { line, outcome: "inserted" };
    }

    const [person, matchedBy] = match;
    for (const field of IMMUTABLE_ID_FIELDS) {
      const given = record[field];
      const current = person.fields[field];
      if (given !== undefined && current !== null && given !== current) {
        return {
          line,
          outcome: "rejected",
          reason: `conflict: ${matchedBy.join(" and ")} matches ${describePerson(person)}, whose ${field} is ${current}, not ${given}`,
        };
      }
    }
    const changed = this.update(person, record);
    return { line, outcome: this.addSources(person, record) || changed ? "updated" : "unchanged" };
  }

  /** Records the row's emails, phones and handles against its source; true when a source reported one for the first time. */
  private addSources(person: KnownPerson, record: PersonRecord): boolean {
    const source = record.source ?? this.fileSource;
    const at = (kind: string, thing: string) => `${this.seq.get(person)}\u0000${kind}\u0000${thing}\u0000${source}`;
    let added = false;
    const note = (sources: Set<string>, value: string) => {
      if (sources.has(value)) return;
      sources.add(value);
      added = true;
    };
    for (const email of record.email_addresses) {
      const key = canonicalAddress(email);
      note(person.emails.get(key)!.sources, source);
      this.emailSources.set(at("email", key), { person, item: { key }, source });
    }
    for (const phone of record.phone_numbers) {
      note(person.phones.get(phone)!.sources, source);
      this.phoneSources.set(at("phone", phone), { person, item: { phone }, source });
    }
    for (const field of HANDLE_FIELDS) {
      const value = record[field];
      if (value === undefined) continue;
      note(person.handleSources, `${field}\u0000${value}\u0000${source}`);
      this.handleSources.set(at(field, value), { person, item: { field, value }, source });
    }
    if (record.name) {
      const folded = foldName(record.name.full);
      note(person.names.get(folded)!.sources, source);
      this.nameSources.set(at("name", folded), { person, item: { folded }, source });
    }
    for (const job of employmentOf(record)) {
      const key = employmentEntryKey(job);
      note(person.employment.get(key)!.sources, source);
      this.employmentSources.set(at("employment", key), { person, item: { key }, source });
    }
    return added;
  }

  private newPerson(line: number, record: PersonRecord): KnownPerson {
    const person: KnownPerson = {
      id: null,
      createdByLine: line,
      fields: emptyFields(),
      fieldsChanged: true,
      identifiersChanged: false,
      emails: new Map(),
      phones: new Map(),
      handleSources: new Set(),
      names: new Map(),
      employment: new Map(),
    };
    for (const field of PERSON_FIELDS) person.fields[field] = record[field] ?? null;
    this.addContacts(person, record);
    return person;
  }

  /** Applies the row to a matched person; true when anything changed. */
  private update(person: KnownPerson, record: PersonRecord): boolean {
    let changed = false;
    for (const field of PERSON_FIELDS) {
      const value = record[field];
      const current = person.fields[field];
      if (value === undefined || isSameValue(field, value, current)) continue;
      if ((IDENTIFIER_FIELDS as readonly PersonField[]).includes(field)) {
        const identifier = field as IdentifierField;
        if (current !== null) this.byIdentity.delete(identityKey(identifier, current));
        this.byIdentity.set(identityKey(identifier, value), person);
        person.identifiersChanged = true;
      }
      person.fields[field] = value;
      person.fieldsChanged = true;
      changed = true;
    }
    return this.addContacts(person, record) || changed;
  }

  /** Adds unknown emails and phones, marks known ones as seen; true when something was added. */
  private addContacts(person: KnownPerson, record: PersonRecord): boolean {
    let added = false;
    for (const email of record.email_addresses) {
      const known = person.emails.get(canonicalAddress(email));
      if (known?.id != null) this.seenEmailIds.add(known.id);
      if (!known) {
        person.emails.set(canonicalAddress(email), { id: null, email, sources: new Set() });
        added = true;
      }
    }
    for (const phone of record.phone_numbers) {
      const known = person.phones.get(phone);
      if (known?.id != null) this.seenPhoneIds.add(known.id);
      if (!known) {
        person.phones.set(phone, { id: null, sources: new Set() });
        added = true;
      }
    }
    if (record.name) {
      const { full, given, middle, family } = record.name;
      const folded = foldName(full);
      const known = person.names.get(folded);
      if (known?.id != null) this.seenNameIds.add(known.id);
      if (!known) {
        person.names.set(folded, { id: null, full, given: given ?? null, middle: middle ?? null, family: family ?? null, sources: new Set() });
        added = true;
      }
    }
    for (const job of employmentOf(record)) {
      const key = employmentEntryKey(job);
      const known = person.employment.get(key);
      if (!known) {
        const domains = new Set(job.domains);
        const entry = { employer: job.employer, title: job.title ?? null, start: job.start ?? null, end: job.end ?? null, current: currentColumn(job.current) };
        person.employment.set(key, { id: null, ...entry, domains, newDomains: new Set(domains), changed: false, sources: new Set() });
        added = true;
        continue;
      }
      if (known.id !== null) this.seenEmploymentIds.add(known.id);
      for (const domain of job.domains) {
        if (known.domains.has(domain)) continue;
        known.domains.add(domain);
        known.newDomains.add(domain);
        added = true;
      }
      // The end and whether it is current are what the latest line says (a line that says nothing leaves them).
      if (job.end !== undefined && job.end !== known.end) {
        known.end = job.end;
        known.changed = known.id !== null;
        added = true;
      }
      if (job.current !== undefined && currentColumn(job.current) !== known.current) {
        known.current = currentColumn(job.current);
        known.changed = known.id !== null;
        added = true;
      }
    }
    return added;
  }

  private track(person: KnownPerson): void {
    this.seq.set(person, this.people.length);
    this.people.push(person);
    for (const field of IDENTIFIER_FIELDS) {
      const value = person.fields[field];
      if (value !== null) this.byIdentity.set(identityKey(field, value), person);
    }
  }
}

const PERSON_COLUMNS = PERSON_FIELDS.join(", ");

// Every person that any identifier of the batch points at (each branch uses its unique index),
// with their emails, phones and the sources of each, as one JSON document: one statement loads the batch's whole
// state, and decoding one JSON value is much cheaper than the client's per-row result objects.
const SELECT_MATCHING_PEOPLE = `
  select json_group_array(json_object('id', id, ${PERSON_FIELDS.map((field) => `'${field}', ${field}`).join(", ")},
    'emails', json((select json_group_array(json_array(id, email,
        json((select json_group_array(source) from person_email_sources where email_id = person_emails.id))))
      from person_emails where person_id = people.id)),
    'phones', json((select json_group_array(json_array(id, phone,
        json((select json_group_array(source) from person_phone_sources where phone_id = person_phones.id))))
      from person_phones where person_id = people.id)),
    'handles', json((select json_group_array(json_array(field, value, source)) from person_handle_sources where person_id = people.id)),
    'names', json((select json_group_array(json_array(id, full, given, middle, family,
        json((select json_group_array(source) from person_name_sources where name_id = person_names.id))))
      from person_names where person_id = people.id)),
    'employment', json((select json_group_array(json_array(id, employer, title, start_date, end_date, current,
        json((select json_group_array(domain) from person_employment_domains where employment_id = person_employment.id)),
        json((select json_group_array(source) from person_employment_sources where employment_id = person_employment.id))))
      from person_employment where person_id = people.id))
  )) as people
  from people where id in (
    select id from people where profnet_id in (select value from json_each(?1))
    union select id from people where lower(profnet_public_identifier) in (select lower(value) from json_each(?2))
    union select id from people where codehost_id in (select value from json_each(?3))
    union select id from people where lower(codehost_login) in (select lower(value) from json_each(?4)))`;

type LoadedPerson = PersonFields & {
  id: number;
  emails: [number, string, string[]][];
  phones: [number, string, string[]][];
  handles: [string, string, string][];
  names: [number, string, string | null, string | null, string | null, string[]][];
  employment: [number, string, string | null, string | null, string | null, number | null, string[], string[]][];
};

/**
 * The batch's guard: SQLite has no RAISE outside triggers, so it provokes an error on demand with
 * json_extract() and an invalid path, which is only evaluated when the people it reloads differ
 * from the snapshot; the path is a marker the error message carries back.
 */
const STALE_PLAN_MARKER = "import plan is stale: reload and plan again";
const GUARD_UNCHANGED = `select json_extract('{}', ?5) where (${SELECT_MATCHING_PEOPLE}) is not ?6`;

const CLEAR_IDENTIFIERS = `
  update people set ${IDENTIFIER_FIELDS.map((field) => `${field} = null`).join(", ")}
  where id in (select value from json_each(?1))`;
const UPDATE_PEOPLE = `
  update people set ${PERSON_FIELDS.map((field) => `${field} = u.value ->> '${field}'`).join(", ")}, updated_at = ?1
  from json_each(?2) as u where people.id = u.value ->> 'id'`;
const INSERT_PEOPLE = `
  insert into people (${PERSON_COLUMNS}, created_at, updated_at)
  select ${PERSON_FIELDS.map((field) => `value ->> '${field}'`).join(", ")}, ?1, ?1 from json_each(?2)`;
/**
 * The id of the person an email or phone belongs to: known, or (for a person inserted earlier in the
 * same batch) found by one of its identifiers, each branch through that identifier's unique index.
 */
const OWNER_ID = `coalesce(value ->> 'person_id', case value ->> 'by'
    when 'profnet_id' then (select id from people where profnet_id = value ->> 'key')
    when 'profnet_public_identifier' then (select id from people where lower(profnet_public_identifier) = lower(value ->> 'key'))
    when 'codehost_id' then (select id from people where codehost_id = value ->> 'key')
    when 'codehost_login' then (select id from people where lower(codehost_login) = lower(value ->> 'key'))
  end)`;
/** address_key is computed here (canonicalAddress), not in SQL: a lookup by email matches on it. */
const INSERT_EMAILS = `
  insert into person_emails (person_id, email, address_key, first_seen_at, last_seen_at)
  select ${OWNER_ID}, value ->> 'email', value ->> 'address_key', ?1, ?1 from json_each(?2)`;
const INSERT_PHONES = `
  insert into person_phones (person_id, phone, first_seen_at, last_seen_at)
  select ${OWNER_ID}, value ->> 'phone', ?1, ?1 from json_each(?2)`;
const BUMP_EMAILS = `update person_emails set last_seen_at = ?1 where id in (select value from json_each(?2))`;
const BUMP_PHONES = `update person_phones set last_seen_at = ?1 where id in (select value from json_each(?2))`;
/** A source seen now: a new row (first and last seen now) or, for a source seen before, its last seen moved. */
const UPSERT_EMAIL_SOURCES = `
  insert into person_email_sources (email_id, source, first_seen_at, last_seen_at)
  select coalesce(value ->> 'email_id', (select id from person_emails where person_id = ${OWNER_ID} and lower(email) = lower(value ->> 'email'))),
    value ->> 'source', ?1, ?1 from json_each(?2) where true
  on conflict (email_id, source) do update set last_seen_at = excluded.last_seen_at`;
const UPSERT_PHONE_SOURCES = `
  insert into person_phone_sources (phone_id, source, first_seen_at, last_seen_at)
  select coalesce(value ->> 'phone_id', (select id from person_phones where person_id = ${OWNER_ID} and phone = value ->> 'phone')),
    value ->> 'source', ?1, ?1 from json_each(?2) where true
  on conflict (phone_id, source) do update set last_seen_at = excluded.last_seen_at`;
/** name_key and folded are computed here (shared/people/names.ts): a lookup by a name at a company matches on them. */
const INSERT_NAMES = `
  insert into person_names (person_id, full, given, middle, family, folded, name_key, first_seen_at, last_seen_at)
  select ${OWNER_ID}, value ->> 'full', value ->> 'given', value ->> 'middle', value ->> 'family', value ->> 'folded', value ->> 'name_key', ?1, ?1
  from json_each(?2)`;
const BUMP_NAMES = `update person_names set last_seen_at = ?1 where id in (select value from json_each(?2))`;
const UPSERT_NAME_SOURCES = `
  insert into person_name_sources (name_id, source, first_seen_at, last_seen_at)
  select coalesce(value ->> 'name_id', (select id from person_names where person_id = ${OWNER_ID} and folded = value ->> 'folded')),
    value ->> 'source', ?1, ?1 from json_each(?2) where true
  on conflict (name_id, source) do update set last_seen_at = excluded.last_seen_at`;
/** employer_key and entry_key are computed here (shared/people/names.ts), as a lookup by a company keys its input. */
const INSERT_EMPLOYMENT = `
  insert into person_employment (person_id, employer, employer_key, title, start_date, end_date, current, entry_key, first_seen_at, last_seen_at)
  select ${OWNER_ID}, value ->> 'employer', value ->> 'employer_key', value ->> 'title', value ->> 'start', value ->> 'end', value ->> 'current',
    value ->> 'entry_key', ?1, ?1
  from json_each(?2)`;
const UPDATE_EMPLOYMENT = `
  update person_employment set end_date = u.value ->> 'end', current = u.value ->> 'current'
  from json_each(?1) as u where person_employment.id = u.value ->> 'id'`;
const BUMP_EMPLOYMENT = `update person_employment set last_seen_at = ?1 where id in (select value from json_each(?2))`;
/** The entry an item belongs to: known, or (new in this batch) found by its person and entry key. */
const EMPLOYMENT_ID = `coalesce(value ->> 'employment_id', (select id from person_employment where person_id = ${OWNER_ID} and entry_key = value ->> 'entry_key'))`;
const INSERT_EMPLOYMENT_DOMAINS = `
  insert into person_employment_domains (employment_id, person_id, domain)
  select ${EMPLOYMENT_ID}, ${OWNER_ID}, value ->> 'domain' from json_each(?1) where true
  on conflict (employment_id, domain) do nothing`;
const UPSERT_EMPLOYMENT_SOURCES = `
  insert into person_employment_sources (employment_id, source, first_seen_at, last_seen_at)
  select ${EMPLOYMENT_ID}, value ->> 'source', ?1, ?1 from json_each(?2) where true
  on conflict (employment_id, source) do update set last_seen_at = excluded.last_seen_at`;
/** A rejected line kept for review: its people by id (those new in this batch found by an identifier), ascending. */
const INSERT_MERGE_CANDIDATES = `
  insert into merge_candidates (people, record, reason, source, line, created_at)
  select (select json_group_array(id) from (select ${OWNER_ID} as id from json_each(u.value -> 'people') order by 1)),
    u.value -> 'record', u.value ->> 'reason', u.value ->> 'source', u.value ->> 'line', ?1
  from json_each(?2) u where true
  on conflict do nothing`;
const UPSERT_HANDLE_SOURCES = `
  insert into person_handle_sources (person_id, field, value, source, first_seen_at, last_seen_at)
  select ${OWNER_ID}, value ->> 'field', value ->> 'value', value ->> 'source', ?1, ?1 from json_each(?2) where true
  on conflict (person_id, field, value, source) do update set last_seen_at = excluded.last_seen_at`;

/** The people the batch's identifiers point at, as the JSON document the guard compares, and decoded. */
async function loadMatchingPeople(client: Client, identifierArgs: string[]): Promise<{ snapshot: string; people: KnownPerson[] }> {
  const found = await client.execute({ sql: SELECT_MATCHING_PEOPLE, args: identifierArgs });
  const snapshot = String(found.rows[0]?.people ?? "[]");
  const loaded = JSON.parse(snapshot) as LoadedPerson[];
  const people = loaded.map((person) => {
    const fields = emptyFields();
    for (const field of PERSON_FIELDS) fields[field] = person[field];
    return {
      id: person.id,
      createdByLine: null,
      fields,
      fieldsChanged: false,
      identifiersChanged: false,
      emails: new Map(person.emails.map(([id, email, sources]) => [canonicalAddress(email), { id, email, sources: new Set(sources) }])),
      phones: new Map(person.phones.map(([id, phone, sources]) => [phone, { id, sources: new Set(sources) }])),
      handleSources: new Set(person.handles.map((h) => h.join("\u0000"))),
      names: new Map(person.names.map(([id, full, given, middle, family, sources]) => [foldName(full), { id, full, given, middle, family, sources: new Set(sources) }])),
      // The entry key is made again from the row (the client's text stops at its NUL separators).
      employment: new Map(
        person.employment.map(([id, employer, title, start, end, current, domains, sources]) => [
          employmentEntryKey({ employer, title, start }),
          { id, employer, title, start, end, current, domains: new Set(domains), newDomains: new Set<string>(), changed: false, sources: new Set(sources) },
        ]),
      ),
    };
  });
  return { snapshot, people };
}

/** Where a person's new emails and phones point: its id, or for a new person its first identifier. */
function ownerOf(person: KnownPerson): { person_id: number | null; by?: IdentifierField; key?: string | number } {
  if (person.id !== null) return { person_id: person.id };
  const by = IDENTIFIER_FIELDS.find((field) => person.fields[field] !== null)!;
  return { person_id: null, by, key: person.fields[by]! };
}

function writeStatements(plan: BatchPlan, now: number): InStatement[] {
  const statements: InStatement[] = [];
  const add = (sql: string, leadingArgs: (string | number)[], items: unknown[]) => {
    if (items.length > 0) statements.push({ sql, args: [...leadingArgs, JSON.stringify(items)] });
  };
  const existing = plan.people.filter((person) => person.id !== null);
  const created = plan.people.filter((person) => person.id === null);

  // Rows may move an identifier from one person to another (a login renamed, then reused), and the
  // unique indexes are checked row by row inside one UPDATE. Clearing the changed people's
  // identifiers first means every intermediate state is a subset of the (unique) final state.
  add(CLEAR_IDENTIFIERS, [], existing.filter((person) => person.identifiersChanged).map((person) => person.id));
  add(UPDATE_PEOPLE, [now], existing.filter((person) => person.fieldsChanged).map((person) => ({ id: person.id, ...person.fields })));
  add(INSERT_PEOPLE, [now], created.map((person) => person.fields));
  add(
    INSERT_EMAILS,
    [now],
    plan.people.flatMap((person) =>
      [...person.emails.entries()]
        .filter(([, email]) => email.id === null)
        .map(([addressKey, { email }]) => ({ ...ownerOf(person), email, address_key: addressKey })),
    ),
  );
  add(
    INSERT_PHONES,
    [now],
    plan.people.flatMap((person) =>
      [...person.phones].filter(([, phone]) => phone.id === null).map(([phone]) => ({ ...ownerOf(person), phone })),
    ),
  );
  add(BUMP_EMAILS, [now], [...plan.seenEmailIds]);
  add(BUMP_PHONES, [now], [...plan.seenPhoneIds]);
  // After the inserts: a new address's or number's source row finds its id by its owner and its spelling.
  add(
    UPSERT_EMAIL_SOURCES,
    [now],
    [...plan.emailSources.values()].map(({ person, item, source }) => {
      const { id, email } = person.emails.get(item.key)!;
      return id !== null ? { email_id: id, source } : { ...ownerOf(person), email, source };
    }),
  );
  add(
    UPSERT_PHONE_SOURCES,
    [now],
    [...plan.phoneSources.values()].map(({ person, item, source }) => {
      const { id } = person.phones.get(item.phone)!;
      return id !== null ? { phone_id: id, source } : { ...ownerOf(person), phone: item.phone, source };
    }),
  );
  add(UPSERT_HANDLE_SOURCES, [now], [...plan.handleSources.values()].map(({ person, item, source }) => ({ ...ownerOf(person), ...item, source })));
  add(
    INSERT_NAMES,
    [now],
    plan.people.flatMap((person) =>
      [...person.names]
        .filter(([, name]) => name.id === null)
        .map(([folded, { full, given, middle, family }]) => ({
          ...ownerOf(person),
          full,
          given,
          middle,
          family,
          folded,
          name_key: nameKey({ given: given ?? undefined, middle: middle ?? undefined, family: family ?? undefined }),
        })),
    ),
  );
  add(BUMP_NAMES, [now], [...plan.seenNameIds]);
  add(
    UPSERT_NAME_SOURCES,
    [now],
    [...plan.nameSources.values()].map(({ person, item, source }) => {
      const { id } = person.names.get(item.folded)!;
      return id !== null ? { name_id: id, source } : { ...ownerOf(person), folded: item.folded, source };
    }),
  );
  add(
    INSERT_EMPLOYMENT,
    [now],
    plan.people.flatMap((person) =>
      [...person.employment]
        .filter(([, job]) => job.id === null)
        .map(([key, job]) => ({
          ...ownerOf(person),
          employer: job.employer,
          employer_key: employerKey(job.employer) ?? "",
          title: job.title,
          start: job.start,
          end: job.end,
          current: job.current,
          entry_key: key,
        })),
    ),
  );
  add(
    UPDATE_EMPLOYMENT,
    [],
    plan.people.flatMap((person) => [...person.employment.values()].filter((job) => job.changed).map((job) => ({ id: job.id, end: job.end, current: job.current }))),
  );
  add(BUMP_EMPLOYMENT, [now], [...plan.seenEmploymentIds]);
  // After the entries: a new entry's domains and sources find its id by its owner and its entry key.
  const entryOf = (person: KnownPerson, key: string) => {
    const { id } = person.employment.get(key)!;
    return id !== null ? { employment_id: id, ...ownerOf(person) } : { ...ownerOf(person), entry_key: key };
  };
  add(
    INSERT_EMPLOYMENT_DOMAINS,
    [],
    plan.people.flatMap((person) => [...person.employment].flatMap(([key, job]) => [...job.newDomains].map((domain) => ({ ...entryOf(person, key), domain })))),
  );
  add(UPSERT_EMPLOYMENT_SOURCES, [now], [...plan.employmentSources.values()].map(({ person, item, source }) => ({ ...entryOf(person, item.key), source })));
  add(
    INSERT_MERGE_CANDIDATES,
    [now],
    plan.mergeCandidates.map(({ line, record, reason, people }) => ({ line, record, reason, source: record.source, people: people.map(ownerOf) })),
  );
  return statements;
}

/** A batch refused by its guard: another writer changed the people it was planned against. */
function isStalePlan(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause.message.includes(STALE_PLAN_MARKER)) return true;
  }
  return false;
}

/** Other writers would have to change the same people this many times in a row to stop a batch. */
const MAX_PLANS = 20;

/**
 * Upserts the rows (in file order) and returns one outcome per row. Throws, with nothing written,
 * when the database refuses the batch.
 */
export async function upsertPeopleBatch(client: Client, rows: BatchRow[], fileSource: string): Promise<RowOutcome[]> {
  const identifierArgs = IDENTIFIER_FIELDS.map((field) =>
    JSON.stringify(rows.flatMap(({ record }) => (record[field] === undefined ? [] : [record[field]]))),
  );
  for (let plans = 1; ; plans++) {
    const { snapshot, people } = await loadMatchingPeople(client, identifierArgs);
    const plan = new BatchPlan(people, fileSource);
    const outcomes = rows.map((row) => plan.apply(row));
    const guard = { sql: GUARD_UNCHANGED, args: [...identifierArgs, STALE_PLAN_MARKER, snapshot] };
    try {
      await client.batch([guard, ...writeStatements(plan, Date.now())], "write");
      return outcomes;
    } catch (error) {
      if (!isStalePlan(error) || plans >= MAX_PLANS) throw error;
    }
  }
}
