/**
 * What `npm run verify-list` and `npm run enrich-list` share as commands: their two kinds of expected failure, and the
 * way a failure ends the process (a message on stderr naming the command; exit 2 for a usage error, 1 otherwise).
 */

/** The command line is wrong: exit 2. */
export class UsageError extends Error {}

/** The API refused or failed, and said why: exit 1 with its words. */
export class ApiFailure extends Error {}

/** Runs a list command's body, and ends the process as its failure deserves. */
export async function runListCommand(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    if (error instanceof UsageError || error instanceof ApiFailure) {
      process.stderr.write(`${name}: ${error.message}\n`);
      process.exit(error instanceof UsageError ? 2 : 1);
    }
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : "";
    process.stderr.write(`${name}: ${error instanceof Error ? error.message : String(error)}${cause}\n`);
    process.exit(1);
  }
}
