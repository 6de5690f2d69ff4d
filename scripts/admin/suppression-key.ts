/** Where the admin CLI finds SUPPRESSION_KEY (docs/operations.md "Personal data"): the environment, or for the local database a file in .data/. */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AdminError } from "./accounts.ts";
import { LOCAL_DATA_DIR } from "../lib/database.ts";
import { writePrivateFile } from "../lib/private-files.ts";
import { SUPPRESSION_KEY_MESSAGES } from "./people-privacy.ts";

const KEY_FORMAT = /^[A-Za-z0-9+/]{43}=$/;

export const localSuppressionKeyFile = (dataDir = LOCAL_DATA_DIR) => join(dataDir, "suppression-key");

/**
 * SUPPRESSION_KEY from the environment; for the local database (no DATABASE_URL), the one kept in .data/,
 * made on first use. Undefined when neither.
 */
export function suppressionKey(env: NodeJS.ProcessEnv = process.env, dataDir = LOCAL_DATA_DIR): string | undefined {
  const given = env.SUPPRESSION_KEY?.trim();
  if (given) {
    if (!KEY_FORMAT.test(given)) throw new AdminError(SUPPRESSION_KEY_MESSAGES.format);
    return given;
  }
  if (env.DATABASE_URL?.trim()) return undefined;
  const file = localSuppressionKeyFile(dataDir);
  try {
    const kept = readFileSync(file, "utf8").trim();
    if (kept) return kept;
  } catch {
    // made below
  }
  const key = randomBytes(32).toString("base64");
  writePrivateFile(file, `${key}\n`);
  return key;
}

