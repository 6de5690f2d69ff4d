/**
 * `people erase` (docs/operations.md "Personal data"): the people a selector names are deleted with every
 * identifier, handle, address, phone, name and employment entry (with their sources and domains), and suppressed by keyed hash (scripts/admin/people-privacy.ts) so that no
 * import, in any equivalent spelling, brings them back; each account that received them gets an erasure notice
 * naming what its lookups returned; their addresses leave the running refresh jobs and lookup jobs' verify_emails phases; the answers we keep of bulk lookups
 * stop disclosing them, and what customers reported of them (bounce feedback) is deleted. One write batch does it all.
 */
import type { Client, InArgs, InStatement } from "@libsql/client";
import { sql, type SQL } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { REFRESH_ACCOUNT_ID } from "../../edge/identity/internal-accounts.ts";
import { removeAddressesFromOpenJobs, removeAddressesFromPhaseJobs } from "../../edge/jobs/store/internal-jobs.ts";
import { eraseFromLookupJobs } from "../../edge/jobs/store/lookup-erasure.ts";
import { eraseFromBatchAnswers } from "../../edge/people/bulk-store.ts";
import {
  checkSuppressionKey,
  emailHashes,
  feedbackNames,
  KEY_CHECK_ROW,
  keyCheckValue,
  loadPerson,
  peopleMatching,
  storedAddressesEquivalentTo,
  suppressionHash,
  type HeldPerson,
  type PersonSelector,
  type SuppressionKind,
} from "./people-privacy.ts";
import { HANDLE_FIELDS, IDENTIFIER_FIELDS } from "./people-record.ts";

export type EraseResult = { erased: number; suppressed: number };

const MAX_REASON_LENGTH = 500;
/** What an erasure event tells its recipient to delete: everything of the person, named as ContactInfo names it. */
const ERASED_FIELDS = ["profnet_id", "profnet_public_identifier", "codehost_id", "codehost_login", "codehost_username", "socialnet_username", "microblog_username", "email_addresses", "phone_numbers", "name", "employment"];

/** The job store's statements (drizzle SQL) as statements of this batch. */
const dialect = new SQLiteAsyncDialect();
const inBatch = (query: SQL): InStatement => {
  const { sql, params } = dialect.sqlToQuery(query);
  return { sql, args: params as InArgs };
};

/**
 * Erases the people the selector names, in one write batch that also records the suppressions (and, at the first
 * erasure, the key's check value), leaves per account and per set of identifiers it received an erasure notice,
 * deletes every stored row of their addresses in any spelling (whoever else had them: an erased address is
 * suppressed for everyone) and removes those addresses from running refresh jobs. `--email` alone also suppresses
 * an address no person has. Refuses a SUPPRESSION_KEY other than the one earlier erasures were made with.
 */
