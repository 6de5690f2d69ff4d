/**
 * Files only their owner may read or write. `npm start` keeps the local database, the demo key and
 * the run's secrets (the libSQL server's token, the Worker's settings) in `.data/`: the folder is
 * 0700 and its files 0600 whatever the umask, and a folder or file left wider by an older version
 * is narrowed, each narrowing reported so the caller can say so.
 */
import { chmodSync, closeSync, mkdirSync, openSync, rmSync, statSync, writeFileSync } from "node:fs";

const PRIVATE_DIR = 0o700;
const PRIVATE_FILE = 0o600;

/** Creates `dir` (0700) if it is missing, or narrows it; returns what was narrowed. */
export function ensurePrivateDir(dir: string): string[] {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  return narrow(dir, PRIVATE_DIR);
}

/**
 * Creates the SQLite file `file` empty (0600) if it is missing, so the engine never creates it with
 * the umask's mode, or narrows it and its -wal and -shm files (SQLite gives those the database
 * file's mode only when it creates them); returns what was narrowed.
 */
export function ensurePrivateDatabaseFile(file: string): string[] {
  closeSync(openSync(file, "a", PRIVATE_FILE));
  return [file, `${file}-wal`, `${file}-shm`].flatMap((path) => narrow(path, PRIVATE_FILE));
}

/** Writes `text` to a new file that only its owner can read (an old file there is replaced, mode and all). */
export function writePrivateFile(file: string, text: string): void {
  rmSync(file, { force: true });
  writeFileSync(file, text, { mode: PRIVATE_FILE, flag: "wx" });
}

function narrow(path: string, allowed: number): string[] {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    return [];
  }
  if ((mode & ~allowed) === 0) return [];
  chmodSync(path, mode & allowed);
  return [`${path} was ${octal(mode)}, now ${octal(mode & allowed)}`];
}

const octal = (mode: number) => `0${mode.toString(8).padStart(3, "0")}`;
