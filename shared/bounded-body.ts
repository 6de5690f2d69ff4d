/**
 * Reads an HTTP body as UTF-8 text, refusing more than `limit` bytes whatever the headers claim:
 * untrusted bodies are bounded before anything parses them. Used by the Worker (request bodies, the
 * probe's answers, DoH answers) and the probe (the Worker's requests); runs on workerd and Node alike.
 */
export async function readBodyWithin(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string | null> {
  const bytes = await readBytesWithin(body, limit);
  return bytes === null ? null : new TextDecoder().decode(bytes);
}

/**
 * The body's bytes, or null when it is over `limit`. Past the limit the rest is either cancelled
 * (a response we stop reading) or read and thrown away ("drain"): a server that answers a request
 * whose body is still arriving must consume it, or the connection it came on breaks (see
 * edge/body-limit.ts). With a `signal`, each read gives up as soon as it aborts, whatever the
 * stream does (a fetcher may ignore the signal): the body is cancelled and the read throws.
 */
export async function readBytesWithin(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  { overflow = "cancel", signal }: { overflow?: "cancel" | "drain"; signal?: AbortSignal } = {},
): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await (signal ? raceAbort(reader.read(), signal) : reader.read());
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        if (overflow === "cancel") await reader.cancel();
        else while (!(await reader.read()).done);
        return null;
      }
      chunks.push(value);
    }
  } catch (error) {
    void reader.cancel().catch(() => {});
    throw error;
  }
  const all = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  return all;
}

/** Rejects as soon as `signal` aborts, whatever the underlying promise does (a fetcher may ignore it). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(new Error("aborted"));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
