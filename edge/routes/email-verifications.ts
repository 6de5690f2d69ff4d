/** GET and POST /v1/email_verifications (docs/api.md, the section of that name). */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ERROR_MESSAGES, EmailVerificationQuery, EmailVerificationResult } from "../../shared/api.ts";
import type { AppEnv } from "../env.ts";
import { MAX_VERIFICATION_BODY_BYTES, readVerificationParams } from "../verification/params.ts";
import { verifyEmail } from "../verification/verify.ts";
import { probeTenant } from "../verification/probe-ranking.ts";
import { noteVerification } from "../identity/key-activity.ts";
import { authenticatedErrorResponses, errorResponse } from "./responses.ts";
import { every } from "hono/combine";
import { access } from "./access.ts";

const PATH = "/v1/email_verifications";

const responses = {
  200: { description: "Validation completed", content: { "application/json": { schema: EmailVerificationResult } } },
  400: errorResponse(`${ERROR_MESSAGES.emailRequired}; ${ERROR_MESSAGES.smtpTimeoutRange}; ${ERROR_MESSAGES.malformedJson}`),
  413: errorResponse(`Body over ${MAX_VERIFICATION_BODY_BYTES} bytes`),
  415: errorResponse("Body in an unsupported content type"),
  ...authenticatedErrorResponses,
};
const description =
  "Verifies an address: syntax, disposable provider, typo suggestion, MX over DNS-over-HTTPS, a live SMTP " +
  "check through the probe, catch-all detection, a 0-100 score and a valid/risky/invalid verdict. Costs no credits. " +
  "Answers within about smtp_timeout + 2 seconds.";

const verifyAccess = access({ who: { scope: "verifications:write" }, limits: ["verification"] });
const verifyPostAccess = access({ who: { scope: "verifications:write" }, limits: ["verification"], body: MAX_VERIFICATION_BODY_BYTES });

export function registerEmailVerificationRoutes(app: OpenAPIHono<AppEnv>): void {
  // Parameters are parsed by hand (query wins over body, exact messages), so the routes are
  // registered for the OpenAPI document from the same schemas rather than validated by them.
  app.openAPIRegistry.registerPath({
    method: "get",
    path: PATH,
    operationId: "verifyEmail",
    tags: ["Email verification"],
    summary: "Verify an email address",
    description,
    security: verifyAccess.security,
    request: { query: EmailVerificationQuery },
    responses,
  });
  const bodySchema = EmailVerificationQuery.extend({});
  app.openAPIRegistry.registerPath({
    method: "post",
    path: PATH,
    operationId: "verifyEmailPost",
    tags: ["Email verification"],
    summary: "Verify an email address (parameters in the query, a JSON body or a form)",
    description: `${description} A query parameter wins over the same parameter in the body.`,
    security: verifyPostAccess.security,
    request: {
      query: EmailVerificationQuery,
      body: {
        required: false,
        content: {
          "application/json": { schema: bodySchema },
          "application/x-www-form-urlencoded": { schema: bodySchema },
          "multipart/form-data": { schema: bodySchema },
        },
      },
    },
    responses,
  });

  const handler = async (c: Context<AppEnv>) => {
    const config = c.get("config");
    const params = await readVerificationParams(c);
    const result = await verifyEmail(params.email, {
      dohUrl: config.DOH_URL,
      probeUrls: config.PROBE_URL,
      probeSecret: config.PROBE_SECRET,
      smtpTimeoutSeconds: params.smtpTimeoutSeconds,
      requestId: c.get("requestId"),
      // The account's own lane in every receiver's budget at the probe, as its jobs have.
      tenant: await probeTenant(c.get("auth").accountId),
    });
    // Counted in the isolate and written with its key activity: a verification makes no database round trip.
    const { actor: keyId, accountId } = c.get("auth");
    noteVerification(keyId, accountId, Date.now());
    // The verdict and how it was reached, never the address or its domain.
    Object.assign(c.get("accessLog"), {
      classification: result.classification,
      smtp_outcome: result.details?.smtp_outcome ?? null,
      dns_ms: result.details?.dns_ms ?? null,
      dns_cached: result.details?.dns_cached ?? null,
      smtp_ms: result.details?.smtp_ms ?? null,
      catch_all_cached: result.details?.catch_all_cached ?? null,
    });
    return c.json(result, 200);
  };

  app.get(PATH, every(...verifyAccess.middleware), handler);
  app.post(PATH, every(...verifyPostAccess.middleware), handler);
}
