/** GET /v1/people (README section of that name). */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { ContactInfo, ERROR_MESSAGES, ErrorBody, PeopleQuery } from "../../shared/api.ts";
import { chargeCredits, balanceQuery } from "../credits.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { findPersonQuery, parsePeopleQuery, toContactInfo } from "../people.ts";

const creditHeaders = {
  "X-Credits-Charged": { schema: { type: "integer" as const }, description: "Credits this request cost" },
  "X-Credits-Remaining": { schema: { type: "integer" as const }, description: "Account balance after this request" },
};
const json = (schema: typeof ErrorBody | typeof ContactInfo, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

export const peopleRoute = createRoute({
  method: "get",
  path: "/v1/people",
  summary: "Look up a person's contact details",
  description:
    "Identifiers are tried in the order profnet_id, profnet_public_identifier, codehost_id, codehost_login; " +
    "the first that matches wins. A 200 costs LOOKUP_COST credits (default 1); 400 and 404 cost nothing.",
  security: [{ bearerAuth: [] }],
  request: { query: PeopleQuery },
  responses: {
    200: { ...json(ContactInfo, "A profile was found"), headers: creditHeaders },
    400: { ...json(ErrorBody, ERROR_MESSAGES.peopleParamRequired + ", or an identifier is malformed") },
    401: json(ErrorBody, "Missing or invalid bearer token"),
    402: { ...json(ErrorBody, "Insufficient credits"), headers: creditHeaders },
    404: { ...json(ErrorBody, ERROR_MESSAGES.profileNotFound), headers: creditHeaders },
  },
});

export function registerPeopleRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(peopleRoute, async (c) => {
    const config = c.get("config");
    const { accountId } = c.get("auth");
    const db = requestDatabase(c);
    const cost = config.LOOKUP_COST;
    const chargeHeaders = (charged: number, remaining: number) => ({
      "X-Credits-Charged": String(charged),
      "X-Credits-Remaining": String(remaining),
    });

    let ids;
    try {
      ids = parsePeopleQuery(c.req.valid("query"));
    } catch (err) {
      // Still tell the caller where their balance stands; a bad request costs nothing.
      if (err instanceof ApiError) {
        const [row] = await balanceQuery(db, accountId);
        Object.assign(err.headers, chargeHeaders(0, Number(row?.credit_balance ?? 0)));
      }
      throw err;
    }

    // One round trip for the balance and the person: 402 must win over 404.
    const [balanceRows, personRows] = await db.batch([balanceQuery(db, accountId), findPersonQuery(db, ids)]);
    const balance = Number(balanceRows[0]?.credit_balance ?? 0);
    if (balance < cost) throw new ApiError(402, ERROR_MESSAGES.insufficientCredits, chargeHeaders(0, balance));
    const person = personRows[0];
    if (!person) throw new ApiError(404, ERROR_MESSAGES.profileNotFound, chargeHeaders(0, balance));

    const charge = await chargeCredits(db, accountId, cost, c.get("requestId"));
    if (!charge.charged) {
      // Another request spent the credits between the read and the charge.
      const [row] = await balanceQuery(db, accountId);
      throw new ApiError(402, ERROR_MESSAGES.insufficientCredits, chargeHeaders(0, Number(row?.credit_balance ?? 0)));
    }
    return c.json(toContactInfo(person), 200, chargeHeaders(cost, charge.balanceAfter));
  });
}
