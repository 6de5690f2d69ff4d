/**
 * A throwaway Postfix instance (Debian's postfix 3.7) on a loopback address, port 25, for the
 * interop suite: its own config, queue and data directories under a temp dir, mailboxes from a
 * texthash map (no postmap), optional STARTTLS, and no delivery or DNS of any kind.
 * Needs root (port 25, and Postfix drops privileges to the `postfix` user itself).
 */
import { execFile } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export type PostfixOptions = {
  /** Loopback address to listen on, port 25 (e.g. "127.0.0.2"). */
  address: string;
  /** myhostname: the name in the 220 greeting and the EHLO reply. */
  hostname: string;
  /** smtpd_banner: "$myhostname ESMTP" hides the software's name, as hardening guides advise (default: Postfix's own, "$myhostname ESMTP $mail_name (Debian/GNU)"). */
  banner?: string;
  /** Existing mailboxes; their domains become virtual mailbox domains, other local parts there get 550 5.1.1. */
  mailboxes?: string[];
  /** Domains where every local part is accepted. */
  catchAllDomains?: string[];
  /** check_recipient_access: full address or domain -> access(5) action, e.g. "450 4.2.0 Greylisted". */
  recipientRules?: Record<string, string>;
  /** Advertise STARTTLS with a fresh self-signed certificate. */
  tls?: boolean;
};

export type RunningPostfix = {
  address: string;
  port: 25;
  /** Postfix's own log (maillog_file); gone after close(). */
  logFile: string;
  close(): Promise<void>;
};

const STARTUP_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
const LOOPBACK = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
// Map keys and hostnames go verbatim into Postfix files: refuse anything that could break a line.
const MAP_KEY = /^[A-Za-z0-9._+@-]+$/;

function check(ok: boolean, message: string): void {
  if (!ok) throw new Error(`startPostfix: ${message}`);
}

function validate(opts: PostfixOptions): void {
  const m = LOOPBACK.exec(opts.address);
  check(m !== null && m.slice(1).every((n) => Number(n) <= 255), `address must be a 127.x.y.z address, got "${opts.address}"`);
  check(/^[A-Za-z0-9.-]+$/.test(opts.hostname), `bad hostname "${opts.hostname}"`);
  check(opts.banner === undefined || /^[$A-Za-z0-9 ._()/-]+$/.test(opts.banner), `bad banner "${opts.banner}"`);
  for (const mailbox of opts.mailboxes ?? []) check(MAP_KEY.test(mailbox) && /^[^@]+@[^@]+$/.test(mailbox), `bad mailbox "${mailbox}"`);
  for (const domain of opts.catchAllDomains ?? []) check(MAP_KEY.test(domain) && !domain.includes("@"), `bad domain "${domain}"`);
  for (const [key, action] of Object.entries(opts.recipientRules ?? {})) {
    check(MAP_KEY.test(key), `bad recipient rule key "${key}"`);
    check(!/[\r\n]/.test(action) && action.trim() !== "", `bad action for "${key}"`);
  }
}

function mainCf(dir: string, opts: PostfixOptions, domains: string[]): string {
  const name = `postfix-${opts.address}`;
  const lines = [
    "compatibility_level = 3.6",
    `queue_directory = ${dir}/queue`,
    `data_directory = ${dir}/data`,
    "mail_owner = postfix",
    "setgid_group = postdrop",
    // Distinct names keep two instances' log lines and any multi-instance tooling apart.
    `syslog_name = ${name}`,
    `multi_instance_name = ${name}`,
    `maillog_file = ${dir}/maillog`,
    `maillog_file_prefixes = ${dir}`,
    `myhostname = ${opts.hostname}`,
    ...(opts.banner ? [`smtpd_banner = ${opts.banner}`] : []),
    // Nothing is local: every accepted domain is a virtual mailbox domain.
    "mydestination =",
    "local_recipient_maps =",
    "alias_maps =",
    "alias_database =",
    "relay_domains =",
    // The listening address is on the master.cf line; "inet_interfaces = 127.0.0.x" fails here.
    "inet_interfaces = loopback-only",
    "inet_protocols = ipv4",
    // The client (127.0.0.1) must be treated as any stranger on the internet, not as a trusted network.
    "mynetworks =",
    "smtpd_client_restrictions =",
    "smtpd_helo_restrictions =",
    "smtpd_sender_restrictions =",
    "smtpd_relay_restrictions = reject_unauth_destination",
    `smtpd_recipient_restrictions = check_recipient_access texthash:${dir}/conf/recipient_access`,
    "smtpd_reject_unlisted_recipient = yes",
    "smtpd_peername_lookup = no",
    "smtp_dns_support_level = disabled",
    "lmtp_dns_support_level = disabled",
    `virtual_mailbox_domains = ${domains.join(" ")}`,
    `virtual_mailbox_maps = texthash:${dir}/conf/mailboxes`,
    // Should a DATA ever get through, accepted mail is dropped and nothing is relayed.
    "virtual_transport = discard",
    "default_transport = error",
    "relay_transport = error",
    "local_transport = error",
    "biff = no",
  ];
  if (opts.tls) {
    lines.push(
      "smtpd_tls_security_level = may",
      `smtpd_tls_cert_file = ${dir}/conf/cert.pem`,
      `smtpd_tls_key_file = ${dir}/conf/key.pem`,
      "smtpd_tls_loglevel = 1",
    );
  }
  return lines.join("\n") + "\n";
}

