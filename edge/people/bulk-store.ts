/**
 * The batch lookup's statements (POST /v1/people/bulk, docs/api.md "POST /v1/people/bulk"): every statement on
 * lookup_batches and lookup_batch_items. A call is two round trips: the first matches every item to a person (and, with
 * an Idempotency-Key, claims the key or finds its first answer); the second is one transaction that charges the first
 * people in request order that the balance and the key's caps cover, records those disclosures, counts the rest in the
 * usage roll-up, keeps the answer for the key's replays and reads the people served. The invariant: a person is charged
 * at most once per call, and only while the call still holds its key's claim, so concurrent retries charge once.
 */
import { sql, type SQL } from "drizzle-orm";
import { ERROR_MESSAGES } from "../../shared/api.ts";
import type { Identifiers } from "../../shared/identifiers.ts";
import { balanceBelow, balanceNow, chargeRankedQuery, countBulkLookupsQuery, lookupsCovered, type LookupCharge } from "../money/credits.ts";
import type { Database } from "../db/client.ts";
import { deleteInBatches, type RawRow } from "../db/rows.ts";
import type { lookupBatchItems } from "../db/schema.ts";
import { matchedBySql, matchStatusSql, personExists, personIdMatching, personSnapshot, recordAccessesQuery, type IdentifierExpressions, type LookupFilter, type MatchStatus } from "./store.ts";
import { BULK_LOOKUP_MESSAGES } from "../../shared/bulk-lookups.ts";

/** How long an Idempotency-Key's first answer is kept and replayed. */
export const BATCH_IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/**
 * A claim older than this was left by a call that died before its charge (its transaction never committed): another
 * call with the key may take it over. Far longer than a call can live (DATABASE_TIMEOUT_MS per round trip); the old
 * call's statements check the claim's token, so even a late one could charge nothing.
 */
export const STALE_CLAIM_MS = 30_000;

/** One item to match: its position and identifiers. */
export type ItemToMatch = { position: number; ids: Identifiers };

/**
 * The statement that matches items to people (precedence as GET /v1/people), in one read: [position, person_id or null].
 * With a confidence floor, a person none of whose addresses reaches it matches nobody (a 404, not charged).
 */
export function matchItemsQuery(db: Database, items: readonly ItemToMatch[], filter: LookupFilter) {
  const withKeys = items.some((i) => i.ids.keys !== undefined);
  const rows = items.map((i) => {
    const k = i.ids.keys ?? {};
    const ids = [i.position, i.ids.profnetId ?? null, i.ids.profnetPublicIdentifier ?? null, i.ids.codehostId ?? null, i.ids.codehostLogin ?? null];
    return withKeys ? [...ids, k.email ?? null, k.phone ?? null, k.name ?? null, k.domain ?? null, k.company ?? null] : ids;
  });
  const f = (n: number) => sql.raw(`(f.value ->> ${n})`);
  const x: IdentifierExpressions = {
    profnetId: f(1),
    profnetPublicIdentifier: f(2),
    codehostId: f(3),
    codehostLogin: f(4),
    ...(withKeys ? { email: f(5), phone: f(6), name: f(7), domain: f(8), company: f(9) } : {}),
  };
  return db.all<{ position: number; person_id: number | null; status: MatchStatus; matched_by: string | null }>(sql`
    select ${f(0)} as position, ${personIdMatching(x, filter)} as person_id, ${matchStatusSql(x)} as status, ${matchedBySql(x)} as matched_by
    from json_each(${JSON.stringify(rows)}) f`);
}

export type BatchRow = { id: string; state: "pending" | "done"; claim_token: string | null; request_hash: string; actor: string };
export type StoredItem = Pick<RawRow<typeof lookupBatchItems.$inferSelect>, "position" | "status" | "person" | "error" | "reason">;

/**
 * The statements that claim an Idempotency-Key for this call, for the first round trip: a first answer older than
 * BATCH_IDEMPOTENCY_TTL_MS is forgotten first; then the key is this call's unless another call holds it (a claim
 * younger than STALE_CLAIM_MS, or an answer); then the key's row and its stored items are read back.
 */
