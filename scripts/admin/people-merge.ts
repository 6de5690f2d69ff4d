/**
 * Longer than 400 lines on purpose: applying a merge and undoing it handle each kind of row a person has (addresses,
 * phones, handles, names, employment) the same way, and are read side by side, one kind at a time.
 *
 * Merge candidates (docs/operations.md "Merge candidates"): an import line whose identifiers point at two different people
 * is rejected, never merged by the import (a false merge discloses one person's contacts as another's), and recorded
 * (people-upsert.ts). Here an operator lists them, applies one (the two people become one, then the line is imported), undoes
 * an applied one, or dismisses one; each decision is an audit event (the operators' trail, under PEOPLE_AUDIT_ACCOUNT_ID).
 *
 * Applying keeps the older person (the lower id) and moves the other's addresses, phones, handles' sources, names and
 * employment (with their sources and domains; a name or an entry both have keeps one row with both rows' sources), access-log
 * rows and what the bulk lookups kept of them (lookup job lines, batch answers) to it, in one write batch; an address both have keeps one row with both rows' sources. Everything is snapshotted
 * first. Undoing restores both people exactly as they were (the same ids, rows and sources; the access log as it was),
 * and is refused once anything was imported to the merged person since (it would be lost): re-verification answers and
 * sightings since are kept.
 */
import type { Client, InArgs, InStatement } from "@libsql/client";
import type { SQL } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { auditEvent } from "../../edge/identity/store/audit.ts";
import { PEOPLE_AUDIT_ACCOUNT_ID } from "../../edge/identity/internal-accounts.ts";
import { iso } from "../../edge/db/rows.ts";
import { moveLookupLinesStatement, movedRows, restoreLookupLinesStatement, type MovedRows } from "../../edge/jobs/store/lookup-erasure.ts";
import { moveBatchItemsStatement, restoreBatchItemsStatement } from "../../edge/people/bulk-store.ts";
import { canonicalAddress } from "../../shared/email/canonical-address.ts";
import { employmentEntryKey } from "../../shared/people/names.ts";
import { AdminError } from "./accounts.ts";
import { loadPerson, type HeldEmployment, type HeldPerson } from "./people-privacy.ts";
import { IDENTIFIER_FIELDS, PERSON_FIELDS, type PersonRecord } from "./people-record.ts";
import { upsertPeopleBatch } from "./people-upsert.ts";

export const MERGE_STATES = ["open", "applied", "dismissed", "undone"] as const;
export type MergeState = (typeof MERGE_STATES)[number];

type CandidateRow = { id: number; people: string; record: string; reason: string; source: string; line: number; created_at: number; state: MergeState; decided_at: number | null; snapshot: string | null };
/** movedAnswers: the lookup job lines and batch answers the merge moved (absent for merges applied before 1.11). */
type Snapshot = { kept: HeldPerson; merged: HeldPerson; after: HeldPerson; movedLog: number[]; movedAnswers?: { lines: MovedRows; items: MovedRows } };

export type MergeCandidate = {
  id: number;
  state: MergeState;
  people: number[];
  reason: string;
  source: string;
  line: number;
  record: PersonRecord;
  created_at: string;
  decided_at: string | null;
};

const dialect = new SQLiteAsyncDialect();
const inBatch = (query: SQL): InStatement => {
  const { sql, params } = dialect.sqlToQuery(query);
  return { sql, args: params as InArgs };
};

function shape(row: CandidateRow): MergeCandidate {
  return {
    id: Number(row.id),
    state: row.state,
    people: JSON.parse(row.people) as number[],
    reason: row.reason,
    source: row.source,
    line: Number(row.line),
    record: JSON.parse(row.record) as PersonRecord,
    created_at: iso(Number(row.created_at)),
    decided_at: row.decided_at === null ? null : iso(Number(row.decided_at)),
  };
}

async function candidateRow(client: Client, id: number): Promise<CandidateRow> {
  const found = await client.execute({ sql: "select * from merge_candidates where id = ?", args: [id] });
  const row = found.rows[0] as unknown as CandidateRow | undefined;
  if (!row) throw new AdminError(`No merge candidate ${id}`);
  return row;
}

