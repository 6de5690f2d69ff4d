import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { options, uploadQuery, UsageError, writeResultsFile } from "../../scripts/verify-list.ts";

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

  it("sends the file as it is, named after it, with --column as the API's email_column (the API finds the column otherwise)", () => {
    expect(uploadQuery({ file: "lists/may export.csv", column: undefined, callback: undefined })).toEqual({ name: "may export.csv" });
    expect(uploadQuery({ file: "a.csv", column: "Work Email", callback: "https://h.example/cb" })).toEqual({ name: "a.csv", email_column: "Work Email", callback_url: "https://h.example/cb" });
  });

  it("refuses plain http to anything but loopback: the key and the list would cross the network in the clear", () => {
    for (const url of ["http://api.example.com", "http://10.0.0.5:8787", "http://127.0.0.1.nip.io:8787", "ftp://api.example.com"]) {
      expect(() => options(["a.csv"], { ...env, API_URL: url }), url).toThrow(/API_URL must be https \(http only to a loopback address\)/);
    }
    for (const url of ["https://api.example.com", "http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787"]) {
      expect(options(["a.csv"], { ...env, API_URL: url }).apiUrl, url).toBe(url);
    }
  });

  it("writes the results readable by their owner alone, whatever the umask, replacing a wider file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "verify-list-"));
    const oldUmask = process.umask(0o022);
    try {
      const out = join(dir, "results.csv");
      await writeFile(out, "old\n", { mode: 0o644 });
      writeResultsFile(out, "email,classification\r\nana@example.com,valid\r\n");
      expect((await stat(out)).mode & 0o777).toBe(0o600);
      expect(await readFile(out, "utf8")).toBe("email,classification\r\nana@example.com,valid\r\n");
    } finally {
      process.umask(oldUmask);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
