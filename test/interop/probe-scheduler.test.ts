/**
 * The probe's scheduler against a real Postfix with its default error limits (smtpd_soft_error_limit
 * 10: every reply waits a second after that; smtpd_hard_error_limit 20: disconnect): warm sessions
 * with RSET between transactions, coalescing, rotation before the limits, and 300 addresses at one
 * domain, half of them unknown, verified at once through the signed batch endpoint. What Postfix
 * saw is read from its own log: one "disconnect from" line per session, with its command counts
 * ("mail=3 rcpt=5/7 rset=2 quit=1 commands=...").
 */
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProbeConfig } from "../../probe/config.ts";
import { startProbeServer, type RunningProbe } from "../../probe/http/server.ts";
import {
  PROBE_BATCH_PATH,
  PROBE_PATH,
  ProbeBatchAnswer,
  ProbeResponse,
  probeOrigin,
  signProbeRequest,
  type ProbeBatchRequest,
  type ProbeRequest,
} from "../../shared/probe-contract.ts";
import { preflight } from "./preflight.ts";
import { startPostfix, type RunningPostfix } from "./servers/postfix.ts";

const MX = "127.0.0.4";
const SECRET = TEST_PROBE_SECRET;
const KNOWN = Array.from({ length: 150 }, (_, i) => `user${i}@bulk.test`);
const mx = [{ host: "mx.bulk.test", preference: 10, addresses: [MX] }];

let postfix: RunningPostfix | undefined;
let probe: RunningProbe | undefined;

function startProbe(): Promise<RunningProbe> {
  return startProbeServer(
    loadProbeConfig({
      PORT: "0",
      PROBE_LISTEN_HOST: "127.0.0.1",
      PROBE_SECRET: SECRET,
      PROBE_HELO_NAME: "probe1.interop.example",
      // Postfix listens on loopback, which a production probe refuses to dial.
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      // What Postfix does with a session's errors is tested here, with lists half unknown at once; the
      // unknown-recipient budget would hold them for minutes (test/node/probe-harvest.test.ts tests it).
      PROBE_DESTINATION_UNKNOWN_RATIO: "1",
      PROBE_DESTINATION_UNKNOWN_PER_HOUR: "0",
    }),
  );
}

beforeAll(async () => {
  await preflight();
  postfix = await startPostfix({ address: MX, hostname: "mx.bulk.test", mailboxes: KNOWN, tls: true });
});

afterAll(async () => {
  await probe?.close();
  await postfix?.close();
});

async function signedPost(path: string, body: unknown): Promise<Response> {
  const text = JSON.stringify(body);
  return fetch(`${probe!.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...(await signProbeRequest(SECRET, { origin: probeOrigin(probe!.url), method: "POST", path, body: text })) }, body: text });
}

async function check(email: string): Promise<ProbeResponse> {
  const request: ProbeRequest = { email, mx, deadline_ms: 10_000 };
  return ProbeResponse.parse(await (await signedPost(PROBE_PATH, request)).json());
}

type Session = { line: string; mail: number; rcptOk: number; rcpt: number; rset: number; quit: number };

/** The "disconnect from" lines Postfix has logged since `from`, waiting until there are `count`. */
async function sessionsSince(from: number, count: number): Promise<Session[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const lines = (await readFile(postfix!.logFile, "utf8")).split("\n").slice(from).filter((l) => l.includes(" disconnect from "));
    if (lines.length >= count || Date.now() > deadline) {
      return lines.map((line) => {
        const n = (key: string) => Number(new RegExp(`\\b${key}=(\\d+)`).exec(line)?.[1] ?? 0);
        const rcpt = /\brcpt=(\d+)\/(\d+)/.exec(line) ?? /\brcpt=(\d+)()/.exec(line);
        return { line, mail: n("mail"), rcptOk: Number(rcpt?.[1] ?? 0), rcpt: Number(rcpt?.[2] || rcpt?.[1] || 0), rset: n("rset"), quit: n("quit") };
      });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const logLines = async () => (await readFile(postfix!.logFile, "utf8")).split("\n").length - 1;

describe("the scheduler against Postfix 3.7 with its default limits", () => {
  it("reuses one session over STARTTLS for checks one after another, with RSET between transactions, and ends it with QUIT", async () => {
    probe = await startProbe();
    const from = await logLines();
    const results = [await check("user1@bulk.test"), await check("nobody@bulk.test"), await check("user2@bulk.test")];
    expect(results.map((r) => r.outcome)).toEqual(["accepted", "mailbox_not_found", "accepted"]);
    expect(results[0]).toMatchObject({ tls: true, pipelining: true, catch_all: false, attempts: [{ reused_session: false }] });
    expect(results[2]!.attempts[0]).toMatchObject({ reused_session: true, round_trips: 1 });
    await probe.close();
    probe = undefined;
    const sessions = await sessionsSince(from, 1);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ mail: 3, rset: 2, quit: 1 });
    expect(sessions[0]!.line).toMatch(/starttls=1/);
  });

  it("coalesces checks that arrive together into shared transactions", async () => {
    probe = await startProbe();
    const from = await logLines();
    const emails = [...KNOWN.slice(10, 16), "nobody1@bulk.test", "nobody2@bulk.test"];
    const results = await Promise.all(emails.map(check));
    expect(results.map((r) => r.outcome)).toEqual([...Array(6).fill("accepted"), "mailbox_not_found", "mailbox_not_found"]);
    await probe.close();
    probe = undefined;
    const sessions = await sessionsSince(from, 1);
    const mails = sessions.reduce((n, s) => n + s.mail, 0);
    expect(mails).toBeLessThan(emails.length);
    expect(sessions.every((s) => s.quit === 1)).toBe(true);
  });

  it("300 addresses at one domain, half unknown, at once: every verdict right, sessions rotated before the error limits", async () => {
    probe = await startProbe();
    const from = await logLines();
    const unknown = Array.from({ length: 150 }, (_, i) => `nobody${i}@bulk.test`);
    const emails = KNOWN.flatMap((k, i) => [k, unknown[i]!]);
    const batch: ProbeBatchRequest = { deadline_ms: 60_000, groups: [{ mx, emails }] };
    const res = await signedPost(PROBE_BATCH_PATH, batch);
    expect(res.status).toBe(200);
    const lines = (await res.text()).trim().split("\n").map((l) => ProbeBatchAnswer.parse(JSON.parse(l)));
    expect(lines).toHaveLength(300);
    const wrong = lines.filter((l) => l.result.outcome !== (l.email.startsWith("user") ? "accepted" : "mailbox_not_found"));
    expect(wrong.map((l) => `${l.email}: ${l.result.outcome}`)).toEqual([]);
    expect(lines.every((l) => l.result.catch_all === false)).toBe(true);
    await probe.close();
    probe = undefined;

    const log = (await readFile(postfix!.logFile, "utf8")).split("\n").slice(from).join("\n");
    expect(log).not.toMatch(/too many errors/);
    expect(log).not.toMatch(/lost connection after/);
    const sessions = await sessionsSince(from, 1);
    for (const s of sessions) {
      // Refused RCPTs per session stay below smtpd_soft_error_limit (10), and every session says QUIT.
      expect(s.rcpt - s.rcptOk, s.line).toBeLessThan(10);
      expect(s.quit, s.line).toBe(1);
    }
    expect(sessions.length).toBeLessThanOrEqual(300 / 15);
  });
});
