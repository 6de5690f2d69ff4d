/**
 * The stack the browser tests drive, started as `npm start` starts it (scripts/start.ts: the Worker
 * under `wrangler dev`, its queue and cron, the SMTP probe, the console), on a fresh libSQL database,
 * with DNS from test/fixtures/doh-server.ts and a loopback mail server (test/fixtures/mta-fixture.ts)
 * behind every MX. The page is opened at http://localhost:PORT: passkeys need a host name, and
 * browsers treat localhost as a secure origin.
 */
import type { ChildProcess } from "node:child_process";
import { startFreshDatabase, startChild, stopChild } from "../../bench/child.ts";
import { startDohServer, type Zone } from "../fixtures/doh-server.ts";
import { startMtaFixture } from "../fixtures/mta-fixture.ts";
import { freePortOn } from "../fixtures/smtp-servers.ts";

/** Mail domains of the lists: a local part starting with "user" exists on the mail server, any other does not. */
export const MAIL_DOMAINS = ["lists-one.test", "lists-two.test"];
export const NO_MAIL_DOMAIN = "gone-away.test";
export const FINDER_DOMAIN = "analytical-engine.example";

const zone: Zone = {
  ...Object.fromEntries(MAIL_DOMAINS.map((d) => [d, { MX: [{ preference: 10, exchange: "mx.lists.test" }] }])),
  "mx.lists.test": { A: ["127.0.0.1"] },
  // npm start's sample Ada Lovelace works there (scripts/lib/samples.ts): the find page's known address.
  [FINDER_DOMAIN]: { MX: [{ preference: 10, exchange: "mx.lists.test" }] },
  [NO_MAIL_DOMAIN]: "NXDOMAIN",
};

export type ConsoleStack = { base: string; ownerLink: string; demoKey: string; stop(): Promise<void> };

export async function startConsoleStack(): Promise<ConsoleStack> {
  const smtpPort = await freePortOn(["127.0.0.1"]);
  const mta = await startMtaFixture({ host: "127.0.0.1", port: smtpPort, mailboxPrefix: "user", delayMs: 0 });
  const doh = await startDohServer({ zone });
  const database = await startFreshDatabase();
  const edgePort = await freePortOn(["127.0.0.1"]);
  const probePort = await freePortOn(["127.0.0.1"]);
  // Settings from the caller's environment would change what is tested.
  const inherited = Object.fromEntries(Object.keys(process.env).filter((k) => /^(PROBE_|DATABASE_|JOB_|EMAIL_|ACCESS_LOG_|EDGE_)/.test(k)).map((k) => [k, undefined]));
  let stack: ChildProcess | undefined;
  try {
    const started = await startChild(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      env: {
        ...inherited,
        DATABASE_URL: database.url,
        DATABASE_AUTH_TOKEN: database.authToken,
        EDGE_PORT: String(edgePort),
        PROBE_PORT: String(probePort),
        PROBE_METRICS_LISTEN: "off",
        PROBE_SMTP_PORT: String(smtpPort),
        PROBE_ALLOW_PRIVATE_TARGETS: "true",
        PROBE_DESTINATION_UNKNOWN_RATIO: "1",
        PROBE_DESTINATION_UNKNOWN_PER_HOUR: "0",
        DOH_URL: doh.url,
        JOB_RETRY_DELAY_SECONDS: "1",
        WRANGLER_LOG: "warn",
      },
      ready: /Demo key:\s+\S+\s/,
    });
    stack = started.child;
    const ownerLink = /Owner link[^:]*:\s+(\S+)/.exec(started.stdout)?.[1];
    const demoKey = /Demo key:\s+(\S+)/.exec(started.stdout)?.[1];
    if (!ownerLink || !demoKey) throw new Error(`npm start printed no owner link or demo key:\n${started.stdout}`);
    return {
      base: `http://localhost:${edgePort}`,
      ownerLink,
      demoKey,
      async stop() {
        if (stack) await stopChild(stack);
        await database.close();
        await doh.close();
        await mta.close();
      },
    };
  } catch (error) {
    if (stack) await stopChild(stack);
    await database.close();
    await doh.close();
    await mta.close();
    throw error;
  }
}
