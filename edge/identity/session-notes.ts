/**
 * One-time values held with a session (docs/console.md "Forms"): what a console form hands to the page it redirects
 * to (a notice, an error, once a new key's secret), so that every form is POST-redirect-GET and no text a third party
 * could write travels in a URL (a `?error=` link would show its free text as the console's own alert). The page finds
 * the note by the id in its URL (`?note=`), reads it once and deletes it in the same statement; only the session that
 * made it can: the note is sealed (AES-GCM) with a key derived (HKDF) from that session's secret, which lives in the
 * browser's cookie and never in the database. Notes go with their session and are deleted by the cron after
 * NOTE_LIFETIME_MS.
 */
import type { Context } from "hono";
import type { ContactInfo, EmailFinderResult } from "../../shared/api.ts";
import { requestDatabase } from "../db/client.ts";
import { insertNote, takeSealedNote } from "./store/sessions.ts";
import type { AppEnv } from "../env.ts";
import { base64url, hashToken, looksLikeSecret, newId } from "./tokens.ts";
import { NOTE_LIFETIME_MS, readSessionToken } from "./sessions.ts";

/** A note's text is a sentence or two; a secret is a token. */
const NOTE_TEXT_MAX = 1_000;

/**
 * A person as the console's lookup received them (their ContactInfo), for the page its form redirects to: personal
 * data, so sealed like every note, read once, and deleted unread by the cron after NOTE_LIFETIME_MS at the latest.
 */
export type SessionNote =
  | { kind: "done" | "error"; text: string }
  | { kind: "secret"; text: string; secret: string }
  | { kind: "person"; text: string; person: ContactInfo }
  | { kind: "find"; text: string; find: FindNote };

/**
 * What the console's "Find an address" form asked and what GET /v1/email_finder answered, for the page it redirects to:
 * an address made from a person's name is personal data, so it travels as the person a lookup found does.
 */
export type FindNote = {
  asked: { full_name: string; company: string; min_confidence: string };
  /** The domain the find was for (the one given, or the one the answer names), for the domain panel; null: none known. */
  domain: string | null;
  outcome:
    | { kind: "found"; result: EmailFinderResult; charged: number }
    | { kind: "pending"; retryAfter: number }
    | { kind: "error"; status: number; message: string };
};

const encoder = new TextEncoder();

/** WebCrypto's key type, named the same way in workerd's and Node's typings. */
type AesKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

async function noteKey(sessionToken: string): Promise<AesKey> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(sessionToken), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode("contact-verify session note v1") },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

function fromBase64url(text: string): Uint8Array {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
}

/** The request's session secret, when it carries a well-formed one. */
function sessionSecret(c: Context<AppEnv>): string | null {
  const token = readSessionToken(c);
  return token !== null && looksLikeSecret("cvs_", token) ? token : null;
}

/** Keeps `note` for the next page of this session: the id to put in its URL (`?note=`), or null without a session. */
export async function putNote(c: Context<AppEnv>, note: SessionNote): Promise<string | null> {
  const token = sessionSecret(c);
  if (token === null) return null;
  const plain = encoder.encode(JSON.stringify({ ...note, text: note.text.slice(0, NOTE_TEXT_MAX) }));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await noteKey(token), plain));
  const id = newId("note");
  const sealedText = base64url(new Uint8Array([...iv, ...sealed]));
  const kept = await insertNote(requestDatabase(c), { id, tokenHash: await hashToken(token), sealed: sealedText, now: Date.now() });
  return kept ? id : null;
}

/** The note `?note=` names, once: read and deleted in one statement, by the session that made it. Null otherwise. */
export async function takeNote(c: Context<AppEnv>): Promise<SessionNote | null> {
  const id = c.req.query("note");
  const token = sessionSecret(c);
  if (!id || id.length > 64 || token === null) return null;
  const sealed = await takeSealedNote(requestDatabase(c), { id, tokenHash: await hashToken(token), since: Date.now() - NOTE_LIFETIME_MS });
  if (sealed === null) return null;
  try {
    const bytes = fromBase64url(sealed);
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.slice(0, 12) }, await noteKey(token), bytes.slice(12));
    return JSON.parse(new TextDecoder().decode(plain)) as SessionNote;
  } catch {
    return null;
  }
}

/** The redirect a form answers with: to `path`, carrying `note` for it. */
export async function redirectWithNote(c: Context<AppEnv>, path: string, note: SessionNote): Promise<Response> {
  const id = await putNote(c, note);
  const url = new URL(path, c.req.url);
  if (id !== null) url.searchParams.set("note", id);
  return c.redirect(url.pathname + url.search, 303);
}
