/**
 * Longer than 400 lines on purpose: one benchmark: the labelled world built out of the real stack, its checks, its customers and its tables.
 * Confidence on a labelled world made of real parts (docs/api.md "Confidence", issue 39): the world of
 * bench/confidence-world.ts (the same generator, the same seed), built out of the whole local stack instead of scored by
 * the pure function:
 *
 * - fixture mail servers on port 25 (test/fixtures/mta-fixture.ts, in this process) that know which mailbox lives:
 *   ordinary servers answer each address as the world says (at our check, then now), catch-all servers take any
 *   address, and "silent" ones greylist every recipient (450), so a check learns nothing (the refresh's recheck delay,
 *   JOB_RETRY_DELAY_SECONDS, is 0: its temporary answer stands);
 * - the people imported through the real import path (`people import`'s importPeople), one file per supplier and
 *   import date, oldest first; each import's sightings are then moved back to its date (the only stand-in for time);
 * - our own checks made by the real re-verification (the cron's refresh job, the probe, SMTP conversations with the
 *   fixtures) of the share of addresses the world says we checked, each check's time then moved back by its age;
 * - customers (several accounts, one key each) reporting hard bounces and deliveries through POST /v1/email_feedback,
 *   one of them poisoning (it reports live addresses as bounced); their hard bounces move addresses to the front of
 *   re-verification, and the stack's cron re-verifies them as it would;
 * - every address read back through GET /v1/people (include=email_details) and its confidence set beside whether its
 *   mailbox lives, per the fixtures' labels.
 *
 * Then the time from a mailbox dying to its removal from lookups and to the `person.address_undeliverable` webhook,
 * against one re-verification cycle, and the database round trips of a warm lookup (libSQL's request count).
 *
 *   sudo unshare -n bash -c 'ip link set lo up; npx tsx bench/confidence-smtp.ts [--addresses 3000] [--seed 39] [--dying 3] [--delay-ms 5]'
 *
 * Needs root (port 25); in a network namespace of its own nothing else on the machine is in the way.
 */
import type { Client } from "@libsql/client";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { importPeople } from "../scripts/admin/people-import.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";
import { confidence, feedbackVerdict, ourCheck, SEEN_AGE_DAYS, ageBucket, type OurCheck } from "../shared/people/confidence.ts";
import type { VerificationReason } from "../shared/email/reasons.ts";
import type { Zone } from "../test/fixtures/doh-server.ts";
import { startMtaFixture } from "../test/fixtures/mta-fixture.ts";
import { freePortOn } from "../test/fixtures/smtp-servers.ts";
import { databaseRequests, startJobsStack } from "./child.ts";
import { bandTables, reliability, tallyOf, WORLD, worldAddress, worldRandom, type Band, type WorldAddress } from "./confidence-world.ts";
import { fireCron, refreshAndWriteBack } from "./people-refresh.ts";
import { median } from "./stats.ts";

const EDGE_PORT = 8797;
const PROBE_PORT = 8796;
const DAY_MS = 86_400_000;
/** The cron's interval: wrangler.toml's `* * * * *`, which `npm start` fires every minute (scripts/start.ts). */
const CRON_INTERVAL_MS = 60_000;
/** What a tick may spend on its own work (requeues, earlier tasks) before it writes answers back and sends events. */
const TICK_WORK_MS = 5_000;
const FIRST_PROFNET_ID = 7_000_000;
const LIMIT_MS = 10 * 60_000;
/** Import dates, in days ago: each drawn sighting age goes to the nearest one in its confidence bucket. */
const IMPORT_AGES_DAYS = [10, 45, 80, 150, 250, 340, 450, 620, 900, 1200] as const;
/** Domains of each kind; an address goes to one of its server's kind. */
const DOMAINS = { ordinary: 40, catch_all: 10, silent: 6 } as const;
/** A check's time is moved back by its age and this much more, so every customer report made afterwards is newer. */
const CHECK_MARGIN_MS = 3_600_000;
/** Keys of the account that reads the confidences back (each key may look up 100 people per 10 s). */
const READER_KEYS = 40;
const LOOKUPS_IN_FLIGHT = 8;
const ROUND_TRIP_SAMPLES = 10;

