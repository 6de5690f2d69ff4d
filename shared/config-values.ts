/**
 * Pieces both configurations (the Worker's edge/env.ts, the probe's probe/config.ts) parse their
 * settings with: an environment variable set to an empty string counts as not set, so a blank line
 * in a .env file or an empty secret falls back to the default instead of failing as a bad value.
 */
export const emptyToUndefined = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);
