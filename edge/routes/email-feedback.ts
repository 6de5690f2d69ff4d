/** POST /v1/email_feedback (docs/api.md, the section of that name): what customers' mail to addresses did. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { every } from "hono/combine";
import { EmailFeedbackBody, EmailFeedbackReceipt, ERROR_MESSAGES, FEEDBACK_LIMITS } from "../../shared/api.ts";
import { addressHasher } from "../../shared/people/address-hash.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { parseFeedbackBody } from "../people/feedback.ts";
import { recordFeedbackStatements } from "../people/feedback-store.ts";
import { access } from "./access.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";

const PATH = "/v1/email_feedback";
/** 1,000 reports of a long address and a 1,000-character reply each fit. */
export const MAX_FEEDBACK_BODY_BYTES = 2 * 1024 * 1024;

const feedbackAccess = access({ who: { scope: "feedback:write" }, limits: ["feedback"], body: MAX_FEEDBACK_BODY_BYTES });

/** One hasher per isolate and key: importing the key is the costly part. */
let hasher: { key: string; hash: Promise<(email: string) => Promise<string>> } | undefined;

export function registerEmailFeedbackRoute(app: OpenAPIHono<AppEnv>): void {
  // The body is checked by hand (the first thing wrong, named, before anything is written), so the route is registered
  // for the OpenAPI document from the shared schemas rather than validated by them.
  app.openAPIRegistry.registerPath({
    method: "post",
    path: PATH,
    operationId: "reportEmailFeedback",
    tags: ["People"],
    summary: "Tell us what your mail to addresses did: bounces, deliveries, replies, complaints",
    description:
      `One report, or {"feedback": [...]} with up to ${FEEDBACK_LIMITS.maxReports}. Free. A hard bounce moves the address to the front of our ` +
      "re-verification (at most FEEDBACK_REVERIFY_PER_HOUR of an account's per hour); our own check then decides. A report changes what other " +
      "accounts see only when our check agrees or 3 independent accounts do (docs/api.md \"Confidence\"). Addresses are kept only as keyed hashes. " +
      "Every report is checked before any is stored: the first thing wrong is a 400 that names it, and nothing is written.",
    security: feedbackAccess.security,
    request: { body: { required: true, content: { "application/json": { schema: EmailFeedbackBody } } } },
    responses: {
      200: { description: "Every report stored", content: { "application/json": { schema: EmailFeedbackReceipt } } },
      400: errorResponse(`${ERROR_MESSAGES.malformedJson}; or what is wrong, named: feedback[3].outcome must be one of ..., feedback[0].occurred_at is in the future, feedback holds 1001 reports ...`),
      413: errorResponse(`Body over ${MAX_FEEDBACK_BODY_BYTES} bytes`),
      ...authenticatedErrorResponses,
    },
  });

  app.post(PATH, every(...feedbackAccess.middleware), async (c) => {
    const config = c.get("config");
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      throw new ApiError(400, ERROR_MESSAGES.malformedJson);
    }
    const now = Date.now();
    const reports = parseFeedbackBody(body, now, config.FEEDBACK_RETENTION_SECONDS * 1000);
    const key = config.FEEDBACK_HASH_KEY;
    if (!key) throw new Error("FEEDBACK_HASH_KEY is not set: bounce feedback cannot name addresses (docs/operations.md \"Configuration\")");
    if (hasher?.key !== key) hasher = { key, hash: addressHasher(key) };
    const hash = await hasher.hash;
    const hashed = await Promise.all(reports.map(async (r) => ({ ...r, hash: await hash(r.email) })));
    const db = requestDatabase(c);
    await db.batch(recordFeedbackStatements(db, c.get("auth").accountId, hashed, now, config.FEEDBACK_REVERIFY_PER_HOUR));
    c.get("accessLog").feedback_reports = reports.length;
    return c.json({ received: reports.length }, 200);
  });
}