export function claimKeyStatements(db: Database, k: { batchId: string; accountId: string; actor: string; key: string; requestHash: string; token: string; now: number }) {
  const mine = sql`account_id = ${k.accountId} and idempotency_key = ${k.key}`;
  const expired = sql`${mine} and created_at <= ${k.now - BATCH_IDEMPOTENCY_TTL_MS}`;
  return [
    db.run(sql`delete from lookup_batch_items where batch_id in (select id from lookup_batches where ${expired})`),
    db.run(sql`delete from lookup_batches where ${expired}`),
    db.run(sql`insert into lookup_batches (id, account_id, actor, idempotency_key, request_hash, state, claim_token, created_at)
      values (${k.batchId}, ${k.accountId}, ${k.actor}, ${k.key}, ${k.requestHash}, 'pending', ${k.token}, ${k.now})
      on conflict (account_id, idempotency_key) where idempotency_key is not null do update set
        claim_token = excluded.claim_token, actor = excluded.actor, request_hash = excluded.request_hash, created_at = excluded.created_at
      where lookup_batches.state = 'pending' and lookup_batches.created_at < ${k.now - STALE_CLAIM_MS}`),
    db.all<BatchRow>(sql`select id, state, claim_token, request_hash, actor from lookup_batches where ${mine}`),
    db.all<StoredItem>(sql`select position, status, person, error, reason from lookup_batch_items
      where batch_id = (select id from lookup_batches where ${mine} and state = 'done') order by position`),
  ] as const;
}

/** What the answering transaction needs: the call, the charge, and the items as the first round trip left them. */
export type BatchAnswer = {
  batchId: string;
  token: string;
  /** A call without an Idempotency-Key: its row is written (and deleted) in this same transaction. */
  scratch: { accountId: string; actor: string; requestHash: string } | null;
  /** Items kept for replays (with an Idempotency-Key). */
  keep: boolean;
  charge: Omit<LookupCharge, "requestId"> & { requestId: string };
  /** [position, person_id, what found them] of the items that matched someone, in request order. */
  found: [number, number, string | null][];
  /** Positions of the items that matched nobody. */
  notFound: number[];
  /** [position, status, error, reason] of those of notFound whose inputs fit several people (404) or named different ones (409). */
  unmatched: [number, number, string, string | null][];
  /** [position, message] of the items that failed validation. */
  invalid: [number, string][];
  /** The time confidences are computed at (the charge's) and the call's min_confidence: what the answers serve. */
  filter: LookupFilter;
};

/**
 * The answering transaction's statements (the second round trip), guarded by the claim: a call that lost its key's
 * claim (taken over as stale) charges, records and keeps nothing. Returns the statements and where their answers are.
 *
 * Once the call cannot pay (the balance or a cap covers no more lookups after its charge), every later item answers
 * 402, whether or not it matches someone (docs/api.md "POST /v1/people/bulk"): the first item past the last person
 * served on is refused, so a call with nothing to spend learns nothing of who is held. `cut` is that point: the first
 * position of the last person served (-1 when none was), null while the call could still pay.
 */
