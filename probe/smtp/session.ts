/**
 * One SMTP conversation with one mail server address, as an explicit sequence of stages:
 * connect, greeting, EHLO (HELO fallback), opportunistic STARTTLS, MAIL FROM, RCPT TO for the
 * address, RCPT TO for a random address on the same domain (catch-all test), QUIT. Never DATA.
 *
 * The session only reports what the server said; probe.ts decides what it means. One deadline
 * covers the whole conversation: when it passes, the socket is destroyed wherever we are. Every
 * byte from the server goes through ReplyReader's bounds first.
 */
import net from "node:net";
import tls from "node:tls";
import { ReplyReader, SmtpProtocolError, type SmtpReply } from "./reply.ts";

export type SmtpStage = "connect" | "greeting" | "ehlo" | "starttls" | "mail" | "rcpt" | "catch_all" | "quit";

export type SessionPlan = {
  /** The MX host name: used for TLS SNI only. */
  host: string;
  /** The IP literal to dial. */
  address: string;
  port: number;
  heloName: string;
  mailFrom: string;
  recipient: string;
  /** A random address on the same domain, or null to skip the catch-all test. */
  catchAllRecipient: string | null;
  /** Absolute time (ms since the epoch) by which the session is over, whatever stage it is in. */
  deadline: number;
  /** How long the TCP connect may take, within the deadline, before we give up on this address. */
  connectTimeoutMs: number;
  /** Try STARTTLS when offered (false on a retry after a failed handshake). */
  startTls: boolean;
};

export type SessionFailure = {
  /**
   * connect: no TCP connection. timeout: the deadline passed. closed: the server hung up.
   * protocol: the server broke the reply syntax or a bound. rejected: a non-success reply ended the
   * conversation before RCPT (see `rejectedReply`). tls: the TLS handshake failed. unsupported: the
   * address needs SMTPUTF8 and the server does not offer it.
   */
  kind: "connect" | "timeout" | "closed" | "protocol" | "rejected" | "tls" | "unsupported";
  message: string;
};

export type SessionResult = {
  /** The last stage the conversation reached. */
  stage: SmtpStage;
  tls: boolean;
  pipelining: boolean;
  /** The reply that ended the conversation early (greeting, EHLO/HELO or MAIL FROM refused). */
  rejectedReply: SmtpReply | null;
  rcpt: SmtpReply | null;
  catchAll: SmtpReply | null;
  failure: SessionFailure | null;
  /** Times the client waited for the server: TCP connect, each reply or pipelined group, the TLS handshake. */
  roundTrips: number;
  ms: number;
};

/** The catch-all answer is a bonus: it may not hold the answer back for long (servers tarpit unknown users). */
const CATCH_ALL_MIN_WAIT_MS = 1_500;
const CATCH_ALL_RCPT_FACTOR = 3;

class SessionError extends Error {
  constructor(
    readonly kind: SessionFailure["kind"],
    message: string,
  ) {
    super(message);
  }
}