/** The most candidates one `merges list` returns (`--limit`); the default is 100. */
export const MERGE_LIST_MAX = 1_000;

/**
 * Candidates in id order, oldest first, from just after `after` (0: the first): at most `limit`, and `nextAfter`, the
 * id to pass as `after` for the next page, when there are more (null when this page is the last).
 */
export async function listMergeCandidatePage(
  client: Client,
  state: MergeState | null,
  { limit = 100, after = 0 }: { limit?: number; after?: number } = {},
): Promise<{ candidates: MergeCandidate[]; nextAfter: number | null }> {
  const found = await client.execute({
    sql: `select * from merge_candidates where id > ? ${state === null ? "" : "and state = ?"} order by id limit ?`,
    args: state === null ? [after, limit + 1] : [after, state, limit + 1],
  });
  const rows = (found.rows as unknown as CandidateRow[]).map(shape);
  const candidates = rows.slice(0, limit);
  return { candidates, nextAfter: rows.length > limit ? candidates[candidates.length - 1]!.id : null };
}

export async function listMergeCandidates(client: Client, state: MergeState | null, limit = 100): Promise<MergeCandidate[]> {
  return (await listMergeCandidatePage(client, state, { limit })).candidates;
}

/** A candidate with both people as they are now (null for one no longer held). */
export async function showMergeCandidate(client: Client, id: number): Promise<MergeCandidate & { held: (HeldPerson | null)[] }> {
  const candidate = shape(await candidateRow(client, id));
  return { ...candidate, held: await Promise.all(candidate.people.map((p) => loadPerson(client, p))) };
}

const audit = (action: string, candidate: number, details: Record<string, unknown>, now: number) =>
  inBatch(auditEvent({ accountId: PEOPLE_AUDIT_ACCOUNT_ID, action, actor: "operator", target: `merge_${candidate}`, details, requestId: null, now }));

/** The identifiers on which the two disagree (both set, different): they cannot be one person. */
function disagreements(kept: HeldPerson, merged: HeldPerson): string[] {
  return IDENTIFIER_FIELDS.filter((f) => kept[f] !== null && merged[f] !== null && String(kept[f]).toLowerCase() !== String(merged[f]).toLowerCase());
}

/**
 * What an undo compares: the person's fields, rows and sources, without what re-verification and sightings move; names
 * and employment too, unless the merge's snapshot predates them (`withProfile` false).
 */
function structure(p: HeldPerson, withProfile: boolean): string {
  return JSON.stringify({
    fields: PERSON_FIELDS.map((f) => p[f]),
    emails: p.emails.map((e) => [e.id, e.email, e.sources.map((s) => s.source).sort()]).sort(),
    phones: p.phones.map((ph) => [ph.id, ph.phone, ph.sources.map((s) => s.source).sort()]).sort(),
    handles: p.handles.map((h) => [h.field, h.value, h.source]).sort(),
    ...(withProfile
      ? {
          names: p.names.map((n) => [n.id, n.folded, n.sources.map((s) => s.source).sort()]).sort(),
          employment: p.employment.map((w) => [w.id, w.employer, w.title, w.start_date, w.end_date, w.current, w.domains, w.sources.map((s) => s.source).sort()]).sort(),
        }
      : {}),
  });
}

const entryKeyOf = (w: HeldEmployment) => employmentEntryKey({ employer: w.employer, title: w.title, start: w.start_date });

/** A source row for each of a name's or an entry's sources, as the snapshot holds them. */
/**
 * One thing held twice (an address, a phone, a name, an employment of the two people): the kept row `into` takes the
 * other row's sources, each with the earlier first sighting and the later last.
 */
const foldSources = (table: string, column: string, into: number, from: number): InStatement => ({
  sql: `insert into ${table} (${column}, source, first_seen_at, last_seen_at) select ?, source, first_seen_at, last_seen_at from ${table} where ${column} = ? and true
    on conflict (${column}, source) do update set first_seen_at = min(first_seen_at, excluded.first_seen_at), last_seen_at = max(last_seen_at, excluded.last_seen_at)`,
  args: [into, from],
});

