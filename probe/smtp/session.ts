/**
 * Longer than 400 lines on purpose: one SMTP session, greeting to QUIT: a protocol state machine that reads best whole.
 * One SMTP session with one mail server address, kept open for reuse as a well-behaved MTA does:
 * connect, greeting, EHLO (HELO fallback), opportunistic STARTTLS and EHLO again once; then any
 * number of transactions (RSET when needed, MAIL FROM, RCPT TO for one or many recipients; never
 * DATA), each one write when the server offers PIPELINING; then QUIT, a short wait for the 221, and
 * a close with FIN.
 *
 * The session only reports what the server said; the scheduler decides what it means and when to
 * use, rotate or close a session. Every byte from the server goes through ReplyReader's bounds
 * first, and every operation has a deadline: when it passes, the socket is destroyed wherever the
 * conversation is (a server that stopped answering gets no courtesy).
 */
import net from "node:net";
import tls from "node:tls";
import { ReplyReader, SmtpProtocolError, type SmtpReply } from "./reply.ts";
import { monotonicNow } from "../clock.ts";

export type SmtpStage = "connect" | "greeting" | "ehlo" | "starttls" | "mail" | "rcpt" | "catch_all" | "quit";

export type SessionFailure = {
  /**
   * connect: no TCP connection. timeout: a deadline passed. closed: the server hung up.
   * protocol: the server broke the reply syntax or a bound. rejected: a non-success reply ended the
   * setup (greeting, EHLO/HELO; see `rejectedReply`). tls: the TLS handshake failed.
   */
  kind: "connect" | "timeout" | "closed" | "protocol" | "rejected" | "tls";
  message: string;
};

export type OpenOptions = {
  /** The MX host name: used for TLS SNI only. */
  host: string;
  /** The IP literal to dial. */
  address: string;
  port: number;
  heloName: string;
  /** How long the TCP connect may take, within the deadline. */
  connectTimeoutMs: number;
  /** Try STARTTLS when offered (false after this address failed a handshake). */
  startTls: boolean;
  /** Absolute time (ms since the epoch) by which the session must be ready. */
  deadline: number;
};

export type OpenResult =
  | { ok: true; session: SmtpSession }
  | {
      ok: false;
      stage: SmtpStage;
      failure: SessionFailure;
      /** The reply that refused us (greeting, EHLO or HELO), when there was one. */
      rejectedReply: SmtpReply | null;
      tls: boolean;
      roundTrips: number;
      ms: number;
    };

export type TransactionRequest = {
  mailFrom: string;
  /** Ask for SMTPUTF8 on MAIL FROM (some recipient is not ASCII). */
  utf8: boolean;
  /** Sent in this order, after MAIL FROM. */
  recipients: string[];
  /**
   * Recipients to add once the first ones were answered (the random catch-all address is only worth
   * asking about when a real one was accepted and none was refused as unknown): one RCPT at a time
   * without PIPELINING, in one more write with it.
   */
  followUp?: (replies: readonly (SmtpReply | null)[]) => string[];
  /** Absolute time by which the transaction is over; the session is destroyed when it passes. */
  deadline: number;
  /** Called as each RCPT reply arrives, in order (`index` counts follow-up recipients on). */
  onReply?: (index: number, reply: SmtpReply) => void;
};

export type TransactionResult = {
  /** The reply to RSET, when the session needed one before MAIL FROM. */
  reset: SmtpReply | null;
  mail: SmtpReply | null;
  /** One per recipient sent (follow-ups included), null where no reply came. */
  replies: (SmtpReply | null)[];
  /** Set when the session broke during the transaction; it is then closed. */
  failure: SessionFailure | null;
  /** Times the client waited for the server in this transaction (1 with PIPELINING). */
  roundTrips: number;
  ms: number;
};

/** How long QUIT waits for the 221, and then for the server to close, before giving up. */
export const QUIT_WAIT_MS = 1_000;

class SessionError extends Error {
  constructor(
    readonly kind: SessionFailure["kind"],
    message: string,
  ) {
    super(message);
  }
}

const toFailure = (err: unknown): SessionFailure =>
  err instanceof SessionError ? { kind: err.kind, message: err.message } : { kind: "protocol", message: String(err) };