export function answerStatements(db: Database, a: BatchAnswer) {
  const held = sql`exists (select 1 from lookup_batches where id = ${a.batchId} and claim_token = ${a.token} and state = 'pending')`;
  const found = JSON.stringify(a.found);
  // The people asked for, each once, ranked by their first item: only those who still exist (an erasure may have come between the two round trips).
  // matched_by: what found the person in their first item (SQLite's bare column beside min() is the min row's).
  const ranked = sql`select person_id, rank, first_position, matched_by from (
      select f.value ->> 1 as person_id, row_number() over (order by min(f.key)) as rank, min(cast(f.value ->> 0 as integer)) as first_position, f.value ->> 2 as matched_by
      from json_each(${found}) f where ${personExists(sql.raw("(f.value ->> 1)"))} group by f.value ->> 1)`;
  const served = sql`(select served from lookup_batches where id = ${a.batchId} and claim_token = ${a.token})`;
  const servedPeople = sql`select person_id from (${ranked}) where rank <= ${served}`;
  const servedMatches = sql`select person_id, matched_by from (${ranked}) where rank <= ${served}`;
  const cut = sql`(select case when refusal is null then null else (select coalesce(max(first_position), -1) from (${ranked}) where rank <= ${served}) end
    from lookup_batches where id = ${a.batchId} and claim_token = ${a.token})`;
  const { accountId, cost } = a.charge;
  const statements = [
    ...(a.scratch
      ? [
          db.run(sql`insert into lookup_batches (id, account_id, actor, request_hash, state, claim_token, created_at)
            values (${a.batchId}, ${a.scratch.accountId}, ${a.scratch.actor}, ${a.scratch.requestHash}, 'pending', ${a.token}, ${a.charge.now})`),
        ]
      : []),
    chargeRankedQuery(db, a.charge, sql`select rank, ${a.charge.requestId} as request_id from (${ranked})`, sql`(case when ${held} then ${lookupsCovered(a.charge)} else 0 end)`),
    // changes(): the rows the charge just wrote, on this connection in this transaction.
    db.run(sql`update lookup_batches set served = changes() where id = ${a.batchId} and claim_token = ${a.token}`),
    // Read after the charge: nothing more can be paid for (a cost of 0 never runs out).
    db.run(sql`update lookup_batches set balance_after = ${balanceNow(accountId)},
        refusal = case when ${lookupsCovered(a.charge)} < 1 then (case when ${balanceBelow(accountId, cost)} then 'insufficient_credits' else 'daily_credit_cap' end) end
      where id = ${a.batchId} and claim_token = ${a.token}`),
    recordAccessesQuery(db, servedMatches, accountId, a.charge.keyId, a.charge.now),
    countBulkLookupsQuery(
      db,
      a.charge,
      sql`(case when ${held} then (select count(*) from json_each(${JSON.stringify(a.notFound)}) f where ${cut} is null or f.value <= ${cut}) else 0 end)`,
      sql`(case when ${held} then (select count(*) from json_each(${found}) f where (f.value ->> 1) not in (${servedPeople}))
        + (select count(*) from json_each(${JSON.stringify(a.notFound)}) f where f.value > ${cut}) else 0 end)`,
    ),
    ...(a.keep ? [keepItemsQuery(db, a, ranked, served, cut)] : []),
  ];
  const reads = [
    db.all<{ person_id: number; person: string }>(sql`select s.person_id, ${personSnapshot(sql.raw("s.person_id"), a.filter)} as person from (${servedPeople}) s`),
    db.all<{ served: number; refusal: string | null; balance_after: number | null; cut: number | null }>(
      sql`select served, refusal, balance_after, ${cut} as cut from lookup_batches where id = ${a.batchId} and claim_token = ${a.token}`,
    ),
  ] as const;
  const finish = a.scratch
    ? db.run(sql`delete from lookup_batches where id = ${a.batchId} and claim_token = ${a.token}`)
    : db.run(sql`update lookup_batches set state = 'done', claim_token = null where id = ${a.batchId} and claim_token = ${a.token}`);
  return { statements, reads, finish };
}

