/**
 * Erasure and access requests (docs/operations.md "Personal data"): `people erase` deletes a person and
 * suppresses their identifiers and addresses by keyed hash, so that no import brings them back, and
 * leaves an erasure notice for each account that received them (GET /v1/people/erasures); `people
 * access-report` says what we hold about a person and who received it.
 *
 * Suppression hashes are HMAC-SHA256 under SUPPRESSION_KEY of "<kind>:<value>", text identifiers and
 * addresses lower-cased the way the database compares them (ASCII letters). The plain value is
 * never stored. The key must stay the same for the life of the database: a new one would let
 * erased people back in (docs/operations.md "Personal data").
 */
import type { Client, InStatement } from "@libsql/client";
import { createHmac } from "node:crypto";
import { AdminError } from "../../edge/db/admin.ts";
import { sqliteLower } from "../../shared/sqlite-lower.ts";
import { IDENTIFIER_FIELDS, type IdentifierField, type PersonRecord } from "./people-record.ts";

export type SuppressionKind = IdentifierField | "email";

export const SUPPRESSION_KEY_MESSAGES = {
  format: "SUPPRESSION_KEY must be 32 bytes in base64 (make one with `openssl rand -base64 32`)",
  missing: "SUPPRESSION_KEY is not set: erasures and imports into this database need it (the same key, always; see docs/operations.md \"Personal data\")",
} as const;


export function suppressionHash(key: string, kind: SuppressionKind, value: string | number): string {
  const normal = typeof value === "number" ? String(value) : sqliteLower(value.trim());
  return createHmac("sha256", Buffer.from(key, "base64")).update(`${kind}:${normal}`).digest("hex");
}