export type ConfidenceSmtpResult = {
  addresses: number;
  seed: number;
  delayMs: number;
  imports: number;
  importMs: number;
  checked: number;
  /** Our checks whose finding (valid, catch-all, unknown, invalid) is the one the world says. */
  checksAsWorld: number;
  checkMismatches: string[];
  refreshMs: number;
  reports: { accounts: number; reports: number; reverified: number };
  /** Served addresses whose confidence is what the pure function gives the world's inputs (the re-verified apart). */
  scoresAsWorld: number;
  scoreCompared: number;
  scoreMismatches: string[];
  served: number;
  removed: { total: number; dead: number };
  labels: Band[];
  deciles: Band[];
  roundTrips: number[];
  dying: DyingMailbox[];
  cycleMs: number;
};

/** Milliseconds from the first hard bounce (the mailbox died just before it) to each step, null when not seen in time. */
export type DyingMailbox = { email: string; diedToBounceMs: number; checkedMs: number | null; writtenMs: number | null; goneFromLookupMs: number | null; webhookMs: number | null; refreshJobMs: number | null };

/** The nearest import date in the same bucket of SEEN_AGE_DAYS as `days`. */
function importAge(days: number): number {
  const bucket = ageBucket(days, SEEN_AGE_DAYS);
  const same = IMPORT_AGES_DAYS.filter((d) => ageBucket(d, SEEN_AGE_DAYS) === bucket);
  return same.reduce((best, d) => (Math.abs(d - days) < Math.abs(best - days) ? d : best));
}

type Member = WorldAddress & { i: number; email: string; profnetId: number; domain: string };

/** The world of bench/confidence-world.ts for `seed`, its sightings on import dates, each address at a domain of its server's kind. */
function buildWorld(addresses: number, seed: number): { members: Member[]; zone: Zone; catchAll: string[]; silent: Set<string> } {
  const r = worldRandom(seed);
  const place = worldRandom(seed + 7);
  const zone: Zone = {};
  const names: Record<keyof typeof DOMAINS, string[]> = { ordinary: [], catch_all: [], silent: [] };
  let n = 0;
  for (const kind of Object.keys(DOMAINS) as (keyof typeof DOMAINS)[]) {
    for (let d = 0; d < DOMAINS[kind]; d++, n++) {
      const name = `${kind.replace("_", "")}${d}.world.test`;
      zone[name] = { MX: [{ preference: 10, exchange: `mx.${name}` }] };
      zone[`mx.${name}`] = { A: [`127.5.0.${n + 1}`] };
      names[kind].push(name);
    }
  }
  const members: Member[] = [];
  for (let i = 0; i < addresses; i++) {
    const w = worldAddress(r, false, { seenAge: importAge });
    const domain = names[w.server][Math.floor(place() * names[w.server].length)]!;
    members.push({ ...w, i, email: `p${i}@${domain}`, profnetId: FIRST_PROFNET_ID + i, domain });
  }
  // The poisoner, as in the simulated world: one account more reports live addresses as bounced.
  const poisoned = Math.min(WORLD.poisoned, Math.floor(addresses / 30));
  for (const m of members.filter((m) => m.deliverable).slice(0, poisoned)) {
    m.reports.push({ sender: WORLD.maxSenders, outcome: "hard_bounce", agoMs: 0 });
    m.inputs = { ...m.inputs, feedback: feedbackVerdict(tallyOf(m.reports)) };
  }
  return { members, zone, catchAll: names.catch_all, silent: new Set(names.silent) };
}

const jsonList = (values: unknown[]) => JSON.stringify(values);

