/**
 * SMTP replies (RFC 5321 §4.2) read incrementally from an untrusted peer, with enhanced status
 * codes (RFC 3463). Everything is bounded before it is looked at: a line, a reply's line count and
 * a reply's total size. A peer that breaks a bound or does not speak the reply syntax gets a
 * SmtpProtocolError, which the session reports as an inconclusive outcome.
 */

export type SmtpReply = {
  /** The three-digit reply code, 200..599. */
  code: number;
  /** The RFC 3463 enhanced status code of the first line ("5.1.1"), when the server gave one. */
  enhanced: string | null;
  /** The text of every line, without the code, separator or a leading enhanced code. */
  lines: string[];
  /** The lines joined with single spaces. */
  text: string;
};

/** RFC 5321 allows 512 octets per reply line; real servers exceed it a little, hostile ones a lot. */
export const MAX_REPLY_LINE_OCTETS = 2048;
export const MAX_REPLY_LINES = 64;
export const MAX_REPLY_OCTETS = 16 * 1024;

export class SmtpProtocolError extends Error {
  override name = "SmtpProtocolError";
}

const LINE = /^([2-5][0-9][0-9])(?:([ -])(.*))?$/s;
const ENHANCED = /^([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)\s*/;

/** Splits "5.1.1 text" into the enhanced code and the rest, when the class matches the reply code. */
function splitEnhancedCode(code: number, text: string): { enhanced: string | null; rest: string } {
  const m = ENHANCED.exec(text);
  if (!m || Number(m[1]) !== Math.floor(code / 100)) return { enhanced: null, rest: text };
  return { enhanced: `${m[1]}.${Number(m[2])}.${Number(m[3])}`, rest: text.slice(m[0].length) };
}

/**
 * Feeds bytes in, takes complete replies out. Several replies may arrive in one chunk (PIPELINING)
 * and one reply may arrive over many chunks (a slow server). Lines end in CRLF; a bare LF is
 * accepted too, as most clients do.
 */
export class ReplyReader {
  #partial: Buffer[] = [];
  #partialOctets = 0;
  #lines: string[] = [];
  #code = 0;
  #replyOctets = 0;

  /** Complete replies in this chunk, in order. Throws SmtpProtocolError when a bound or the syntax is broken. */
  push(chunk: Buffer): SmtpReply[] {
    const replies: SmtpReply[] = [];
    let start = 0;
    for (;;) {
      const lf = chunk.indexOf(0x0a, start);
      if (lf === -1) break;
      const piece = chunk.subarray(start, lf);
      this.#addPartial(piece);
      const whole = this.#partial.length === 1 ? this.#partial[0]! : Buffer.concat(this.#partial);
      this.#partial = [];
      this.#partialOctets = 0;
      const end = whole.length > 0 && whole[whole.length - 1] === 0x0d ? whole.length - 1 : whole.length;
      const reply = this.#line(whole.toString("utf8", 0, end), whole.length + 1);
      if (reply) replies.push(reply);
      start = lf + 1;
    }
    if (start < chunk.length) this.#addPartial(chunk.subarray(start));
    return replies;
  }

  /** True while a reply has started (some of its lines or octets arrived) but is not complete. */
  get midReply(): boolean {
    return this.#lines.length > 0 || this.#partialOctets > 0;
  }

  #addPartial(piece: Buffer): void {
    this.#partialOctets += piece.length;
    if (this.#partialOctets > MAX_REPLY_LINE_OCTETS) {
      throw new SmtpProtocolError(`reply line longer than ${MAX_REPLY_LINE_OCTETS} octets`);
    }
    // Copy: the socket may reuse the chunk's memory.
    if (piece.length > 0) this.#partial.push(Buffer.from(piece));
  }

  #line(line: string, octets: number): SmtpReply | null {
    const m = LINE.exec(line);
    if (!m) throw new SmtpProtocolError(`not an SMTP reply line: ${JSON.stringify(line.slice(0, 60))}`);
    const code = Number(m[1]);
    if (this.#lines.length > 0 && code !== this.#code) {
      throw new SmtpProtocolError(`reply code changed within a multi-line reply (${this.#code} then ${code})`);
    }
    this.#code = code;
    this.#replyOctets += octets;
    if (this.#replyOctets > MAX_REPLY_OCTETS) throw new SmtpProtocolError(`reply larger than ${MAX_REPLY_OCTETS} octets`);
    this.#lines.push(m[3] ?? "");
    if (this.#lines.length > MAX_REPLY_LINES) throw new SmtpProtocolError(`reply longer than ${MAX_REPLY_LINES} lines`);
    if (m[2] === "-") return null;

    const raw = this.#lines;
    this.#lines = [];
    this.#replyOctets = 0;
    const first = splitEnhancedCode(code, raw[0]!);
    // Servers such as Gmail repeat the enhanced code on every line; keep it out of the text.
    const lines = raw.map((l, i) => (i === 0 ? first.rest : first.enhanced ? splitEnhancedCode(code, l).rest : l).trim());
    return { code, enhanced: first.enhanced, lines, text: lines.filter((l) => l !== "").join(" ") };
  }
}
