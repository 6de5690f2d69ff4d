/**
 * The rules for a lookup's identifiers (docs/api.md "GET /v1/people"), pure and without zod, in one place: the single
 * call's query (edge/people/lookup.ts parsePeopleQuery), each item of a batch, each line of a lookup job, and the
 * console's preview of a list in the browser (edge/console/browser/enrich-worker.ts) all read them here, so a line the
 * preview calls well-formed is one the API looks up, with the same message when it is not.
 */

/** The four identifiers a lookup takes, in precedence order: the first that matches a person wins. */
export const IDENTIFIER_NAMES = ["profnet_id", "profnet_public_identifier", "codehost_id", "codehost_login"] as const;
export type IdentifierName = (typeof IDENTIFIER_NAMES)[number];

export const MAX_IDENTIFIER_LENGTH = 256;

export const IDENTIFIER_REQUIRED = "One of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required";

/** A lookup's identifiers as read: ids as numbers, the text ones trimmed; absent when not given (or blank). */
export type Identifiers = { profnetId?: number; profnetPublicIdentifier?: string; codehostId?: number; codehostLogin?: string };

export type IdentifierCheck = { ok: true; ids: Identifiers } | { ok: false; error: string };

class IdentifierProblem extends Error {}

/**
 * One value as text: a query value is text already; a JSON value (a batch item, a JSON Lines line) may also be a
 * number. Null and absent are not given. Anything else is the parameter's own problem.
 */
function asText(name: IdentifierName, raw: unknown, integer: boolean): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "string") return raw;
  if (typeof raw === "number") return String(raw);
  throw new IdentifierProblem(integer ? `${name} must be a positive integer` : `${name} must be a string`);
}

/** A decimal positive integer up to 2^53-1, with nothing else around it but trimmed whitespace. */
function positiveId(name: IdentifierName, raw: unknown): number | undefined {
  const text = asText(name, raw, true);
  if (text === undefined) return undefined;
  const value = text.trim();
  if (value === "") return undefined;
  if (!/^[0-9]{1,16}$/.test(value)) throw new IdentifierProblem(`${name} must be a positive integer`);
  const n = Number(value);
  if (n < 1 || !Number.isSafeInteger(n)) throw new IdentifierProblem(`${name} must be a positive integer`);
  return n;
}

function text(name: IdentifierName, raw: unknown): string | undefined {
  const given = asText(name, raw, false);
  if (given === undefined) return undefined;
  const value = given.trim();
  if (value === "") return undefined;
  if (value.length > MAX_IDENTIFIER_LENGTH) throw new IdentifierProblem(`${name} must be at most ${MAX_IDENTIFIER_LENGTH} characters`);
  return value;
}

/**
 * The identifiers of one lookup from its values by name, or the message of the 400 that says what is wrong (the first
 * problem in precedence order, then "one is required" when none is given). Names other than the four are ignored.
 */
export function checkIdentifiers(values: Readonly<Record<string, unknown>>): IdentifierCheck {
  try {
    const ids: Identifiers = {
      profnetId: positiveId("profnet_id", values.profnet_id),
      profnetPublicIdentifier: text("profnet_public_identifier", values.profnet_public_identifier),
      codehostId: positiveId("codehost_id", values.codehost_id),
      codehostLogin: text("codehost_login", values.codehost_login),
    };
    if (ids.profnetId === undefined && ids.profnetPublicIdentifier === undefined && ids.codehostId === undefined && ids.codehostLogin === undefined) {
      return { ok: false, error: IDENTIFIER_REQUIRED };
    }
    return { ok: true, ids };
  } catch (error) {
    if (error instanceof IdentifierProblem) return { ok: false, error: error.message };
    throw error;
  }
}

/**
 * The same lookup, whoever spelled it: two lines with equal keys ask for the same person (text identifiers compared
 * case-insensitively, as the database matches them; ASCII folding, as SQLite's lower()). For counting repeats in a list.
 */
export function identifiersKey(ids: Identifiers): string {
  const fold = (v: string | undefined) => (v === undefined ? "" : v.replace(/[A-Z]+/g, (m) => m.toLowerCase()));
  return JSON.stringify([ids.profnetId ?? null, fold(ids.profnetPublicIdentifier), ids.codehostId ?? null, fold(ids.codehostLogin)]);
}

/** A header cell as a name: trimmed, lower-cased, runs of spaces, hyphens and dots as one underscore. */
export const columnName = (cell: string) => cell.trim().toLowerCase().replace(/[\s.-]+/g, "_");

/**
 * Which column of a header holds each identifier: a column named as the identifier is (any case; spaces, hyphens and
 * dots count as underscores: "Profnet ID" is profnet_id). An identifier no column is named after is not read.
 */
export function guessIdentifierColumns(header: readonly string[]): Partial<Record<IdentifierName, number>> {
  const names = header.map(columnName);
  const out: Partial<Record<IdentifierName, number>> = {};
  for (const name of IDENTIFIER_NAMES) {
    const at = names.indexOf(name);
    if (at >= 0) out[name] = at;
  }
  return out;
}