export async function erasePeople(client: Client, key: string, selector: PersonSelector, reason: string | null, feedbackKey?: string): Promise<EraseResult> {
  await checkSuppressionKey(client, key);
  const ids = await peopleMatching(client, selector);
  const people = (await Promise.all(ids.map((id) => loadPerson(client, id)))).filter((p): p is HeldPerson => p !== null);
  if (people.length === 0 && selector.kind !== "email") return { erased: 0, suppressed: 0 };

  const hashes = new Map<string, SuppressionKind>();
  const emails = new Set<string>();
  if (selector.kind === "email") emails.add(selector.value);
  for (const person of people) {
    for (const field of [...IDENTIFIER_FIELDS, ...HANDLE_FIELDS]) {
      const value = person[field];
      if (value !== null) hashes.set(suppressionHash(key, field, value), field);
    }
    for (const { phone } of person.phones) hashes.set(suppressionHash(key, "phone", phone), "phone");
    for (const { email } of person.emails) emails.add(email);
  }
  const rows = await storedAddressesEquivalentTo(client, [...emails]);
  for (const email of [...emails, ...rows.map((r) => r.email)]) for (const hash of emailHashes(key, email)) hashes.set(hash, "email");
  const addresses = [...new Set([...emails, ...rows.map((r) => r.email)])];
  // Their bounce feedback goes too, whoever reported it: found by the addresses' names (FEEDBACK_HASH_KEY).
  const feedback = await feedbackNames(client, feedbackKey, addresses, rows.map((r) => r.address_hash));

  const now = Date.now();
  const note = reason === null ? null : reason.slice(0, MAX_REASON_LENGTH);
  const peopleIds = JSON.stringify(people.map((p) => p.id));
  const statements: InStatement[] = [
    { sql: "insert into suppressions (hash, kind, reason, created_at) values (?, 'key_check', ?, ?) on conflict (hash) do nothing", args: [KEY_CHECK_ROW, keyCheckValue(key), now] },
    {
      sql: "insert into suppressions (hash, kind, reason, created_at) select value ->> 0, value ->> 1, ?, ? from json_each(?) where true on conflict (hash) do nothing",
      args: [note, now, JSON.stringify([...hashes])],
    },
    // Before the log rows go: per account, one notice per set of identifiers its lookups returned.
    {
      sql: `insert into erasure_notices (account_id, profnet_id, profnet_public_identifier, codehost_id, codehost_login, erased_at)
        select distinct account_id, profnet_id, profnet_public_identifier, codehost_id, codehost_login, ? from person_access_log
        where person_id in (select value from json_each(?))`,
      args: [now, peopleIds],
    },
    // Events not yet sent about them are not sent; each subscribed account that received them gets the same notice as a
    // signed event, which the cron puts on the queue (docs/api.md "People events").
    { sql: "delete from people_events where person_id in (select value from json_each(?))", args: [peopleIds] },
    { sql: "delete from person_changes where person_id in (select value from json_each(?))", args: [peopleIds] },
    // A merge candidate holds an import line about them (and, applied, a snapshot of them).
    { sql: "delete from merge_candidates where exists (select 1 from json_each(merge_candidates.people) p where p.value in (select value from json_each(?)))", args: [peopleIds] },
    {
      sql: `insert into people_events (id, account_id, person_id, type, body, created_at, next_at)
        select 'evt_' || lower(hex(randomblob(12))), n.account_id, null, 'person.erased',
          json_object('type', 'person.erased', 'timestamp', strftime('%Y-%m-%dT%H:%M:%fZ', ?1 / 1000.0, 'unixepoch'),
            'data', json_object('person', json_object('profnet_id', n.profnet_id, 'profnet_public_identifier', n.profnet_public_identifier,
                'codehost_id', n.codehost_id, 'codehost_login', n.codehost_login),
              'erased_at', strftime('%Y-%m-%dT%H:%M:%fZ', ?1 / 1000.0, 'unixepoch'), 'delete', json(?2))),
          ?1, 0
        from (select distinct account_id, profnet_id, profnet_public_identifier, codehost_id, codehost_login from person_access_log
          where person_id in (select value from json_each(?3)) and key_id <> 'people_event') n
        join accounts a on a.id = n.account_id and a.people_events_url is not null`,
      args: [now, JSON.stringify(ERASED_FIELDS), peopleIds],
    },
    { sql: "delete from person_access_log where person_id in (select value from json_each(?))", args: [peopleIds] },
    // Every source of what goes, then what goes: the sources' rows are not left to a foreign key the connection may not enforce.
    {
      sql: `delete from person_email_sources where email_id in
        (select id from person_emails where person_id in (select value from json_each(?1)) or id in (select value from json_each(?2)))`,
      args: [peopleIds, JSON.stringify(rows.map((r) => r.id))],
    },
    {
      sql: "delete from person_emails where person_id in (select value from json_each(?1)) or id in (select value from json_each(?2))",
      args: [peopleIds, JSON.stringify(rows.map((r) => r.id))],
    },
    { sql: "delete from person_phone_sources where phone_id in (select id from person_phones where person_id in (select value from json_each(?)))", args: [peopleIds] },
    { sql: "delete from person_phones where person_id in (select value from json_each(?))", args: [peopleIds] },
    { sql: "delete from person_handle_sources where person_id in (select value from json_each(?))", args: [peopleIds] },
    // Their names and work history, with the sources and domains of each.
    { sql: "delete from person_name_sources where name_id in (select id from person_names where person_id in (select value from json_each(?)))", args: [peopleIds] },
    { sql: "delete from person_names where person_id in (select value from json_each(?))", args: [peopleIds] },
    {
      sql: "delete from person_employment_sources where employment_id in (select id from person_employment where person_id in (select value from json_each(?)))",
      args: [peopleIds],
    },
    {
      sql: `delete from person_employment_domains where person_id in (select value from json_each(?1))
        or employment_id in (select id from person_employment where person_id in (select value from json_each(?1)))`,
      args: [peopleIds],
    },
    { sql: "delete from person_employment where person_id in (select value from json_each(?))", args: [peopleIds] },
    { sql: "delete from email_feedback where address_hash in (select value from json_each(?))", args: [JSON.stringify(feedback)] },
    // The email finder never makes their addresses again from a domain's pattern (docs/api.md "GET /v1/email_finder"):
    // kept for good by the same keyed names, and the finder's own checks of them go.
    { sql: "insert into erased_addresses (address_hash, erased_at) select value, ? from json_each(?) where true on conflict (address_hash) do nothing", args: [now, JSON.stringify(feedback)] },
    { sql: "delete from finder_checks where address_hash in (select value from json_each(?))", args: [JSON.stringify(feedback)] },
    { sql: "delete from people where id in (select value from json_each(?))", args: [peopleIds] },
    // The refresh jobs not written back yet lose the addresses at once; their counts follow (the job store's statements).
    ...removeAddressesFromOpenJobs(REFRESH_ACCOUNT_ID, addresses, now).map(inBatch),
    // And the lookup jobs' verify_emails phases, whoever's: neither listed nor written back when the phase ends.
    ...removeAddressesFromPhaseJobs(addresses, now).map(inBatch),
    // What the bulk lookups keep of them (a batch's first answer, lookup jobs' lines and verdicts) stops disclosing them.
    inBatch(eraseFromBatchAnswers(sql`select value from json_each(${peopleIds})`)),
    ...eraseFromLookupJobs(people.map((p) => p.id), addresses).map(inBatch),
  ];
  await client.batch(statements, "write");
  return { erased: people.length, suppressed: [...hashes.values()].length };
}
