/** GET /v1/people (docs/api.md, the section of that name). */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { ContactInfo, ERROR_MESSAGES, PeopleQuery } from "../../shared/api.ts";
import { balanceQuery, capRefusalQuery, chargeForMatchQuery, countLookupQuery } from "../money/credits.ts";
import { takeDueActivity } from "../identity/key-activity.ts";
import { requestDatabase } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../lib/errors.ts";
import { parseIncludes, parseMinConfidence, parsePeopleQuery, toContactInfo } from "../people/lookup.ts";
import { findPersonQuery, matchingPersonId, matchStatusQuery, recordAccessQuery } from "../people/store.ts";
import { authenticatedErrorResponses, creditHeaders, errorResponse } from "./responses.ts";
import { access } from "./access.ts";

export const peopleRoute = createRoute({
  method: "get",
  path: "/v1/people",
  operationId: "lookupPerson",
  tags: ["People"],
  summary: "Look up a person's contact details",
  description:
    "Identifiers are tried in the order profnet_id, profnet_public_identifier, codehost_id, codehost_login; " +
    "the first that matches wins. A person may also be found by email, phone (E.164, or national with country), or a name (full_name, or first_name and last_name) at company_domain or company; " +
    "inputs that fit more than one person are a 404 with reason ambiguous_match, and inputs that name different people a 409 (conflicting_inputs), both free (docs/api.md \"GET /v1/people\"). " +
    "include=profile adds the person's name and employment. A 200 costs LOOKUP_COST credits (default 1); 400 and 404 cost nothing. " +
    "include=email_details adds email_details (per address: when our sources first and last reported it, how many did, our own engine's last verification of it, and its confidence; never a source) at no extra cost. " +
    "min_confidence leaves out addresses below it; a person left with none is a 404, not charged. " +
    "Addresses our re-verification found undeliverable are left out; every 200 is recorded (which account received whom, and when).",
  ...access({ who: { scope: "people:read" }, limits: ["lookup"] }),
  request: { query: PeopleQuery },
  responses: {
    200: { description: "A profile was found", content: { "application/json": { schema: ContactInfo } }, headers: creditHeaders },
    400: errorResponse(`${ERROR_MESSAGES.peopleParamRequired}, an identifier is malformed, an unknown include value (named), or ${ERROR_MESSAGES.minConfidenceRange}`, creditHeaders),
    402: errorResponse(`${ERROR_MESSAGES.insufficientCredits}; or ${ERROR_MESSAGES.dailyCreditCap} (reason daily_credit_cap): the key's daily_credit_cap is spent for this UTC day`, creditHeaders),
    404: errorResponse(`${ERROR_MESSAGES.profileNotFound}: nobody matches, or with min_confidence, no address of the person matched reaches it; or (reason ambiguous_match) the inputs fit more than one person`, creditHeaders),
    409: errorResponse(`${ERROR_MESSAGES.conflictingInputs} (reason conflicting_inputs): not charged`, creditHeaders),
    ...authenticatedErrorResponses,
  },
});

export function registerPeopleRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(peopleRoute, async (c) => {
    const config = c.get("config");
    const { accountId, actor: keyId } = c.get("auth");
    const db = requestDatabase(c);
    const cost = config.LOOKUP_COST;
    const chargeHeaders = (charged: number, remaining: number) => ({
      "X-Credits-Charged": String(charged),
      "X-Credits-Remaining": String(remaining),
    });

    let ids;
    let include;
    let minConfidence;
    try {
      ids = parsePeopleQuery(c.req.valid("query"));
      include = parseIncludes(c.req.valid("query").include);
      minConfidence = parseMinConfidence(c.req.valid("query").min_confidence);
    } catch (err) {
      // Still tell the caller where their balance stands; a bad request costs nothing.
      if (err instanceof ApiError) {
        const [row] = await balanceQuery(db, accountId);
        Object.assign(err.headers, chargeHeaders(0, Number(row?.credit_balance ?? 0)));
      }
      throw err;
    }

    // One round trip: one batch (one transaction) charges only when someone matches and both the balance
    // and the key's daily cap cover the cost, records that disclosure in the access log when it charged,
    // counts the lookup in the usage roll-up, then reads the person and the balance as they are after it.
    // The isolate's due key activity (last_used_at, verification counts) rides along.
    const requestId = c.get("requestId");
    const now = Date.now();
    const { creditCaps } = c.get("auth");
    const charge = { accountId, keyId, cost, requestId, now, creditCaps };
    const filter = { now, minConfidence };
    const activity = takeDueActivity(now);
    let results;
    try {
      results = await db.batch([
        chargeForMatchQuery(db, charge, matchingPersonId(ids, filter)),
        recordAccessQuery(db, ids, filter, accountId, keyId, requestId),
        countLookupQuery(db, charge, matchingPersonId(ids, filter)),
        findPersonQuery(db, ids, filter, include.has("profile")),
        balanceQuery(db, accountId),
        capRefusalQuery(db, charge),
        matchStatusQuery(db, ids),
        ...activity.statements.map((s) => db.run(s)),
      ]);
    } catch (error) {
      activity.restore();
      throw error;
    }
    const [chargedRows, , , personRows, balanceRows, capRows, statusRows] = results;
    const charged = chargedRows[0];
    const person = personRows[0];
    if (charged && person) return c.json(toContactInfo(person, include), 200, chargeHeaders(cost, Number(charged.balance_after)));
    // Nothing charged: the balance or the key's cap was short (which is all that stops a charge when
    // someone matched, and 402 wins over 404), or nobody matched.
    const balance = Number(balanceRows[0]?.credit_balance ?? 0);
    if (balance < cost) throw new ApiError(402, ERROR_MESSAGES.insufficientCredits, chargeHeaders(0, balance));
    if (Number(capRows[0]?.cap_exceeded ?? 0) === 1) {
      throw new ApiError(402, ERROR_MESSAGES.dailyCreditCap, chargeHeaders(0, balance), { reason: "daily_credit_cap" });
    }
    // Inputs that fit several people, or name different ones: never guessed between, and free.
    const status = statusRows[0]?.status;
    if (status === "ambiguous") throw new ApiError(404, ERROR_MESSAGES.ambiguousMatch, chargeHeaders(0, balance), { reason: "ambiguous_match" });
    if (status === "conflict") throw new ApiError(409, ERROR_MESSAGES.conflictingInputs, chargeHeaders(0, balance), { reason: "conflicting_inputs" });
    throw new ApiError(404, ERROR_MESSAGES.profileNotFound, chargeHeaders(0, balance));
  });
}
