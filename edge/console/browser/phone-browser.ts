/**
 * For the browser bundle only (scripts/build-console.ts aliases "libphonenumber-js/min" here): the lookup inputs'
 * phone check (shared/identifiers.ts) without libphonenumber-js's 90 KB of metadata. The enrich preview's counts are
 * an upper bound of the API's quote: a number is taken as possible when it has a "+" or a country and 3 to 17 digits
 * (wider than any number the API takes), so every line the API takes is taken here; and it is keyed by its country and
 * its exact text, so two lines this counts as one the API counts as one too. The API checks every line again with
 * libphonenumber-js itself.
 */
export type CountryCode = string;

type Parsed = { number: string; isPossible(): boolean };

export function parsePhoneNumberFromString(value: string, options?: { defaultCountry?: CountryCode }): Parsed | undefined {
  const text = value.trim();
  if (!text.startsWith("+") && options?.defaultCountry === undefined) return undefined;
  const digits = text.replace(/\D/g, "").length;
  return { number: `${options?.defaultCountry ?? ""}:${text}`, isPossible: () => digits >= 3 && digits <= 17 };
}
