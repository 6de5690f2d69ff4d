/**
 * The customer's own columns of a job made from a CSV file (docs/jobs.md "CSV files"): each line is kept as it was in
 * the file (edge/jobs/verification/input.ts), a record the CSV parser accepted (RFC 4180: comma-separated, a quoted cell may hold
 * commas, line breaks and doubled quotes), so what a job keeps is its upload and no more; read back into cells here,
 * and named as results and downloads give them.
 */

/** The cells of a stored line (a valid RFC 4180 record without its line break). */
export function decodeRecord(text: string): string[] {
  const cells: string[] = [];
  let at = 0;
  for (;;) {
    if (text[at] === '"') {
      let cell = "";
      at++;
      for (;;) {
        const quote = text.indexOf('"', at);
        if (quote < 0) throw new Error("unterminated quoted cell in a stored record");
        cell += text.slice(at, quote);
        if (text[quote + 1] === '"') {
          cell += '"';
          at = quote + 2;
          continue;
        }
        at = quote + 1;
        break;
      }
      cells.push(cell);
    } else {
      const comma = text.indexOf(",", at);
      cells.push(text.slice(at, comma < 0 ? text.length : comma));
      at = comma < 0 ? text.length : comma;
    }
    if (at >= text.length) return cells;
    // A comma: another cell follows (possibly empty, at the end).
    at++;
    if (at === text.length) {
      cells.push("");
      return cells;
    }
  }
}

/**
 * The kept columns' names, for `width` columns: the header's cells trimmed; a column without a name (an empty header
 * cell, or a cell past the header's end in a longer line, or any column of a file without a header) is
 * `column_<n>` (1-based); a name used before gets " (2)", " (3)"… So every name is distinct: JSON results key the
 * cells by them, and the CSV download's header repeats them.
 */
export function keptColumnNames(header: readonly string[] | null, width: number): string[] {
  const names: string[] = [];
  const used = new Set<string>();
  for (let i = 0; i < width; i++) {
    const base = header?.[i]?.trim() || `column_${i + 1}`;
    let name = base;
    for (let n = 2; used.has(name); n++) name = `${base} (${n})`;
    used.add(name);
    names.push(name);
  }
  return names;
}

/** A line's kept cells by column name; a cell the line does not have reads "". */
export function keptCells(names: readonly string[], record: string | null): Record<string, string> {
  const cells = record === null ? [] : decodeRecord(record);
  return Object.fromEntries(names.map((name, i) => [name, cells[i] ?? ""]));
}