/** A socket plus the replies read from it, consumed one at a time. */
class Connection {
  socket: net.Socket;
  reader = new ReplyReader();
  #replies: SmtpReply[] = [];
  #failure: SessionError | null = null;
  #wake: (() => void) | null = null;
  #closeListeners: (() => void)[] = [];
  #closed = false;
  readonly #onData = (chunk: Buffer) => {
    try {
      this.#replies.push(...this.reader.push(chunk));
    } catch (err) {
      this.fail(new SessionError("protocol", err instanceof SmtpProtocolError ? err.message : String(err)));
    }
    this.#notify();
  };
  readonly #onError = (err: Error) => this.fail(new SessionError("closed", `connection error: ${err.message}`));
  readonly #onClose = () => {
    this.fail(new SessionError("closed", this.reader.midReply ? "connection closed in the middle of a reply" : "connection closed by the server"));
    this.#markClosed();
  };

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

  #markClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const listener of this.#closeListeners.splice(0)) listener();
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

  get closed(): boolean {
    return this.#closed || this.#failure !== null;
  }

  onClose(listener: () => void): void {
    if (this.#closed) listener();
    else this.#closeListeners.push(listener);
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

  /** Nothing buffered: no reply waiting and no partial line. */
  get idle(): boolean {
    return this.#replies.length === 0 && !this.reader.midReply;
  }

  /** Closes with FIN once the server has had a moment to answer; destroys only if it lingers. */
  async end(waitMs: number): Promise<void> {
    if (this.#closed) return;
    const closed = new Promise<void>((resolve) => this.onClose(resolve));
    this.socket.end();
    const timer = setTimeout(() => this.socket.destroy(), waitMs);
    await closed;
    clearTimeout(timer);
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
        plain.off("close", onClose);
        resolve();
      });
      secure.once("error", onError);
      secure.once("close", onClose);
      // A deadline during the handshake destroys the plain socket; the TLS socket then closes.
      plain.once("close", onClose);
    });
    this.#attach(secure);
  }

  /** Runs `work` with a deadline: when it passes, the connection fails with a timeout. */
  async within<T>(deadline: number, what: () => string, work: () => Promise<T>): Promise<T> {
    const timer = setTimeout(() => this.fail(new SessionError("timeout", `deadline reached during ${what()}`)), Math.max(0, deadline - monotonicNow()));
    try {
      return await work();
    } finally {
      clearTimeout(timer);
    }
  }
}

function connect(o: OpenOptions): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: o.address, port: o.port, noDelay: true });
    const limit = Math.max(0, Math.min(o.connectTimeoutMs, o.deadline - monotonicNow()));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new SessionError(monotonicNow() >= o.deadline ? "timeout" : "connect", `no TCP connection within ${limit} ms`));
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

type Capabilities = { pipelining: boolean; startTls: boolean; smtpUtf8: boolean; keywords: string[] };

function capabilities(ehlo: SmtpReply): Capabilities {
  // The first line is the server's name; each further line starts with an extension keyword, in the server's order.
  const list = ehlo.lines.slice(1, 41).map((l) => l.split(/\s+/, 1)[0]!.toUpperCase().slice(0, 40));
  const keywords = new Set(list);
  return { pipelining: keywords.has("PIPELINING"), startTls: keywords.has("STARTTLS"), smtpUtf8: keywords.has("SMTPUTF8"), keywords: list };
}

export const isPositive = (reply: SmtpReply) => reply.code >= 200 && reply.code < 300;
// RFC 5321 §4.1.1.1: a server that does not know EHLO answers 500/502 (some say 501 or 504).
const EHLO_UNKNOWN = new Set([500, 501, 502, 504]);

/** Connects and gets a session ready for transactions, or says where and why it could not. */
export async function openSession(o: OpenOptions): Promise<OpenResult> {
  const started = monotonicNow();
  let stage: SmtpStage = "connect";
  let roundTrips = 1;
  let secured = false;
  let conn: Connection | null = null;
  const refused = (reply: SmtpReply): OpenResult => {
    conn?.socket.destroy();
    return {
      ok: false,
      stage,
      failure: { kind: "rejected", message: `${stage} refused: ${reply.code}` },
      rejectedReply: reply,
      tls: secured,
      roundTrips,
      ms: monotonicNow() - started,
    };
  };
  try {
    conn = new Connection(await connect(o));
    const c = conn;
    return await c.within(o.deadline, () => stage, async () => {
      const exchange = async (command: string | null): Promise<SmtpReply> => {
        if (command !== null) c.write(`${command}\r\n`);
        roundTrips++;
        return c.read();
      };
      stage = "greeting";
      const greeting = await exchange(null);
      if (greeting.code !== 220) return refused(greeting);

      stage = "ehlo";
      let caps = await hello(o.heloName, exchange);
      if ("code" in caps) return refused(caps);

      if (caps.startTls && o.startTls) {
        stage = "starttls";
        const reply = await exchange("STARTTLS");
        if (reply.code === 220) {
          // Bytes sent before the handshake would be read as if they came over TLS (CVE-2011-0411).
          if (!c.idle) throw new SessionError("protocol", "data after the STARTTLS reply, before the TLS handshake");
          roundTrips++;
          await c.upgrade(net.isIP(o.host) ? undefined : o.host);
          secured = true;
          stage = "ehlo";
          caps = await hello(o.heloName, exchange);
          if ("code" in caps) return refused(caps);
        }
        // Any other answer: carry on in plain text, as opportunistic TLS does.
      }
      return { ok: true, session: new SmtpSession(c, o, caps, secured, roundTrips, monotonicNow() - started, greeting.text) };
    });
  } catch (err) {
    // A deadline may have destroyed the socket first; report it as the deadline.
    const failure = conn?.failure?.kind === "timeout" ? toFailure(conn.failure) : toFailure(err);
    conn?.socket.destroy();
    return { ok: false, stage, failure, rejectedReply: null, tls: secured, roundTrips, ms: monotonicNow() - started };
  }
}

