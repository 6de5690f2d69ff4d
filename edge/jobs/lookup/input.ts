/**
 * The body of POST /v1/lookup_jobs (docs/lookup-jobs.md "Creating a job"): a CSV file whose header names the identifier
 * columns (guessed from the names, or named by <identifier>_column parameters), or JSON Lines whose objects carry them.
 * The body is bounded before it is read (LOOKUP_JOB_LIMITS.maxBodyBytes), and read by the one intake (edge/jobs/intake.ts:
 * the not-text sniff, the bounds per line, one wording of every problem). It is read twice, never held as rows: a scan
 * decides every problem of the whole file (a 4xx that names it) and the quote before anything is written; then the
 * lines are handed out a chunk at a time to be written. Each line is checked by the single lookup's rules
 * (shared/identifiers.ts): one that fails them is answered invalid, with the message GET /v1/people would give.
 */
import { checkIdentifiers, guessIdentifierColumns, columnName, identifiersKey, LOOKUP_FIELDS, MAX_IDENTIFIER_LENGTH, type LookupField, type Identifiers } from "../../../shared/identifiers.ts";
import { LOOKUP_JOB_CONTENT_TYPES, LOOKUP_JOB_LIMITS, LOOKUP_JOB_MESSAGES } from "../../../shared/lookup-jobs.ts";
import { ApiError } from "../../lib/errors.ts";
import { csvRecords, jsonlLines } from "../intake.ts";

export type ListFormat = "csv" | "jsonl";

/** Where each identifier is read: a CSV column's index (and its header), or a JSON Lines field. */
export type ListPlan = { format: ListFormat; header: string[] | null; columns: Partial<Record<LookupField, { index: number; name: string }>> };

/** The identifiers a request names columns for (<identifier>_column), or none: guess. */
export type NamedColumns = Partial<Record<LookupField, string>>;

/** A line as stored: the customer's own (JSON text), and its identifiers or the 400 it fails with. */
export type PreparedLine = { input: string; ids: Identifiers | null; error: string | null };

/** `findable`: the distinct names at a company (domain or employer) among the well-formed lines: what find_emails may charge at most. */
export type ScannedList = { plan: ListPlan; lines: number; wellFormed: number; invalid: number; repeated: number; findable: number };

export function listFormat(contentType: string): ListFormat {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  if ((LOOKUP_JOB_CONTENT_TYPES.csv as readonly string[]).includes(type)) return "csv";
  if ((LOOKUP_JOB_CONTENT_TYPES.jsonl as readonly string[]).includes(type)) return "jsonl";
  throw new ApiError(415, LOOKUP_JOB_MESSAGES.unsupported);
}

/** The <identifier>_column parameters: each 1..256 characters when given; none given means guess. */
export function namedColumns(query: Readonly<Record<string, string | undefined>>): NamedColumns {
  const named: NamedColumns = {};
  for (const name of LOOKUP_FIELDS) {
    const raw = query[`${name}_column`];
    if (raw === undefined) continue;
    const value = raw.trim();
    if (value === "" || value.length > MAX_IDENTIFIER_LENGTH) throw new ApiError(400, LOOKUP_JOB_MESSAGES.badColumnParam(`${name}_column`));
    named[name] = value;
  }
  return named;
}

/** Inputs that only qualify another (a phone's country, a name's company). */
const QUALIFIERS: ReadonlySet<string> = new Set(["country", "company", "company_domain"]);

/** A CSV header's columns for the identifiers: the named ones (each must exist), else the guessed ones; at least one. */
function csvPlan(header: string[], named: NamedColumns): ListPlan {
  const columns: ListPlan["columns"] = {};
  const names = header.map(columnName);
  if (Object.keys(named).length > 0) {
    for (const [identifier, wanted] of Object.entries(named) as [LookupField, string][]) {
      const index = names.indexOf(columnName(wanted));
      if (index < 0) throw new ApiError(400, LOOKUP_JOB_MESSAGES.noSuchColumn(`${identifier}_column`, wanted, header));
      columns[identifier] = { index, name: header[index]!.trim() };
    }
  } else {
    for (const [identifier, index] of Object.entries(guessIdentifierColumns(header)) as [LookupField, number][]) columns[identifier] = { index, name: header[index]!.trim() };
  }
  // country and a company say nothing alone: a list needs a column that finds someone.
  if (!Object.keys(columns).some((name) => !QUALIFIERS.has(name))) throw new ApiError(400, LOOKUP_JOB_MESSAGES.noIdentifierColumn);
  return { format: "csv", header, columns };
}

/** JSON Lines' fields for the identifiers: the named ones, else each identifier's own name. */
function jsonlPlan(named: NamedColumns): ListPlan {
  const fields: NamedColumns = Object.keys(named).length > 0 ? named : Object.fromEntries(LOOKUP_FIELDS.map((n) => [n, n]));
  const columns: ListPlan["columns"] = {};
  for (const [identifier, name] of Object.entries(fields) as [LookupField, string][]) columns[identifier] = { index: -1, name };
  return { format: "jsonl", header: null, columns };
}

/** The identifiers' values of one line by the plan. */
function valuesOf(plan: ListPlan, line: string[] | Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [identifier, column] of Object.entries(plan.columns) as [LookupField, { index: number; name: string }][]) {
    values[identifier] = Array.isArray(line) ? line[column.index] : line[column.name];
  }
  return values;
}

