/**
 * The upload of a job (docs/jobs.md "Bulk verification jobs"), at its limits: a CSV file is parsed as a
 * stream, each line kept as it was in the file beside its address cell, and stops at the first row past a
 * limit; an address (CSV cell or JSON element) is at most JOB_LIMITS.maxLineBytes; a refused upload stores nothing.
 * Peak memory is measured by bench/job-upload.ts, not asserted here.
 */
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { VerificationJob } from "../../shared/jobs.ts";
import { JOB_LIMITS } from "../../shared/jobs.ts";
import { cancelUnfinishedJobs, call, db, newAccount } from "./helpers.ts";

afterEach(cancelUnfinishedJobs);

const PATH = "/v1/email_verification_jobs";

function post(token: string, type: string, body: string) {
  return call(PATH, { method: "POST", token, headers: { "content-type": type }, body });
}

async function storedJobs(accountId: string) {
  return (await db.all<{ n: number }>(sql`select count(*) as n from verification_jobs where account_id = ${accountId}`))[0]!.n;
}

async function storedLines(jobId: string) {
  return db.all<{ email: string; fields: string | null }>(sql`select email, fields from verification_job_items where job_id = ${jobId} order by position`);
}

describe("uploading a job", () => {
  it("a CSV of 100,001 data rows is 413 and nothing is stored", async () => {
    const { token, accountId } = await newAccount(0);
    const rows = Array.from({ length: 100_001 }, (_, i) => `a${i}@ok.test`).join("\n");
    const res = await post(token, "text/csv", `email\n${rows}\n`);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: "Too many addresses: a job has at most 100,000" });
    expect(await storedJobs(accountId)).toBe(0);
  });

  it("exactly 100,000 rows without a header is a job", async () => {
    const { token } = await newAccount(0);
    const rows = Array.from({ length: 100_000 }, (_, i) => `a${i}@ok.test`).join("\n");
    const res = await post(token, "text/csv", rows);
    expect(res.status, await res.clone().text()).toBe(202);
    const job = VerificationJob.parse(await res.json());
    expect(job.total).toBe(100_000);
    await call(`${PATH}/${job.id}`, { method: "DELETE", token });
  });

  it(`a CSV address over ${JOB_LIMITS.maxLineBytes} bytes is 400 naming its line in the file, and nothing is stored`, async () => {
    const { token, accountId } = await newAccount(0);
    const long = `${"a".repeat(JOB_LIMITS.maxLineBytes)}@ok.test`;
    const res = await post(token, "text/csv", `name,email\nAna,ana@ok.test\nBob,${long}\nCy,cy@ok.test\n`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: `Line 3: an address is at most ${JOB_LIMITS.maxLineBytes} bytes` });
    expect(await storedJobs(accountId)).toBe(0);
  });

  it(`a JSON address over ${JOB_LIMITS.maxLineBytes} bytes (counted in UTF-8) is 400 naming its index, and nothing is stored`, async () => {
    const { token, accountId } = await newAccount(0);
    // 107 three-byte characters: 107 UTF-16 units, 321 UTF-8 bytes.
    const res = await post(token, "application/json", JSON.stringify({ email_addresses: ["ana@ok.test", `${"€".repeat(107)}`] }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: `email_addresses[1]: an address is at most ${JOB_LIMITS.maxLineBytes} bytes` });
    expect(await storedJobs(accountId)).toBe(0);
    const fits = await post(token, "application/json", JSON.stringify({ email_addresses: [`${"€".repeat(106)}`] }));
    expect(fits.status).toBe(202);
    await call(`${PATH}/${VerificationJob.parse(await fits.json()).id}`, { method: "DELETE", token });
  });

  it("a wide CSV (many columns, long cells elsewhere) keeps every line as it was in the file, its address beside it", async () => {
    const { token } = await newAccount(0);
    const other = (row: number) => Array.from({ length: 200 }, (_, c) => `r${row}c${c}-${"x".repeat(20)}`);
    const header = [...other(0).map((_, c) => `col${c}`), "Email"].join(",");
    const rows = [1, 2, 3].map((r) => [...other(r), `p${r}@ok.test`].join(","));
    const res = await post(token, "text/csv", [header, ...rows].join("\r\n"));
    expect(res.status, await res.clone().text()).toBe(202);
    const job = VerificationJob.parse(await res.json());
    expect(job.columns).toHaveLength(201);
    expect(job.email_column).toBe("Email");
    expect(await storedLines(job.id)).toEqual(rows.map((line, i) => ({ email: `p${i + 1}@ok.test`, fields: line })));
    await call(`${PATH}/${job.id}`, { method: "DELETE", token });
  });

  it("a CSV split inside a multi-byte character still reads every address whole", async () => {
    const { token } = await newAccount(0);
    // Slices of 64 KiB go to the parser: pad so that a "ü" straddles the first boundary.
    const filler = Array.from({ length: 6_000 }, (_, i) => `f${i}@ok.test`).join("\n");
    const pad = 64 * 1024 - new TextEncoder().encode(`email\n${filler}\n`).byteLength - 1;
    const csv = `email\n${filler}\n${"a".repeat(Math.max(pad, 0))}ü@ok.test\n`;
    const res = await post(token, "text/csv", csv);
    expect(res.status, await res.clone().text()).toBe(202);
    const job = VerificationJob.parse(await res.json());
    const lines = await storedLines(job.id);
    expect(lines.at(-1)!.email).toBe(`${"a".repeat(Math.max(pad, 0))}ü@ok.test`);
    await call(`${PATH}/${job.id}`, { method: "DELETE", token });
  });
});