/** Imports each supplier's file of each import date, oldest first, through the real import path; then dates its sightings. */
async function importWorld(client: Client, members: Member[], dir: string): Promise<number> {
  let imports = 0;
  for (const age of [...IMPORT_AGES_DAYS].reverse()) {
    for (let s = 0; s < WORLD.suppliers; s++) {
      const lines = members.filter((m) => m.inputs.seenAgeDays === age && m.suppliers.includes(s)).map((m) => JSON.stringify({ profnet_id: m.profnetId, email_addresses: [m.email] }));
      if (lines.length === 0) continue;
      const file = join(dir, `supplier-${s}-${age}d.jsonl`);
      await writeFile(file, `${lines.join("\n")}\n`);
      const startedAt = Date.now();
      const summary = await importPeople(client, file, { source: `supplier-${s}` });
      if (summary.rejected > 0) throw new Error(`the import of ${file} rejected ${summary.rejected} lines: ${JSON.stringify(summary.rejections)}`);
      imports++;
      // The import ran now; the supplier's file is `age` days old: its sightings move back to then.
      const back = age * DAY_MS;
      await client.batch(
        [
          { sql: "update person_emails set last_seen_at = last_seen_at - ?1, first_seen_at = case when first_seen_at >= ?2 then first_seen_at - ?1 else first_seen_at end where last_seen_at >= ?2", args: [back, startedAt] },
          { sql: "update person_email_sources set last_seen_at = last_seen_at - ?1, first_seen_at = case when first_seen_at >= ?2 then first_seen_at - ?1 else first_seen_at end where last_seen_at >= ?2", args: [back, startedAt] },
        ],
        "write",
      );
    }
  }
  return imports;
}

/** Our check, by what it proves, of a stored reason. */
const checkOfReason = (reason: string | null, checkedAt: number | null): OurCheck => ourCheck(reason as VerificationReason | null, checkedAt);

/** Looks up each profnet id (include=email_details) a few at a time over many keys: each person's addresses with their confidence, by address. */
async function readConfidences(base: string, tokens: string[], ids: number[]): Promise<Map<string, { confidence: number; label: string }>> {
  const found = new Map<string, { confidence: number; label: string }>();
  let next = 0;
  let sent = 0;
  await Promise.all(
    Array.from({ length: LOOKUPS_IN_FLIGHT }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        for (;;) {
          // wrangler dev restarts workerd when a file of the Worker changes: a connection it dropped is asked again.
          const res = await fetch(`${base}/v1/people?profnet_id=${id}&include=email_details`, { headers: { authorization: `Bearer ${tokens[sent++ % tokens.length]}` } }).catch(() => null);
          if (res === null || res.status === 429) {
            await res?.body?.cancel();
            await new Promise((r) => setTimeout(r, 1_000));
            continue;
          }
          if (res.status === 404) break;
          if (res.status !== 200) throw new Error(`GET /v1/people?profnet_id=${id} answered ${res.status}: ${await res.text()}`);
          const body = (await res.json()) as { email_details?: { email: string; confidence: number; confidence_label: string }[] };
          for (const d of body.email_details ?? []) found.set(d.email.toLowerCase(), { confidence: d.confidence, label: d.confidence_label });
          break;
        }
      }
    }),
  );
  return found;
}

async function postFeedback(base: string, token: string, reports: { email_address: string; outcome: string; occurred_at: string }[]): Promise<void> {
  for (let i = 0; i < reports.length; i += 1_000) {
    const res = await fetch(`${base}/v1/email_feedback`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ feedback: reports.slice(i, i + 1_000) }),
    });
    if (res.status !== 200) throw new Error(`POST /v1/email_feedback answered ${res.status}: ${await res.text()}`);
    await res.body?.cancel();
  }
}