const sourceRows = (table: string, column: string, id: number, sources: { source: string; first_seen_at: number; last_seen_at: number }[]): InStatement[] =>
  sources.map((s) => ({ sql: `insert into ${table} (${column}, source, first_seen_at, last_seen_at) values (?, ?, ?, ?)`, args: [id, s.source, s.first_seen_at, s.last_seen_at] }));

/** The merged person's names and employment move to the kept one; one both have keeps one row, with both rows' sources and domains. */
function moveProfile(kept: HeldPerson, merged: HeldPerson): InStatement[] {
  const statements: InStatement[] = [];
  const keptNames = new Map(kept.names.map((n) => [n.folded, n.id]));
  for (const n of merged.names) {
    const twin = keptNames.get(n.folded);
    if (twin === undefined) {
      statements.push({ sql: "update person_names set person_id = ? where id = ?", args: [kept.id, n.id] });
      continue;
    }
    statements.push(
      foldSources("person_name_sources", "name_id", twin, n.id),
      { sql: "update person_names set first_seen_at = min(first_seen_at, ?), last_seen_at = max(last_seen_at, ?) where id = ?", args: [n.first_seen_at, n.last_seen_at, twin] },
      { sql: "delete from person_name_sources where name_id = ?", args: [n.id] },
      { sql: "delete from person_names where id = ?", args: [n.id] },
    );
  }
  const keptJobs = new Map(kept.employment.map((w) => [entryKeyOf(w), w.id]));
  for (const w of merged.employment) {
    const twin = keptJobs.get(entryKeyOf(w));
    if (twin === undefined) {
      statements.push(
        { sql: "update person_employment set person_id = ? where id = ?", args: [kept.id, w.id] },
        { sql: "update person_employment_domains set person_id = ? where employment_id = ?", args: [kept.id, w.id] },
      );
      continue;
    }
    statements.push(
      foldSources("person_employment_sources", "employment_id", twin, w.id),
      { sql: "insert or ignore into person_employment_domains (employment_id, person_id, domain) select ?, ?, domain from person_employment_domains where employment_id = ?", args: [twin, kept.id, w.id] },
      // The kept entry's end and current stand; what it did not say, the other's says.
      {
        sql: "update person_employment set first_seen_at = min(first_seen_at, ?), last_seen_at = max(last_seen_at, ?), end_date = coalesce(end_date, ?), current = coalesce(current, ?) where id = ?",
        args: [w.first_seen_at, w.last_seen_at, w.end_date, w.current, twin],
      },
      { sql: "delete from person_employment_sources where employment_id = ?", args: [w.id] },
      { sql: "delete from person_employment_domains where employment_id = ?", args: [w.id] },
      { sql: "delete from person_employment where id = ?", args: [w.id] },
    );
  }
  return statements;
}

/**
 * Both people's names and employment as the snapshot holds them: the merged person's rows go back (a row the merge
 * folded into a twin is made again, with its id), the kept person's get their own sources, domains, end and current
 * back, and rows the line brought go.
 */