/** A socket plus the replies read from it, consumed one at a time. */
class Connection {
  socket: net.Socket;
  reader = new ReplyReader();
  #replies: SmtpReply[] = [];
  #failure: SessionError | null = null;
  #wake: (() => void) | null = null;
  readonly #onData = (chunk: Buffer) => {
    try {
      this.#replies.push(...this.reader.push(chunk));
    } catch (err) {
      this.fail(new SessionError("protocol", err instanceof SmtpProtocolError ? err.message : String(err)));
    }
    this.#notify();
  };
  readonly #onError = (err: Error) => this.fail(new SessionError("closed", `connection error: ${err.message}`));
  readonly #onClose = () =>
    this.fail(new SessionError("closed", this.reader.midReply ? "connection closed in the middle of a reply" : "connection closed by the server"));

  constructor(socket: net.Socket) {
    this.socket = socket;
    this.#attach(socket);
  }

  #attach(socket: net.Socket): void {
    socket.on("data", this.#onData);
    socket.on("error", this.#onError);
    socket.on("close", this.#onClose);
  }

  #detach(socket: net.Socket): void {
    socket.off("data", this.#onData);
    socket.off("error", this.#onError);
    socket.off("close", this.#onClose);
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  /** Ends the conversation with this error (the first one wins) and drops the socket. */
  fail(err: SessionError): void {
    if (!this.#failure) this.#failure = err;
    this.socket.destroy();
    this.#notify();
  }

  get failure(): SessionError | null {
    return this.#failure;
  }

  write(data: string): void {
    if (this.#failure) throw this.#failure;
    this.socket.write(data);
  }

  /** The next reply; throws the session's failure when there is none and there will be none. */
  async read(): Promise<SmtpReply> {
    for (;;) {
      const next = this.#replies.shift();
      if (next) return next;
      if (this.#failure) throw this.#failure;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Nothing buffered: no reply waiting and no partial line (required before a TLS upgrade). */
  get idle(): boolean {
    return this.#replies.length === 0 && !this.reader.midReply;
  }

  /** Moves the conversation onto a TLS socket over the same TCP connection (RFC 3207). */
  async upgrade(servername: string | undefined): Promise<void> {
    const plain = this.socket;
    this.#detach(plain);
    const secure = tls.connect({
      socket: plain,
      servername,
      // Opportunistic TLS: an unverifiable certificate is still better than plain text, and a
      // probe must not fail because a mail server's certificate is self-signed or expired.
      rejectUnauthorized: false,
    });
    this.socket = secure;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => {
        secure.destroy();
        reject(new SessionError("tls", `TLS handshake failed: ${err.message}`));
      };
      const onClose = () => reject(new SessionError("tls", "connection closed during the TLS handshake"));
      secure.once("secureConnect", () => {
        secure.off("error", onError);
        secure.off("close", onClose);
        resolve();
      });
      secure.once("error", onError);
      secure.once("close", onClose);
      // A deadline during the handshake destroys the plain socket; the TLS socket then closes.
      plain.once("close", onClose);
    });
    this.#attach(secure);
  }
}

function connect(plan: SessionPlan): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: plan.address, port: plan.port, noDelay: true });
    const limit = Math.max(0, Math.min(plan.connectTimeoutMs, plan.deadline - Date.now()));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new SessionError(Date.now() >= plan.deadline ? "timeout" : "connect", `no TCP connection within ${limit} ms`));
    }, limit);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      reject(new SessionError("connect", `connect failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
    });
  });
}

type Capabilities = { pipelining: boolean; startTls: boolean; smtpUtf8: boolean };

function capabilities(ehlo: SmtpReply): Capabilities {
  // The first line is the server's name; each further line starts with an extension keyword.
  const keywords = new Set(ehlo.lines.slice(1).map((l) => l.split(/\s+/, 1)[0]!.toUpperCase()));
  return { pipelining: keywords.has("PIPELINING"), startTls: keywords.has("STARTTLS"), smtpUtf8: keywords.has("SMTPUTF8") };
}

const isPositive = (reply: SmtpReply) => reply.code >= 200 && reply.code < 300;
// RFC 5321 §4.1.1.1: a server that does not know EHLO answers 500/502 (some say 501 or 504).
const EHLO_UNKNOWN = new Set([500, 501, 502, 504]);

/** True when an address needs SMTPUTF8 (RFC 6531): any octet outside ASCII. */
const needsSmtpUtf8 = (address: string) => /[^\x00-\x7f]/.test(address);

export async function runSmtpSession(plan: SessionPlan): Promise<SessionResult> {
  const started = Date.now();
  const result: SessionResult = {
    stage: "connect",
    tls: false,
    pipelining: false,
    rejectedReply: null,
    rcpt: null,
    catchAll: null,
    failure: null,
    roundTrips: 0,
    ms: 0,
  };
  let conn: Connection | null = null;
  let deadlineTimer: NodeJS.Timeout | undefined;
  const finish = (): SessionResult => {
    clearTimeout(deadlineTimer);
    conn?.socket.destroy();
    result.ms = Date.now() - started;
    return result;
  };

  try {
    result.roundTrips++;
    const socket = await connect(plan);
    conn = new Connection(socket);
    const c = conn;
    deadlineTimer = setTimeout(
      () => c.fail(new SessionError("timeout", `deadline reached during ${result.stage}`)),
      Math.max(0, plan.deadline - Date.now()),
    );

    const exchange = async (command: string | null): Promise<SmtpReply> => {
      if (command !== null) c.write(`${command}\r\n`);
      result.roundTrips++;
      return c.read();
    };
    const reject = (reply: SmtpReply): SessionResult => {
      result.rejectedReply = reply;
      result.failure = { kind: "rejected", message: `${result.stage} refused: ${reply.code}` };
      return finish();
    };

    result.stage = "greeting";
    const greeting = await exchange(null);
    if (greeting.code !== 220) return reject(greeting);

    result.stage = "ehlo";
    let caps = await hello(plan, exchange);
    if ("code" in caps) return reject(caps);

    if (caps.startTls && plan.startTls) {
      result.stage = "starttls";
      const reply = await exchange("STARTTLS");
      if (reply.code === 220) {
        // Bytes sent before the handshake would be read as if they came over TLS (CVE-2011-0411).
        if (!c.idle) throw new SessionError("protocol", "data after the STARTTLS reply, before the TLS handshake");
        result.roundTrips++;
        await c.upgrade(net.isIP(plan.host) ? undefined : plan.host);
        result.tls = true;
        result.stage = "ehlo";
        caps = await hello(plan, exchange);
        if ("code" in caps) return reject(caps);
      }
      // Any other answer: carry on in plain text, as opportunistic TLS does.
    }
    result.pipelining = caps.pipelining;

    const utf8 = needsSmtpUtf8(plan.recipient);
    if (utf8 && !caps.smtpUtf8) {
      throw new SessionError("unsupported", "the address needs SMTPUTF8 and the server does not offer it");
    }
    const mailFrom = `MAIL FROM:<${plan.mailFrom}>${utf8 ? " SMTPUTF8" : ""}`;
    const rcpt = `RCPT TO:<${plan.recipient}>`;
    const catchAll = plan.catchAllRecipient ? `RCPT TO:<${plan.catchAllRecipient}>` : null;

    let rcptSentAt: number;
    if (caps.pipelining) {
      // RFC 2920: MAIL and RCPTs in one write, QUIT last in the group; the replies come back in order.
      result.stage = "mail";
      rcptSentAt = Date.now();
      c.write([mailFrom, rcpt, ...(catchAll ? [catchAll] : []), "QUIT", ""].join("\r\n"));
      result.roundTrips++;
      const mail = await c.read();
      if (!isPositive(mail)) return reject(mail);
      result.stage = "rcpt";
      result.rcpt = await c.read();
    } else {
      result.stage = "mail";
      const mail = await exchange(mailFrom);
      if (!isPositive(mail)) return reject(mail);
      result.stage = "rcpt";
      rcptSentAt = Date.now();
      result.rcpt = await exchange(rcpt);
    }

    // A random address is only worth asking about when the real one was accepted.
    if (catchAll && isPositive(result.rcpt)) {
      result.stage = "catch_all";
      const wait = Math.max(CATCH_ALL_MIN_WAIT_MS, CATCH_ALL_RCPT_FACTOR * (Date.now() - rcptSentAt));
      result.catchAll = await readCatchAll(c, caps.pipelining ? null : catchAll, wait, () => result.roundTrips++);
    }

    result.stage = "quit";
    if (!caps.pipelining && !c.failure) c.write("QUIT\r\n");
    // The answer is known; the 221 is not worth waiting for.
    return finish();
  } catch (err) {
    const e = err instanceof SessionError ? err : new SessionError("protocol", String(err));
    // The deadline may have destroyed the socket first; report it as the deadline.
    const failure = conn?.failure?.kind === "timeout" ? conn.failure : e;
    result.failure = { kind: failure.kind, message: failure.message };
    return finish();
  }
}

/** EHLO, or HELO when the server does not know EHLO; the capabilities, or the refusing reply. */
async function hello(
  plan: SessionPlan,
  exchange: (command: string) => Promise<SmtpReply>,
): Promise<Capabilities | SmtpReply> {
  const ehlo = await exchange(`EHLO ${plan.heloName}`);
  if (isPositive(ehlo)) return capabilities(ehlo);
  if (!EHLO_UNKNOWN.has(ehlo.code)) return ehlo;
  const helo = await exchange(`HELO ${plan.heloName}`);
  return isPositive(helo) ? { pipelining: false, startTls: false, smtpUtf8: false } : helo;
}

/**
 * The catch-all reply, or null when it does not come in time or the connection ends: the first
 * answer stands either way.
 */
async function readCatchAll(
  c: Connection,
  command: string | null,
  waitMs: number,
  countRoundTrip: () => void,
): Promise<SmtpReply | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    if (command) {
      c.write(`${command}\r\n`);
      countRoundTrip();
    }
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)));
    return await Promise.race([c.read(), late]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
