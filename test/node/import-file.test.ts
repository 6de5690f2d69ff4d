/** Reading import files: bounded line splitting, format detection, and CSV rows turned into objects. */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectImportFormat, readPeopleRows, splitBoundedLines, type SourceRow } from "../../scripts/admin/people-file.ts";

async function* chunksOf(...chunks: (string | Buffer)[]): AsyncGenerator<Buffer> {
  for (const chunk of chunks) yield typeof chunk === "string" ? Buffer.from(chunk) : chunk;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("splitBoundedLines", () => {
  it("splits on LF and CRLF, across chunk boundaries, with or without a final newline", async () => {
    const lines = await collect(splitBoundedLines(chunksOf("one\r\ntw", "o\n", "\nthr", "ee"), 100));
    expect(lines).toEqual([
      { line: 1, text: "one" },
      { line: 2, text: "two" },
      { line: 3, text: "" },
      { line: 4, text: "three" },
    ]);
  });

  it("decodes multi-byte characters split between chunks and drops a leading byte order mark", async () => {
    const bytes = Buffer.from("\uFEFFjosé\nzoë\n");
    const oneByteAtATime = [...bytes].map((byte) => Buffer.from([byte]));
    expect(await collect(splitBoundedLines(chunksOf(...oneByteAtATime), 100))).toEqual([
      { line: 1, text: "josé" },
      { line: 2, text: "zoë" },
    ]);
  });

  it("reports an overlong line by number, keeps counting, and reads the lines after it", async () => {
    const lines = await collect(splitBoundedLines(chunksOf("short\n", "x".repeat(6), "x".repeat(6), "\nok\n", "y".repeat(20)), 10));
    expect(lines).toEqual([
      { line: 1, text: "short" },
      { line: 2, error: "line is longer than 10 bytes" },
      { line: 3, text: "ok" },
      { line: 4, error: "line is longer than 10 bytes" },
    ]);
  });

  it("accepts a line of exactly the limit", async () => {
    expect(await collect(splitBoundedLines(chunksOf("x".repeat(10)), 10))).toEqual([{ line: 1, text: "x".repeat(10) }]);
  });

  it("reports invalid UTF-8 instead of replacing it", async () => {
    const lines = await collect(splitBoundedLines(chunksOf(Buffer.from([0x7b, 0xff, 0x7d, 0x0a]), "{}\n"), 100));
    expect(lines).toEqual([
      { line: 1, error: "line is not valid UTF-8" },
      { line: 2, text: "{}" },
    ]);
  });
});

describe("files", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "import-file-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function file(name: string, content: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  }

  const rowsOf = async (path: string, format: "jsonl" | "csv"): Promise<SourceRow[]> =>
    collect(readPeopleRows(path, format, { maxLineBytes: 1024 }));

  it("detects the format by extension, else by the first character", async () => {
    expect(await detectImportFormat(await file("a.JSONL", "profnet_id\n"))).toBe("jsonl");
    expect(await detectImportFormat(await file("a.ndjson", ""))).toBe("jsonl");
    expect(await detectImportFormat(await file("a.csv", '{"profnet_id": 1}\n'))).toBe("csv");
    expect(await detectImportFormat(await file("export.txt", '\uFEFF  \n{"profnet_id": 1}\n'))).toBe("jsonl");
    expect(await detectImportFormat(await file("export", "profnet_id,codehost_login\n"))).toBe("csv");
  });

  it("reads CSV cells as strings, splits list cells on ';', skips blank lines, numbers lines from the file", async () => {
    const path = await file(
      "people.csv",
      'codehost_login , email_addresses,profnet_id\r\n\r\n"octo, the cat",a@example.com; b@example.com,7\r\nx,,\r\n',
    );
    expect(await rowsOf(path, "csv")).toEqual([
      { line: 3, value: { codehost_login: "octo, the cat", email_addresses: ["a@example.com", " b@example.com"], profnet_id: "7" } },
      { line: 4, value: { codehost_login: "x", email_addresses: [""], profnet_id: "" } },
    ]);
  });

  it.each([
    ["profnet_id,profnet_id\n", 'Duplicate CSV column "profnet_id"'],
    ["codehost_username,email_addresses\n", "The CSV header needs at least one of profnet_id, profnet_public_identifier, codehost_id, codehost_login"],
    ['"profnet_id\n', "Cannot read the CSV header (line 1)"],
  ])("refuses the CSV header %j", async (content, message) => {
    await expect(rowsOf(await file("bad.csv", content), "csv")).rejects.toThrow(message);
  });

  it("gives JSON Lines values as parsed, and errors for lines that are not JSON", async () => {
    const path = await file("people.jsonl", '{"profnet_id": 1}\n   \n{"profnet_id": \n[1]\n');
    expect(await rowsOf(path, "jsonl")).toEqual([
      { line: 1, value: { profnet_id: 1 } },
      { line: 3, error: expect.stringMatching(/^malformed JSON: /) },
      { line: 4, value: [1] },
    ]);
  });
});
