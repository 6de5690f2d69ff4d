/**
 * Whether an upload is text at all, from its first bytes (docs/jobs.md "CSV files"): a spreadsheet, an image or an
 * archive sent where a CSV file is expected is refused as what it is, before the CSV parser sees it, so no message ever
 * quotes its bytes; and what the CSV parser found wrong, in words that do not quote the line either. One rule for the
 * jobs API (edge/jobs/verification/input.ts) and the console's preview (list-worker.ts).
 * Text in another single-byte encoding (Windows-1252 from an old Excel) is still text: only NUL and other C0 control
 * bytes, UTF-16 and the signatures below make a file "not text".
 */

/** The bytes looked at. */
export const SNIFF_BYTES = 4096;

const SIGNATURES: { bytes: number[]; what: string }[] = [
  { bytes: [0x50, 0x4b, 0x03, 0x04], what: "an Excel workbook (.xlsx) or another ZIP archive" },
  { bytes: [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], what: "an Excel 97-2003 workbook (.xls) or another Office file" },
  { bytes: [0x89, 0x50, 0x4e, 0x47], what: "a PNG image" },
  { bytes: [0xff, 0xd8, 0xff], what: "a JPEG image" },
  { bytes: [0x47, 0x49, 0x46, 0x38], what: "a GIF image" },
  { bytes: [0x25, 0x50, 0x44, 0x46], what: "a PDF document" },
  { bytes: [0x1f, 0x8b], what: "a gzip archive" },
  { bytes: [0xff, 0xfe], what: "UTF-16 text" },
  { bytes: [0xfe, 0xff], what: "UTF-16 text" },
];

export type FileKind = { text: true } | { text: false; what: string };

/** What the first bytes of a file say it is. */
export function sniffFileKind(head: Uint8Array): FileKind {
  for (const { bytes, what } of SIGNATURES) {
    if (head.length >= bytes.length && bytes.every((b, i) => head[i] === b)) return { text: false, what };
  }
  const end = Math.min(head.length, SNIFF_BYTES);
  for (let i = 0; i < end; i++) {
    const b = head[i]!;
    // Tab, line feed, form feed, carriage return and Ctrl-Z (an old end-of-file mark) occur in text files.
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d && b !== 0x1a) return { text: false, what: "a binary file" };
  }
  return { text: true };
}

/** The refusal for a file that is not text: says what it looks like, quotes none of its bytes. */
export function notTextMessage(what: string): string {
  const utf16 = what === "UTF-16 text";
  return utf16
    ? "The file is UTF-16 text, not a CSV file as expected: save it as CSV UTF-8 (comma-separated) and send that"
    : `The file is not a CSV file: it looks like ${what}. Save the list as CSV (comma-separated values) and send that`;
}

/** What a csv-parse error `code` means, in words of ours: the parser's own messages quote the line's text. */
export function csvProblem(code: string): string {
  switch (code) {
    case "CSV_QUOTE_NOT_CLOSED":
      return "a quoted cell is never closed";
    case "INVALID_OPENING_QUOTE":
      return "a quote in the middle of a cell (quote the whole cell, and double a quote inside it)";
    case "CSV_INVALID_CLOSING_QUOTE":
    case "CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE":
      return "text right after a closing quote (double a quote inside a quoted cell)";
    default:
      return "the line cannot be read as CSV";
  }
}
