/**
 * Reads an HTTP body as UTF-8 text, refusing more than `limit` bytes whatever the headers claim:
 * untrusted bodies are bounded before anything parses them. Used by the Worker (the probe's
 * answers) and the probe (the Worker's requests); runs on workerd and Node alike.
 */
export async function readBodyWithin(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string | null> {
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
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
  return new TextDecoder().decode(all);
}
