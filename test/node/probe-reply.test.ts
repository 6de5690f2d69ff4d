/** SMTP reply parsing from raw bytes: multi-line replies, enhanced codes, chunking and every bound. */
import { describe, expect, it } from "vitest";
import { MAX_REPLY_LINE_OCTETS, MAX_REPLY_LINES, ReplyReader, SmtpProtocolError } from "../../probe/smtp/reply.ts";

const read = (...chunks: string[]) => {
  const reader = new ReplyReader();
  return chunks.flatMap((c) => reader.push(Buffer.from(c, "utf8")));
};

describe("ReplyReader", () => {
  it("reads a single-line reply with an enhanced code", () => {
    expect(read("250 2.1.5 Ok\r\n")).toEqual([{ code: 250, enhanced: "2.1.5", lines: ["Ok"], text: "Ok" }]);
  });

  it("reads Gmail's multi-line 550 with the enhanced code repeated on every line", () => {
    const [reply] = read(
      "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n" +
        "550-5.1.1 double-checking the recipient's email address for typos or\r\n" +
        "550 5.1.1 unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser a1si - gsmtp\r\n",
    );
    expect(reply!.code).toBe(550);
    expect(reply!.enhanced).toBe("5.1.1");
    expect(reply!.lines).toHaveLength(3);
    expect(reply!.text).toBe(
      "The email account that you tried to reach does not exist. Please try double-checking the recipient's email address for typos or unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser a1si - gsmtp",
    );
  });

  it("reads EHLO capabilities as lines, and replies without text", () => {
    const replies = read("250-mx.example.com\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250 STARTTLS\r\n", "354\r\n");
    expect(replies[0]!.lines).toEqual(["mx.example.com", "PIPELINING", "SIZE 10240000", "STARTTLS"]);
    expect(replies[0]!.enhanced).toBeNull();
    expect(replies[1]).toEqual({ code: 354, enhanced: null, lines: [""], text: "" });
  });

  it("returns several pipelined replies from one chunk, in order", () => {
    const replies = read("250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n550 5.1.1 <x@y>: User unknown\r\n221 2.0.0 Bye\r\n");
    expect(replies.map((r) => r.code)).toEqual([250, 250, 550, 221]);
  });

  it("assembles a reply that arrives one byte at a time", () => {
    const text = "451-4.7.1 Greylisted\r\n451 4.7.1 try again later\r\n";
    const reader = new ReplyReader();
    const out = [...text].flatMap((ch) => reader.push(Buffer.from(ch)));
    expect(out).toEqual([{ code: 451, enhanced: "4.7.1", lines: ["Greylisted", "try again later"], text: "Greylisted try again later" }]);
  });

  it("accepts a bare LF line ending", () => {
    expect(read("220 mx ESMTP\n")[0]!.code).toBe(220);
  });

  it("keeps an enhanced code whose class does not match the reply code in the text", () => {
    expect(read("550 2.1.5 odd\r\n")[0]).toMatchObject({ enhanced: null, text: "2.1.5 odd" });
  });

  it("decodes non-ASCII text without throwing, including invalid UTF-8", () => {
    const reader = new ReplyReader();
    const [reply] = reader.push(Buffer.concat([Buffer.from("550 5.1.1 Benutzer "), Buffer.from([0xff, 0xfe]), Buffer.from(" unbekannt\r\n")]));
    expect(reply!.text).toMatch(/^Benutzer .+ unbekannt$/);
  });

  const bad: [string, string, RegExp][] = [
    ["not a reply line", "HTTP/1.1 200 OK\r\n", /not an SMTP reply line/],
    ["a code out of range", "199 hi\r\n", /not an SMTP reply line/],
    ["a 6xx code", "600 hi\r\n", /not an SMTP reply line/],
    ["the code changing mid-reply", "250-a\r\n251 b\r\n", /code changed/],
    ["a line too long", `220 ${"x".repeat(MAX_REPLY_LINE_OCTETS)}\r\n`, /longer than/],
    ["too many lines", "220-x\r\n".repeat(MAX_REPLY_LINES) + "220 x\r\n", /lines/],
    ["too many octets in one reply", `220-${"y".repeat(1000)}\r\n`.repeat(20), /larger than/],
  ];
  for (const [name, input, message] of bad) {
    it(`rejects ${name}`, () => {
      expect(() => read(input)).toThrow(SmtpProtocolError);
      expect(() => read(input)).toThrow(message);
    });
  }

  it("rejects an endless line as soon as the bound is crossed, without buffering the rest", () => {
    const reader = new ReplyReader();
    reader.push(Buffer.from("220 "));
    const chunk = Buffer.alloc(1024, "a");
    expect(() => reader.push(chunk)).not.toThrow();
    expect(() => reader.push(chunk)).toThrow(/longer than/);
  });

  it("knows when a reply is half-read", () => {
    const reader = new ReplyReader();
    expect(reader.midReply).toBe(false);
    reader.push(Buffer.from("250-first\r\n"));
    expect(reader.midReply).toBe(true);
    reader.push(Buffer.from("250 last\r\n"));
    expect(reader.midReply).toBe(false);
    reader.push(Buffer.from("25"));
    expect(reader.midReply).toBe(true);
  });
});
