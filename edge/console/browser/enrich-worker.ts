/**
 * The "Enrich a list" preview's Web Worker (docs/console.md "Enrich a list"): parses a dropped CSV (csv-parse, the
 * parser the API uses, with its options) or JSON Lines file; answers its first rows, its columns (a CSV's
 * header, or the fields of the first JSON Lines objects) and the identifier columns guessed by the API's own rule; then,
 * for the columns picked, counts the lines, the well-formed ones, the invalid ones and the repeats with the API's own
 * rules (shared/identifiers.ts), so the most the list can cost is what the API's quote would say.
 */
import { parse } from "csv-parse/browser/esm/sync";
import { checkIdentifiers, guessIdentifierColumns, identifiersKey, LOOKUP_FIELDS, type LookupField } from "../../../shared/identifiers.ts";
import { JOB_LIMITS } from "../../../shared/job-limits.ts";

export type Columns = Partial<Record<LookupField, number>>;
export type Parsed = { type: "parsed"; format: "csv" | "jsonl"; columns: string[]; preview: string[][]; rows: number; guess: Columns };
export type Counted = { type: "counted"; lines: number; wellFormed: number; invalid: number; repeated: number };
export type Failed = { type: "failed"; message: string };
export type Request = { type: "parse"; file: File } | { type: "count"; columns: Columns };

/** The list's lines as values by column (a CSV row's cells; a JSON Lines object's fields in `columns` order). */
let lines: unknown[][] = [];

/** The file's records, parsed at once (the synchronous parser: a fraction of the streaming one's weight, for a worker that holds the rows anyway). */
async function csvRecords(file: File): Promise<string[][]> {
  return parse(await file.text(), { bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: JOB_LIMITS.maxCsvLineChars }) as string[][];
}

async function parseFile(file: File): Promise<Parsed | Failed> {
  if (/\.(jsonl|ndjson)$/i.test(file.name)) {
    const objects: Record<string, unknown>[] = [];
    for (const [i, text] of (await file.text()).split("\n").entries()) {
      if (text.trim() === "") continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return { type: "failed", message: `Line ${i + 1} is not JSON: each line must be one JSON object.` };
      }
      if (typeof value !== "object" || value === null || Array.isArray(value)) return { type: "failed", message: `Line ${i + 1} is not a JSON object.` };
      objects.push(value as Record<string, unknown>);
    }
    const columns = [...new Set(objects.slice(0, 50).flatMap((o) => Object.keys(o)))];
    lines = objects.map((o) => columns.map((c) => o[c]));
    const guess: Columns = {};
    for (const name of LOOKUP_FIELDS) if (columns.includes(name)) guess[name] = columns.indexOf(name);
    return { type: "parsed", format: "jsonl", columns, preview: lines.slice(0, 5).map((l) => l.map((v) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v)))), rows: lines.length, guess };
  }
  const records = await csvRecords(file);
  const header = records[0] ?? [];
  lines = records.slice(1);
  return { type: "parsed", format: "csv", columns: header, preview: (lines as string[][]).slice(0, 5), rows: lines.length, guess: guessIdentifierColumns(header) };
}

function count(columns: Columns): Counted {
  const keys = new Set<string>();
  let wellFormed = 0;
  for (const line of lines) {
    const values: Record<string, unknown> = {};
    for (const [name, index] of Object.entries(columns)) values[name] = line[index!];
    const checked = checkIdentifiers(values);
    if (!checked.ok) continue;
    wellFormed++;
    keys.add(identifiersKey(checked.ids));
  }
  return { type: "counted", lines: lines.length, wellFormed, invalid: lines.length - wellFormed, repeated: wellFormed - keys.size };
}

self.onmessage = async (event: MessageEvent<Request>) => {
  const request = event.data;
  try {
    if (request.type === "parse") self.postMessage(await parseFile(request.file));
    else self.postMessage(count(request.columns));
  } catch (error) {
    self.postMessage({ type: "failed", message: `This file could not be read: ${error instanceof Error ? error.message : String(error)}` } satisfies Failed);
  }
};