/** The first answer, item by item, for the key's replays: a 200 keeps the person as served; past the cut, 402 (answerStatements). */
function keepItemsQuery(db: Database, a: BatchAnswer, ranked: SQL, served: SQL, cut: SQL) {
  const refusal = sql`(select refusal from lookup_batches where id = ${a.batchId})`;
  const refusedError = sql`case when ${refusal} = 'daily_credit_cap' then ${ERROR_MESSAGES.dailyCreditCap} else ${ERROR_MESSAGES.insufficientCredits} end`;
  const refusedReason = sql`case when ${refusal} = 'daily_credit_cap' then 'daily_credit_cap' end`;
  const pastCut = (position: SQL) => sql`(${cut} is not null and ${position} > ${cut})`;
  const position = sql.raw("cast(f.value ->> 0 as integer)");
  return db.run(sql`insert into lookup_batch_items (batch_id, position, status, person_id, person, error, reason)
    select ${a.batchId}, f.value ->> 0, 400, null, null, f.value ->> 1, null from json_each(${JSON.stringify(a.invalid)}) f
    union all
    select ${a.batchId}, f.value, case when ${pastCut(sql.raw("f.value"))} then 402 else coalesce(u.value ->> 1, 404) end, null, null,
      case when ${pastCut(sql.raw("f.value"))} then ${refusedError} else coalesce(u.value ->> 2, ${ERROR_MESSAGES.profileNotFound}) end,
      case when ${pastCut(sql.raw("f.value"))} then ${refusedReason} else u.value ->> 3 end
    from json_each(${JSON.stringify(a.notFound)}) f left join json_each(${JSON.stringify(a.unmatched)}) u on (u.value ->> 0) = f.value
    union all
    select ${a.batchId}, f.value ->> 0,
      case when r.rank <= ${served} then 200 when ${pastCut(position)} then 402 else 404 end,
      case when r.rank <= ${served} then r.person_id end,
      case when r.rank <= ${served} then ${personSnapshot(sql.raw("r.person_id"), a.filter)} end,
      case when r.rank <= ${served} then null when ${pastCut(position)} then ${refusedError} else ${ERROR_MESSAGES.profileNotFound} end,
      case when r.rank <= ${served} then null when ${pastCut(position)} then ${refusedReason} end
    from json_each(${found(a)}) f left join (${ranked}) r on r.person_id = f.value ->> 1
    where exists (select 1 from lookup_batches where id = ${a.batchId} and claim_token = ${a.token})`);
}

const found = (a: BatchAnswer) => JSON.stringify(a.found);

/** Answers with an Idempotency-Key older than BATCH_IDEMPOTENCY_TTL_MS: deleted by the cron, a bounded number per run. */
export async function deleteExpiredBatches(db: Database, now: number): Promise<number> {
  const before = now - BATCH_IDEMPOTENCY_TTL_MS;
  const { deleted } = await deleteInBatches(async (limit) => {
    const [, rows] = await db.batch([
      db.run(sql`delete from lookup_batch_items where batch_id in (select id from lookup_batches where created_at <= ${before} order by created_at limit ${limit})`),
      db.run(sql`delete from lookup_batches where id in (select id from lookup_batches where created_at <= ${before} order by created_at limit ${limit})`),
    ]);
    return rows;
  }, 1_000, 10_000);
  return deleted;
}

/**
 * The statement an erasure adds to its write batch (scripts/admin/people-erase.ts): every kept first answer that
 * disclosed one of these people (an SQL select of ids) no longer does: its item answers 410, saying so.
 */
export function eraseFromBatchAnswers(personIds: SQL): SQL {
  return sql`update lookup_batch_items set status = 410, person_id = null, person = null, error = ${BULK_LOOKUP_MESSAGES.erased}, reason = null
    where person_id in (${personIds})`;
}

/**
 * The statement a merge (scripts/admin/people-merge.ts) adds to its write batch: every kept batch answer of `mergedId`
 * becomes `keptId`'s, so erasing that person reaches it; it returns the rows it moved (key, position) for the snapshot.
 */
export const moveBatchItemsStatement = (keptId: number, mergedId: number): SQL =>
  sql`update lookup_batch_items set person_id = ${keptId} where person_id = ${mergedId} returning batch_id as key, position`;

/** An undone merge's statement: the items the merge moved (and still the kept person's) are the merged person's again. */
export const restoreBatchItemsStatement = (keptId: number, mergedId: number, moved: readonly [string, number][]): SQL =>
  sql`update lookup_batch_items set person_id = ${mergedId} where person_id = ${keptId}
    and (batch_id, position) in (select value ->> 0, value ->> 1 from json_each(${JSON.stringify(moved)}))`;