/** The hashes of everything of an import row that can be suppressed. */
export function recordHashes(key: string, record: PersonRecord): string[] {
  const hashes: string[] = [];
  for (const field of IDENTIFIER_FIELDS) {
    const value = record[field];
    if (value !== undefined) hashes.push(suppressionHash(key, field, value));
  }
  for (const email of record.email_addresses) hashes.push(suppressionHash(key, "email", email));
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

/** The ids of the people a selector names (an address may be stored for several people). */
async function peopleMatching(client: Client, selector: PersonSelector): Promise<number[]> {
  const where: Record<PersonSelector["kind"], string> = {
    profnet_id: "select id from people where profnet_id = ?",
    codehost_id: "select id from people where codehost_id = ?",
    profnet_public_identifier: "select id from people where lower(profnet_public_identifier) = lower(?)",
    codehost_login: "select id from people where lower(codehost_login) = lower(?)",
    email: "select distinct person_id as id from person_emails where lower(email) = lower(?)",
  };
  const found = await client.execute({ sql: `${where[selector.kind]} order by id`, args: [selector.value] });
  return found.rows.map((r) => Number(r.id));
}

type HeldPerson = {
  id: number;
  profnet_id: number | null;
  profnet_public_identifier: string | null;
  codehost_id: number | null;
  codehost_login: string | null;
  codehost_username: string | null;
  socialnet_username: string | null;
  microblog_username: string | null;
  created_at: number;
  updated_at: number;
  emails: { email: string; source: string; first_seen_at: number; last_seen_at: number; classification: string | null; smtp_outcome: string | null; reason: string | null; checked_at: number | null; undeliverable_at: number | null }[];
  phones: { phone: string; source: string; first_seen_at: number; last_seen_at: number }[];
};

async function loadPerson(client: Client, id: number): Promise<HeldPerson | null> {
  const found = await client.execute({
    sql: `select json_object('id', id, 'profnet_id', profnet_id, 'profnet_public_identifier', profnet_public_identifier,
        'codehost_id', codehost_id, 'codehost_login', codehost_login, 'codehost_username', codehost_username,
        'socialnet_username', socialnet_username, 'microblog_username', microblog_username, 'created_at', created_at, 'updated_at', updated_at,
        'emails', (select json_group_array(json_object('email', email, 'source', source, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at,
            'classification', classification, 'smtp_outcome', smtp_outcome, 'reason', reason, 'checked_at', checked_at, 'undeliverable_at', undeliverable_at))
          from (select * from person_emails where person_id = people.id order by first_seen_at, id)),
        'phones', (select json_group_array(json_object('phone', phone, 'source', source, 'first_seen_at', first_seen_at, 'last_seen_at', last_seen_at))
          from (select * from person_phones where person_id = people.id order by first_seen_at, id))) as person
      from people where id = ?`,
    args: [id],
  });
  const raw = found.rows[0]?.person;
  return raw ? (JSON.parse(String(raw)) as HeldPerson) : null;
}

export type EraseResult = { erased: number; suppressed: number };

const MAX_REASON_LENGTH = 500;

/**
 * Erases the people the selector names: every identifier, address and phone, and their access-log rows,
 * in one write batch that also records the suppressions and, per account that received each person, an
 * erasure notice (the two ids and the time: what GET /v1/people/erasures gives). `--email` alone also
 * suppresses an address no person has. Returns what was erased and how many hashes were recorded.
 */
export async function erasePeople(client: Client, key: string, selector: PersonSelector, reason: string | null): Promise<EraseResult> {
  const ids = await peopleMatching(client, selector);
  const people = (await Promise.all(ids.map((id) => loadPerson(client, id)))).filter((p): p is HeldPerson => p !== null);
  if (people.length === 0 && selector.kind !== "email") return { erased: 0, suppressed: 0 };

  const hashes = new Map<string, SuppressionKind>();
  const emails = new Set<string>();
  if (selector.kind === "email") {
    hashes.set(suppressionHash(key, "email", selector.value), "email");
    emails.add(selector.value);
  }
  for (const person of people) {
    for (const field of IDENTIFIER_FIELDS) {
      const value = person[field];
      if (value !== null) hashes.set(suppressionHash(key, field, value), field);
    }
    for (const { email } of person.emails) {
      hashes.set(suppressionHash(key, "email", email), "email");
      emails.add(email);
    }
  }
  const now = Date.now();
  const note = reason === null ? null : reason.slice(0, MAX_REASON_LENGTH);
  const peopleIds = JSON.stringify(people.map((p) => p.id));
  const statements: InStatement[] = [
    {
      sql: "insert into suppressions (hash, kind, reason, created_at) select value ->> 0, value ->> 1, ?, ? from json_each(?) where true on conflict (hash) do nothing",
      args: [note, now, JSON.stringify([...hashes])],
    },
    // Before the log rows go: one notice per account that received each person.
    {
      sql: `insert into erasure_notices (account_id, profnet_id, codehost_id, erased_at)
        select distinct l.account_id, p.profnet_id, p.codehost_id, ? from person_access_log l join people p on p.id = l.person_id
        where l.person_id in (select value from json_each(?))`,
      args: [now, peopleIds],
    },
    { sql: "delete from person_access_log where person_id in (select value from json_each(?))", args: [peopleIds] },
    // An erased address is removed from whoever else had it too: it is suppressed for everyone.
    { sql: "delete from person_emails where person_id in (select value from json_each(?1)) or lower(email) in (select lower(value) from json_each(?2))", args: [peopleIds, JSON.stringify([...emails])] },
    { sql: "delete from person_phones where person_id in (select value from json_each(?))", args: [peopleIds] },
    { sql: "delete from people where id in (select value from json_each(?))", args: [peopleIds] },
  ];
  await client.batch(statements, "write");
  return { erased: people.length, suppressed: hashes.size };
}

export type AccessReport = {
  person: Record<string, unknown> | null;
  recipients: { account_id: string; account_name: string; first_received_at: string; last_received_at: string; lookups: number }[];
};

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** What we hold about the person a selector names, and which accounts received it (from the access log). */
export async function accessReport(client: Client, selector: PersonSelector): Promise<AccessReport & { matches: number }> {
  const ids = await peopleMatching(client, selector);
  const person = ids[0] === undefined ? null : await loadPerson(client, ids[0]);
  if (!person) return { person: null, recipients: [], matches: 0 };
  const recipients = await client.execute({
    sql: `select l.account_id, a.name as account_name, min(l.created_at) as first_at, max(l.created_at) as last_at, count(*) as lookups
      from person_access_log l left join accounts a on a.id = l.account_id where l.person_id = ? group by l.account_id order by first_at`,
    args: [person.id],
  });
  const { id: _id, emails, created_at, updated_at, ...fields } = person;
  return {
    matches: ids.length,
    person: {
      ...fields,
      created_at: iso(created_at),
      updated_at: iso(updated_at),
      email_details: emails.map((e) => ({
        email: e.email,
        source: e.source,
        first_seen_at: iso(e.first_seen_at),
        last_seen_at: iso(e.last_seen_at),
        undeliverable_since: iso(e.undeliverable_at),
        verification: e.classification === null ? null : { classification: e.classification, smtp_outcome: e.smtp_outcome, reason: e.reason, checked_at: iso(e.checked_at) },
      })),
      phones: person.phones.map((p) => ({ phone: p.phone, source: p.source, first_seen_at: iso(p.first_seen_at), last_seen_at: iso(p.last_seen_at) })),
    },
    recipients: recipients.rows.map((r) => ({
      account_id: String(r.account_id),
      account_name: r.account_name === null ? "(deleted account)" : String(r.account_name),
      first_received_at: iso(Number(r.first_at))!,
      last_received_at: iso(Number(r.last_at))!,
      lookups: Number(r.lookups),
    })),
  };
}
