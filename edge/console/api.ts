/**
 * How the console's pages use the API: each page handler calls the API's own routes in this Worker
 * (`app.request`, no network hop), with the member's session cookie and the request's origin headers
 * passed on, so authentication, scopes, rate limits, CSRF and every business rule are the API's.
 * The console adds presentation only.
 */
import type { Context, Hono } from "hono";
import type { AppEnv } from "../env.ts";

/** What the API answered: its status and JSON body (or null), and cookies it set, for the page to pass on. */
export type ApiAnswer<T> = {
  status: number;
  ok: boolean;
  data: T;
  error: { error: string; reason?: string } | null;
  setCookies: string[];
  retryAfter: string | null;
  /** X-Credits-Charged, what the call cost (null: the operation does not say). */
  creditsCharged: number | null;
};

/** Request headers the API relies on: the session, the CSRF check, the failed-auth bucket. */
const FORWARDED = ["cookie", "origin", "sec-fetch-site", "cf-connecting-ip", "user-agent"];

/** A body for the API: JSON, a CSV file (text, or the uploaded file itself, passed on as it is), or any other file with its content type (a lookup job's JSON Lines). */
export type ApiBody = { json: unknown } | { csv: string | Blob } | { file: string; type: string };

export type CallApi = <T>(method: string, path: string, body?: ApiBody) => Promise<ApiAnswer<T>>;

export function apiCaller(app: Hono<AppEnv>, c: Context<AppEnv>): CallApi {
  return async <T>(method: string, path: string, body?: ApiBody) => {
    const headers = new Headers();
    for (const name of FORWARDED) {
      const value = c.req.header(name);
      if (value) headers.set(name, value);
    }
    let payload: string | Blob | undefined;
    if (body && "json" in body) {
      headers.set("content-type", "application/json");
      payload = JSON.stringify(body.json);
    } else if (body && "csv" in body) {
      headers.set("content-type", "text/csv");
      payload = body.csv;
    } else if (body) {
      headers.set("content-type", body.type);
      payload = body.file;
    }
    let executionCtx: Context<AppEnv>["executionCtx"] | undefined;
    try {
      executionCtx = c.executionCtx;
    } catch {
      executionCtx = undefined; // app.request in a test: none
    }
    const res = await app.request(new URL(path, c.req.url).toString(), { method, headers, body: payload }, c.env, executionCtx);
    const text = await res.text();
    const parsed: unknown = text && (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : null;
    return {
      status: res.status,
      ok: res.ok,
      data: (res.ok ? parsed : null) as T,
      error: res.ok ? null : ((parsed as { error: string; reason?: string } | null) ?? { error: `HTTP ${res.status}` }),
      setCookies: res.headers.getSetCookie(),
      retryAfter: res.headers.get("retry-after"),
      creditsCharged: res.headers.has("x-credits-charged") ? Number(res.headers.get("x-credits-charged")) : null,
    };
  };
}
