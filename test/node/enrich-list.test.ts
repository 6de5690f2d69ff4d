import { describe, expect, it } from "vitest";
import { describeJob, idempotencyKey, jobQuery, options, UsageError } from "../../scripts/enrich-list.ts";
import type { Schemas } from "../../client/index.ts";

const env = { API_KEY: "cv_test" };

describe("npm run enrich-list", () => {
  it("reads its command line: the file and its format, the results beside it, the columns and options, the API from the environment", () => {
    expect(options(["crm/may.csv"], env)).toEqual({
      file: "crm/may.csv",
      format: "csv",
      out: "crm/may.enriched.csv",
      columns: {},
      only: [],
      include: undefined,
      verifyEmails: false,
      maxCredits: null,
      callback: undefined,
      apiUrl: "http://127.0.0.1:8787",
      apiKey: "cv_test",
    });
    const opts = options(["p.jsonl", "--column", "profnet_public_identifier=LinkedIn URL", "--column", "codehost_login=gh", "--only", "found", "--verify-emails", "--max-credits", "500", "--out", "x.jsonl"], { ...env, API_URL: "https://api.example" });
    expect(opts).toMatchObject({ format: "jsonl", out: "x.jsonl", columns: { profnet_public_identifier: "LinkedIn URL", codehost_login: "gh" }, only: ["found"], verifyEmails: true, maxCredits: 500, apiUrl: "https://api.example" });
    expect(jobQuery(opts)).toEqual({ profnet_public_identifier_column: "LinkedIn URL", codehost_login_column: "gh", verify_emails: "true" });
  });

  it("refuses what it cannot do with a message that says why", () => {
    expect(() => options([], env)).toThrow(/usage: npm run enrich-list -- FILE.csv/);
    expect(() => options(["a.csv"], {})).toThrow(/API_KEY is not set/);
    expect(() => options(["a.csv", "--column", "email=E-mail"], env)).toThrow(/--column "email=E-mail": expected IDENTIFIER=COLUMN/);
    expect(() => options(["a.csv", "--only", "found,lost"], env)).toThrow(/--only "lost": expected one or more of found, not_found, invalid, refused, erased/);
    expect(() => options(["a.csv", "--max-credits", "lots"], env)).toThrow(UsageError);
    expect(() => options(["a.csv"], { ...env, API_URL: "http://api.example.com" })).toThrow(/API_URL must be https/);
  });

  it("derives the Idempotency-Key from the list and what is asked of it, so a rerun resumes the same job and another list does not", () => {
    const opts = options(["a.csv"], env);
    const key = idempotencyKey("profnet_id\n1\n", opts);
    expect(key).toMatch(/^enrich-list-[0-9a-f]{40}$/);
    expect(idempotencyKey("profnet_id\n1\n", options(["other-name.csv"], env))).toBe(key);
    expect(idempotencyKey("profnet_id\n2\n", opts)).not.toBe(key);
    expect(idempotencyKey("profnet_id\n1\n", options(["a.csv", "--verify-emails"], env))).not.toBe(key);
  });

  it("says why a job waits when it is paused", () => {
    const job = { counts: { found: 3, not_found: 1, invalid: 0, refused: 2, erased: 0 }, credits: { charged: 3 }, pause: { reason: "insufficient_credits", message: "The account's credit balance ran out", since: "" } } as unknown as Schemas["LookupJob"];
    expect(describeJob(job)).toBe("found 3, not found 1, invalid 0, waiting for credits 2, 3 credits; paused: The account's credit balance ran out");
  });
});