function restoreProfile(current: HeldPerson, kept: HeldPerson, merged: HeldPerson): InStatement[] {
  const statements: InStatement[] = [];
  const before = new Set([...kept.names, ...merged.names].map((n) => n.id));
  for (const n of current.names) {
    if (before.has(n.id)) continue;
    statements.push({ sql: "delete from person_name_sources where name_id = ?", args: [n.id] }, { sql: "delete from person_names where id = ?", args: [n.id] });
  }
  for (const n of merged.names) {
    statements.push(
      current.names.some((c) => c.id === n.id)
        ? { sql: "update person_names set person_id = ? where id = ?", args: [merged.id, n.id] }
        : {
            sql: "insert into person_names (id, person_id, full, given, middle, family, folded, name_key, first_seen_at, last_seen_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            args: [n.id, merged.id, n.full, n.given, n.middle, n.family, n.folded, n.name_key, n.first_seen_at, n.last_seen_at],
          },
      { sql: "delete from person_name_sources where name_id = ?", args: [n.id] },
      ...sourceRows("person_name_sources", "name_id", n.id, n.sources),
    );
  }
  for (const n of kept.names) {
    statements.push(
      { sql: "delete from person_name_sources where name_id = ?", args: [n.id] },
      { sql: "update person_names set first_seen_at = ?, last_seen_at = max(last_seen_at, ?) where id = ?", args: [n.first_seen_at, n.last_seen_at, n.id] },
      ...sourceRows("person_name_sources", "name_id", n.id, n.sources),
    );
  }
  const jobsBefore = new Set([...kept.employment, ...merged.employment].map((w) => w.id));
  for (const w of current.employment) {
    if (jobsBefore.has(w.id)) continue;
    statements.push(
      { sql: "delete from person_employment_sources where employment_id = ?", args: [w.id] },
      { sql: "delete from person_employment_domains where employment_id = ?", args: [w.id] },
      { sql: "delete from person_employment where id = ?", args: [w.id] },
    );
  }
  for (const [owner, w] of [...merged.employment.map((w) => [merged.id, w] as const), ...kept.employment.map((w) => [kept.id, w] as const)]) {
    if (owner === kept.id || current.employment.some((c) => c.id === w.id)) {
      statements.push({
        sql: "update person_employment set person_id = ?, end_date = ?, current = ?, first_seen_at = ?, last_seen_at = max(last_seen_at, ?) where id = ?",
        args: [owner, w.end_date, w.current, w.first_seen_at, w.last_seen_at, w.id],
      });
    } else {
      statements.push({
        sql: `insert into person_employment (id, person_id, employer, employer_key, title, start_date, end_date, current, entry_key, first_seen_at, last_seen_at)
          values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [w.id, owner, w.employer, w.employer_key, w.title, w.start_date, w.end_date, w.current, entryKeyOf(w), w.first_seen_at, w.last_seen_at],
      });
    }
    statements.push(
      { sql: "delete from person_employment_domains where employment_id = ?", args: [w.id] },
      ...w.domains.map((domain) => ({ sql: "insert into person_employment_domains (employment_id, person_id, domain) values (?, ?, ?)", args: [w.id, owner, domain] })),
      { sql: "delete from person_employment_sources where employment_id = ?", args: [w.id] },
      ...sourceRows("person_employment_sources", "employment_id", w.id, w.sources),
    );
  }
  return statements;
}

/**
 * Applies an open candidate: the two people become the older one, then the line is imported onto it. Refused when
 * the candidate is not open, when either person is gone, or when they disagree on an identifier (two accounts).
 */
export async function applyMergeCandidate(client: Client, id: number): Promise<{ kept: number; merged: number }> {
  const row = await candidateRow(client, id);
  if (row.state !== "open") throw new AdminError(`Merge candidate ${id} is ${row.state}, not open`);
  const [keptId, mergedId] = JSON.parse(row.people) as [number, number];
  const [kept, merged] = await Promise.all([loadPerson(client, keptId), loadPerson(client, mergedId)]);
  if (!kept || !merged) throw new AdminError(`Merge candidate ${id}: person ${kept ? mergedId : keptId} is no longer held (erased or merged): dismiss it`);
  const disagree = disagreements(kept, merged);
  if (disagree.length > 0) throw new AdminError(`Merge candidate ${id}: the two people have different ${disagree.join(", ")}: they are two accounts, not one person; dismiss it`);

  const now = Date.now();
  const log = await client.execute({ sql: "select id from person_access_log where person_id = ?", args: [mergedId] });
  const movedLog = log.rows.map((r) => Number(r.id));
  const keptEmails = new Map(kept.emails.map((e) => [e.email.toLowerCase(), e.id]));
  const keptPhones = new Map(kept.phones.map((p) => [p.phone, p.id]));
  const fields = Object.fromEntries(PERSON_FIELDS.map((f) => [f, kept[f] ?? merged[f]]));
  const statements: InStatement[] = [
    // The merged person's identifiers are freed first: the unique indexes are checked row by row.
    { sql: `update people set ${IDENTIFIER_FIELDS.map((f) => `${f} = null`).join(", ")} where id = ?`, args: [mergedId] },
    { sql: `update people set ${PERSON_FIELDS.map((f) => `${f} = ?`).join(", ")}, updated_at = ? where id = ?`, args: [...PERSON_FIELDS.map((f) => fields[f] ?? null), now, keptId] },
  ];
  for (const e of merged.emails) {
    const twin = keptEmails.get(e.email.toLowerCase());
    if (twin === undefined) {
      statements.push({ sql: "update person_emails set person_id = ? where id = ?", args: [keptId, e.id] });
      continue;
    }
    // One address, two rows: the kept row takes the other's sources, the earlier first sighting and the later last.
    statements.push(
      foldSources("person_email_sources", "email_id", twin, e.id),
      { sql: "update person_emails set first_seen_at = min(first_seen_at, ?), last_seen_at = max(last_seen_at, ?) where id = ?", args: [e.first_seen_at, e.last_seen_at, twin] },
      { sql: "delete from person_email_sources where email_id = ?", args: [e.id] },
      { sql: "delete from person_emails where id = ?", args: [e.id] },
    );
  }
  for (const p of merged.phones) {
    const twin = keptPhones.get(p.phone);
    if (twin === undefined) {
      statements.push({ sql: "update person_phones set person_id = ? where id = ?", args: [keptId, p.id] });
      continue;
    }
    statements.push(
      foldSources("person_phone_sources", "phone_id", twin, p.id),
      { sql: "update person_phones set first_seen_at = min(first_seen_at, ?), last_seen_at = max(last_seen_at, ?) where id = ?", args: [p.first_seen_at, p.last_seen_at, twin] },
      { sql: "delete from person_phone_sources where phone_id = ?", args: [p.id] },
      { sql: "delete from person_phones where id = ?", args: [p.id] },
    );
  }
  statements.push(...moveProfile(kept, merged));
  statements.push(
    { sql: "insert or ignore into person_handle_sources (person_id, field, value, source, first_seen_at, last_seen_at) select ?, field, value, source, first_seen_at, last_seen_at from person_handle_sources where person_id = ?", args: [keptId, mergedId] },
    { sql: "delete from person_handle_sources where person_id = ?", args: [mergedId] },
    // Who received the merged person received the one they are now: an erasure of it tells them too.
    { sql: "update person_access_log set person_id = ? where person_id = ?", args: [keptId, mergedId] },
    { sql: "update people_events set person_id = ? where person_id = ?", args: [keptId, mergedId] },
    { sql: "update person_changes set person_id = ? where person_id = ?", args: [keptId, mergedId] },
  );
  // What the bulk lookups kept of the merged person (lookup job lines, batch answers) is the kept person's: an erasure of it reaches them.
  const movesAt = statements.length;
  statements.push(inBatch(moveLookupLinesStatement(keptId, mergedId)), inBatch(moveBatchItemsStatement(keptId, mergedId)));
  statements.push(
    { sql: "delete from people where id = ?", args: [mergedId] },
    { sql: "update merge_candidates set state = 'applied', decided_at = ? where id = ? and state = 'open'", args: [now, id] },
    audit("person.merged", id, { kept: keptId, merged: mergedId, source: row.source, line: Number(row.line) }, now),
  );
  const results = await client.batch(statements, "write");
  // Now one person: the line is an ordinary import line.
  await upsertPeopleBatch(client, [{ line: Number(row.line), record: JSON.parse(row.record) as PersonRecord }], row.source);
  const after = await loadPerson(client, keptId);
  const snapshot: Snapshot = { kept, merged, after: after!, movedLog, movedAnswers: { lines: movedRows(results[movesAt]), items: movedRows(results[movesAt + 1]) } };
  await client.execute({ sql: "update merge_candidates set snapshot = ? where id = ?", args: [JSON.stringify(snapshot), id] });
  return { kept: keptId, merged: mergedId };
}

/** Takes an applied merge back: both people as they were before it. Refused once the merged person changed since. */
export async function undoMergeCandidate(client: Client, id: number): Promise<{ restored: number[] }> {
  const row = await candidateRow(client, id);
  if (row.state !== "applied" || row.snapshot === null) throw new AdminError(`Merge candidate ${id} is ${row.state}: only an applied merge can be undone`);
  const { kept, merged, after, movedLog, movedAnswers: moved } = JSON.parse(row.snapshot) as Snapshot;
  const now = Date.now();
  const current = await loadPerson(client, kept.id);
  if (!current) throw new AdminError(`Merge candidate ${id}: person ${kept.id} is no longer held (erased): nothing to undo`);
  // A merge applied before names were imported snapshotted none: its undo leaves names and employment as they are.
  const withProfile = kept.names !== undefined && merged.names !== undefined && after.names !== undefined;
  if (structure(current, withProfile) !== structure(after, withProfile)) {
    throw new AdminError(`Merge candidate ${id}: person ${kept.id} changed since the merge (an import or another merge): undoing would lose that, so nothing was done`);
  }
  const keptBefore = new Set(kept.emails.map((e) => e.id));
  const mergedIds = new Set(merged.emails.map((e) => e.id));
  const keptPhonesBefore = new Set(kept.phones.map((p) => p.id));
  const mergedPhones = new Set(merged.phones.map((p) => p.id));
  const statements: InStatement[] = [
    { sql: `update people set ${PERSON_FIELDS.map((f) => `${f} = ?`).join(", ")}, updated_at = ? where id = ?`, args: [...PERSON_FIELDS.map((f) => kept[f] ?? null), kept.updated_at, kept.id] },
    {
      sql: `insert into people (id, ${PERSON_FIELDS.join(", ")}, created_at, updated_at) values (?, ${PERSON_FIELDS.map(() => "?").join(", ")}, ?, ?)`,
      args: [merged.id, ...PERSON_FIELDS.map((f) => merged[f] ?? null), merged.created_at, merged.updated_at],
    },
  ];
  // Addresses: the merged person's rows go back (a row the merge folded into a twin is made again, with its id); the
  // kept person's rows get their own sources and sightings back; rows the line brought go.
  for (const e of current.emails) {
    if (keptBefore.has(e.id) || mergedIds.has(e.id)) continue;
    statements.push({ sql: "delete from person_email_sources where email_id = ?", args: [e.id] }, { sql: "delete from person_emails where id = ?", args: [e.id] });
  }
  for (const e of merged.emails) {
    if (current.emails.some((c) => c.id === e.id)) {
      statements.push({ sql: "update person_emails set person_id = ? where id = ?", args: [merged.id, e.id] });
    } else {
      statements.push({
        // address_key is derived from the spelling (the snapshot does not carry it): a lookup by email matches on it.
        sql: `insert into person_emails (id, person_id, email, address_key, first_seen_at, last_seen_at, classification, smtp_outcome, reason, checked_at, undeliverable_at, address_hash)
          values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [e.id, merged.id, e.email, canonicalAddress(e.email), e.first_seen_at, e.last_seen_at, e.classification, e.smtp_outcome, e.reason, e.checked_at, e.undeliverable_at, e.address_hash],
      });
    }
    statements.push({ sql: "delete from person_email_sources where email_id = ?", args: [e.id] });
    for (const s of e.sources) statements.push({ sql: "insert into person_email_sources (email_id, source, first_seen_at, last_seen_at) values (?, ?, ?, ?)", args: [e.id, s.source, s.first_seen_at, s.last_seen_at] });
  }
  for (const e of kept.emails) {
    statements.push(
      { sql: "delete from person_email_sources where email_id = ?", args: [e.id] },
      { sql: "update person_emails set first_seen_at = ?, last_seen_at = max(last_seen_at, ?) where id = ?", args: [e.first_seen_at, e.last_seen_at, e.id] },
      ...e.sources.map((s) => ({ sql: "insert into person_email_sources (email_id, source, first_seen_at, last_seen_at) values (?, ?, ?, ?)", args: [e.id, s.source, s.first_seen_at, s.last_seen_at] })),
    );
  }
  // Phones, the same way.
  for (const p of current.phones) {
    if (keptPhonesBefore.has(p.id) || mergedPhones.has(p.id)) continue;
    statements.push({ sql: "delete from person_phone_sources where phone_id = ?", args: [p.id] }, { sql: "delete from person_phones where id = ?", args: [p.id] });
  }
  for (const p of merged.phones) {
    statements.push(
      current.phones.some((c) => c.id === p.id)
        ? { sql: "update person_phones set person_id = ? where id = ?", args: [merged.id, p.id] }
        : { sql: "insert into person_phones (id, person_id, phone, first_seen_at, last_seen_at) values (?, ?, ?, ?, ?)", args: [p.id, merged.id, p.phone, p.first_seen_at, p.last_seen_at] },
      { sql: "delete from person_phone_sources where phone_id = ?", args: [p.id] },
      ...p.sources.map((s) => ({ sql: "insert into person_phone_sources (phone_id, source, first_seen_at, last_seen_at) values (?, ?, ?, ?)", args: [p.id, s.source, s.first_seen_at, s.last_seen_at] })),
    );
  }
  for (const p of kept.phones) {
    statements.push(
      { sql: "delete from person_phone_sources where phone_id = ?", args: [p.id] },
      { sql: "update person_phones set first_seen_at = ?, last_seen_at = max(last_seen_at, ?) where id = ?", args: [p.first_seen_at, p.last_seen_at, p.id] },
      ...p.sources.map((s) => ({ sql: "insert into person_phone_sources (phone_id, source, first_seen_at, last_seen_at) values (?, ?, ?, ?)", args: [p.id, s.source, s.first_seen_at, s.last_seen_at] })),
    );
  }
  if (withProfile) statements.push(...restoreProfile(current, kept, merged));
  statements.push({ sql: "delete from person_handle_sources where person_id in (?, ?)", args: [kept.id, merged.id] });
  for (const [person, held] of [[kept.id, kept], [merged.id, merged]] as const) {
    for (const h of held.handles) {
      statements.push({ sql: "insert into person_handle_sources (person_id, field, value, source, first_seen_at, last_seen_at) values (?, ?, ?, ?, ?, ?)", args: [person, h.field, h.value, h.source, h.first_seen_at, h.last_seen_at] });
    }
  }
  statements.push(
    // After the rows: the access log going back does not make them look like new addresses for the recipients.
    { sql: "update person_access_log set person_id = ? where id in (select value from json_each(?))", args: [merged.id, JSON.stringify(movedLog)] },
    // The bulk lookups' rows the merge moved are the merged person's again (a merge applied before 1.11 moved none).
    inBatch(restoreLookupLinesStatement(kept.id, merged.id, moved?.lines ?? [])),
    inBatch(restoreBatchItemsStatement(kept.id, merged.id, moved?.items ?? [])),
    { sql: "update merge_candidates set state = 'undone', decided_at = ? where id = ? and state = 'applied'", args: [now, id] },
    audit("person.merge_undone", id, { kept: kept.id, merged: merged.id }, now),
  );
  await client.batch(statements, "write");
  return { restored: [kept.id, merged.id] };
}

/** Closes an open candidate without merging. */
export async function dismissMergeCandidate(client: Client, id: number): Promise<void> {
  const row = await candidateRow(client, id);
  if (row.state !== "open") throw new AdminError(`Merge candidate ${id} is ${row.state}, not open`);
  const now = Date.now();
  await client.batch(
    [
      { sql: "update merge_candidates set state = 'dismissed', decided_at = ? where id = ? and state = 'open'", args: [now, id] },
      audit("person.merge_dismissed", id, { people: JSON.parse(row.people) as number[] }, now),
    ],
    "write",
  );
}
