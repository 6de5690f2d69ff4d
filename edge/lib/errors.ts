import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * The one error type handlers throw; the app's error handler maps it to `{"error": message}`, plus
 * `fields` (additive, machine-readable: a `reason`, the missing `scope`).
 */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly fields: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}