function prepare(plan: ListPlan, line: string[] | Record<string, unknown>, input: string): PreparedLine {
  const checked = checkIdentifiers(valuesOf(plan, line));
  return checked.ok ? { input, ids: checked.ids, error: null } : { input, ids: null, error: checked.error };
}

/** The lines of a list by its plan, a chunk at a time, as they are stored. */
export async function* listLines(bytes: Uint8Array, plan: ListPlan, chunk: number): AsyncGenerator<PreparedLine[]> {
  if (plan.format === "jsonl") {
    for (const lines of jsonlLines(bytes, chunk, LOOKUP_JOB_MESSAGES.notAnObject)) yield lines.map((l) => prepare(plan, l.value, l.text));
    return;
  }
  let headerSeen = false;
  for await (const records of csvRecords(bytes, chunk)) {
    const rows = headerSeen ? records : records.slice(1);
    headerSeen = true;
    if (rows.length > 0) yield rows.map((r) => prepare(plan, r.cells, JSON.stringify(r.cells)));
  }
}

/** Lines scanned between two yields to the event loop: other requests of the isolate go on meanwhile. */
const SCAN_CHUNK = 2_000;

/**
 * The scan: the list's plan and counts, or the 4xx that refuses the whole file (no identifier column or field, a named
 * column that is not there, too many lines, a line too long, malformed CSV or JSON Lines, no lines). Nothing is kept
 * but the counts and the keys of the well-formed lines (for the repeats).
 */
export async function scanList(bytes: Uint8Array, format: ListFormat, named: NamedColumns): Promise<ScannedList> {
  let plan: ListPlan | null = format === "jsonl" ? jsonlPlan(named) : null;
  const keys = new Set<string>();
  const finds = new Set<string>();
  let lines = 0;
  let wellFormed = 0;
  let identifierSeen = false;
  const count = (prepared: PreparedLine, values: Record<string, unknown>) => {
    lines += 1;
    if (lines > LOOKUP_JOB_LIMITS.maxLines) throw new ApiError(413, LOOKUP_JOB_MESSAGES.tooManyLines);
    if (Object.values(values).some((v) => v !== undefined && v !== null)) identifierSeen = true;
    if (!prepared.ids) return;
    wellFormed += 1;
    keys.add(identifiersKey(prepared.ids));
    const k = prepared.ids.keys;
    if (k?.name !== undefined && (k.domain !== undefined || k.company !== undefined)) finds.add(JSON.stringify([k.name, k.domain ?? "", k.domain === undefined ? (k.company ?? "") : ""]));
  };
  if (format === "jsonl") {
    for (const chunk of jsonlLines(bytes, SCAN_CHUNK, LOOKUP_JOB_MESSAGES.notAnObject)) {
      for (const l of chunk) count(prepare(plan!, l.value, ""), valuesOf(plan!, l.value));
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    if (lines > 0 && !identifierSeen) throw new ApiError(400, LOOKUP_JOB_MESSAGES.noIdentifierField);
  } else {
    for await (const records of csvRecords(bytes, SCAN_CHUNK)) {
      for (const { cells: record } of records) {
        if (plan === null) {
          plan = csvPlan(record, named);
          continue;
        }
        count(prepare(plan, record, ""), valuesOf(plan, record));
      }
    }
    if (plan === null) throw new ApiError(400, LOOKUP_JOB_MESSAGES.empty);
  }
  if (lines === 0) throw new ApiError(400, LOOKUP_JOB_MESSAGES.empty);
  return { plan: plan!, lines, wellFormed, invalid: lines - wellFormed, repeated: wellFormed - keys.size, findable: finds.size };
}

/**
 * The finder's inputs of a stored line (find_emails): its name and company values as the job's plan reads them (a CSV
 * column by its stored header name, a JSON Lines field by its name), under the names GET /v1/email_finder takes.
 */
export function findValues(format: ListFormat, stored: { header: string[] | null; columns: Record<string, string> }, input: string): Record<string, unknown> {
  const line = JSON.parse(input) as unknown;
  const value = (identifier: string): unknown => {
    const name = stored.columns[identifier];
    if (name === undefined) return undefined;
    if (format === "jsonl" || !Array.isArray(line)) return (line as Record<string, unknown>)[name];
    const index = (stored.header ?? []).findIndex((h) => h.trim() === name);
    return index < 0 ? undefined : line[index];
  };
  return { full_name: value("full_name"), first_name: value("first_name"), last_name: value("last_name"), domain: value("company_domain"), company: value("company") };
}

/**
 * A stored line's input as the results show it: a CSV row by its columns' names (`names`: keptColumnNames of the
 * header and the job's widest line, computed once per read, the verification jobs' rule), a JSON Lines object as it is.
 */
export function inputObject(format: ListFormat, names: readonly string[], stored: string): Record<string, unknown> {
  const value = JSON.parse(stored) as unknown;
  if (format === "jsonl" || !Array.isArray(value)) return value as Record<string, unknown>;
  return Object.fromEntries(value.map((cell, i) => [names[i] ?? `column_${i + 1}`, cell]));
}
