/**
 * WebAuthn challenges in the database (docs/api.md "Passkeys"): each options call stores one for CHALLENGE_TTL_MS, and
 * the verification that uses it takes it (finds and deletes it in one statement), so a challenge serves one attempt.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";

export const CHALLENGE_TTL_MS = 5 * 60_000;

export type ChallengePurpose = "join" | "sign_in" | "add_passkey" | "step_up";

/** The insert that stores a challenge (in a batch or alone). */
export function storeChallenge(db: Database, challenge: string, purpose: ChallengePurpose, ids: { inviteId?: string; memberId?: string }, now: number) {
  return db.run(sql`
    insert into webauthn_challenges (challenge, purpose, invite_id, member_id, expires_at)
    values (${challenge}, ${purpose}, ${ids.inviteId ?? null}, ${ids.memberId ?? null}, ${now + CHALLENGE_TTL_MS})`);
}

/** The delete that takes a live challenge of `purpose` (for a batch): its row, or none. */
export function takeChallenge(db: Database, challenge: string, purpose: ChallengePurpose, now: number) {
  return db.all<{ challenge: string; invite_id: string | null; member_id: string | null }>(sql`
    delete from webauthn_challenges where challenge = ${challenge} and purpose = ${purpose} and expires_at > ${now}
    returning challenge, invite_id, member_id`);
}

/** For the cron: challenges past their lifetime. */
export function deleteExpiredChallengesStatement(db: Database, now: number) {
  return db.run(sql`delete from webauthn_challenges where expires_at <= ${now}`);
}
