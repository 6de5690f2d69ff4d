/**
 * DNS-over-HTTPS from real Debian servers: unbound (1.17) answers authoritatively for a zone from
 * local-zone/local-data, and dnsdist (1.7) serves it as RFC 8484 over plain HTTP/1.1 in front.
 * Unbound's own DoH is HTTP/2-only, which a Worker's fetch cannot speak; dnsdist's is not.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, isIPv4, isIPv6, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import dnsPacket from "dns-packet";
import type { ZoneRecords } from "../../fixtures/doh-server.ts";

/** Name -> records, as in the DoH fixture's zones. Any name not listed answers NXDOMAIN. */
export type InteropZone = Record<string, Pick<ZoneRecords, "MX" | "A" | "AAAA">>;

export type RunningDohStack = {
  /** http://127.0.0.1:PORT/dns-query (RFC 8484 POST and GET, HTTP/1.1). */
  url: string;
  close(): Promise<void>;
};

const TTL = 300;
const NEGATIVE_TTL = 60;
const STARTUP_TIMEOUT_MS = 15_000;
const KILL_GRACE_MS = 3_000;
const SERVFAIL = 2;
const NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$/;

function fqdn(name: string): string {
  if (name !== "." && !NAME.test(name)) throw new Error(`startDohStack: bad DNS name "${name}"`);
  return name.endsWith(".") ? name : `${name}.`;
}

/** An SOA per apex puts it in the authority section of negative answers: resolvers cache NXDOMAIN/NODATA by it. */
function soa(apex: string): string {
  const suffix = apex === "." ? "" : apex;
  return `local-data: "${apex} ${TTL} IN SOA ns.${suffix} hostmaster.${suffix} 1 3600 600 86400 ${NEGATIVE_TTL}"`;
}

/** The apex of a name is its last two labels: every name gets a static zone with an SOA there. */
function apexOf(name: string): string {
  return name.split(".").filter(Boolean).slice(-2).join(".") + ".";
}

function unboundConf(dir: string, port: number, zone: InteropZone): string {
  const names = Object.keys(zone).map(fqdn);
  const apexes = [...new Set(names.map(apexOf))];
  const data = Object.entries(zone).flatMap(([name, rec]) => {
    const owner = fqdn(name);
    const lines: string[] = [];
    for (const mx of rec.MX ?? []) {
      if (!Number.isInteger(mx.preference) || mx.preference < 0 || mx.preference > 65535) {
        throw new Error(`startDohStack: bad MX preference ${mx.preference} for ${name}`);
      }
      lines.push(`local-data: "${owner} ${TTL} IN MX ${mx.preference} ${fqdn(mx.exchange)}"`);
    }
    for (const a of rec.A ?? []) {
      if (!isIPv4(a)) throw new Error(`startDohStack: bad A "${a}" for ${name}`);
      lines.push(`local-data: "${owner} ${TTL} IN A ${a}"`);
    }
    for (const aaaa of rec.AAAA ?? []) {
      if (!isIPv6(aaaa)) throw new Error(`startDohStack: bad AAAA "${aaaa}" for ${name}`);
      lines.push(`local-data: "${owner} ${TTL} IN AAAA ${aaaa}"`);
    }
    return lines;
  });
  return [
    "server:",
    "interface: 127.0.0.1",
    `port: ${port}`,
    "do-ip6: no",
    // Without this a second unbound could bind the same port next to ours and share its queries.
    "so-reuseport: no",
    "num-threads: 1",
    'chroot: ""',
    'username: ""',
    `directory: "${dir}"`,
    `pidfile: "${dir}/unbound.pid"`,
    `logfile: "${dir}/unbound.log"`,
    "use-syslog: no",
    'module-config: "iterator"',
    "access-control: 127.0.0.0/8 allow",
    // "." static: a name outside every declared apex gets NXDOMAIN instead of an attempt at the root servers.
    'local-zone: "." static',
    soa("."),
    ...apexes.flatMap((apex) => [`local-zone: "${apex}" static`, soa(apex)]),
    ...data,
    "remote-control:",
    "control-enable: no",
    "",
  ].join("\n");
}

function dnsdistConf(dohPort: number, unboundPort: number, checkName: string): string {
  return [
    // No security-status polling over the internet, no console, no web server.
    "setSecurityPollSuffix('')",
    `newServer{address='127.0.0.1:${unboundPort}', checkName='${checkName}', checkType='MX'}`,
    // No certificate: dnsdist serves DNS over plain HTTP, which is what a Worker on loopback can reach.
    `addDOHLocal('127.0.0.1:${dohPort}', nil, nil, '/dns-query')`,
    "",
  ].join("\n");
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function tail(file: string, lines = 15): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n") || "(empty)";
}

/** Starts a foreground daemon with stdout and stderr in a file of the temp dir. */
async function startDaemon(command: string, args: string[], outFile: string): Promise<ChildProcess> {
  const out = await open(outFile, "w");
  try {
    const child = spawn(command, args, { stdio: ["ignore", out.fd, out.fd] });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    return child;
  } finally {
    await out.close();
  }
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/** True once the DoH endpoint answers a real query through to unbound. */
async function answers(url: string, name: string): Promise<boolean> {
  const query = dnsPacket.encode({ type: "query", id: 4242, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: "MX", name }] });
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/dns-message", accept: "application/dns-message" },
      body: query,
      signal: AbortSignal.timeout(1000),
    });
    if (res.status !== 200) return false;
    const packet = dnsPacket.decode(Buffer.from(await res.arrayBuffer()));
    // A SERVFAIL would come from dnsdist itself while unbound is not answering yet.
    return packet.id === 4242 && ((packet.flags ?? 0) & 0x0f) !== SERVFAIL;
  } catch {
    return false;
  }
}

export async function startDohStack(zone: InteropZone): Promise<RunningDohStack> {
  const dir = await mkdtemp(join(tmpdir(), "interop-doh-"));
  const children: ChildProcess[] = [];
  const stopAll = async () => {
    await Promise.all(children.map(kill));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const unboundPort = await freePort();
    const dohPort = await freePort();
    const checkName = fqdn(Object.keys(zone)[0] ?? ".");
    await writeFile(`${dir}/unbound.conf`, unboundConf(dir, unboundPort, zone));
    await writeFile(`${dir}/dnsdist.conf`, dnsdistConf(dohPort, unboundPort, checkName));

    children.push(await startDaemon("unbound", ["-d", "-c", `${dir}/unbound.conf`], `${dir}/unbound.out`));
    children.push(
      await startDaemon("dnsdist", ["-C", `${dir}/dnsdist.conf`, "--supervised", "--disable-syslog"], `${dir}/dnsdist.out`),
    );

    const url = `http://127.0.0.1:${dohPort}/dns-query`;
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (!(await answers(url, checkName))) {
      const dead = children.find((c) => c.exitCode !== null || c.signalCode !== null);
      if (dead || Date.now() > deadline) {
        const why = dead ? `${dead.spawnfile} exited (${dead.exitCode ?? dead.signalCode})` : `no answer within ${STARTUP_TIMEOUT_MS / 1000} s`;
        throw new Error(
          `DoH stack on ${url}: ${why}\n--- unbound:\n${await tail(`${dir}/unbound.out`)}\n${await tail(`${dir}/unbound.log`)}` +
            `\n--- dnsdist:\n${await tail(`${dir}/dnsdist.out`)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }

    let closed: Promise<void> | undefined;
    return {
      url,
      close() {
        closed ??= stopAll();
        return closed;
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