/** EHLO, or HELO when the server does not know EHLO; the capabilities, or the refusing reply. */
async function hello(heloName: string, exchange: (command: string) => Promise<SmtpReply>): Promise<Capabilities | SmtpReply> {
  const ehlo = await exchange(`EHLO ${heloName}`);
  if (isPositive(ehlo)) return capabilities(ehlo);
  if (!EHLO_UNKNOWN.has(ehlo.code)) return ehlo;
  const helo = await exchange(`HELO ${heloName}`);
  return isPositive(helo) ? { pipelining: false, startTls: false, smtpUtf8: false, keywords: [] } : helo;
}

/** An open session, ready for transactions. Created by openSession. */
export class SmtpSession {
  readonly host: string;
  readonly address: string;
  readonly tls: boolean;
  readonly pipelining: boolean;
  readonly smtpUtf8: boolean;
  /** Round trips and time spent getting ready (connect to the last EHLO). */
  readonly setupRoundTrips: number;
  readonly setupMs: number;
  /** The greeting's text: what software the server says it runs (policy/learned.ts countsPerSession reads it). */
  readonly greeting: string;
  /** The EHLO extension keywords, in the server's order (the last EHLO's): evidence of its software (policy/learned.ts softwareOf). */
  readonly ehloKeywords: readonly string[];
  readonly openedAt = monotonicNow();
  lastUsedAt = monotonicNow();
  /** MAIL FROM transactions begun on this session. */
  transactions = 0;
  /** Replies of 400 and above to RSET, MAIL and RCPT: what servers count as client errors. */
  rejections = 0;
  #conn: Connection;
  #needsReset = false;
  #busy = false;

  constructor(conn: Connection, o: OpenOptions, caps: Capabilities, secured: boolean, roundTrips: number, ms: number, greeting = "") {
    this.#conn = conn;
    this.greeting = greeting;
    this.ehloKeywords = caps.keywords;
    this.host = o.host;
    this.address = o.address;
    this.tls = secured;
    this.pipelining = caps.pipelining;
    this.smtpUtf8 = caps.smtpUtf8;
    this.setupRoundTrips = roundTrips;
    this.setupMs = ms;
  }

  /** The connection has ended or failed; the session can carry nothing more. */
  get closed(): boolean {
    return this.#conn.closed;
  }

  /**
   * Idle with nothing unexpected from the server: a reply nobody asked for (a "421 timeout" before
   * the server hangs up) means the session is not safe to use.
   */
  get usable(): boolean {
    return !this.#busy && !this.closed && this.#conn.idle;
  }

  /** Called once when the connection ends, for whatever reason (an idle session the server closed). */
  onClose(listener: () => void): void {
    this.#conn.onClose(listener);
  }

