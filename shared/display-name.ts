/**
 * What a person calls something in this API (a member, a passkey, a key): shown to other people in the console, the
 * audit trail and the CLI, so it may hold no control character and no bidirectional control (U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069), which could make a name display as another ("Trojan Source", CVE-2021-42574).
 */
import { z } from "@hono/zod-openapi";

const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/** A name with no control and no bidirectional control character (a list's name in shared/jobs.ts follows the same rule). */
export function isShowable(name: string): boolean {
  return !/\p{Cc}/u.test(name) && !BIDI_CONTROLS.test(name);
}

/** A name: trimmed, 1 to 100 characters, printable, without bidirectional controls. */
export const DisplayName = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(100, "must be at most 100 characters")
  .refine((s) => !/\p{Cc}/u.test(s), "must not contain control characters")
  .refine((s) => !BIDI_CONTROLS.test(s), "must not contain bidirectional control characters");
