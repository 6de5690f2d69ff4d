/**
 * Requests/s and latency of the Worker under `wrangler dev`, measured with autocannon from a second
 * process: /healthz (the ceiling), a /v1/people hit and miss, and /v1/email_verifications with DoH
 * answered by the local fixture and no probe. Starts what it needs through `npm start`.
 *
 * Requests rotate over --keys API keys of one account, as many customers' traffic would: each key
 * is limited per 10 s (docs/api.md "Rate limits"), and one key alone would mostly measure 429s. The
 * session row rotates over as many console sessions (one member each), made in the database as
 * sign-in makes them (docs/api.md "Sessions").
 *
 *   npx tsx bench/edge-load.ts [--duration 10] [--connections 50] [--keys 500] [--edge-port 8797]
 */
import autocannon from "autocannon";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { generateSecret, hashToken, newId } from "../edge/identity/tokens.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { startEdgeBenchStack } from "./edge-stack.ts";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "50" },
    keys: { type: "string", default: "500" },
    "edge-port": { type: "string", default: "8797" },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const keyCount = Number(values.keys);
const edgePort = Number(values["edge-port"]);
const base = `http://127.0.0.1:${edgePort}`;

const { database, accountId, tokens, stop } = await startEdgeBenchStack({ edgePort, keyCount });

try {
  const db = openDatabase(database.url, database.authToken);
  const sessions: string[] = [];
  const now = Date.now();
  for (let i = 0; i < keyCount; i++) {
    const memberId = newId("mem");
    const token = generateSecret("cvs_");
    await db.batch([
      db.run(sql`insert into members (id, account_id, name, role, invite_id, created_at) values (${memberId}, ${accountId}, ${`bench ${i}`}, 'developer', 'bench', ${now})`),
      db.run(sql`
        insert into sessions (id, token_hash, member_id, account_id, created_at, last_seen_at, expires_at)
        values (${newId("ses")}, ${await hashToken(token)}, ${memberId}, ${accountId}, ${now}, ${now}, ${now + 86_400_000})`),
    ]);
    sessions.push(token);
  }
  db.$client.close();
  let sent = 0;
  const rotatingKeys = [
    { setupRequest: (request: { headers: Record<string, string> }) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${tokens[sent++ % tokens.length]}` } }) },
  ];

  let signedIn = 0;
  const rotatingSessions = [
    // Over http to a loopback host the cookie is named `session` (edge/identity/sessions.ts).
    { setupRequest: (request: { headers: Record<string, string> }) => ({ ...request, headers: { ...request.headers, cookie: `session=${sessions[signedIn++ % sessions.length]}` } }) },
  ];

  type Rotation = { setupRequest: (request: { headers: Record<string, string> }) => { headers: Record<string, string> } }[];
  const targets: [string, string, Rotation][] = [
    ["GET /healthz", `${base}/healthz`, rotatingKeys],
    ["GET /v1/people (hit)", `${base}/v1/people?profnet_id=1001`, rotatingKeys],
    ["GET /v1/people (hit, session cookie)", `${base}/v1/people?profnet_id=1001`, rotatingSessions],
    ["GET /v1/people (miss, 404)", `${base}/v1/people?profnet_id=999999999`, rotatingKeys],
    ["GET /v1/email_verifications (DoH fixture, no probe)", `${base}/v1/email_verifications?email_address=ana@ok.test`, rotatingKeys],
  ];
  const rows: string[] = [];
  let ceiling = 0;
  for (const [name, url, requests] of targets) {
    await autocannon({ url, connections, duration: 2, requests }); // warm-up
    const r = await autocannon({ url, connections, duration, requests });
    if (name === "GET /healthz") ceiling = r.requests.average;
    const ratio = ceiling ? (r.requests.average / ceiling).toFixed(2) : "-";
    rows.push(
      `| ${name} | ${r.requests.average.toFixed(0)} | ${ratio} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${r.errors} |`,
    );
  }
  console.log(`\nautocannon: ${connections} connections, ${duration} s per row after a 2 s warm-up, ${keyCount} keys (or sessions) in turn, wrangler dev on ${base}\n`);
  console.log("| Request | req/s | vs /healthz | p50 ms | p99 ms | non-2xx | errors |");
  console.log("|---|---|---|---|---|---|---|");
  for (const row of rows) console.log(row);
} finally {
  await stop();
}
