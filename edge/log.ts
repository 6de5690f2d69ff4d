/**
 * Structured logs (docs/operations.md "Logs"): one JSON object per line on the console, which Workers Logs
 * indexes in production and `npm start` prints. Nothing personal or secret goes in: no token,
 * query value, email address, phone number or SQL parameter. Errors are logged as their cause
 * chain's names and codes; a message is kept only when it cannot carry a query's text or values
 * (Drizzle's "Failed query: <sql> params: <values>" never is), and even then passes redact().
 */
import { DrizzleQueryError } from "drizzle-orm";

export type LogLevel = "info" | "warn" | "error";

/** Workers Logs keeps the level of the console method, so each level has its own. */
export function writeLog(level: LogLevel, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ level, ...fields });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.info(line);
}

export type ErrorSummary = { name: string; code?: string; message?: string };

const MAX_CAUSES = 6;
const MAX_MESSAGE_LENGTH = 300;

/** An error and its causes, outermost first, as names, codes and redacted messages. */
export function describeError(error: unknown): ErrorSummary[] {
  const chain: ErrorSummary[] = [];
  for (let cause = error; cause !== undefined && cause !== null && chain.length < MAX_CAUSES; cause = (cause as { cause?: unknown }).cause) {
    if (!(cause instanceof Error)) {
      chain.push({ name: typeof cause });
      break;
    }
    const code = (cause as { code?: unknown }).code;
    const summary: ErrorSummary = { name: cause instanceof DrizzleQueryError ? "DrizzleQueryError" : cause.name };
    if (typeof code === "string") summary.code = code;
    if (!(cause instanceof DrizzleQueryError) && cause.message) summary.message = redact(cause.message).slice(0, MAX_MESSAGE_LENGTH);
    chain.push(summary);
  }
  return chain;
}

/** Where an unexpected error was thrown: its stack without the first line, which repeats the message. */
export function stackOf(error: unknown): string | undefined {
  if (!(error instanceof Error) || error instanceof DrizzleQueryError || !error.stack) return undefined;
  return redact(error.stack.split("\n").slice(1).join("\n"));
}

const REDACTIONS: [RegExp, string][] = [
  [/cv_[A-Za-z0-9_-]{8,}/g, "[token]"],
  [/\b[0-9a-f]{64}\b/gi, "[hash]"],
  [/[^\s@"'<>(),;:]+@[^\s@"'<>(),;:]+/g, "[email]"],
  [/\+?\d[\d ().-]{6,}\d/g, "[number]"],
];

/** Masks anything in a message that looks like a token, a token hash, an email address or a phone number. */
export function redact(text: string): string {
  return REDACTIONS.reduce((result, [pattern, replacement]) => result.replace(pattern, replacement), text);
}
