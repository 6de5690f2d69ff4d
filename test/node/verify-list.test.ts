import { describe, expect, it } from "vitest";
import { options, uploadBody, UsageError } from "../../scripts/verify-list.ts";

const env = { API_KEY: "cv_test" };

describe("npm run verify-list", () => {
  it("reads its command line: the file, the results file beside it by default, the API from the environment", () => {
    expect(options(["lists/may.csv"], env)).toEqual({
      file: "lists/may.csv",
      column: undefined,
      out: "lists/may.results.csv",
      only: [],
      callback: undefined,
      apiUrl: "http://127.0.0.1:8787",
      apiKey: "cv_test",
    });
    expect(options(["a.csv", "--only", "valid, risky", "--out", "x.csv", "--callback", "https://h.example/cb"], { ...env, API_URL: "https://api.example" })).toMatchObject({
      only: ["valid", "risky"],
      out: "x.csv",
      callback: "https://h.example/cb",
      apiUrl: "https://api.example",
    });
  });

  it("refuses what it cannot do with a message that says why", () => {
    expect(() => options([], env)).toThrow(/usage: npm run verify-list -- FILE.csv/);
    expect(() => options(["a.csv"], {})).toThrow(/API_KEY is not set/);
    expect(() => options(["a.csv", "--only", "valid,great"], env)).toThrow(/--only "great": expected one or more of valid, risky, invalid/);
    expect(() => options(["a.csv"], env)).not.toThrow(UsageError);
  });

  it("sends the file as it is, or with --column that column alone under an email header, quoted where it must be", () => {
    const csv = "name,Work Email,notes\nAda,ada@example.com,\"first, best\"\nBob,\"b,ob@example.org\",x\n";
    expect(uploadBody(csv, undefined)).toBe(csv);
    expect(uploadBody(csv, "work email")).toBe('email\r\nada@example.com\r\n"b,ob@example.org"\r\n');
    expect(() => uploadBody(csv, "mail")).toThrow(/--column "mail": the file's first row has no such column \(it has: name, Work Email, notes\)/);
  });
});
