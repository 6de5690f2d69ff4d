/**
 * The stack the edge benchmarks (edge-cpu, edge-load) measure, apart from bench/child.ts, which the browser
 * tests also import and which must not pull the Worker's code into their program.
 */
import { spawn } from "node:child_process";
import { createAccount, createApiKey } from "../scripts/admin/accounts.ts";
import { openDatabase } from "../scripts/lib/database.ts";
import { startDohServer } from "../test/fixtures/doh-server.ts";
import { testZone } from "../test/fixtures/test-zone.ts";
import { startFreshDatabase } from "./child.ts";

/**
 * `npm start` for the edge benchmarks (edge-cpu, edge-load): the DoH fixture's test zone, a fresh database, no probe,
 * WRANGLER_LOG=warn (the Worker's cost, not wrangler printing two lines per request; the caller's environment may
 * override it), and one account with enough credits for every hit and `keyCount` keys, since one key alone would
 * mostly measure its rate limit. `env` adds settings (an inspector port). Stops everything if it fails to start.
 */
export async function startEdgeBenchStack(opts: { edgePort: number; keyCount: number; env?: NodeJS.ProcessEnv }) {
  const doh = await startDohServer({ zone: testZone });
  const database = await startFreshDatabase();
  const stack = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    env: {
      WRANGLER_LOG: "warn",
      ...process.env,
      ...opts.env,
      EDGE_PORT: String(opts.edgePort),
      DATABASE_URL: database.url,
      DATABASE_AUTH_TOKEN: database.authToken,
      DOH_URL: doh.url,
      PROBE_URL: "",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const stop = async () => {
    if (stack.exitCode === null) {
      stack.kill("SIGTERM");
      await new Promise((r) => stack.once("exit", r));
    }
    await doh.close();
    await database.close();
  };
  try {
    await new Promise<void>((resolve, reject) => {
      let out = "";
      stack.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("Demo key:")) resolve();
      });
      stack.once("exit", () => reject(new Error("npm start exited early")));
    });
    const db = openDatabase(database.url, database.authToken);
    const account = await createAccount(db, "bench", 100_000_000);
    const tokens: string[] = [];
    for (let i = 0; i < opts.keyCount; i++) tokens.push((await createApiKey(db, account.id)).token);
    db.$client.close();
    return { stack, database, accountId: account.id, tokens, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
