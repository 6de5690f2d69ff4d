/**
 * Issue 44 against a real Postfix 3.7 as shared hosting and hardened companies run it: `smtpd_banner = $myhostname
 * ESMTP` (the greeting names nothing), its default error limits (smtpd_soft_error_limit 10, smtpd_hard_error_limit
 * 20), several domains, one of which refuses us per tenant (check_recipient_access with a blocklist text, as a
 * restriction class with reject_rbl_client writes it).
 * - 300 single checks at once, half unknown users, the hourly cap lifted (the 60 s share left at its default): the
 *   probe knows Postfix by its EHLO, so every known user is valid and every unknown invalid, and Postfix logs no
 *   "too many errors" disconnect.
 * - A job's lines at the accepting domains beside the blocking tenant's: every accepting line answered right, the
 *   tenant's handed back refused; the server is not stopped for the others.
 */
import { TEST_PROBE_SECRET } from "../fixtures/secrets.ts";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProbeConfig } from "../../probe/config.ts";
import { startProbeServer, type RunningProbe } from "../../probe/http/server.ts";
import { PROBE_BATCH_PATH, PROBE_PATH, ProbeBatchLine, ProbeResponse, probeOrigin, signProbeRequest, type ProbeBatchRequest, type ProbeRequest } from "../../shared/probe-contract.ts";
import { preflight } from "./preflight.ts";
import { startPostfix, type RunningPostfix } from "./servers/postfix.ts";

const MX = "127.0.0.6";
const SECRET = TEST_PROBE_SECRET;
const KNOWN = Array.from({ length: 150 }, (_, i) => `user${i}@hidden.test`);
const TENANTS = ["ok1.test", "ok2.test", "ok3.test"];
const TENANT_KNOWN = TENANTS.flatMap((d) => Array.from({ length: 20 }, (_, i) => `user${i}@${d}`));
const mx = [{ host: "mx.hidden.test", preference: 10, addresses: [MX] }];

let postfix: RunningPostfix | undefined;
let probe: RunningProbe | undefined;

beforeAll(async () => {
  await preflight();
  postfix = await startPostfix({
    address: MX,
    hostname: "mx.hidden.test",
    banner: "$myhostname ESMTP",
    mailboxes: [...KNOWN, ...TENANT_KNOWN, "user1@blocking.test", "user2@blocking.test"],
    recipientRules: { "blocking.test": "554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org" },
  });
  probe = await startProbeServer(
    loadProbeConfig({
      PORT: "0",
      PROBE_LISTEN_HOST: "127.0.0.1",
      PROBE_SECRET: SECRET,
      PROBE_HELO_NAME: "probe1.interop.example",
      PROBE_ALLOW_PRIVATE_TARGETS: "true",
      // The hourly cap lifted; the 60 s share stays at its default (0.3): what lifts it is the EHLO.
      PROBE_DESTINATION_UNKNOWN_PER_HOUR: "0",
    }),
  );
});

afterAll(async () => {
  await probe?.close();
  await postfix?.close();
});

async function signedPost(path: string, body: unknown): Promise<Response> {
  const text = JSON.stringify(body);
  return fetch(`${probe!.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...(await signProbeRequest(SECRET, { origin: probeOrigin(probe!.url), method: "POST", path, body: text })) }, body: text });
}

describe("a Postfix that hides its name, holding several tenants", () => {
  it("greets without naming itself", async () => {
    const log = await readFile(postfix!.logFile, "utf8").catch(() => "");
    expect(log).not.toMatch(/fatal/);
    const { connect } = await import("node:net");
    const greeting = await new Promise<string>((resolve, reject) => {
      const s = connect(25, MX);
      s.once("data", (d) => {
        resolve(d.toString());
        s.end("QUIT\r\n");
      });
      s.once("error", reject);
    });
    expect(greeting).toMatch(/^220 mx\.hidden\.test ESMTP\r\n$/);
  });

  it("300 single checks at once, half unknown: every known user valid, every unknown invalid, no 'too many errors' disconnect", async () => {
    const from = (await readFile(postfix!.logFile, "utf8")).split("\n").length - 1;
    const unknown = Array.from({ length: 150 }, (_, i) => `nobody${i}@hidden.test`);
    const emails = KNOWN.flatMap((k, i) => [k, unknown[i]!]);
    const answers = await Promise.all(
      emails.map(async (email) => {
        const request: ProbeRequest = { email, mx, deadline_ms: 25_000 };
        return [email, ProbeResponse.parse(await (await signedPost(PROBE_PATH, request)).json()).outcome] as const;
      }),
    );
    const wrong = answers.filter(([email, outcome]) => outcome !== (email.startsWith("user") ? "accepted" : "mailbox_not_found"));
    expect(wrong.map(([e, o]) => `${e}: ${o}`)).toEqual([]);
    const log = (await readFile(postfix!.logFile, "utf8")).split("\n").slice(from).join("\n");
    expect(log).not.toMatch(/too many errors/);
  }, 60_000);

  it("a job's lines beside the blocking tenant: the others' answered right, the tenant's handed back refused", async () => {
    const lines = [...TENANT_KNOWN, ...TENANTS.map((d) => `nobody@${d}`), "user1@blocking.test", "user2@blocking.test"];
    const byDomain = new Map<string, string[]>();
    for (const e of lines) byDomain.set(e.split("@")[1]!, [...(byDomain.get(e.split("@")[1]!) ?? []), e]);
    const batch: ProbeBatchRequest = { deadline_ms: 30_000, tenant: "interop-tenant", groups: [...byDomain.values()].map((emails) => ({ mx, emails })) };
    const res = await signedPost(PROBE_BATCH_PATH, batch);
    expect(res.status).toBe(200);
    const parsed = (await res.text()).trim().split("\n").map((l) => ProbeBatchLine.parse(JSON.parse(l)));
    const answers = new Map<string, string>();
    for (const l of parsed) {
      if ("result" in l) answers.set(l.email, l.result.outcome);
      else if ("deferred" in l) answers.set(l.email, l.refused ? "refused" : "deferred");
    }
    for (const e of lines) {
      const want = e.endsWith("@blocking.test") ? "refused" : e.startsWith("user") ? "accepted" : "mailbox_not_found";
      expect([e, answers.get(e)]).toEqual([e, want]);
    }
    // After the block: another account's job at the accepting tenants is answered, not held for the tenant's block.
    const later: ProbeBatchRequest = { deadline_ms: 30_000, tenant: "another-account", groups: TENANTS.map((d) => ({ mx, emails: [`user5@${d}`, `nobody5@${d}`] })) };
    const again = (await (await signedPost(PROBE_BATCH_PATH, later)).text()).trim().split("\n").map((l) => ProbeBatchLine.parse(JSON.parse(l)));
    const outcomes = again.flatMap((l) => ("result" in l ? [`${l.email}: ${l.result.outcome}`] : "deferred" in l ? [`${l.email}: held`] : []));
    expect(outcomes.sort()).toEqual(TENANTS.flatMap((d) => [`nobody5@${d}: mailbox_not_found`, `user5@${d}: accepted`]).sort());
  }, 60_000);
});