function masterCf(opts: PostfixOptions): string {
  // chroot = n everywhere: the queue dir is not set up as a chroot jail. No postscreen, so the
  // greeting is immediate; no pickup, since nothing is ever submitted locally.
  const services = [
    `${opts.address}:25 inet n - n - - smtpd`,
    "cleanup unix n - n - 0 cleanup",
    "qmgr unix n - n 300 1 qmgr",
    "rewrite unix - - n - - trivial-rewrite",
    "bounce unix - - n - 0 bounce",
    "defer unix - - n - 0 bounce",
    "trace unix - - n - 0 bounce",
    "error unix - - n - - error",
    "retry unix - - n - - error",
    "discard unix - - n - - discard",
    "anvil unix - - n - 1 anvil",
    "postlog unix-dgram n - n - 1 postlogd",
  ];
  if (opts.tls) services.push("tlsmgr unix - - n 1000? 1 tlsmgr");
  return services.join("\n") + "\n";
}

async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n") || "(empty)";
}

/** Resolves with the first line the server sends, or rejects on connection error / timeout. */
function readGreeting(address: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port: 25 });
    let buffered = "";
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error("no greeting")));
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      const end = buffered.indexOf("\r\n");
      if (end >= 0) {
        socket.end("QUIT\r\n");
        resolve(buffered.slice(0, end));
      }
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error("closed before greeting")));
  });
}

async function waitForGreeting(address: string, logFile: string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const line = await readGreeting(address, 2000);
      if (line.startsWith("220 ")) return;
      last = `greeting "${line}"`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `Postfix on ${address}:25 gave no 220 greeting within ${STARTUP_TIMEOUT_MS / 1000} s (last: ${last}); maillog:\n${await tail(logFile)}`,
  );
}

/** A pid that is gone or a zombie (this machine's init reaps daemonized orphans late) is no longer running. */
async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
  return stat !== null && !/^\d+ \(.*\) Z/.test(stat);
}

async function masterPid(dir: string): Promise<number | null> {
  const text = await readFile(`${dir}/queue/pid/master.pid`, "utf8").catch(() => "");
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

async function stop(dir: string): Promise<void> {
  const pid = await masterPid(dir);
  await run("postfix", ["-c", `${dir}/conf`, "stop"]).catch(() => undefined);
  if (pid === null) return;
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while ((await running(pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  // The master is a session leader (setsid), so its process group holds every Postfix child.
  if (await running(pid)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // Already gone between the check and the kill.
    }
  }
}

/** `postfix start` prints nothing without a TTY (it logs to maillog_file): report that log on failure. */
async function postfixStart(dir: string): Promise<void> {
  try {
    await run("postfix", ["-c", `${dir}/conf`, "start"]);
  } catch (err) {
    throw new Error(`postfix start failed (${(err as Error).message.trim()}); maillog:\n${await tail(`${dir}/maillog`)}`);
  }
}

export async function startPostfix(opts: PostfixOptions): Promise<RunningPostfix> {
  validate(opts);
  const stale = await readGreeting(opts.address, 1000).catch(() => null);
  check(stale === null, `something already answers on ${opts.address}:25 ("${stale}"); a leftover instance? see ss -ltnp 'sport = :25'`);

  const mailboxes = opts.mailboxes ?? [];
  const catchAll = opts.catchAllDomains ?? [];
  const domains = [...new Set([...mailboxes.map((m) => m.split("@")[1]!), ...catchAll].map((d) => d.toLowerCase()))];

  const dir = await mkdtemp(join(tmpdir(), "interop-postfix-"));
  const logFile = `${dir}/maillog`;
  try {
    // Postfix daemons run as the postfix user and must traverse to the queue directory.
    await chmod(dir, 0o755);
    await mkdir(`${dir}/conf`, { mode: 0o755 });
    await mkdir(`${dir}/queue`, { mode: 0o755 });
    await mkdir(`${dir}/data`, { mode: 0o700 });
    const { stdout: uid } = await run("id", ["-u", "postfix"]);
    await chown(`${dir}/data`, Number(uid.trim()), 0);

    await writeFile(`${dir}/conf/main.cf`, mainCf(dir, opts, domains));
    await writeFile(`${dir}/conf/master.cf`, masterCf(opts));
    // texthash needs no postmap; the right-hand side of virtual_mailbox_maps is unused (no delivery).
    await writeFile(`${dir}/conf/mailboxes`, [...mailboxes, ...catchAll.map((d) => `@${d}`)].map((k) => `${k} ok\n`).join(""));
    await writeFile(
      `${dir}/conf/recipient_access`,
      Object.entries(opts.recipientRules ?? {})
        .map(([key, action]) => `${key} ${action}\n`)
        .join(""),
    );
    if (opts.tls) {
      await run("openssl", [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", `${dir}/conf/key.pem`, "-out", `${dir}/conf/cert.pem`, "-days", "2",
        "-subj", `/CN=${opts.hostname}`, "-addext", `subjectAltName=DNS:${opts.hostname}`,
      ]);
    }

    // Postfix re-reads a config file until its mtime is a second or two in the past (it must not
    // catch a file mid-edit), which costs about 2 s per command on fresh files; backdate them.
    const past = new Date(Date.now() - 60_000);
    for (const file of await readdir(`${dir}/conf`)) await utimes(`${dir}/conf/${file}`, past, past);

    await postfixStart(dir);
    await waitForGreeting(opts.address, logFile);
  } catch (err) {
    await stop(dir);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }

  let closed: Promise<void> | undefined;
  return {
    address: opts.address,
    port: 25,
    logFile,
    close() {
      closed ??= stop(dir).then(() => rm(dir, { recursive: true, force: true }));
      return closed;
    },
  };
}
