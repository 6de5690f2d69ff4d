/**
 * A request body limit that holds for chunked bodies too (docs/api.md "GET and POST /v1/email_verifications").
 *
 * A chunked body (no Content-Length) can only be measured by reading it. hono/body-limit stops
 * reading at the limit and answers 413 while the rest of the body is still arriving, with the
 * stream left locked and half read; workerd then drops the connection that carries it, so the
 * client sees a reset, an empty reply or a plain-text 500/503 from the runtime instead of our JSON
 * 413, and the next request can hang behind it. Cancelling the stream breaks the connection the
 * same way. So past the limit the rest is read and thrown away (never kept), and then the 413 goes
 * out on a connection that is still whole. Cloudflare caps request bodies (100 MB on the Free and
 * Pro plans), which bounds that read; every request that gets here is authenticated and rate limited.
 * A declared Content-Length over the limit is refused without reading: the runtime discards a
 * body nobody touched.
 */
import type { MiddlewareHandler } from "hono";
import { ERROR_MESSAGES } from "../shared/api.ts";
import { readBytesWithin } from "../shared/bounded-body.ts";
import type { AppEnv } from "./env.ts";
import { ApiError } from "./lib/errors.ts";

export function limitRequestBody(maxBytes: number, message: string = ERROR_MESSAGES.bodyTooLarge): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const body = c.req.raw.body;
    if (!body) return next();
    const declared = Number(c.req.header("content-length"));
    if (!c.req.header("transfer-encoding") && declared > maxBytes) throw new ApiError(413, message);
    const bytes = await readBytesWithin(body, maxBytes, { overflow: "drain" });
    if (bytes === null) throw new ApiError(413, message);
    // The handlers read the body again (JSON or form), now from memory.
    c.req.raw = new Request(c.req.raw, { body: bytes });
    return next();
  };
}
