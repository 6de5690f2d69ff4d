/**
 * A block of our probe is never a customer's answer (issue 36 item 1; docs/jobs.md "While our probe is blocked", docs/api.md
 * `probe_refused`), inside workerd with the real database, the Worker's own queue handler and the real probe service
 * against mail servers that block it (test/fixtures/test-mail.ts: 554 5.7.1 at RCPT for a while, at the greeting once,
 * at the greeting always; the probe's self-hosted block lasts 2 s in this run): a job's lines there wait with
 * `queue.waiting_on` saying so and complete when the block lifts, or go to another probe; none is answered
 * `policy_block`; a single check says the probe was refused. The stand-in probe (test/fixtures/probe-fixture.ts) sends
 * the notices the Worker acts on: a block's `policy_block` answers taken back, and a learned rule handed to the fleet.
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { EmailVerificationResult } from "../../shared/api.ts";
import { VerificationJob } from "../../shared/jobs.ts";
import { WARNINGS } from "../../shared/email/verdict.ts";
import { probeOrder, rankingKey } from "../../edge/verification/probe-ranking.ts";
import type { FixtureBatch } from "../fixtures/probe-fixture.ts";
import { call, cancelUnfinishedJobs, db, newAccount } from "./helpers.ts";
import { deliverTurn, queuedJob, recordingQueue } from "./job-turns.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";
const getJob = async (token: string, id: string) => VerificationJob.strict().parse(await (await call(`${PATH}/${id}`, { token })).json());
const lines = async (job: string) =>
  await db.all<{ position: number; state: string; reason: string | null; classification: string | null; waiting_on: string | null; probe_failures: number; result: string | null }>(sql`
    select position, state, reason, classification, waiting_on, probe_failures, result from verification_job_items where job_id = ${job} order by position`);
const batches = async () => (await (await fetch(`${inject("probeFixtureUrl")}/__batches`)).json()) as FixtureBatch[];

/** Turns until the job completes (a busy queue brings them), within `limitMs`; the states seen on the way. */
async function runToEnd(token: string, id: string, bindings: Record<string, unknown>, limitMs: number): Promise<Set<string>> {
  const seen = new Set<string>();
  const started = Date.now();
  while ((await getJob(token, id)).status !== "completed") {
    expect(Date.now() - started, "the job ends once the block lifts").toBeLessThan(limitMs);
    await deliverTurn(id, bindings as never);
    for (const l of await lines(id)) seen.add(`${l.state}${l.reason ? ` ${l.reason}` : ""}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return seen;
}

describe("a job's lines at a receiver that blocks our probe", () => {
  it("wait for the block's end (queue.waiting_on says refused), are never answered policy_block, and complete when it lifts", async () => {
    const { token, accountId } = await newAccount(0);
    const id = await queuedJob(accountId, ["ana@rcptblock.test", "bo@rcptblock.test", "nobody@rcptblock.test"]);
    const { queue } = recordingQueue();
    const bindings = { JOBS_QUEUE: queue, PROBE_URL: inject("probeUrl") };

    // The server refuses the probe's first three RCPTs with 554 5.7.1 "Client host rejected": a block, not answers.
    await deliverTurn(id, bindings);
    const parked = await lines(id);
    expect(parked.map((l) => [l.state, l.waiting_on])).toEqual([
      ["waiting", "refused:self-hosted"],
      ["waiting", "refused:self-hosted"],
      ["waiting", "refused:self-hosted"],
    ]);
    const waiting = await getJob(token, id);
    expect(waiting).toMatchObject({ status: "running", processed: 0, queue: { waiting_on: { "refused:self-hosted": 3 }, lines_waiting: 3 } });
    // The estimate says when the block ends (2 s in this run).
    expect(Date.parse(waiting.queue.estimated_completion_at!)).toBeGreaterThan(Date.now());

    const seen = await runToEnd(token, id, bindings, 20_000);
    expect([...seen].filter((s) => s.includes("policy_block"))).toEqual([]);
    const done = await lines(id);
    expect(done.map((l) => [l.state, l.classification, l.reason])).toEqual([
      ["done", "valid", "deliverable"],
      ["done", "valid", "deliverable"],
      ["done", "invalid", "mailbox_not_found"],
    ]);
    expect((await getJob(token, id)).queue.waiting_on).toEqual({});
  });

  it("go to another probe of the fleet at once when the first is refused, at no claim and no probe failure of theirs beyond the move", async () => {
    const { token, accountId } = await newAccount(0);
    const real = inject("probeUrl");
    const other = inject("probeFixtureUrl");
    const urls = [real, other];
    // A domain behind the server that always refuses the real probe, whose first probe in the ranking is the real one.
    const mx = [{ host: "mx.alwaysblock.test", preference: 10 }];
    const domain = Array.from({ length: 12 }, (_, i) => `alwaysblock${i}.test`).find((d) => probeOrder(urls, rankingKey(`ana@${d}`, mx))[0] === real);
    expect(domain, "one of twelve domains ranks the real probe first").toBeDefined();
    const id = await queuedJob(accountId, [`ana@${domain}`, `bo@${domain}`]);
    const { queue } = recordingQueue();
    const bindings = { JOBS_QUEUE: queue, PROBE_URL: urls.join(",") };
    await deliverTurn(id, bindings);
    // Refused at the real probe: moved one place down the ranking, pending, no claim counted.
    expect((await lines(id)).map((l) => [l.state, l.probe_failures])).toEqual([
      ["pending", 1],
      ["pending", 1],
    ]);
    await runToEnd(token, id, bindings, 10_000);
    expect((await lines(id)).map((l) => [l.state, l.classification])).toEqual([
      ["done", "valid"],
      ["done", "valid"],
    ]);
    expect((await batches()).some((b) => b.emails.includes(`ana@${domain}`))).toBe(true);
  });
});

describe("a single check at a receiver that blocks our probe", () => {
  it("is risky with the reason that says the probe was refused (not the mailbox), its warning, and when to try again", async () => {
    const { token } = await newAccount(0);
    const res = await call(`/v1/email_verifications?${new URLSearchParams({ email_address: "ana@greetblock.test" })}`, { token });
    expect(res.status).toBe(200);
    const result = EmailVerificationResult.parse(await res.json());
    expect(result).toMatchObject({ classification: "risky", reason: "probe_refused", warnings: [WARNINGS.probeRefused], errors: [] });
    expect(result.checks.smtp_deliverable).toBeNull();
    expect(result.details).toMatchObject({ smtp_outcome: "blocked", smtp_reply: { code: 554, enhanced_code: "5.7.1" } });
    expect(Date.parse(result.details!.smtp_retry_at!)).toBeGreaterThan(Date.now());
  });
});

describe("what a probe's notices make the Worker do", () => {
  it("a refused notice takes back the policy_block answers at its domain (they were the block), and the job runs them again", async () => {
    const { token, accountId } = await newAccount(0);
    const gw = "xn--bcher-kva.test";
    const a = await queuedJob(accountId, [`ana@${gw}`, `held3@${gw}`]);
    const { queue } = recordingQueue();
    const bindings = { JOBS_QUEUE: queue };
    await deliverTurn(a, bindings);
    // As a block seen too late would have left it: answered policy_block a moment ago.
    await db.run(sql`update verification_job_items set reason = 'policy_block', classification = 'risky' where job_id = ${a} and position = 0`);
    const other = await newAccount(0);
    await deliverTurn(await queuedJob(other.accountId, [`refusednotice@${gw}`]), bindings);
    expect((await lines(a)).map((l) => [l.position, l.state, l.reason])).toEqual([
      [0, "pending", null],
      [1, "waiting", null],
    ]);
    expect(await getJob(token, a)).toMatchObject({ status: "running", processed: 0 });
    await deliverTurn(a, bindings);
    expect((await lines(a))[0]).toMatchObject({ state: "done", reason: "deliverable" });
  });

  it("a learned rule from one probe is kept and handed to every probe with the next batch for that receiver", async () => {
    const { accountId } = await newAccount(0);
    const { queue } = recordingQueue();
    const bindings = { JOBS_QUEUE: queue };
    // The stand-in says it learned a block at unknown.test's MX address (127.0.0.27).
    await deliverTurn(await queuedJob(accountId, ["learned@unknown.test"]), bindings);
    const kept = await db.all<{ key: string; harvest: number; blocks: number }>(sql`select key, harvest, blocks from receiver_lessons where key = 'self-hosted 127.0.0.27'`);
    expect(kept).toEqual([{ key: "self-hosted 127.0.0.27", harvest: 1, blocks: 1 }]);
    // The next batch to that receiver carries it, whichever probe it goes to.
    await deliverTurn(await queuedJob(accountId, ["someone2@unknown.test"]), bindings);
    const last = (await batches()).filter((b) => b.emails.includes("someone2@unknown.test")).at(-1)!;
    expect(last.learned).toEqual(["self-hosted 127.0.0.27"]);
  });
});
