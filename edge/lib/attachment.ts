/**
 * Content-Disposition for a file the API hands out (RFC 6266): `attachment; filename="…"` with a plain-ASCII fallback,
 * and `filename*=UTF-8''…` (RFC 8187) when the name is not plain ASCII, so a list named "Müller GmbH" downloads as
 * "Müller GmbH-valid.csv" in every browser that reads filename* and as "M_ller GmbH-valid.csv" in the rest. Characters
 * no file system takes ("/", "\", ":", "*", "?", quotes, "<", ">", "|", controls) become "_" in both.
 */

/** A name's longest form in a header, before its extension: file systems stop at 255 bytes. */
const MAX_BASE_CHARS = 150;

const UNSAFE = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069/\\:*?"<>|]/gu;

/** `name` as a file's base name: unsafe characters replaced, dots and spaces trimmed at the ends, at most 150 characters. */
export function safeBaseName(name: string, fallback: string): string {
  const base = [...name.replace(UNSAFE, "_").replace(/^[\s.]+|[\s.]+$/gu, "")].slice(0, MAX_BASE_CHARS).join("");
  return base === "" ? fallback : base;
}

/** RFC 8187's attr-char, percent-encoding the rest of the UTF-8 bytes. */
function extValue(text: string): string {
  return Array.from(new TextEncoder().encode(text), (b) => {
    const ch = String.fromCharCode(b);
    return /[A-Za-z0-9!#$&+\-.^_`|~]/.test(ch) ? ch : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }).join("");
}

/** The header value for a download named `filename` (already safe: safeBaseName plus an extension). */
export function attachment(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, "_");
  return ascii === filename ? `attachment; filename="${ascii}"` : `attachment; filename="${ascii}"; filename*=UTF-8''${extValue(filename)}`;
}
