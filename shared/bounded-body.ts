/**
 * Reads an HTTP body as UTF-8 text, refusing more than `limit` bytes whatever the headers claim:
 * untrusted bodies are bounded before anything parses them. Used by the Worker (the probe's
 * answers) and the probe (the Worker's requests); runs on workerd and Node alike.
 */
export async function readBodyWithin(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string | null> {
  const bytes = await readBytesWithin(body, limit);
  return bytes === null ? null : new TextDecoder().decode(bytes);
}

/**
 * The body's bytes, or null when it is over `limit`. Past the limit the rest is either cancelled
 * (a response we stop reading) or read and thrown away ("drain"): a server that answers a request
 * whose body is still arriving must consume it, or the connection it came on breaks (see
 * edge/body-limit.ts).
 */
export async function readBytesWithin(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  overflow: "cancel" | "drain" = "cancel",
): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      if (overflow === "cancel") await reader.cancel();
      else while (!(await reader.read()).done);
      return null;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  return all;
}
