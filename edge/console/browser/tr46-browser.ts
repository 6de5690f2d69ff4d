/**
 * For the browser bundle only (scripts/build-console.ts aliases "tr46" here): UTS 46 toASCII by the
 * browser's own URL parser, which implements the same processing, instead of tr46's 60 KB of tables.
 * The counts it feeds are a preview; the API checks every address again with tr46 itself.
 */
export function toASCII(domain: string, _options?: unknown): string | null {
  // Characters a URL host would treat as structure are never part of a mail domain.
  if (/[\s/\\?#@:%[\]<>^|]/.test(domain)) return null;
  if (/^[\x21-\x7e]*$/.test(domain)) return domain.toLowerCase();
  try {
    return new URL(`http://${domain}/`).hostname;
  } catch {
    return null;
  }
}
