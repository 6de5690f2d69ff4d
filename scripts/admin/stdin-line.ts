/**
 * The first line of standard input, for a selector an operator pipes in (`people erase --email -`) so that an
 * address never sits in the shell's history. Bounded: nothing longer than an address plausibly is gets read.
 */
const MAX_BYTES = 1_024;

export async function readFirstLine(input: AsyncIterable<Buffer | string>): Promise<{ ok: true; line: string } | { ok: false; problem: string }> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    chunks.push(bytes);
    length += bytes.length;
    if (length > MAX_BYTES) return { ok: false, problem: `standard input is longer than ${MAX_BYTES} bytes` };
  }
  const line = Buffer.concat(chunks).toString("utf8").split(/\r?\n/)[0]!.trim();
  if (line === "") return { ok: false, problem: "standard input is empty (give the address on its first line)" };
  return { ok: true, line };
}