  async transaction(req: TransactionRequest): Promise<TransactionResult> {
    const started = monotonicNow();
    const result: TransactionResult = { reset: null, mail: null, replies: [], failure: null, roundTrips: 0, ms: 0 };
    if (this.#busy) throw new Error("SmtpSession.transaction: the session is busy");
    this.#busy = true;
    const c = this.#conn;
    const count = (reply: SmtpReply) => {
      if (reply.code >= 400) this.rejections++;
      return reply;
    };
    // After a refused RSET or MAIL the server answers each pipelined RCPT with 503 "need MAIL":
    // those are recorded and counted, but they say nothing about the recipients.
    const deliver = (index: number, reply: SmtpReply) => {
      result.replies[index] = count(reply);
      const begun = (!result.reset || isPositive(result.reset)) && result.mail !== null && isPositive(result.mail);
      if (begun) req.onReply?.(index, reply);
    };
    const mailFrom = `MAIL FROM:<${req.mailFrom}>${req.utf8 ? " SMTPUTF8" : ""}`;
    const reset = this.#needsReset;
    this.#needsReset = true;
    this.transactions++;
    result.replies = req.recipients.map(() => null);
    try {
      await c.within(req.deadline, () => "a transaction", async () => {
        if (this.pipelining) {
          // RFC 2920: RSET, MAIL and every RCPT in one write; the replies come back in order.
          c.write([...(reset ? ["RSET"] : []), mailFrom, ...req.recipients.map((r) => `RCPT TO:<${r}>`), ""].join("\r\n"));
          result.roundTrips++;
          if (reset) result.reset = count(await c.read());
          result.mail = count(await c.read());
          // After a refused MAIL the server still answers every pipelined RCPT (503): read them all.
          for (let i = 0; i < req.recipients.length; i++) deliver(i, await c.read());
          // What the replies ask next (a catch-all test they did not settle) goes in one more write.
          const extra = req.followUp?.(result.replies) ?? [];
          if (extra.length === 0) return;
          c.write([...extra.map((r) => `RCPT TO:<${r}>`), ""].join("\r\n"));
          result.roundTrips++;
          for (const [j] of extra.entries()) {
            result.replies.push(null);
            deliver(req.recipients.length + j, await c.read());
          }
          return;
        }
        const exchange = async (command: string) => {
          c.write(`${command}\r\n`);
          result.roundTrips++;
          return count(await c.read());
        };
        if (reset) {
          result.reset = await exchange("RSET");
          if (!isPositive(result.reset)) return;
        }
        result.mail = await exchange(mailFrom);
        if (!isPositive(result.mail)) return;
        for (let i = 0; i < req.recipients.length; i++) deliver(i, await exchangeRaw(c, `RCPT TO:<${req.recipients[i]}>`, result));
        const extra = req.followUp?.(result.replies) ?? [];
        for (const [j, recipient] of extra.entries()) {
          const index = req.recipients.length + j;
          result.replies.push(null);
          deliver(index, await exchangeRaw(c, `RCPT TO:<${recipient}>`, result));
        }
      });
    } catch (err) {
      result.failure = toFailure(c.failure?.kind === "timeout" ? c.failure : err);
      c.socket.destroy();
    } finally {
      this.#busy = false;
      this.lastUsedAt = monotonicNow();
      result.ms = monotonicNow() - started;
    }
    return result;
  }

  /**
   * NOOP on an idle session that waits for its next transaction (the pacing gap): true when the server answered 250,
   * so the session is still worth keeping; false (and the connection dropped) otherwise. A server that does not know
   * NOOP (500/502; RFC 5321 4.5.1 says every server must) gets RSET instead, which it must know too.
   */
  async noop(deadline: number): Promise<boolean> {
    if (!this.usable) return false;
    const c = this.#conn;
    this.#busy = true;
    try {
      const send = (command: "NOOP" | "RSET") =>
        c.within(deadline, () => `a ${command}`, async () => {
          c.write(`${command}\r\n`);
          return c.read();
        });
      let reply = await send("NOOP");
      if (reply.code === 500 || reply.code === 502) {
        this.rejections++;
        reply = await send("RSET");
      }
      if (isPositive(reply)) return true;
      if (reply.code >= 400) this.rejections++;
      c.socket.destroy();
      return false;
    } catch {
      c.socket.destroy();
      return false;
    } finally {
      this.#busy = false;
      this.lastUsedAt = monotonicNow();
    }
  }

  /** QUIT, a short wait for the 221, then FIN. Never a reset unless the server lingers. */
  async quit(waitMs = QUIT_WAIT_MS): Promise<void> {
    const c = this.#conn;
    if (c.closed) return;
    this.#busy = true;
    try {
      c.write("QUIT\r\n");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([c.read().catch(() => null), new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
      clearTimeout(timer);
    } catch {
      // The server went away first: nothing to be polite to.
    }
    await c.end(waitMs);
  }

  /** Drops the connection at once (shutdown, or a session the scheduler no longer trusts). */
  destroy(): void {
    this.#conn.socket.destroy();
  }
}

async function exchangeRaw(c: Connection, command: string, result: TransactionResult): Promise<SmtpReply> {
  c.write(`${command}\r\n`);
  result.roundTrips++;
  return c.read();
}