/** A receiver of people events on loopback: each POST's arrival time and body. */
async function startEventReceiver(): Promise<{ url: string; events: { at: number; body: { type: string; data: { email_address: string } }; signed: boolean }[]; close(): Promise<void> }> {
  const events: { at: number; body: { type: string; data: { email_address: string } }; signed: boolean }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      events.push({ at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString()), signed: typeof req.headers["webhook-signature"] === "string" });
      res.writeHead(204).end();
    });
  });
  const port = await freePortOn(["127.0.0.1"]);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${port}/people-events`, events, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

export async function runConfidenceSmtp(opts: { addresses: number; seed: number; dying: number; delayMs: number; log?: (m: string) => void }): Promise<ConfidenceSmtpResult> {
  const log = opts.log ?? (() => {});
  if (process.getuid?.() !== 0) throw new Error("The confidence benchmark on fixture mail servers needs root: they listen on port 25, where the probe dials.");
  const { members, zone, catchAll, silent } = buildWorld(opts.addresses, opts.seed);
  const byEmail = new Map(members.map((m) => [m.email, m]));

  // What each ordinary server answers for an address right now: the world at our check, then the world now.
  const accepts = new Map<string, boolean>();
  const unknownUser = (a: string) => `550 5.1.1 <${a}>: Recipient address rejected: User unknown in virtual mailbox table`;
  const mta = await startMtaFixture({
    host: "0.0.0.0",
    port: 25,
    delayMs: opts.delayMs,
    catchAllDomains: catchAll,
    rcptReply: (address) => {
      const domain = address.slice(address.lastIndexOf("@") + 1);
      // A silent server greylists every recipient: a temporary answer, which says nothing about the mailbox.
      if (silent.has(domain)) return `450 4.2.0 <${address}>: Recipient address rejected: Greylisted, please try again later`;
      if (catchAll.includes(domain)) return undefined;
      return accepts.get(address) ? "250 2.1.5 Ok" : unknownUser(address);
    },
  });
  const dir = await mkdtemp(join(tmpdir(), "bench-confidence-"));
  const receiver = await startEventReceiver();
  let stack: Awaited<ReturnType<typeof startJobsStack>> | undefined;
  try {
    stack = await startJobsStack({
      zone,
      delayMs: opts.delayMs,
      edgePort: EDGE_PORT,
      probePort: PROBE_PORT,
      mtaArgs: null,
      // One refresh job can hold every address; the subscriber on loopback may receive events.
      env: { EMAIL_REFRESH_BATCH: String(opts.addresses), JOB_RETRY_DELAY_SECONDS: "0", CALLBACK_ALLOW_PRIVATE_TARGETS: "true" },
    });
    const base = `http://127.0.0.1:${EDGE_PORT}`;
    const db = openDatabase(stack.database.url, stack.database.authToken);
    const client = db.$client;
    const ours = `person_id in (select id from people where profnet_id >= ${FIRST_PROFNET_ID})`;

    // 1. The imports, oldest first; then nothing checked yet, and nothing due until the world's checks are made.
    log(`confidence (SMTP): importing ${members.length} people from ${WORLD.suppliers} suppliers`);
    const importStarted = performance.now();
    const imports = await importWorld(client, members, dir);
    const importMs = performance.now() - importStarted;
    // npm start's minute tick may have started a refresh job during the imports: dropped, and its checks forgotten.
    await client.batch(
      [
        `update person_emails set next_check_at = 9000000000000, checked_at = null, classification = null, reason = null, smtp_outcome = null, not_found_at = null, undeliverable_at = null where ${ours}`,
        "delete from verification_job_items where job_id in (select id from verification_jobs where account_id = 'acc_stored_email_refresh')",
        "delete from verification_jobs where account_id = 'acc_stored_email_refresh'",
      ],
      "write",
    );

    // 2. Our checks: the fixtures answer as the world was at the check; the real refresh asks them.
    const checked = members.filter((m) => m.checked);
    for (const m of members) accepts.set(m.email, m.server === "ordinary" && m.checked ? m.inputs.check === "valid" : m.deliverable);
    log(`confidence (SMTP): re-verifying the ${checked.length} addresses the world says we checked`);
    const refreshStarted = performance.now();
    await client.execute({ sql: "update person_emails set next_check_at = 0 where email in (select value from json_each(?1))", args: [jsonList(checked.map((m) => m.email))] });
    // Claimed addresses are due again in a day, the held-back ones never: those still unanswered are the claimed.
    await refreshAndWriteBack(client, base, { unanswered: `select count(*) as n from person_emails where ${ours} and checked_at is null and next_check_at < 9000000000000`, limitMs: LIMIT_MS, log });
    const refreshMs = performance.now() - refreshStarted;
    const stored = (await client.execute(`select email, reason, checked_at from person_emails where ${ours} and checked_at is not null`)).rows;
    let checksAsWorld = 0;
    const checkMismatches: string[] = [];
    for (const row of stored) {
      const m = byEmail.get(String(row.email))!;
      const found = checkOfReason(row.reason as string, Number(row.checked_at));
      if (found === m.inputs.check) checksAsWorld++;
      else if (checkMismatches.length < 10) checkMismatches.push(`${m.email} (${m.server}): world ${m.inputs.check}, probe ${row.reason}`);
    }
    // Each check's time moves back by the world's age of it; none is due again during the bench.
    await client.execute({
      sql: `update person_emails set checked_at = checked_at - u.value ->> 'back', not_found_at = not_found_at - u.value ->> 'back', next_check_at = 9000000000000
        from json_each(?1) u where person_emails.email = u.value ->> 'email'`,
      args: [jsonList(checked.map((m) => ({ email: m.email, back: m.inputs.checkAgeDays * DAY_MS + CHECK_MARGIN_MS })))],
    });

    // 3. Now: the mailboxes as the world has them today; customers report what their mail did.
    for (const m of members) accepts.set(m.email, m.deliverable);
    const reportsBy = new Map<number, { email_address: string; outcome: string; occurred_at: string }[]>();
    const postedAt = Date.now();
    for (const m of members)
      for (const r of m.reports) {
        const list = reportsBy.get(r.sender) ?? [];
        list.push({ email_address: m.email, outcome: r.outcome, occurred_at: new Date(postedAt - (r.agoMs + 1) * 60_000).toISOString() });
        reportsBy.set(r.sender, list);
      }
    log(`confidence (SMTP): ${reportsBy.size} customer accounts report ${[...reportsBy.values()].reduce((n, l) => n + l.length, 0)} outcomes`);
    for (const [sender, reports] of reportsBy) {
      const account = await createAccount(db, sender === WORLD.maxSenders ? "bench poisoner" : `bench customer ${sender + 1}`, 0);
      await postFeedback(base, (await createApiKey(db, account.id)).token, reports);
    }
    // The hard bounces moved addresses to the front of re-verification: the stack's cron checks them (the fixtures answer as today).
    const reverifiedRows = (await client.execute(`select email from person_emails where ${ours} and next_check_at < 0`)).rows.map((r) => String(r.email));
    if (reverifiedRows.length > 0) {
      log(`confidence (SMTP): ${reverifiedRows.length} addresses moved to the front by hard bounces, re-verifying`);
      // Every other address is held back, so what is due (or claimed and unanswered) is theirs.
      await refreshAndWriteBack(client, base, { unanswered: `select count(*) as n from person_emails where ${ours} and next_check_at < 9000000000000 and coalesce(checked_at, 0) < ${postedAt}`, limitMs: LIMIT_MS, log });
    }
    const reverified = new Set(reverifiedRows);

    // 4. Every address read back through the lookup.
    const reader = await createAccount(db, "bench confidence reader", 100_000_000);
    const tokens: string[] = [];
    for (let k = 0; k < READER_KEYS; k++) tokens.push((await createApiKey(db, reader.id)).token);
    log("confidence (SMTP): reading every address back through GET /v1/people");
    const served = await readConfidences(base, tokens, members.map((m) => m.profnetId));
    const scored: { score: number; deliverable: boolean }[] = [];
    let scoresAsWorld = 0;
    let scoreCompared = 0;
    const scoreMismatches: string[] = [];
    const removed = { total: 0, dead: 0 };
    for (const m of members) {
      const got = served.get(m.email);
      if (!got) {
        removed.total++;
        if (!m.deliverable) removed.dead++;
        continue;
      }
      scored.push({ score: got.confidence, deliverable: m.deliverable });
      if (reverified.has(m.email)) continue;
      scoreCompared++;
      const expected = confidence(m.inputs);
      if (expected === got.confidence) scoresAsWorld++;
      else if (scoreMismatches.length < 10) scoreMismatches.push(`${m.email}: ${got.confidence}, the world's inputs ${expected} (${JSON.stringify(m.inputs)})`);
    }

    // 5. A warm lookup's database round trips, counted at the libSQL server (the key used once first).
    const roundTrips: number[] = [];
    const warm = tokens[0]!;
    for (const m of members.filter((x) => served.has(x.email) && x.reports.length > 0).slice(0, ROUND_TRIP_SAMPLES)) {
      await (await fetch(`${base}/v1/people?profnet_id=${m.profnetId}&include=email_details`, { headers: { authorization: `Bearer ${warm}` } })).arrayBuffer();
      const before = await databaseRequests(stack.database.url, stack.database.authToken);
      await (await fetch(`${base}/v1/people?profnet_id=${m.profnetId}&include=email_details`, { headers: { authorization: `Bearer ${warm}` } })).arrayBuffer();
      roundTrips.push((await databaseRequests(stack.database.url, stack.database.authToken)) - before);
    }

    // 6. Mailboxes dying: live, confirmed by our check, received by a subscribed account; each dies, a customer's mail bounces.
    const dying = await measureDying(client, base, db, receiver, accepts, members.filter((m) => served.has(m.email) && m.deliverable && m.server === "ordinary" && m.inputs.check === "valid" && m.reports.length === 0 && !reverified.has(m.email)).slice(0, opts.dying), log);

    db.$client.close();
    const tables = reliability(scored);
    return {
      addresses: members.length,
      seed: opts.seed,
      delayMs: opts.delayMs,
      imports,
      importMs,
      checked: checked.length,
      checksAsWorld,
      checkMismatches,
      refreshMs,
      reports: { accounts: reportsBy.size, reports: [...reportsBy.values()].reduce((n, l) => n + l.length, 0), reverified: reverified.size },
      scoresAsWorld,
      scoreCompared,
      scoreMismatches,
      served: scored.length,
      removed,
      ...tables,
      roundTrips,
      dying,
      cycleMs: CRON_INTERVAL_MS,
    };
  } finally {
    await stack?.stop();
    await receiver.close();
    await mta.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The mailboxes of `chosen` die (their servers answer unknown user from now on); a second later one customer reports a
 * hard bounce of each. Then, polled every 250 ms until each is seen or LIMIT_MS: our check of it (its checked_at), the
 * answer written back (undeliverable_at set), the address gone from GET /v1/people, and the webhook received.
 */
async function measureDying(
  client: Client,
  base: string,
  db: ReturnType<typeof openDatabase>,
  receiver: Awaited<ReturnType<typeof startEventReceiver>>,
  accepts: Map<string, boolean>,
  chosen: Member[],
  log: (m: string) => void,
): Promise<DyingMailbox[]> {
  if (chosen.length === 0) return [];
  const subscriber = await createAccount(db, "bench subscriber", 1_000_000);
  const subscriberKeys: string[] = [];
  for (let k = 0; k < 5; k++) subscriberKeys.push((await createApiKey(db, subscriber.id)).token);
  const put = await fetch(`${base}/v1/people/events/subscription`, { method: "PUT", headers: { authorization: `Bearer ${subscriberKeys[0]}`, "content-type": "application/json" }, body: JSON.stringify({ url: receiver.url }) });
  if (put.status !== 200) throw new Error(`the subscription answered ${put.status}: ${await put.text()}`);
  let sent = 0;
  const lookup = async (m: Member) => {
    const res = await fetch(`${base}/v1/people?profnet_id=${m.profnetId}`, { headers: { authorization: `Bearer ${subscriberKeys[sent++ % subscriberKeys.length]}` } });
    if (res.status !== 200) return res.status === 429 ? null : [];
    return ((await res.json()) as { email_addresses?: string[] }).email_addresses ?? [];
  };
  // The subscriber received each person (its lookups are what entitle it to their events).
  for (const m of chosen) if (!(await lookup(m))?.includes(m.email)) throw new Error(`${m.email} was not served before it died`);
  const customer = await createAccount(db, "bench customer who notices", 0);
  const customerKey = (await createApiKey(db, customer.id)).token;

  log(`confidence (SMTP): ${chosen.length} mailboxes die; a customer reports the first hard bounce of each`);
  const diedAt = Date.now();
  for (const m of chosen) accepts.set(m.email, false);
  await new Promise((r) => setTimeout(r, 1_000));
  const bounceAt = Date.now();
  await postFeedback(base, customerKey, chosen.map((m) => ({ email_address: m.email, outcome: "hard_bounce", occurred_at: new Date(bounceAt).toISOString(), smtp_reply: "550 5.1.1 User unknown" })));
  const seen = new Map(chosen.map((m) => [m.email, { checkedMs: null as number | null, writtenMs: null as number | null, goneFromLookupMs: null as number | null, webhookMs: null as number | null, refreshJobMs: null as number | null }]));
  const emails = jsonList(chosen.map((m) => m.email));
  const jobs = new Map<string, { created: number; completed: number | null }>();
  const started = performance.now();
  while (performance.now() - started < LIMIT_MS && [...seen.values()].some((s) => s.writtenMs === null || s.goneFromLookupMs === null || s.webhookMs === null)) {
    for (const j of (await client.execute(`select id, created_at, completed_at from verification_jobs where account_id = 'acc_stored_email_refresh' and created_at >= ${bounceAt}`)).rows)
      jobs.set(String(j.id), { created: Number(j.created_at), completed: j.completed_at === null ? null : Number(j.completed_at) });
    const rows = (await client.execute({ sql: "select email, reason, checked_at, undeliverable_at from person_emails where email in (select value from json_each(?1))", args: [emails] })).rows;
    const now = Date.now();
    for (const row of rows) {
      const s = seen.get(String(row.email))!;
      if (s.checkedMs === null && Number(row.checked_at) >= bounceAt) s.checkedMs = Number(row.checked_at) - bounceAt;
      if (s.writtenMs === null && row.undeliverable_at !== null) s.writtenMs = now - bounceAt;
    }
    for (const m of chosen) {
      const s = seen.get(m.email)!;
      if (s.goneFromLookupMs === null) {
        const addresses = await lookup(m);
        if (addresses !== null && !addresses.includes(m.email)) s.goneFromLookupMs = Date.now() - bounceAt;
      }
      const event = receiver.events.find((e) => e.body.type === "person.address_undeliverable" && e.body.data.email_address === m.email);
      if (s.webhookMs === null && event) s.webhookMs = event.at - bounceAt;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  // The refresh job that checked them: the first one started after the bounce.
  const job = [...jobs.values()].sort((a, b) => a.created - b.created)[0];
  return chosen.map((m) => ({ email: m.email, diedToBounceMs: bounceAt - diedAt, ...seen.get(m.email)!, refreshJobMs: job?.completed != null ? job.completed - job.created : null }));
}

const pct = (n: number, of: number) => `${of === 0 ? 0 : ((100 * n) / of).toFixed(1)}%`;
const seconds = (ms: number | null) => (ms === null ? "not seen" : `${(ms / 1000).toFixed(1)} s`);

export function confidenceSmtpMarkdown(r: ConfidenceSmtpResult): string {
  const med = (f: (d: DyingMailbox) => number | null) => {
    const values = r.dying.map(f).filter((v): v is number => v !== null);
    return values.length === r.dying.length && values.length > 0 ? median(values) : null;
  };
  const worst = (f: (d: DyingMailbox) => number | null) => (r.dying.some((d) => f(d) === null) ? null : Math.max(...r.dying.map((d) => f(d)!)));
  // From our check that confirmed the bounce: each step minus that check's time, for the same mailbox.
  const sinceCheck = (f: (d: DyingMailbox) => number | null) => (d: DyingMailbox) => (f(d) === null || d.checkedMs === null ? null : f(d)! - d.checkedMs);
  // The next tick after our check: one interval, and the seconds a tick's own work takes before it writes.
  const within = (ms: number | null) => (ms === null ? "**not seen**" : ms <= r.cycleMs + TICK_WORK_MS ? "yes" : "**no**");
  const step = (name: string, f: (d: DyingMailbox) => number | null) =>
    `| ${name} | ${seconds(med(f))} | ${seconds(worst(f))} | ${seconds(worst(sinceCheck(f)))} | ${within(worst(sinceCheck(f)))} |`;
  const job = r.dying[0]?.refreshJobMs;
  return `${r.addresses.toLocaleString("en")} people of the same world (seed ${r.seed}), one address each, at ${DOMAINS.ordinary} ordinary, ${DOMAINS.catch_all} catch-all and ${DOMAINS.silent} greylisting fixture mail servers (one process answering port 25 of ${DOMAINS.ordinary + DOMAINS.catch_all + DOMAINS.silent} loopback addresses, every reply after ${r.delayMs} ms): ${r.imports} imports (one per supplier and import date) in ${(r.importMs / 1000).toFixed(1)} s; ${r.checked.toLocaleString("en")} addresses checked by the real refresh in ${(r.refreshMs / 1000).toFixed(1)} s, ${r.checksAsWorld.toLocaleString("en")} of them finding what the world says${r.checkMismatches.length ? ` (not: ${r.checkMismatches.join("; ")})` : ""}; ${r.reports.reports.toLocaleString("en")} reports from ${r.reports.accounts} accounts (one of them the poisoner), whose hard bounces moved ${r.reports.reverified} addresses to the front of re-verification, checked again before the lookups. ${r.served.toLocaleString("en")} addresses served by GET /v1/people; ${r.removed.total} no longer (undeliverable: a hard bounce and our check agreed), ${r.removed.dead} of them dead per the fixtures. Of the served addresses not re-verified, ${r.scoresAsWorld.toLocaleString("en")} of ${r.scoreCompared.toLocaleString("en")} have the confidence the pure function gives the world's inputs${r.scoreMismatches.length ? ` (not: ${r.scoreMismatches.join("; ")})` : ""}.

${bandTables(r.labels, r.deciles)}

A warm lookup (\`include=email_details\`, a person with customers' reports) costs ${r.roundTrips.join(", ")} database round trips (libSQL's request count, ${r.roundTrips.length} lookups).

A mailbox dying: ${r.dying.length} live, confirmed addresses, each received by an account subscribed to people events (a receiver on loopback); each mailbox starts answering unknown user, and ${((r.dying[0]?.diedToBounceMs ?? 0) / 1000).toFixed(0)} s later one customer reports a hard bounce of it. No setting of the cycle is shortened: the cron runs every ${r.cycleMs / 1000} s (wrangler.toml; \`npm start\` fires it), the tick after the bounce starts a refresh job with the address first (the job${job != null ? ` took ${seconds(job)}` : ""}), and the tick after that writes the answer back, which makes the address undeliverable (the bounce and our check agree) and sends the event. So from our check confirming the bounce to the removal and the event is one re-verification cycle, one tick (${r.cycleMs / 1000} s, plus up to ${TICK_WORK_MS / 1000} s of the tick's own work), and from the bounce itself at most two ticks.

| Step | From the hard bounce: median | Worst | From our check: worst | Within one cycle of our check |
|---|---:|---:|---:|:-:|
${step("Our SMTP check of it", (d) => d.checkedMs)}
${step("Undeliverable written", (d) => d.writtenMs)}
${step("Gone from GET /v1/people", (d) => d.goneFromLookupMs)}
${step("`person.address_undeliverable` received", (d) => d.webhookMs)}`;
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({ options: { addresses: { type: "string", default: "3000" }, seed: { type: "string", default: "39" }, dying: { type: "string", default: "3" }, "delay-ms": { type: "string", default: "5" } } });
  const result = await runConfidenceSmtp({ addresses: Number(values.addresses), seed: Number(values.seed), dying: Number(values.dying), delayMs: Number(values["delay-ms"]), log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${confidenceSmtpMarkdown(result)}\n`);
  if (process.env.BENCH_JSON) await writeFile(process.env.BENCH_JSON, JSON.stringify(result, null, 2));
}
