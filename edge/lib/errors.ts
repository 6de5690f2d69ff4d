/**
 * The one error type handlers throw; the app's error handler maps it to `{"error": message}`, plus
 * `fields` (additive, machine-readable: a `reason` from shared/api.ts ERROR_REASONS, the missing `scope`).
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ErrorReason } from "../../shared/api.ts";

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly fields: { reason?: ErrorReason; scope?: string } = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}
