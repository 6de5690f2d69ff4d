/**
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
 * - Identifiers that match different people, or a profnet_id/codehost_id that differs from the
 *   matched person's (those are immutable account ids, so a different one is a different account),
 *   reject the row: it is a conflict, never merged.
 * - A public identifier or login that differs only in letter case is the same value, so the first
 *   spelling stays and re-importing a file is a no-op even when its rows disagree on case.
 * - "updated" means a field, email or phone actually changed; otherwise the row is "unchanged",
 *   though last_seen_at still records that this import saw the data.
 */
import type { Client, InStatement } from "@libsql/client";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { sqliteLower } from "../../shared/sqlite-lower.ts";
import { IDENTIFIER_FIELDS, PERSON_FIELDS, type IdentifierField, type PersonField, type PersonRecord } from "./people-record.ts";

export type BatchRow = { line: number; record: PersonRecord };

export type RowOutcome =
  | { line: number; outcome: "inserted" | "updated" | "unchanged" }
  | { line: number; outcome: "rejected"; reason: string };

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
  emails: Map<string, { id: number | null; email: string }>;
  /** Keyed by the E.164 number. */
  phones: Map<string, { id: number | null }>;
};

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
  private readonly byIdentity = new Map<string, KnownPerson>();

  constructor(existing: KnownPerson[]) {
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
      return { line, outcome: "rejected", reason: `conflict: identifiers belong to different people (${owners.join("; ")})` };
    }

    const [match] = matches;
    if (!match) {
      this.track(this.newPerson(line, record));
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
    return { line, outcome: this.update(person, record) ? "updated" : "unchanged" };
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
        person.emails.set(canonicalAddress(email), { id: null, email });
        added = true;
      }
    }
    for (const phone of record.phone_numbers) {
      const known = person.phones.get(phone);
      if (known?.id != null) this.seenPhoneIds.add(known.id);
      if (!known) {
        person.phones.set(phone, { id: null });
        added = true;
      }
    }
    return added;
  }

  private track(person: KnownPerson): void {
    this.people.push(person);
    for (const field of IDENTIFIER_FIELDS) {
      const value = person.fields[field];
      if (value !== null) this.byIdentity.set(identityKey(field, value), person);
    }
  }
}

const PERSON_COLUMNS = PERSON_FIELDS.join(", ");

// Every person that any identifier of the batch points at (each branch uses its unique index),
// with their emails and phones, as one JSON document: one statement loads the batch's whole state,
// and decoding one JSON value is much cheaper than the client's per-row result objects.
const SELECT_MATCHING_PEOPLE = `
  select json_group_array(json_object('id', id, ${PERSON_FIELDS.map((field) => `'${field}', ${field}`).join(", ")},
    'emails', json((select json_group_array(json_array(id, email)) from person_emails where person_id = people.id)),
    'phones', json((select json_group_array(json_array(id, phone)) from person_phones where person_id = people.id))
  )) as people
  from people where id in (
    select id from people where profnet_id in (select value from json_each(?1))
    union select id from people where lower(profnet_public_identifier) in (select lower(value) from json_each(?2))
    union select id from people where codehost_id in (select value from json_each(?3))
    union select id from people where lower(codehost_login) in (select lower(value) from json_each(?4)))`;

type LoadedPerson = PersonFields & { id: number; emails: [number, string][]; phones: [number, string][] };

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
const INSERT_EMAILS = `
  insert into person_emails (person_id, email, source, first_seen_at, last_seen_at)
  select ${OWNER_ID}, value ->> 'email', ?1, ?2, ?2 from json_each(?3)`;
const INSERT_PHONES = `
  insert into person_phones (person_id, phone, source, first_seen_at, last_seen_at)
  select ${OWNER_ID}, value ->> 'phone', ?1, ?2, ?2 from json_each(?3)`;
const BUMP_EMAILS = `update person_emails set last_seen_at = ?1 where id in (select value from json_each(?2))`;
const BUMP_PHONES = `update person_phones set last_seen_at = ?1 where id in (select value from json_each(?2))`;

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
      emails: new Map(person.emails.map(([id, email]) => [canonicalAddress(email), { id, email }])),
      phones: new Map(person.phones.map(([id, phone]) => [phone, { id }])),
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

function writeStatements(plan: BatchPlan, source: string, now: number): InStatement[] {
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
    [source, now],
    plan.people.flatMap((person) =>
      [...person.emails.values()].filter((email) => email.id === null).map(({ email }) => ({ ...ownerOf(person), email })),
    ),
  );
  add(
    INSERT_PHONES,
    [source, now],
    plan.people.flatMap((person) =>
      [...person.phones].filter(([, phone]) => phone.id === null).map(([phone]) => ({ ...ownerOf(person), phone })),
    ),
  );
  add(BUMP_EMAILS, [now], [...plan.seenEmailIds]);
  add(BUMP_PHONES, [now], [...plan.seenPhoneIds]);
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
export async function upsertPeopleBatch(client: Client, rows: BatchRow[], source: string): Promise<RowOutcome[]> {
  const identifierArgs = IDENTIFIER_FIELDS.map((field) =>
    JSON.stringify(rows.flatMap(({ record }) => (record[field] === undefined ? [] : [record[field]]))),
  );
  for (let plans = 1; ; plans++) {
    const { snapshot, people } = await loadMatchingPeople(client, identifierArgs);
    const plan = new BatchPlan(people);
    const outcomes = rows.map((row) => plan.apply(row));
    const guard = { sql: GUARD_UNCHANGED, args: [...identifierArgs, STALE_PLAN_MARKER, snapshot] };
    try {
      await client.batch([guard, ...writeStatements(plan, source, Date.now())], "write");
      return outcomes;
    } catch (error) {
      if (!isStalePlan(error) || plans >= MAX_PLANS) throw error;
    }
  }
}
