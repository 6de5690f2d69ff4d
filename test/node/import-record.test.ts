/** Validation of one import row (pure): ids, text, emails, phones and the reasons given for rejecting. */
import { describe, expect, it } from "vitest";
import { isPlausibleEmail, normalisePhoneNumber, parsePersonRecord } from "../../scripts/admin/people-record.ts";

function accepted(input: unknown) {
  const result = parsePersonRecord(input);
  if (!result.ok) throw new Error(`expected the row to be accepted, got: ${result.reason}`);
  return result.record;
}

function rejectionOf(input: unknown): string {
  const result = parsePersonRecord(input);
  if (result.ok) throw new Error("expected the row to be rejected");
  return result.reason;
}

describe("identifiers", () => {
  it.each([
    [{ profnet_id: 42 }, { profnet_id: 42 }],
    [{ profnet_id: " 42 " }, { profnet_id: 42 }],
    [{ codehost_id: "9007199254740991" }, { codehost_id: 9007199254740991 }],
    [{ codehost_login: "  octocat " }, { codehost_login: "octocat" }],
    [{ profnet_public_identifier: "ada", profnet_id: "" }, { profnet_public_identifier: "ada", profnet_id: undefined }],
    [{ codehost_login: "x", profnet_id: null, socialnet_username: "   " }, { codehost_login: "x", profnet_id: undefined, socialnet_username: undefined }],
  ])("accepts %j", (input, expected) => {
    expect(accepted(input)).toMatchObject(expected);
  });

  it.each([0, -1, 1.5, 2 ** 53, "0", "-1", "1.5", "1e3", "0x10", "9007199254740992", "12abc", true, {}, []])(
    "rejects profnet_id %j",
    (value) => {
      expect(rejectionOf({ profnet_id: value, codehost_login: "x" })).toMatch(/^profnet_id: must be a positive integer/);
    },
  );

  it("needs at least one of the four identifiers; handles alone are not enough", () => {
    const message = "one of profnet_id, profnet_public_identifier, codehost_id or codehost_login is required";
    expect(rejectionOf({ codehost_username: "x", socialnet_username: "y", microblog_username: "z" })).toBe(message);
    expect(rejectionOf({ codehost_login: "   ", profnet_id: "" })).toBe(message);
    expect(rejectionOf({})).toBe(message);
  });

  it("bounds text length", () => {
    expect(accepted({ codehost_login: "x".repeat(256) }).codehost_login).toHaveLength(256);
    expect(rejectionOf({ codehost_login: "x".repeat(257) })).toBe("codehost_login: must be at most 256 characters");
    expect(rejectionOf({ codehost_login: 5 })).toBe("codehost_login: must be a string");
  });
});

describe("the row as a whole", () => {
  it("names unknown fields", () => {
    expect(rejectionOf({ profnet_id: 1, nickname: "x" })).toBe('unknown field "nickname"');
    expect(rejectionOf({ profnet_id: 1, a: 1, personal_email_addresses: [] })).toBe('unknown fields "a", "personal_email_addresses"');
  });

  it.each([null, [], "text", 5])("wants an object, not %j", (input) => {
    expect(rejectionOf(input)).toBe("expected a JSON object");
  });

  it("reports every problem of the row", () => {
    expect(rejectionOf({ profnet_id: -1, email_addresses: ["nope"] })).toBe(
      'profnet_id: must be a positive integer up to 2^53-1; email_addresses: "nope" is not a valid email address',
    );
  });
});

describe("emails", () => {
  it("trims, skips empty items and deduplicates case-insensitively, keeping the first spelling", () => {
    const record = accepted({ profnet_id: 1, email_addresses: [" Ada@Example.com", "", "ada@example.COM", "ada@gmail.com"] });
    expect(record.email_addresses).toEqual(["Ada@Example.com", "ada@gmail.com"]);
  });

  it("defaults to no emails", () => {
    expect(accepted({ profnet_id: 1 }).email_addresses).toEqual([]);
    expect(accepted({ profnet_id: 1, email_addresses: null }).email_addresses).toEqual([]);
  });

  it.each(["ada@example.com", "a.b+tag@sub.example.co.uk", "\"quoted\"@example.com", "josé@exämple.com"])("takes %s", (email) => {
    expect(isPlausibleEmail(email)).toBe(true);
  });

  it.each(["ada", "ada@", "@example.com", "ada@example", "ada@.com", "ada@example.", "a@b@example.com", "a da@example.com", `${"a".repeat(250)}@x.com`])(
    "refuses %s",
    (email) => {
      expect(isPlausibleEmail(email)).toBe(false);
      expect(rejectionOf({ profnet_id: 1, email_addresses: [email] })).toBe(`email_addresses: ${JSON.stringify(email)} is not a valid email address`);
    },
  );

  it("bounds the list", () => {
    const emails = Array.from({ length: 101 }, (_, i) => `a${i}@example.com`);
    expect(rejectionOf({ profnet_id: 1, email_addresses: emails })).toBe("email_addresses: must have at most 100 items");
    expect(rejectionOf({ profnet_id: 1, email_addresses: "a@example.com" })).toBe("email_addresses: must be an array of strings");
  });
});

describe("phones", () => {
  it.each([
    ["+1 (650) 253-0000", "+16502530000"],
    ["+44 20 7946 0123", "+442079460123"],
    ["+33 6 12 34 56 78", "+33612345678"],
    ["+49 30 1234567", "+49301234567"],
  ])("normalises %s to %s", (input, e164) => {
    expect(normalisePhoneNumber(input)).toEqual({ ok: true, e164 });
  });

  it.each([
    ["650 253 0000", "has no +country code"],
    ["+1 555 555 5555", "is not a valid phone number"],
    ["+44 20 7946 012", "is not a valid phone number"],
    ["call me", "is not a phone number"],
    ["+1", "is too short"],
  ])("refuses %s (%s)", (input, why) => {
    expect(normalisePhoneNumber(input)).toEqual({ ok: false, reason: `${JSON.stringify(input)} ${why}` });
    expect(rejectionOf({ profnet_id: 1, phone_numbers: [input] })).toBe(
      `phone_numbers: ${JSON.stringify(input)} ${why}; numbers are stored in E.164`,
    );
  });

  it("deduplicates numbers that normalise to the same E.164", () => {
    expect(accepted({ profnet_id: 1, phone_numbers: ["+44 20 7946 0123", "+442079460123", ""] }).phone_numbers).toEqual(["+442079460123"]);
  });

  it("refuses overlong input without parsing it", () => {
    expect(normalisePhoneNumber(`+1${"0".repeat(100)}`)).toEqual({ ok: false, reason: expect.stringMatching(/is too long$/) });
  });
});
