import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateToken, hashToken, looksLikeToken } from "../../edge/identity/tokens.ts";

describe("hashToken", () => {
  it("is the SHA-256 of the token in lower-case hex, as Node's own implementation computes it", async () => {
    const tokens = ["", "abc", "cv_é", ...Array.from({ length: 50 }, () => generateToken().token)];
    for (const token of tokens) expect(await hashToken(token)).toBe(createHash("sha256").update(token, "utf8").digest("hex"));
  });

  it("gives the published SHA-256 test vector for abc", async () => {
    expect(await hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("hashes the tokens it generates, which have the shape the API accepts", async () => {
    const { token } = generateToken();
    expect(looksLikeToken(token)).toBe(true);
    expect(await hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
  });
});
