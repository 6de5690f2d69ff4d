/**
 * SQLite's lower(): it folds ASCII letters only, and the unique indexes on identifiers and addresses are on
 * lower(). Whatever tells values apart in memory (an import's plan, a refresh batch, a suppression hash) must
 * fold exactly the same way, or it would disagree with the database.
 */
export function sqliteLower(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}
