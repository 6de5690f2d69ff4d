/**
 * `keys create`'s options (--name, --scopes, --expires, --daily-credit-cap) read into what
 * createApiKey takes, or the problem with them, for the CLI to report as a usage error.
 */
import { DisplayName } from "../../shared/display-name.ts";
import { MAX_DAILY_CREDIT_CAP } from "../../shared/keys.ts";
import { isScope, SCOPES, type Scope } from "../../shared/scopes.ts";
import type { KeyOptions } from "./accounts.ts";

type Values = Record<string, string | boolean | undefined>;

export const KEY_OPTIONS = {
  name: { type: "string" },
  scopes: { type: "string" },
  expires: { type: "string" },
  "daily-credit-cap": { type: "string" },
} as const;

export function parseKeyOptions(values: Values): { options: KeyOptions } | { problem: string } {
  const options: KeyOptions = {};
  if (typeof values.name === "string") {
    const name = DisplayName.safeParse(values.name);
    if (!name.success) return { problem: `--name must be 1 to 100 characters, printable, without bidirectional controls: it ${name.error.issues[0]?.message ?? "is malformed"}` };
    options.name = name.data;
  }
  if (typeof values.scopes === "string") {
    const scopes = values.scopes.split(",").map((s) => s.trim()).filter((s) => s !== "");
    const unknown = scopes.find((s) => !isScope(s));
    if (unknown !== undefined) return { problem: `--scopes: unknown scope ${JSON.stringify(unknown)} (known: ${SCOPES.join(", ")})` };
    if (scopes.length === 0) return { problem: "--scopes must name at least one scope" };
    options.scopes = [...new Set(scopes as Scope[])];
  }
  if (typeof values.expires === "string") {
    const raw = values.expires.trim();
    const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(raw) ? Date.parse(raw) : Number.NaN;
    if (!Number.isFinite(ms)) return { problem: `--expires must be an RFC 3339 date-time such as 2027-01-01T00:00:00Z, got ${JSON.stringify(raw)}` };
    options.expiresAt = ms;
  }
  if (typeof values["daily-credit-cap"] === "string") {
    const raw = values["daily-credit-cap"].trim();
    const cap = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(cap) || cap < 1 || cap > MAX_DAILY_CREDIT_CAP) return { problem: `--daily-credit-cap must be an integer from 1 to ${MAX_DAILY_CREDIT_CAP}, got ${JSON.stringify(raw)}` };
    options.dailyCreditCap = cap;
  }
  return { options };
}
