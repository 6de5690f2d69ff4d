/**
 * Whether a module is the script Node was started with (`node --import tsx scripts/x.ts`, `tsx bench/y.ts`), so a file
 * can be both a program and a library. Comparing import.meta.url with `file://${process.argv[1]}` fails for a path
 * with a space (the URL encodes it as %20) or one reached through a symlink (the loader reports the real path): the
 * program then exits 0 having done nothing. Both sides are resolved to real paths here instead.
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** `moduleUrl`: the caller's import.meta.url. */
export function isMainModule(moduleUrl: string, argv1: string | undefined = process.argv[1]): boolean {
  if (!argv1) return false;
  try {
    return realpathSync(argv1) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
