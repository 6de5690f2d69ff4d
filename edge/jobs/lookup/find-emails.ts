/**
 * find_emails (docs/lookup-jobs.md "Found addresses"): once every line of a lookup job is answered, each line with a
 * name at a company (company_domain, or company) that the lookup did not answer with a work address at that domain
 * gets the email finder, as GET /v1/email_finder would answer it for the job's account and key (edge/finder/settle.ts
 * resolveFind: the same steps, RCPTs, receivers' budgets and repeats), charged as that call is (cost_per_line only when
 * confirmed; pattern-only answers, misses and a repeat within 30 days free) in the write that answers the line. A step
 * of the phase (one lookup-jobs "phase" message) takes at most FINDS_PER_STEP due lines, FIND_CONCURRENCY at a time,
 * then sends the phase again; a find whose receiver check is under way elsewhere stays due for a later step. When the
 * balance or the key's cap refuses a find, the job pauses as it does on its lookups and its resume check brings the
 * phase back. With verify_emails the verification phase starts once this one is done.
 */
import { contactInfoFromSnapshot } from "../../people/lookup.ts";
import type { LookupJobFind } from "../../../shared/lookup-jobs.ts";
import { domainOf } from "../../../shared/email/syntax.ts";
import { decodeCreditCaps } from "../../identity/store/keys.ts";
import { readFindQuery } from "../../finder/query.ts";
import { chargeable, repeatSince, resolveFind, type Caller } from "../../finder/settle.ts";
import { companyDomain } from "../../finder/service.ts";
import type { EngineDeps } from "../deps.ts";
import { findValues } from "./input.ts";
import { columnsOf, type LookupJobRow } from "../store/lookup-rows.ts";
import { answerFound, answerLine, claimFindStart, dueLinesQuery, finishFinds, pauseForFinds, type DueLine } from "../store/lookup-finds.ts";

/** Due lines one step takes, and how many finds run at once (each a few round trips and at most one or two RCPTs). */
export const FINDS_PER_STEP = 20;
const FIND_CONCURRENCY = 4;
/** How long one find may take before it is left to finish in the background (its line stays due for a later step). */
const FIND_DEADLINE_MS = 20_000;

export type FindStep =
  | { kind: "not_due" }
  /** More lines are due (`wait`: every find of the step was still checking: look again after a few seconds). */
  | { kind: "more"; wait: boolean }
  | { kind: "paused" }
  | { kind: "done"; completed: boolean };

/** Whether the lookup's answer already holds a work address at the domain. */
function hasWorkAddressAt(person: string | null, domain: string): boolean {
  if (person === null) return false;
  return (contactInfoFromSnapshot(person).work_email_addresses ?? []).some((email) => domainOf(email).toLowerCase() === domain);
}

type LineEnd = "answered" | "pending" | "refused";

async function findLine(deps: EngineDeps, job: LookupJobRow, line: DueLine): Promise<LineEnd> {
  const { db } = deps;
  const now = Date.now();
  const position = Number(line.position);
  const answer = async (a: LookupJobFind): Promise<LineEnd> => {
    await answerLine(db, job.id, position, a, now);
    return "answered";
  };
  const read = readFindQuery(findValues(job.format, columnsOf(job), line.input));
  if (!read.ok) return answer({ status: "error", error: read.problem.error, ...(read.problem.reason ? { reason: read.problem.reason } : {}) });
  const find = read.find;
  const domain = find.domain ?? (find.company === null ? null : await companyDomain(db, find.company));
  if (domain !== null && line.outcome === "found" && hasWorkAddressAt(line.person, domain)) return answer({ status: "not_needed" });

  const requestId = `${job.id}:find:${position + 1}`;
  const caller: Caller = {
    db,
    ctx: { db, config: deps.finderConfig, accountId: job.account_id, requestId, now },
    keyId: job.actor,
    cost: Number(job.cost),
    creditCaps: decodeCreditCaps(job.credit_caps),
    waitUntil: (p) => void p,
  };
  const minConfidence = job.min_confidence === null ? null : Number(job.min_confidence);
  const resolved = await resolveFind(caller, domain === null ? find : { ...find, domain }, minConfidence, FIND_DEADLINE_MS);
  if (resolved.kind === "pending") return "pending";
  if (resolved.kind === "error") {
    if (resolved.status === 402) return "refused";
    const reason = resolved.reason ? { reason: resolved.reason } : {};
    return answer(resolved.status === 404 ? { status: "not_found", ...(resolved.reason ? { error: resolved.error, ...reason } : {}) } : { status: "error", error: resolved.error, ...reason });
  }
  const r = resolved.outcome.result;
  const found: LookupJobFind = { status: "found", email: r.email, confidence: r.confidence, method: r.method, confirmed: r.confirmed, accept_all: r.accept_all };
  const at = Date.now();
  const charge = { accountId: job.account_id, keyId: job.actor, cost: caller.cost, requestId, now: at, creditCaps: caller.creditCaps };
  const written = await answerFound(
    db,
    { id: job.id, accountId: job.account_id },
    position,
    found,
    { chargeable: chargeable(caller, resolved), findKey: resolved.findKey, repeatSince: repeatSince(at), personId: resolved.outcome.personId },
    charge,
  );
  return written.answered ? "answered" : "refused";
}

/** One step of a job's finder phase: its start claimed when due, then a few due lines found; done once none is due. */
export async function stepFinds(deps: EngineDeps, job: LookupJobRow, now = Date.now()): Promise<FindStep> {
  if (Number(job.find_emails) !== 1 || job.status !== "running" || job.find_state === "done") return { kind: "not_due" };
  if (job.find_state === null && !(await claimFindStart(deps.db, job.id, now))) return { kind: "not_due" };
  const lines = await dueLinesQuery(deps.db, job.id, FINDS_PER_STEP);
  if (lines.length === 0) {
    const finished = await finishFinds(deps.db, job.id, Date.now());
    return finished.done ? { kind: "done", completed: finished.completed } : { kind: "not_due" };
  }
  const ends: LineEnd[] = [];
  let next = 0;
  let refused = false;
  const worker = async () => {
    while (next < lines.length && !refused) {
      const end = await findLine(deps, job, lines[next++]!);
      if (end === "refused") refused = true;
      ends.push(end);
    }
  };
  await Promise.all(Array.from({ length: FIND_CONCURRENCY }, worker));
  if (refused) {
    await pauseForFinds(deps.db, { id: job.id, accountId: job.account_id, cost: Number(job.cost) }, Date.now());
    return { kind: "paused" };
  }
  return { kind: "more", wait: ends.every((e) => e === "pending") };
}
