/** GET, PUT and DELETE /v1/people/events/subscription (docs/api.md "People events"): where an account's people events go. */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { SQL } from "drizzle-orm";
import type { Context } from "hono";
import { PeopleEvent, PeopleEventsSubscription, PeopleEventsSubscriptionBody } from "../../shared/api.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { checkCallbackUrl } from "../webhooks/delivery.ts";
import { auditEvent } from "../identity/store/audit.ts";
import { ApiError } from "../lib/errors.ts";
import { peopleEventsUrl, setPeopleEventsUrl } from "../people/events-store.ts";
import { access, SMALL_BODY_MAX_BYTES } from "./access.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";

const PATH = "/v1/people/events/subscription";
const ok = { description: "The subscription", content: { "application/json": { schema: PeopleEventsSubscription } } };

const readRoute = createRoute({
  method: "get",
  path: PATH,
  operationId: "getPeopleEventsSubscription",
  tags: ["People"],
  summary: "Where this account's people events go",
  ...access({ who: { scope: "account:read" }, limits: ["account"] }),
  responses: { 200: ok, ...authenticatedErrorResponses },
});

const setRoute = createRoute({
  method: "put",
  path: PATH,
  operationId: "setPeopleEventsSubscription",
  tags: ["People"],
  summary: "Send this account's people events to a URL",
  description:
    "Needs people:read besides events:write: the events carry people's data. Each change is an audit event (account.people_events_url_set, with the URL's host). " +
    "Signed events (Standard Webhooks, the account's whsec_ secret, retried as job callbacks are) about people this account looked up within " +
    "PEOPLE_EVENTS_WINDOW_SECONDS: an address it received became undeliverable, a new address appeared, the person was erased (with what to delete).",
  // Where events go decides who receives people's data: only a caller who may read it (docs/api.md "People events").
  ...access({ who: { scope: "events:write", also: ["people:read"] }, limits: ["account"], body: SMALL_BODY_MAX_BYTES }),
  request: { body: { required: true, content: { "application/json": { schema: PeopleEventsSubscriptionBody } } } },
  responses: { 200: ok, 400: errorResponse("url must be an https URL (and the rest of the callback rules: docs/jobs.md \"Callbacks\")"), ...authenticatedErrorResponses },
});

const deleteRoute = createRoute({
  method: "delete",
  path: PATH,
  operationId: "deletePeopleEventsSubscription",
  tags: ["People"],
  summary: "Stop sending this account's people events; those not yet delivered are dropped",
  description: "Needs people:read besides events:write. The change is an audit event (account.people_events_url_removed).",
  ...access({ who: { scope: "events:write", also: ["people:read"] }, limits: ["account"] }),
  responses: { 200: ok, ...authenticatedErrorResponses },
});

/** The events themselves, in the document's webhooks: made by the cron and sent by the queue consumer (edge/people-events.ts), not a route. */
function registerEventDocs(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerWebhook({
    method: "post",
    path: "peopleEvent",
    operationId: "peopleEvent",
    tags: ["People"],
    summary: "A change to a person this account received: an address undeliverable, a new address, or the person erased",
    security: [],
    description:
      "An HTTPS POST to the account's subscription URL (PUT /v1/people/events/subscription), signed as the job callbacks are (Standard Webhooks, the account's whsec_ secret). " +
      "webhook-id is the event's evt_ id, the same on every retry: de-duplicate by it. Any 2xx ends it; anything else is retried on the job callbacks' schedule (docs/api.md \"People events\").",
    request: {
      headers: z.object({ "webhook-id": z.string(), "webhook-timestamp": z.string(), "webhook-signature": z.string() }),
      body: { required: true, content: { "application/json": { schema: PeopleEvent } } },
    },
    responses: { 200: { description: "Received (any 2xx): no more attempts for this event" } },
  });
}

/**
 * The subscription's change as an audit event (GET /v1/audit-events): who pointed the account's people events where.
 * Only the URL's host: a path or query may carry the receiver's own secret.
 */
const audited = (c: Context<AppEnv>, action: "account.people_events_url_set" | "account.people_events_url_removed", details: Record<string, unknown>) => (changed: SQL) => {
  const caller = c.get("auth");
  return auditEvent({ accountId: caller.accountId, action, actor: caller.actor, target: caller.accountId, details, requestId: c.get("requestId"), now: Date.now() }, changed);
};

export function registerPeopleEventsRoutes(app: OpenAPIHono<AppEnv>): void {
  registerEventDocs(app);
  const answer = (url: string | null, config: AppEnv["Variables"]["config"]): PeopleEventsSubscription => ({ url, window_seconds: config.PEOPLE_EVENTS_WINDOW_SECONDS });
  app.openapi(readRoute, async (c) => c.json(answer(await peopleEventsUrl(requestDatabase(c), c.get("auth").accountId), c.get("config")), 200));
  app.openapi(setRoute, async (c) => {
    const config = c.get("config");
    // The same rules as a job's callback_url: https on the default port, a public host (checked again at each delivery).
    const checked = checkCallbackUrl(c.req.valid("json").url, config.CALLBACK_ALLOW_PRIVATE_TARGETS);
    if (!checked.ok) throw new ApiError(400, checked.error.replace(/^callback_url/, "url"));
    await setPeopleEventsUrl(requestDatabase(c), c.get("auth").accountId, checked.url, audited(c, "account.people_events_url_set", { host: new URL(checked.url).host }));
    return c.json(answer(checked.url, config), 200);
  });
  app.openapi(deleteRoute, async (c) => {
    await setPeopleEventsUrl(requestDatabase(c), c.get("auth").accountId, null, audited(c, "account.people_events_url_removed", {}));
    return c.json(answer(null, c.get("config")), 200);
  });
}
