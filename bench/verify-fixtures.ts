/**
 * The mail world of the verification comparison, in a process of its own so its work never shares an
 * event loop with a tool being measured:
 *   node --import tsx bench/verify-fixtures.ts --seed 5 --delay-ms 20
 * serves the list's zone over DoH (for the Worker) and over classic UDP DNS on 127.0.53.53:53 (for
 * tools that use the system resolver), and runs one SMTP server per live MX on 127.0.1.N:25, the
 * port every verifier dials by default. Prints one JSON line {"doh_url": ...} when ready; on SIGUSR2,
 * one line of counters over every SMTP server ({"connections", "mail_from", "rcpt_to"}); SIGTERM stops it.
 */
import { parseArgs } from "node:util";
import { startDohServer } from "../test/fixtures/doh-server.ts";
import { startMailServer, type RunningServer } from "../test/fixtures/smtp-servers.ts";
import { startUdpDnsServer } from "./dns-udp-server.ts";
import { buildVerificationList, GREYLIST_REPLY, POLICY_REPLY, type DomainSpec } from "./verify-list.ts";
import { isMainModule } from "../scripts/lib/main-module.ts";

export const SYSTEM_DNS_HOST = "127.0.53.53";
const SMTP_PORT = 25;

function mailServerFor(domain: DomainSpec, delayMs: number): Promise<RunningServer> {
  const common = { host: domain.mxAddress!, port: SMTP_PORT, delayMs };
  switch (domain.kind) {
    case "mailboxes":
      return startMailServer({ ...common, mailboxes: domain.mailboxes });
    case "catch_all":
      return startMailServer({ ...common, catchAllDomains: [domain.name] });
    case "greylisted":
      return startMailServer({ ...common, rcptReplies: { [`@${domain.name}`]: GREYLIST_REPLY } });
    case "policy_blocked":
      return startMailServer({ ...common, rcptReplies: { [`@${domain.name}`]: POLICY_REPLY } });
    default:
      throw new Error(`no mail server for a ${domain.kind} domain`);
  }
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({ options: { seed: { type: "string", default: "5" }, "delay-ms": { type: "string", default: "20" } } });
  const list = buildVerificationList(Number(values.seed));
  const delayMs = Number(values["delay-ms"]);
  const closers: (() => Promise<void>)[] = [];
  const servers: RunningServer[] = [];
  // What every SMTP server saw so far, summed, as one JSON line: the benchmark counts each pass's share.
  process.on("SIGUSR2", () => {
    const sum = (f: (s: RunningServer) => number) => servers.reduce((n, s) => n + f(s), 0);
    const counters = { connections: sum((s) => s.record.connections), mail_from: sum((s) => s.record.mailFrom.length), rcpt_to: sum((s) => s.record.rcptTo.length) };
    process.stdout.write(`${JSON.stringify(counters)}\n`);
  });
  try {
    const doh = await startDohServer({ zone: list.zone });
    closers.push(() => doh.close());
    const dns = await startUdpDnsServer({ zone: list.zone, host: SYSTEM_DNS_HOST, port: 53 });
    closers.push(() => dns.close());
    for (const domain of list.domains) {
      if (domain.kind === "nxdomain" || domain.kind === "dead_mx") continue;
      const server = await mailServerFor(domain, delayMs);
      servers.push(server);
      closers.push(() => server.close());
    }
    process.stdout.write(`${JSON.stringify({ doh_url: doh.url })}\n`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    process.stderr.write(
      code === "EACCES"
        ? "verify-fixtures: binding port 25 (SMTP) and 53 (DNS) on loopback needs root, as the verifiers dial port 25 and use the system resolver.\n"
        : `verify-fixtures: ${String(err)}\n`,
    );
    process.exit(1);
  }
  process.once("SIGTERM", () => {
    void Promise.all(closers.map((close) => close())).then(() => process.exit(0));
  });
}
