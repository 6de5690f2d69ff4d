/** OpenAPI descriptions of the error answers every authenticated route shares (docs/api.md "API summary"). */
import { ErrorBody } from "../../shared/api.ts";

type HeaderDoc = Record<string, { schema: { type: "integer" | "string" }; description: string }>;

export function errorResponse(description: string, headers?: HeaderDoc) {
  return { description, content: { "application/json": { schema: ErrorBody } }, ...(headers ? { headers } : {}) };
}

const retryAfter = { schema: { type: "integer" as const }, description: "Seconds to wait before trying again" };

export const authenticatedErrorResponses = {
  401: errorResponse(
    'Missing or invalid bearer token or session cookie; for a key that was revoked or has expired, or a session that ended, reason says which ("key_revoked", "key_expired", "session_expired")',
  ),
  403: errorResponse(
    'The key or the member\'s role lacks the scope this operation requires: reason "missing_scope", and scope names it; or, with the session cookie, the request came from another origin (reason "cross_site_request")',
  ),
  429: errorResponse("Rate limit exceeded: the key's limit for this kind of request, or too many failed authentications from this address", {
    "Retry-After": retryAfter,
    "RateLimit-Policy": { schema: { type: "string" }, description: 'The limit that applies, e.g. "lookup";q=100;w=10' },
  }),
  503: errorResponse("Service temporarily unavailable: the database did not answer in time", { "Retry-After": retryAfter }),
};

export const sessionErrorResponses = {
  ...authenticatedErrorResponses,
  403: errorResponse('Called with an API key (reason "session_required"), or from another origin (reason "cross_site_request")'),
};

/** The credit headers a metered answer carries (the lookups, the finder, the domain search), as the OpenAPI document states them. */
export const creditHeaders = {
  "X-Credits-Charged": { schema: { type: "integer" as const }, description: "Credits this request cost" },
  "X-Credits-Remaining": { schema: { type: "integer" as const }, description: "Account balance after this request" },
};
